"""The device interface every runtime path calls, and its real implementation over the
CUDA driver API (NVIDIA's ``cuda-python``: ``cuda.bindings.driver``).

:class:`Device` (:mod:`oxla_codegen_llvm.gpu.device`, re-exported here) is the whole
surface between oxla's GPU runtime logic and a device. Two classes implement it for cuda:
:class:`DriverDevice` here, a thin typed layer of one driver call per method, and
:class:`oxla_codegen_llvm.gpu.sim.SimDevice`, the same surface over host memory.

Pointers are ``int`` device addresses; streams, modules, functions and graphs are opaque
handles. Work is stream-ordered: ``alloc``/``free`` are ``cuMemAllocAsync`` /
``cuMemFreeAsync`` on the device's default memory pool.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from oxla_codegen_llvm.gpu.device import Device
from oxla_codegen_llvm.gpu.fft import FftCall

from oxla.errors import OxlaError
from oxla_backend_cuda.cublas import CuBLAS, GemmCall
from oxla_backend_cuda.cufft import CuFFT
from oxla_backend_cuda.nccl import run_group, world
from oxla_backend_cuda.nvjit import ptx_to_cubin


@dataclass
class ModuleImage:
    """What a module is loaded from: PTX text, cubins by arch (``sm_90`` -> ELF bytes)
    and the kernels' SIMT descriptions (the simulated device builds their host twins).
    """

    ptx: str
    cubins: dict[str, bytes] = field(default_factory=dict)
    kernels: list[Any] = field(default_factory=list)

    @property
    def asm(self) -> str:
        """The PTX (``--emit asm``)."""
        return self.ptx

    @property
    def archs(self) -> list[str]:
        return sorted(self.cubins)

    def members(self) -> dict[str, bytes]:
        """The artifact members: ``module.ptx`` and ``<arch>.cubin`` per arch."""
        files = {"module.ptx": self.ptx.encode()}
        files.update({f"{arch}.cubin": cubin for arch, cubin in self.cubins.items()})
        return files


__all__ = ["Device", "DriverDevice", "ModuleImage", "check"]


def check(result: tuple) -> Any:
    """The value(s) of a ``cuda.bindings`` call, which returns ``(error, *values)``.

    Raises:
        OxlaError: the call failed (named with the driver's error name).
    """
    err, *values = result
    if int(err) != 0:
        from cuda.bindings import driver

        _, name = driver.cuGetErrorName(err)
        raise OxlaError(f"CUDA driver error {name.decode() if name else int(err)}")
    return values[0] if len(values) == 1 else tuple(values) if values else None


_PARAM_TYPES = {"buf": ctypes.c_void_p, "i64": ctypes.c_int64, "in": ctypes.c_void_p,
                "out": ctypes.c_void_p, "f32": ctypes.c_float}


class DriverDevice:
    """A real GPU through the CUDA driver API: the primary context of device
    ``ordinal``, its default memory pool, cuBLAS for GEMMs
    (:class:`oxla_backend_cuda.cublas.CuBLAS`).

    Raises:
        OxlaError: no NVIDIA driver, or ``cuInit``/the device query failed.
    """

    dlpack_device: tuple[int, int]

    def __init__(self, ordinal: int = 0):
        try:
            from cuda.bindings import driver
        except ImportError as exc:  # the wheel is a dependency: a broken install
            raise OxlaError(f"cuda-bindings is not importable: {exc}") from None
        except RuntimeError as exc:
            raise OxlaError(f"no NVIDIA driver: {exc}") from None
        self._d = driver
        try:
            check(driver.cuInit(0))
        except RuntimeError as exc:  # "Failed to dlopen libcuda.so.1"
            raise OxlaError(f"no NVIDIA driver: {exc}") from None
        self._dev = check(driver.cuDeviceGet(ordinal))
        self._ctx = check(driver.cuDevicePrimaryCtxRetain(self._dev))
        check(driver.cuCtxSetCurrent(self._ctx))
        a = driver.CUdevice_attribute
        major = check(driver.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self._dev))
        minor = check(driver.cuDeviceGetAttribute(
            a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self._dev))
        self.arch = f"sm_{major}{minor}"
        name = check(driver.cuDeviceGetName(256, self._dev))
        self.name = name.split(b"\0")[0].decode()
        self.ordinal = ordinal
        self.dlpack_device = (2, ordinal)  # kDLCUDA
        self._blas = None
        self._fft = None
        try:  # keep freed pool memory for the next call instead of returning it at syncs
            pool = check(driver.cuDeviceGetDefaultMemPool(self._dev))
            check(driver.cuMemPoolSetAttribute(
                pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                driver.cuuint64_t(2**64 - 1)))
        except (OxlaError, AttributeError, TypeError):  # an optimization only
            pass

    def make_current(self) -> None:
        """Makes the device's context current on the calling thread."""
        check(self._d.cuCtxSetCurrent(self._ctx))

    _current = make_current

    def stream_create(self) -> Any:
        self._current()
        return check(self._d.cuStreamCreate(1))  # CU_STREAM_NON_BLOCKING

    def stream_synchronize(self, stream: Any) -> None:
        check(self._d.cuStreamSynchronize(stream))

    def stream_destroy(self, stream: Any) -> None:
        check(self._d.cuStreamDestroy(stream))

    def alloc(self, nbytes: int, stream: Any) -> int:
        return int(check(self._d.cuMemAllocAsync(max(nbytes, 1), stream)))

    def free(self, ptr: int, stream: Any) -> None:
        check(self._d.cuMemFreeAsync(ptr, stream))

    def copy_to_device(self, dst: int, src: np.ndarray, stream: Any) -> None:
        if src.nbytes:
            check(self._d.cuMemcpyHtoDAsync(dst, src.ctypes.data, src.nbytes, stream))

    def copy_to_host(self, dst: np.ndarray, src: int, stream: Any) -> None:
        if dst.nbytes:
            check(self._d.cuMemcpyDtoHAsync(dst.ctypes.data, src, dst.nbytes, stream))

    def copy_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        if nbytes:
            check(self._d.cuMemcpyDtoDAsync(dst, src, nbytes, stream))

    def memset_zero(self, dst: int, nbytes: int, stream: Any) -> None:
        if nbytes:
            check(self._d.cuMemsetD8Async(dst, 0, nbytes, stream))

    def load_module(self, image: ModuleImage) -> Any:
        """The cubin for this device's arch when the artifact has one, else the PTX
        JIT-compiled by nvJitLink for it (FMA contraction off)."""
        self._current()
        cubin = image.cubins.get(self.arch) or ptx_to_cubin(image.ptx, self.arch)
        return check(self._d.cuModuleLoadData(cubin))

    def function(self, module: Any, name: str) -> Any:
        return check(self._d.cuModuleGetFunction(module, name.encode()))

    def launch(self, fn: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: Any, args: list[tuple[str, int]]) -> None:
        params = (tuple(v for _, v in args), tuple(_PARAM_TYPES[k] for k, _ in args)) \
            if args else 0
        check(self._d.cuLaunchKernel(fn, *grid, *block, shared_bytes, stream, params, 0))

    def load_custom(self, rec: Any) -> Any:
        """A custom call's kernel (``oxla_kernels.DeviceKernel``,
        :mod:`oxla_codegen_llvm.gpu.custom_call`): its cubin when it is for this
        device's arch, else its PTX JIT-compiled for it; ``(module, function)``."""
        self._current()
        if rec.format == "cubin" and rec.arch == self.arch:
            image = rec.image
        else:
            ptx = rec.extra.get("ptx") or (rec.image if rec.format == "ptx" else None)
            if ptx is None:
                raise OxlaError(f"custom call kernel {rec.entry}: its cubin is for "
                                f"{rec.arch or '?'}, not {self.arch}, and it has no PTX")
            image = ptx_to_cubin(ptx.decode() if isinstance(ptx, bytes) else ptx, self.arch)
        module = check(self._d.cuModuleLoadData(image))
        return module, check(self._d.cuModuleGetFunction(module, rec.entry.encode()))

    def launch_custom(self, kernel: Any, grid: tuple[int, int, int],
                      block: tuple[int, int, int], shared_bytes: int, stream: Any,
                      args: list[tuple[str, Any, int]]) -> None:
        """``cuLaunchKernel`` of a custom call's kernel: buffers as pointers, then
        scalars (``f32`` as float, ``i64`` as a 64-bit integer)."""
        self.launch(kernel[1], grid, block, shared_bytes, stream,
                    [(k, v) for k, v, _ in args])

    def gemm(self, call: GemmCall, stream: Any) -> None:
        if self._blas is None:
            self._blas = CuBLAS()
        self._blas.gemm(call, int(stream))

    def fft(self, call: FftCall, stream: Any) -> None:
        """cuFFT (:class:`oxla_backend_cuda.cufft.CuFFT`, plans kept per transform), the
        scale of an inverse by cuBLAS."""
        if self._fft is None:
            if self._blas is None:
                self._blas = CuBLAS()
            self._fft = CuFFT(self.copy_device, self._blas.scal)
        self._fft.run(call, stream)

    def nccl_world(self, comm: Any) -> Any:
        """The NCCL communicator of the MPI job ``comm`` on this device
        (:func:`oxla_backend_cuda.nccl.world`; collective)."""
        self._current()
        return world(comm)

    def nccl(self, calls: list, comm: Any, stream: Any) -> Any:
        """Enqueues one NCCL group on ``stream`` (:func:`oxla_backend_cuda.nccl.run_group`);
        the caller polls the returned group's ``done()`` (:meth:`stream_done`)."""
        self._current()
        return run_group(calls, comm, int(stream),
                         lambda ptr, n: self.memset_zero(ptr, n, stream),
                         lambda: self.stream_done(stream))

    def stream_done(self, stream: Any) -> bool:
        """``cuStreamQuery``: True once the stream's work completed, False while it runs.

        Raises:
            OxlaError: the stream's work failed.
        """
        err, = self._d.cuStreamQuery(stream)
        if err == self._d.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((err,))
        return True

    def begin_capture(self, stream: Any) -> None:
        mode = self._d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        check(self._d.cuStreamBeginCapture(stream, mode))

    def end_capture(self, stream: Any) -> Any:
        graph = check(self._d.cuStreamEndCapture(stream))
        exe = check(self._d.cuGraphInstantiate(graph, 0))
        check(self._d.cuGraphDestroy(graph))
        return exe

    def graph_launch(self, graph: Any, stream: Any) -> None:
        check(self._d.cuGraphLaunch(graph, stream))

    def graph_destroy(self, graph: Any) -> None:
        check(self._d.cuGraphExecDestroy(graph))
