"""The simulated device (``OXLA_CUDA_DEVICE=sim``, ``OXLA_HIP_DEVICE=sim``):
:class:`~oxla_codegen_llvm.gpu.device.Device` over host memory, so the whole runtime path
of a GPU backend runs on a machine without a GPU.

* memory: each ``alloc`` is a host block (64-byte aligned); a device pointer is its host
  address, so kernels' host twins read and write it directly. Every pointer a copy, a
  launch or a GEMM is handed must lie inside a live block (an offset or marshalling bug
  is an error naming the pointer, not a silent overwrite);
* ``launch``: the kernel's host twin (``oxla_codegen_llvm.simt.HostTwin``) runs the grid,
  with the device's warp (wavefront) size: 32 for CUDA and RDNA, 64 for CDNA;
* ``launch_custom`` (a custom call's kernel): its ``host`` function on the buffers'
  bytes, or its PTX in gpuocelot (:mod:`oxla_codegen_llvm.gpu.custom_call`), buffers
  copied into memory the emulator's process maps and the results copied back;
* ``gemm``: :func:`oxla_codegen_llvm.gpu.gemm.gemm_reference`, the BLAS libraries'
  documented semantics in numpy, on the call's own arguments;
* ``fft``: :func:`oxla_codegen_llvm.gpu.fft.fft_reference`, likewise for the FFT
  libraries (unnormalized inverse, then the scale; a C2R input overwritten);
* streams run their work at once, in order; capture (``begin_capture`` ..
  ``end_capture``) records the work instead of running it, and ``graph_launch`` replays
  the recording, as a CUDA/HIP graph replays its nodes.

``stats`` counts what ran (launches, GEMMs, FFTs, copies, graph launches, bytes in use).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError, OxlaError
from oxla_codegen_llvm.gpu.custom_call import ocelot_ptx
from oxla_codegen_llvm.gpu.fft import FftCall, fft_reference
from oxla_codegen_llvm.gpu.gemm import GemmCall, gemm_reference
from oxla_codegen_llvm.gpu.nccl import MpiComm, NcclCall, ReferenceGroup, start_reference
from oxla_codegen_llvm.simt import ocelot
from oxla_codegen_llvm.simt.host import HostTwin

ALIGN = 64


@dataclass
class SimStream:
    id: int
    capture: list[Callable[[], None]] | None = None


@dataclass
class SimGraph:
    """A recorded launch list (what a captured CUDA graph holds)."""

    nodes: list[Callable[[], None]] = field(default_factory=list)


class SimDevice:
    """The simulated device (module doc)."""

    arch = "sim"
    dlpack_device = (1, 0)  # kDLCPU: its memory is host memory, readable as such

    def __init__(self, vendor: str = "CUDA", warp_size: int = 32, ordinal: int = 0):
        self.name = f"simulated {vendor} device (host memory, host-twin kernels)"
        self.warp_size = warp_size
        self.ordinal = ordinal  # which of the host's OXLA_SIM_DEVICE_COUNT devices
        self._blocks: dict[int, np.ndarray] = {}  # address -> its host block
        self._starts: list[int] = []
        self._ids = itertools.count()
        self.stats = {"launches": 0, "gemms": 0, "ffts": 0, "nccl_groups": 0, "copies": 0,
                      "graph_launches": 0, "captures": 0, "allocs": 0, "bytes_in_use": 0}

    # -- memory ---------------------------------------------------------------------
    def alloc(self, nbytes: int, stream: Any) -> int:
        raw = np.empty(max(int(nbytes), 1) + ALIGN, np.uint8)
        ptr = (raw.ctypes.data + ALIGN - 1) // ALIGN * ALIGN
        self._blocks[ptr] = raw[ptr - raw.ctypes.data:][:max(int(nbytes), 1)]
        bisect.insort(self._starts, ptr)
        self.stats["allocs"] += 1
        self.stats["bytes_in_use"] += self._blocks[ptr].nbytes
        return ptr

    def free(self, ptr: int, stream: Any) -> None:
        block = self._blocks.pop(ptr, None)
        if block is None:
            raise OxlaError(f"simulated device: free of {ptr:#x}, which is no allocation")
        self._starts.remove(ptr)
        self.stats["bytes_in_use"] -= block.nbytes

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        """``nbytes`` of device memory at ``ptr`` as a writable ``uint8`` array.

        Raises:
            OxlaError: the range is not inside one live allocation.
        """
        i = bisect.bisect_right(self._starts, ptr) - 1
        if i >= 0:
            start = self._starts[i]
            block = self._blocks[start]
            if ptr + nbytes <= start + block.nbytes:
                return block[ptr - start:ptr - start + nbytes]
        raise OxlaError(f"simulated device: {nbytes} bytes at {ptr:#x} are outside every "
                        "allocation")

    def owns(self, ptr: int, nbytes: int) -> bool:
        """Whether ``nbytes`` at ``ptr`` lie inside one live allocation (a DLPack input in
        host memory the device did not allocate is copied in, not read in place)."""
        try:
            self.view(ptr, nbytes)
        except OxlaError:
            return False
        return True

    def _run(self, stream: SimStream, work: Callable[[], None]) -> None:
        if stream.capture is not None:
            stream.capture.append(work)
        else:
            work()

    def copy_to_device(self, dst: int, src: np.ndarray, stream: Any) -> None:
        data = np.ascontiguousarray(src).reshape(-1).view(np.uint8).copy()
        target = self.view(dst, data.nbytes)

        def work():
            target[...] = data
            self.stats["copies"] += 1
        self._run(stream, work)

    def copy_to_host(self, dst: np.ndarray, src: int, stream: Any) -> None:
        source = self.view(src, dst.nbytes)
        out = dst.reshape(-1).view(np.uint8)

        def work():
            out[...] = source
            self.stats["copies"] += 1
        self._run(stream, work)

    def copy_device(self, dst: int, src: int, nbytes: int, stream: Any) -> None:
        source, target = self.view(src, nbytes), self.view(dst, nbytes)

        def work():
            target[...] = source
            self.stats["copies"] += 1
        self._run(stream, work)

    def memset_zero(self, dst: int, nbytes: int, stream: Any) -> None:
        target = self.view(dst, nbytes)

        def work():
            target[...] = 0
        self._run(stream, work)

    # -- streams and graphs ------------------------------------------------------------
    def make_current(self) -> None:
        return None

    def stream_create(self) -> SimStream:
        return SimStream(next(self._ids))

    def stream_synchronize(self, stream: Any) -> None:
        if stream.capture is not None:
            raise OxlaError("simulated device: synchronize on a capturing stream")

    def stream_destroy(self, stream: Any) -> None:
        return None

    def begin_capture(self, stream: SimStream) -> None:
        stream.capture = []

    def end_capture(self, stream: SimStream) -> SimGraph:
        graph = SimGraph(stream.capture or [])
        stream.capture = None
        self.stats["captures"] += 1
        return graph

    def graph_launch(self, graph: SimGraph, stream: SimStream) -> None:
        def work():
            for node in graph.nodes:
                node()
            self.stats["graph_launches"] += 1
        self._run(stream, work)

    def graph_destroy(self, graph: Any) -> None:
        return None

    # -- modules and launches --------------------------------------------------------------
    def load_module(self, image: Any) -> Any:
        """Host twins of ``image.kernels`` (a backend's module image)."""
        return HostTwin(image.kernels, self.warp_size) if image.kernels else None

    def function(self, module: Any, name: str) -> Any:
        if module is None:
            raise OxlaError(f"simulated device: no kernel '{name}' in the module")
        return (module, name)

    def launch(self, fn: Any, grid: tuple[int, int, int], block: tuple[int, int, int],
               shared_bytes: int, stream: Any, args: list[tuple[str, int]]) -> None:
        for kind, value in args:
            if kind == "buf" and value:
                self.view(value, 0)  # the pointer is inside an allocation
        twin, name = fn
        values = [int(v) for _, v in args]

        def work():
            twin.launch(name, tuple(grid), tuple(block), shared_bytes, values)
            self.stats["launches"] += 1
        self._run(stream, work)

    def load_custom(self, rec: Any) -> Any:
        """``("host", fn)`` for a record with a host function, else ``("ocelot", ptx,
        entry, library)``.

        Raises:
            NotSupportedError: a HIP code object, PTX that uses what gpuocelot lacks, or
                no gpuocelot.
        """
        if rec.host is not None:
            return ("host", rec.host)
        ptx = ocelot_ptx(rec)
        lib, why = ocelot.library()
        if lib is None:
            raise NotSupportedError(f"custom call kernel {rec.entry} needs gpuocelot on "
                                    f"the simulated device: {why}")
        return ("ocelot", ptx, rec.entry, lib)

    def launch_custom(self, kernel: Any, grid: tuple[int, int, int],
                      block: tuple[int, int, int], shared_bytes: int, stream: Any,
                      args: list[tuple[str, Any, int]]) -> None:
        bufs = [(kind, self.view(v, n)) for kind, v, n in args if kind in ("in", "out")]
        scalars = [(kind, v) for kind, v, _ in args if kind not in ("in", "out")]

        def work():
            if kernel[0] == "host":
                kernel[1]([b if kind == "out" else b.copy() for kind, b in bufs])
            else:
                _ocelot_launch(kernel, bufs, scalars, grid, block, shared_bytes)
            self.stats["launches"] += 1
        self._run(stream, work)

    def gemm(self, call: GemmCall, stream: Any) -> None:
        def work():
            gemm_reference(call, self.view)
            self.stats["gemms"] += 1
        self._run(stream, work)

    def fft(self, call: FftCall, stream: Any) -> None:
        for ptr, nbytes in ((call.src, call.in_bytes), (call.dst, call.out_bytes)):
            self.view(ptr, nbytes)  # inside an allocation
        if call.kind == "c2r":
            self.view(call.work, call.in_bytes)

        def work():
            fft_reference(call, self.view)
            self.stats["ffts"] += 1
        self._run(stream, work)

    def nccl_world(self, comm: Any) -> MpiComm:
        """The communicator NCCL calls use over the MPI job ``comm``: a duplicate of it
        (the reference's messages never meet the program's other MPI traffic), made by
        ``MPI_Comm_idup`` (``ready()`` once it exists, as a non-blocking NCCL
        communicator's init)."""
        return MpiComm.world(comm)

    def nccl(self, calls: list[NcclCall], comm: Callable[[tuple[int, ...]], Any],
             stream: Any) -> ReferenceGroup:
        """Starts one NCCL group (:func:`~oxla_codegen_llvm.gpu.nccl.start_reference`:
        non-blocking MPI on this device's memory); the caller polls its ``done()``
        against the deadline, as it polls a real GPU's stream. (A program with host
        steps is never captured into a graph.)"""
        for c in calls:  # inside an allocation
            for ptr in (c.send, c.recv):
                if ptr:
                    self.view(ptr, 1)
        self.stats["nccl_groups"] += 1
        return start_reference(calls, comm, self.view)


def host_array(device: SimDevice, ptr: int, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """A numpy view of simulated device memory (for tests and simulated producers)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    return device.view(ptr, n).view(dt).reshape(shape)




def _ocelot_launch(kernel: tuple, bufs: list[tuple[str, np.ndarray]],
                   scalars: list[tuple[str, Any]], grid: tuple[int, int, int],
                   block: tuple[int, int, int], shared_bytes: int) -> None:
    """One custom-call launch in gpuocelot: each buffer copied into memory its process
    maps, the ``out`` ones copied back; an f32 scalar passes as its 32-bit pattern."""
    _, ptx, entry, lib = kernel
    with ocelot.OcelotDevice(lib) as dev:
        mapped = []
        for _, b in bufs:
            m = dev.alloc(b.nbytes)
            m[:b.nbytes] = b
            mapped.append(m)
        vals = [m.ctypes.data for m in mapped]
        for kind, v in scalars:
            vals.append(int(np.float32(v).view(np.uint32)) if kind == "f32" else int(v))
        kinds = ["buf"] * len(mapped) + ["i64"] * len(scalars)
        dev.launch(ptx, entry, kinds, vals, grid, block, shared_bytes)
        for (kind, b), m in zip(bufs, mapped):
            if kind == "out":
                b[...] = m[:b.nbytes]
