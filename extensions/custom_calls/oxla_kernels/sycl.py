"""SYCL implementations (:class:`SyclImpl`): a SPIR-V module (what a SYCL compiler emits
as its device image) or OpenCL C, run on a SYCL device through ``dpctl``.

On a machine without a GPU that device is Intel's OpenCL CPU runtime (the
``intel-opencl-rt`` wheel): its bundled ICD file names a wrong path, so
:func:`ensure_opencl_cpu` points ``OCL_ICD_FILENAMES`` at the wheel's
``libintelocl.so`` before ``dpctl`` is first imported. SYCL C++ source needs a SYCL
compiler (``icpx``, ``acpp``), which neither Debian nor PyPI ships: give the SPIR-V it
makes.

The kernel takes the operands' buffers, then the results', then ``scalars`` (attribute
names, passed as 32-bit floats or 64-bit ints), over ``global_size(ins, attrs)``
work-items (and ``local_size`` when given).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oxla.errors import LoweringError
from oxla.ir import types as T
from oxla_kernels.kernel import decode_config, scalar_values


def ensure_opencl_cpu() -> str | None:
    """Sets ``OCL_ICD_FILENAMES`` to ``intel-opencl-rt``'s ``libintelocl.so`` when it is
    unset and the wheel is installed; returns the library path (None: not found)."""
    if os.environ.get("OCL_ICD_FILENAMES"):
        return os.environ["OCL_ICD_FILENAMES"]
    hits = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libintelocl.so*")))
    if hits:
        os.environ["OCL_ICD_FILENAMES"] = hits[0]
        return hits[0]
    return None


def sycl_device_status() -> tuple[bool, str]:
    """``(True, device name)`` when dpctl finds a SYCL device, else ``(False, why)``."""
    ensure_opencl_cpu()
    try:
        import dpctl
    except ImportError as exc:
        return False, f"dpctl is not installed ({exc}); pip install dpctl intel-opencl-rt"
    try:
        q = dpctl.SyclQueue()
    except Exception as exc:  # dpctl raises SyclQueueCreationError and others
        return False, (f"no SYCL device ({type(exc).__name__}: {exc}); install "
                       "intel-opencl-rt for the OpenCL CPU device")
    return True, q.sycl_device.name


def sycl_compiler() -> str | None:
    """A SYCL C++ compiler on PATH (``icpx``, ``acpp``, ``clang++ -fsycl`` is not tried)."""
    return shutil.which("icpx") or shutil.which("acpp")


class SyclImpl:
    """A SPIR-V or OpenCL C kernel run through dpctl.

    Args:
        entry: the kernel's name.
        global_size: ``global_size(ins, attrs) -> tuple`` of work-items.
        opencl: OpenCL C source; or
        spirv: a SPIR-V module (bytes, or a path).
        scalars: attribute names passed after the buffers.
        local_size: work-group size (None: the runtime's choice).
        backend: the oxla backend it is registered for: ``"sycl"`` (no such backend
            yet: run it with ``Kernel.run("sycl", ...)``) or ``"cpu"`` (called from cpu
            programs as a host kernel).
    """

    language = "sycl"

    def __init__(self, entry: str, global_size: Callable[..., Sequence[int]],
                 opencl: str | None = None, spirv: bytes | str | Path | None = None,
                 scalars: Sequence[str] = (), local_size: Sequence[int] | None = None,
                 backend: str = "sycl"):
        if (opencl is None) == (spirv is None):
            raise ValueError("SyclImpl: give exactly one of opencl= and spirv=")
        if isinstance(spirv, str | Path):
            spirv = Path(spirv).read_bytes()
        self.entry, self.global_size, self.opencl, self.spirv = entry, global_size, opencl, spirv
        self.scalars, self.local_size, self.backend = tuple(scalars), local_size, backend
        self._programs: dict[Any, Any] = {}

    def bind(self, kernel: Any) -> None:
        self.kernel = kernel

    def _kernel(self, queue: Any) -> Any:
        import dpctl.program as prog

        key = queue.sycl_device.filter_string
        if key not in self._programs:
            try:
                p = (prog.create_program_from_source(queue, self.opencl)
                     if self.opencl is not None
                     else prog.create_program_from_spirv(queue, self.spirv))
            except Exception as exc:
                raise LoweringError(f"SYCL program of '{self.kernel.target}' failed to "
                                    f"build: {type(exc).__name__}: {exc}") from None
            self._programs[key] = p.get_sycl_kernel(self.entry)
        return self._programs[key]

    def run(self, arrays: Sequence[np.ndarray], ins: Sequence[T.TensorType],
            outs: Sequence[T.TensorType], attrs: Mapping[str, Any]) -> list[np.ndarray]:
        """Copies to device memory, runs the kernel, copies the results back.

        Raises:
            LoweringError: no SYCL device or dpctl, or the program failed to build.
        """
        ok, why = sycl_device_status()
        if not ok:
            raise LoweringError(f"cannot run the SYCL implementation of "
                                f"'{self.kernel.target}': {why}")
        import dpctl
        import dpctl.memory as dpm

        q = dpctl.SyclQueue()
        kern = self._kernel(q)
        dev_in = []
        for a in arrays:
            mem = dpm.MemoryUSMDevice(max(a.nbytes, 1), queue=q)
            if a.nbytes:
                mem.copy_from_host(np.ascontiguousarray(a).reshape(-1).view(np.uint8))
            dev_in.append(mem)
        results = [np.empty(t.shape, np.dtype(t.element_type.dtype)) for t in outs]
        dev_out = [dpm.MemoryUSMDevice(max(r.nbytes, 1), queue=q) for r in results]
        scalars = [ctypes_scalar(v) for v in scalar_values(self.scalars, ins, attrs)]
        args = [*dev_in, *dev_out, *scalars]
        gsize = [int(x) for x in self.global_size(ins, attrs)]
        if self.local_size is None:
            q.submit(kern, args, gsize).wait()
        else:
            q.submit(kern, args, gsize, [int(x) for x in self.local_size]).wait()
        for r, mem in zip(results, dev_out):
            if r.nbytes:
                r.reshape(-1).view(np.uint8)[:] = np.frombuffer(mem.copy_to_host(), np.uint8)[
                    :r.nbytes]
        return results

    def custom_call_fn(self) -> Any:
        """A host kernel for the cpu backend (``backend="cpu"``), the interpreter
        convention for ``"interpreter"``; the record itself otherwise."""
        if self.backend != "cpu":
            return self

        def host(*inputs: np.ndarray, backend_config: str = "") -> list[np.ndarray]:
            attrs = decode_config(backend_config, self.kernel.attributes)
            ins = [T.TensorType(a.shape, _et(a.dtype)) for a in inputs]
            return self.run(inputs, ins, self.kernel.result_types(ins, attrs), attrs)

        return host


def _et(dtype: np.dtype) -> T.ElementType:
    return T.element_type_from_dtype(np.dtype(dtype))


def ctypes_scalar(v: Any) -> Any:
    """A kernel scalar argument: float -> 32-bit float, int -> 64-bit int."""
    import ctypes

    if isinstance(v, bool | int | np.integer):
        return ctypes.c_int64(int(v))
    return ctypes.c_float(float(v))
