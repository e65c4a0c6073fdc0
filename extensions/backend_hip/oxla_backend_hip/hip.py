"""The device interface (:class:`oxla_codegen_llvm.gpu.device.Device`) over the HIP
runtime API, loaded with ctypes from ROCm's ``libamdhip64.so``: one HIP call per method.

Memory is stream-ordered (``hipMallocAsync``/``hipFreeAsync``, ROCm 5.3 and up); modules
are code objects (``hipModuleLoadData`` of the ``.hsaco`` of the device's arch; a
device of another arch has no code object to load: the error names the archs the
artifact has); launches are ``hipModuleLaunchKernel`` with one pointer per parameter;
graphs are stream capture (``hipStreamBeginCapture``, ``hipGraphInstantiate``,
``hipGraphLaunch``). GEMMs go to rocBLAS (:mod:`oxla_backend_hip.rocblas`), FFTs to
hipFFT (:mod:`oxla_backend_hip.hipfft`). Under MPI (``exe.attach_mpi``) collectives are
RCCL groups on the executable's stream (:mod:`oxla_backend_hip.rccl`), polled by
``hipStreamQuery``.

Supported: ROCm 6.x (``libamdhip64.so.6``); written against the HIP API's C signatures,
never run here (no AMD GPU was available: see the README's hip section).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from oxla_codegen_llvm.gpu.fft import FftCall
from oxla_codegen_llvm.gpu.gemm import GemmCall
from oxla_codegen_llvm.gpu.nccl_api import run_group

from oxla.errors import OxlaError
from oxla_backend_hip import rccl
from oxla_backend_hip.hipfft import HipFFT
from oxla_backend_hip.image import HIPImage
from oxla_backend_hip.rocblas import RocBLAS

H2D, D2H, D2D = 1, 2, 3  # hipMemcpyKind
NOT_READY = 600  # hipErrorNotReady
CAPTURE_THREAD_LOCAL = 1  # hipStreamCaptureModeThreadLocal
PROPS_BYTES = 4096  # hipDeviceProp_t is smaller; its gcnArchName is found by content


class HIPDevice:
    """A real AMD GPU through the HIP runtime (module doc); its collectives under MPI
    are RCCL's (``collective_library``, the name in their summary and errors).

    Raises:
        OxlaError: the runtime does not load, or ``hipInit``/the device query failed.
    """

    collective_library = "RCCL"

    def __init__(self, library: str, ordinal: int = 0):
        try:
            self._h = ctypes.CDLL(library)
        except OSError as exc:
            raise OxlaError(f"no AMD GPU runtime: {exc}") from None
        self._ordinal = self.ordinal = ordinal
        self._check(self._h.hipInit(0), "hipInit")
        self._check(self._h.hipSetDevice(ordinal), "hipSetDevice")
        props = ctypes.create_string_buffer(PROPS_BYTES)
        self._check(self._h.hipGetDeviceProperties(props, ordinal), "hipGetDeviceProperties")
        raw = props.raw
        self.name = raw[:256].split(b"\0")[0].decode(errors="replace")
        at = raw.find(b"gfx")
        self.arch = raw[at:at + 64].split(b"\0")[0].split(b":")[0].decode() if at >= 0 else ""
        self.dlpack_device = (10, ordinal)  # kDLROCM
        self._blas: RocBLAS | None = None
        self._fft: HipFFT | None = None

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            self._h.hipGetErrorString.restype = ctypes.c_char_p
            msg = self._h.hipGetErrorString(status) or b""
            raise OxlaError(f"{what} failed: hipError_t {status} ({msg.decode()})")

    def make_current(self) -> None:
        self._check(self._h.hipSetDevice(self._ordinal), "hipSetDevice")

    def stream_create(self) -> Any:
        s = ctypes.c_void_p()
        self._check(self._h.hipStreamCreate(ctypes.byref(s)), "hipStreamCreate")
        return s

    def stream_synchronize(self, stream: Any) -> None:
        self._check(self._h.hipStreamSynchronize(stream), "hipStreamSynchronize")

    def stream_destroy(self, stream: Any) -> None:
        self._check(self._h.hipStreamDestroy(stream), "hipStreamDestroy")

    def alloc(self, nbytes: int, stream: Any) -> int:
        p = ctypes.c_void_p()
        self._check(self._h.hipMallocAsync(ctypes.byref(p), ctypes.c_size_t(max(nbytes, 1)),
                                           stream), "hipMallocAsync")
        return int(p.value or 0)

    def free(self, ptr: int, stream: Any) -> None:
        self._check(self._h.hipFreeAsync(ctypes.c_void_p(ptr), stream), "hipFreeAsync")

    def _copy(self, dst: int, src: int, nbytes: int, kind: int, stream: Any) -> None:
        if nbytes:
            self._check(self._h.hipMemcpyAsync(ctypes.c_void_p(dst), ctypes.c_void_p(src),
                                               ctypes.c_size_t(nbytes), kind, stream),
                        "hipMemcpyAsync")

    def copy_to_device(self, dst: int, src: np.ndarray, stream: Any) -> None:
        self._copy(dst, src.ctypes.data, src.nbytes, H2D, stream)

    def copy_to_host(self, dst: np.ndarray, src: int, stream: Any) -> None:
        self._copy(dst.ctypes.data, src, dst.nbytes, D2H, stream)

    def copy_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        self._copy(dst, src, nbytes, D2D, stream)

    def memset_zero(self, dst: int, nbytes: int, stream: Any) -> None:
        if nbytes:
            self._check(self._h.hipMemsetAsync(ctypes.c_void_p(dst), 0,
                                               ctypes.c_size_t(nbytes), stream),
                        "hipMemsetAsync")

    def load_module(self, image: HIPImage) -> Any:
        """The code object of this device's arch.

        Raises:
            OxlaError: the image has none for this arch (names the ones it has).
        """
        hsaco = image.hsacos.get(self.arch)
        if hsaco is None:
            raise OxlaError(f"no code object for {self.arch or 'this GPU'}: compiled for "
                            f"{', '.join(image.archs)} (recompile with --hip-arch "
                            f"{self.arch})")
        m = ctypes.c_void_p()
        self._check(self._h.hipModuleLoadData(ctypes.byref(m), ctypes.c_char_p(hsaco)),
                    "hipModuleLoadData")
        return m

    def function(self, module: Any, name: str) -> Any:
        f = ctypes.c_void_p()
        self._check(self._h.hipModuleGetFunction(ctypes.byref(f), module, name.encode()),
                    "hipModuleGetFunction")
        return f

    def launch(self, fn: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: Any, args: list[tuple[str, int]]) -> None:
        values = [ctypes.c_uint64(v & 0xFFFFFFFFFFFFFFFF) for _, v in args]
        params = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        self._check(self._h.hipModuleLaunchKernel(
            fn, *[ctypes.c_uint(x) for x in grid], *[ctypes.c_uint(x) for x in block],
            ctypes.c_uint(shared_bytes), stream, params if values else None, None),
            "hipModuleLaunchKernel")

    def load_custom(self, rec: Any) -> Any:
        """A custom call's kernel (``oxla_kernels.DeviceKernel``,
        :mod:`oxla_codegen_llvm.gpu.custom_call`): its code object, which must be for
        this device's arch; ``(module, function)``.

        Raises:
            OxlaError: a code object for another arch.
        """
        if rec.arch and rec.arch != self.arch:
            raise OxlaError(f"custom call kernel {rec.entry} is a code object for "
                            f"{rec.arch}, not {self.arch or 'this GPU'} (declare the "
                            f"HipImpl with arch={self.arch!r})")
        m = ctypes.c_void_p()
        self._check(self._h.hipModuleLoadData(ctypes.byref(m), ctypes.c_char_p(rec.image)),
                    "hipModuleLoadData")
        return m, self.function(m, rec.entry)

    def launch_custom(self, kernel: Any, grid: tuple[int, int, int],
                      block: tuple[int, int, int], shared_bytes: int, stream: Any,
                      args: list[tuple[str, Any, int]]) -> None:
        """``hipModuleLaunchKernel`` of a custom call's kernel: buffers as pointers, then
        scalars (``f32`` as a 32-bit float, ``i64`` as a 64-bit integer)."""
        values = [ctypes.c_float(v) if k == "f32" else
                  ctypes.c_uint64(int(v) & 0xFFFFFFFFFFFFFFFF) for k, v, _ in args]
        params = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values])
        self._check(self._h.hipModuleLaunchKernel(
            kernel[1], *[ctypes.c_uint(x) for x in grid], *[ctypes.c_uint(x) for x in block],
            ctypes.c_uint(shared_bytes), stream, params if values else None, None),
            "hipModuleLaunchKernel")

    def gemm(self, call: GemmCall, stream: Any) -> None:
        if self._blas is None:
            self._blas = RocBLAS()
        self._blas.gemm(call, int(stream.value or 0))

    def fft(self, call: FftCall, stream: Any) -> None:
        """hipFFT (:class:`oxla_backend_hip.hipfft.HipFFT`, plans kept per transform), the
        scale of an inverse by rocBLAS."""
        if self._fft is None:
            if self._blas is None:
                self._blas = RocBLAS()
            self._fft = HipFFT(self.copy_device, self._blas.scal)
        self._fft.run(call, stream)

    def nccl_world(self, comm: Any) -> Any:
        """The RCCL communicator of the MPI job ``comm`` on this device
        (:func:`oxla_backend_hip.rccl.world`; collective).

        Raises:
            OxlaError: RCCL is not loadable (names ROCm's rccl package).
        """
        self.make_current()
        return rccl.world(comm)

    def nccl(self, calls: list, comm: Any, stream: Any) -> Any:
        """Enqueues one RCCL group on ``stream``
        (:func:`oxla_codegen_llvm.gpu.nccl_api.run_group`); the caller polls the
        returned group's ``done()`` (:meth:`stream_done`)."""
        self.make_current()
        return run_group(calls, comm, int(stream.value or 0),
                         lambda ptr, n: self.memset_zero(ptr, n, stream),
                         lambda: self.stream_done(stream))

    def stream_done(self, stream: Any) -> bool:
        """``hipStreamQuery``: True once the stream's work completed, False while it runs
        (``hipErrorNotReady``).

        Raises:
            OxlaError: the stream's work failed.
        """
        status = self._h.hipStreamQuery(stream)
        if status == NOT_READY:
            return False
        self._check(status, "hipStreamQuery")
        return True

    def begin_capture(self, stream: Any) -> None:
        self._check(self._h.hipStreamBeginCapture(stream, CAPTURE_THREAD_LOCAL),
                    "hipStreamBeginCapture")

    def end_capture(self, stream: Any) -> Any:
        graph, exe = ctypes.c_void_p(), ctypes.c_void_p()
        self._check(self._h.hipStreamEndCapture(stream, ctypes.byref(graph)),
                    "hipStreamEndCapture")
        self._check(self._h.hipGraphInstantiate(ctypes.byref(exe), graph, None, None, 0),
                    "hipGraphInstantiate")
        self._check(self._h.hipGraphDestroy(graph), "hipGraphDestroy")
        return exe

    def graph_launch(self, graph: Any, stream: Any) -> None:
        self._check(self._h.hipGraphLaunch(graph, stream), "hipGraphLaunch")

    def graph_destroy(self, graph: Any) -> None:
        self._check(self._h.hipGraphExecDestroy(graph), "hipGraphExecDestroy")
