"""GPU implementations: CUDA C (:class:`CudaImpl`, NVRTC) and HIP (:class:`HipImpl`,
``hipcc``), each compiled to a :class:`DeviceKernel`, the record a GPU backend launches
(Triton: :mod:`oxla_kernels.triton_impl`).

The record is the whole contract with a backend: ``CustomCallInfo(target, "cuda",
impl)``'s ``fn`` is the implementation, whose ``for_call(ins, outs, backend_config)`` a
backend calls at compile time with the call's static types and its ``backend_config``
string (decoded into the kernel's attributes, then ``device_kernel(ins, outs, attrs)``);
it launches ``entry`` from ``image`` with ``grid`` x ``block`` threads and
``shared_mem`` bytes on the executable's own stream, passing the operands' device
pointers, then the results', then the ``scalars`` attributes (as 32-bit floats or
64-bit ints, in that order). A simulated device runs the record's PTX in an emulator,
or calls its ``host`` function when it has one (Triton's interpreter; for HIP, the same
source compiled for the host, :mod:`oxla_kernels.hip_host`). NVRTC is the pinned ``nvidia-cuda-nvrtc`` wheel (its PTX ISA is what the CUDA
backend's ``ptxas`` accepts); ``ptxas``, when found (``$OXLA_PTXAS``, PATH, Triton's
bundled copy), also assembles a cubin for ``arch``.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oxla.errors import LoweringError
from oxla.ir import types as T
from oxla_kernels.hip_host import run_on_host
from oxla_kernels.kernel import decode_config, scalar_values

Grid = Callable[[Sequence[T.TensorType], Mapping[str, Any]], tuple[int, ...]]


@dataclass(frozen=True)
class DeviceKernel:
    """A compiled GPU kernel and how to launch it (see the module doc).

    Attributes:
        backend: ``"cuda"`` or ``"hip"``.
        format: ``"ptx"``, ``"cubin"`` or ``"hsaco"`` (of ``image``).
        image: the module bytes.
        entry: the kernel's symbol.
        grid: blocks per grid (x, y, z).
        block: threads per block (x, y, z).
        shared_mem: dynamic shared memory bytes.
        scalars: attribute values passed after the buffers, in order.
        extra: other images of the same kernel (``{"ptx": ...}`` beside a cubin).
        arch: the ``sm_XY`` (or ``gfxNNN``) a cubin (code object) is for.
        host: ``host(buffers)`` runs the kernel on host memory (the operands' then the
            results' bytes as ``uint8`` arrays, results written in place), for a
            simulated device; None: it runs the PTX.
    """

    backend: str
    format: str
    image: bytes
    entry: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_mem: int = 0
    scalars: tuple[float | int, ...] = ()
    extra: dict[str, bytes] = field(default_factory=dict)
    arch: str = ""
    host: Callable[[list[np.ndarray]], None] | None = field(default=None, compare=False)


def dims3(t: Sequence[int]) -> tuple[int, int, int]:
    t = tuple(int(x) for x in t) + (1, 1, 1)
    return t[0], t[1], t[2]


class GpuImpl:
    backend = "cuda"
    language = "cuda"

    def bind(self, kernel: Any) -> None:
        self.kernel = kernel

    def custom_call_fn(self) -> Any:
        return self  # the backend calls for_call(ins, outs, backend_config)

    def for_call(self, ins: Sequence[T.TensorType], outs: Sequence[T.TensorType],
                 backend_config: str) -> DeviceKernel:
        """The launch record of one call site (module doc).

        Raises:
            LoweringError: the kernel does not compile (the compiler's log in the notes).
        """
        return self.device_kernel(ins, outs, decode_config(backend_config,
                                                           self.kernel.attributes))

    def run(self, arrays, ins, outs, attrs) -> list[np.ndarray]:
        raise LoweringError(f"the {self.language} implementation of "
                            f"'{self.kernel.target}' runs on the {self.backend} backend "
                            "only (this process has no such device)")


# -- CUDA C through NVRTC ----------------------------------------------------------------
def nvrtc_library() -> ctypes.CDLL:
    """libnvrtc from the ``nvidia-cuda-nvrtc`` wheel (or ``$OXLA_NVRTC``).

    Raises:
        LoweringError: not installed.
    """
    path = os.environ.get("OXLA_NVRTC")
    if not path:
        spec = importlib.util.find_spec("nvidia")
        roots = list(spec.submodule_search_locations or []) if spec else []
        hits = sorted(h for r in roots for h in glob.glob(f"{r}/**/libnvrtc.so*",
                                                          recursive=True)
                      if "builtins" not in h)
        path = hits[0] if hits else ""
    if not path:
        raise LoweringError("NVRTC is not installed", notes=[
            "pip install nvidia-cuda-nvrtc==13.0.88 (a dependency of oxla-custom-calls)"])
    for b in sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so*"))):
        if ".alt." not in b:  # NVRTC dlopens it by soname: load it first, globally
            ctypes.CDLL(b, mode=ctypes.RTLD_GLOBAL)
            break
    return ctypes.CDLL(path)


def nvrtc_compile(source: str, name: str = "kernel.cu", arch: str = "compute_90",
                  options: Sequence[str] = ()) -> str:
    """CUDA C source -> PTX text with NVRTC.

    Raises:
        LoweringError: NVRTC is missing or the compile failed (its log in the notes).
    """
    lib = nvrtc_library()
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                None, None)
    if rc:
        raise LoweringError(f"nvrtcCreateProgram failed ({rc})")
    try:
        opts = [f"--gpu-architecture={arch}", "-default-device", *options]
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
        if rc:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise LoweringError(f"NVRTC could not compile {name} for {arch}",
                                notes=[log.value.decode(errors="replace").strip()[-2000:]])
        size = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def find_ptxas() -> str | None:
    """``$OXLA_PTXAS``, ``ptxas`` on PATH, or the one Triton bundles (None: none)."""
    if os.environ.get("OXLA_PTXAS"):
        return os.environ["OXLA_PTXAS"]
    if shutil.which("ptxas"):
        return shutil.which("ptxas")
    p = triton_path() / "triton" / "backends" / "nvidia" / "bin" / "ptxas"
    return str(p) if p.exists() else None


def triton_path() -> Path:
    """Where Triton is installed for oxla: ``$OXLA_TRITON_PATH``, default
    ``<venv>/oxla-triton`` (``pip install --target``; kept off ``sys.path``, see
    :mod:`oxla_kernels.triton_impl`)."""
    return Path(os.environ.get("OXLA_TRITON_PATH") or Path(sys.prefix) / "oxla-triton")


def ptxas(ptx: str, arch: str = "sm_90") -> bytes:
    """PTX -> cubin with ``ptxas``.

    Raises:
        LoweringError: no ptxas, or it refused the PTX (for example a newer PTX ISA).
    """
    exe = find_ptxas()
    if exe is None:
        raise LoweringError("ptxas not found (set $OXLA_PTXAS)")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(ptx)
        res = subprocess.run([exe, f"-arch={arch}", str(src), "-o", str(out)],
                             capture_output=True, text=True, check=False)
        if res.returncode:
            raise LoweringError(f"ptxas ({exe}) refused the PTX for {arch}",
                                notes=[res.stderr.strip()[-1000:]])
        return out.read_bytes()


class CudaImpl(GpuImpl):
    """CUDA C for the cuda backend.

    Args:
        source: CUDA C with an ``extern "C" __global__`` entry.
        entry: its name.
        grid: ``grid(ins, attrs) -> (x, y, z)`` blocks.
        block: threads per block.
        scalars: attribute names passed after the buffers.
        arch: the ``sm_XY`` to compile for.
    """

    def __init__(self, source: str, entry: str, grid: Grid, block: Sequence[int],
                 scalars: Sequence[str] = (), arch: str = "sm_90", shared_mem: int = 0):
        self.source, self.entry, self.grid, self.block = source, entry, grid, dims3(block)
        self.scalars, self.arch, self.shared_mem = tuple(scalars), arch, shared_mem
        self._ptx: str | None = None

    def ptx(self) -> str:
        if self._ptx is None:
            self._ptx = nvrtc_compile(self.source, f"{self.entry}.cu",
                                      "compute_" + self.arch.removeprefix("sm_"))
        return self._ptx

    def device_kernel(self, ins: Sequence[T.TensorType], outs: Sequence[T.TensorType],
                      attrs: Mapping[str, Any], cubin: bool = True) -> DeviceKernel:
        """The launch record for one call (a cubin when ptxas takes the PTX, else the
        PTX for the driver to JIT)."""
        ptx = self.ptx().encode()
        fmt, image = "ptx", ptx
        if cubin and find_ptxas():
            try:
                fmt, image = "cubin", ptxas(ptx.decode(), self.arch)
            except LoweringError:
                pass
        return DeviceKernel("cuda", fmt, image, self.entry, dims3(self.grid(ins, attrs)),
                            self.block, self.shared_mem,
                            scalar_values(self.scalars, ins, attrs), {"ptx": ptx},
                            self.arch if fmt == "cubin" else "")


class HipImpl(GpuImpl):
    """HIP C++ for the hip backend, compiled with ``hipcc --genco`` (``$OXLA_HIPCC``)
    to a code object for ``arch`` (a plain AMDGPU ELF, not a clang offload bundle:
    ``--no-gpu-bundle-output``); same arguments as :class:`CudaImpl`."""

    backend = "hip"
    language = "hip"

    def __init__(self, source: str, entry: str, grid: Grid, block: Sequence[int],
                 scalars: Sequence[str] = (), arch: str = "gfx90a", shared_mem: int = 0):
        self.source, self.entry, self.grid, self.block = source, entry, grid, dims3(block)
        self.scalars, self.arch, self.shared_mem = tuple(scalars), arch, shared_mem

    def code_object(self) -> bytes:
        """Raises: LoweringError: no hipcc (Debian: apt-get install hipcc), or it failed."""
        exe = os.environ.get("OXLA_HIPCC") or shutil.which("hipcc")
        if not exe:
            raise LoweringError("hipcc not found: HIP kernels compile with Debian's hipcc "
                                "(apt-get install hipcc) or ROCm's")
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "k.hip", Path(tmp) / "k.hsaco"
            src.write_text(self.source)
            res = subprocess.run([exe, "--genco", f"--offload-arch={self.arch}",
                                  "--no-gpu-bundle-output", str(src), "-o", str(out)],
                                 capture_output=True, text=True,
                                 check=False, env={**os.environ, "HIP_PLATFORM": "amd"})
            if res.returncode:
                raise LoweringError("hipcc failed", notes=[res.stderr.strip()[-2000:]])
            return out.read_bytes()

    def device_kernel(self, ins, outs, attrs) -> DeviceKernel:
        """The launch record: the code object, and as ``host`` the same source run on
        the host (:mod:`oxla_kernels.hip_host`, what the simulated hip device calls)."""
        grid, scalars = dims3(self.grid(ins, attrs)), scalar_values(self.scalars, ins, attrs)
        kinds = ["ptr"] * (len(ins) + len(outs)) + [
            "i64" if isinstance(v, bool | int | np.integer) else "f32" for v in scalars]
        host = functools.partial(run_on_host, self.source, self.entry, kinds, grid,
                                 self.block, self.shared_mem, scalars)
        return DeviceKernel("hip", "hsaco", self.code_object(), self.entry, grid, self.block,
                            self.shared_mem, scalars, arch=self.arch, host=host)
