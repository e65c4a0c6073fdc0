"""The GPU executable shared by the cuda and hip backends: a launch program
(:mod:`oxla_codegen_llvm.gpu.program`) run on the device of the backend's runtime
(:meth:`GPUExecutable.runtime`; a backend subclasses it with its name, runtime and
module image).

A call (one stream, taken from the runtime's pool):

1. inputs: a numpy array is copied into the executable's input slot; an object with
   ``__cuda_array_interface__`` (a :class:`~oxla_codegen_llvm.gpu.arrays.DeviceArray`, a
   torch/cupy tensor; ROCm builds use the same protocol) is read in place, and so is a
   DLPack producer's tensor on the executable's device (consumed for the call, its
   deleter run after it; :func:`~oxla_codegen_llvm.gpu.arrays.dlpack_input`);
2. the steps run: kernel launches with their buffers' addresses (``arena + offset``,
   an input's, a result slot's or a constant's), BLAS GEMMs, FFTs, copies; ``while``/``if``/
   ``case`` copy their predicate back to the host and choose there; custom calls
   launch their plugin's kernel (:mod:`oxla_codegen_llvm.gpu.custom_call`); collectives,
   streaming and probe ops run on the host between the device's steps
   (:mod:`~oxla_codegen_llvm.gpu.hostops`);
3. a loop-free program runs as one **graph**: captured on first use for its input
   addresses (input slots and the arena never move, so a call with numpy inputs always
   replays the same graph; device inputs at new addresses capture another, at most
   :data:`GRAPHS` kept), then replayed with one graph launch;
4. results: written into the executable's result slots, then copied to new numpy
   arrays (``__call__``) or new device arrays (:meth:`GPUExecutable.run_on_device`).

Nothing touches a device before the first call, so compiling needs no GPU. Calls of one
executable take its lock (its arena and slots are one set); different executables run
concurrently.
"""

from __future__ import annotations

import collections
import copy
import io
import json
import os
import threading
import weakref
from typing import Any

import numpy as np

from oxla.artifact import write_artifact
from oxla.errors import NotSupportedError, OxlaError
from oxla.interpreter import check_inputs
from oxla.interpreter.registry import TOKEN
from oxla.ir import parse_main_signature
from oxla.ir.types import TensorType
from oxla.protocols import Signature
from oxla_codegen_llvm.gpu.arrays import (
    DeviceArray,
    DLPackInput,
    device_pointer,
    dlpack_input,
    is_dlpack_producer,
)
from oxla_codegen_llvm.gpu.device import set_local_rank_from
from oxla_codegen_llvm.gpu.fft import fft_call
from oxla_codegen_llvm.gpu.gemm import dot_call
from oxla_codegen_llvm.gpu.hostops import HostCall, member_of, value_spec
from oxla_codegen_llvm.gpu.nccl import OPS as NCCL_OPS
from oxla_codegen_llvm.gpu.nccl import NcclCollectives, nccl_calls
from oxla_codegen_llvm.gpu.program import HOST_OPS_MEMBER, Program, host_ops_text
from oxla_codegen_llvm.gpu.runtime import Runtime

GRAPHS = 4
"""Captured graphs kept per executable (one per distinct set of device input addresses)."""


class _Loaded:
    """What an executable holds on one device: module, functions, constants, arena and
    slots (freed when the executable goes)."""

    def __init__(self, rt: Runtime, exe: GPUExecutable):
        self.rt = rt
        dev = rt.device
        self.module = dev.load_module(exe.image) if exe.program.kernels else None
        self.functions = {k.name: dev.function(self.module, k.name)
                          for k in exe.program.kernels}
        self.custom = [dev.load_custom(rec) for rec in exe.program.custom]
        self.ptrs: list[int] = []
        self.consts = [self._keep(rt.upload(c)) for c in exe.program.constants]
        with rt.stream() as s:
            self.arena = self._keep(rt.alloc(exe.program.temp_bytes, s))
            self.inputs = [self._keep(rt.alloc(n, s)) for n in exe.in_bytes]
            self.results = [self._keep(rt.alloc(n, s)) for n in exe.out_bytes]
        self.graphs: collections.OrderedDict[tuple, Any] = collections.OrderedDict()

    def _keep(self, ptr: int) -> int:
        self.ptrs.append(ptr)
        return ptr

    def close(self) -> None:
        for g in self.graphs.values():
            self.rt.device.graph_destroy(g)
        for p in self.ptrs:
            self.rt.release(p)


class GPUExecutable:
    """A program compiled for GPUs (module doc); a backend's subclass sets
    :attr:`backend` and :meth:`runtime`.

    Attributes:
        signature: argument and result types.
        stats: ``compile_seconds``, ``kernel_count`` (plan kernels), ``temp_bytes``,
            ``gpu_kernels`` (SIMT kernels), ``gemms``, ``archs``; after calls,
            ``graph_launches`` and ``graph_captures``.
        stages: one line per compile stage.
        program: the launch program. image: the backend's module image (its ``asm``
            text, ``archs``, artifact ``members()`` and ``kernels``).
    """

    backend = "gpu"

    def __init__(self, module_text: str, program: Program, image: Any,
                 stats: dict[str, Any], stages: list[str], signature: Signature | None = None,
                 use_graphs: bool = True):
        self.module_text = module_text
        self.program = program
        self.image = image
        self.stats = stats
        self.stages = stages
        if signature is None:  # an artifact's: read its entry's types, not its constants
            ft = parse_main_signature(module_text, "module.mlir")
            signature = Signature(tuple(ft.inputs), tuple(ft.results))
        self.signature = signature
        self.use_graphs = use_graphs and program.loop_free
        self._in_specs = [(tuple(t.shape), np.dtype(t.element_type.dtype))
                          if isinstance(t, TensorType) else None for t in signature.inputs]
        self._out_specs = [(tuple(t.shape), np.dtype(t.element_type.dtype))
                           if isinstance(t, TensorType) else None for t in signature.outputs]
        self.in_bytes = [_nbytes(s) for s in self._in_specs]
        self.out_bytes = [_nbytes(s) for s in self._out_specs]
        self._lock = threading.Lock()
        self._loaded: _Loaded | None = None
        self._host = threading.local()  # .call: the last HostCall on this thread
        self._nccl: NcclCollectives | None = None  # set by attach_mpi
        self.stats.setdefault("graph_launches", 0)
        self.stats.setdefault("graph_captures", 0)

    @property
    def llvm_ir(self) -> str:
        """The kernels' SIMT LLVM IR (``--emit llvm``)."""
        return "\n".join(k.llvm_ir for k in self.program.kernels)

    def emit(self, kind: str) -> str:
        """``asm`` (the image's assembly: PTX, AMDGCN) or ``llvm`` (the kernels' IR) text."""
        if kind == "asm":
            return self.image.asm
        if kind == "llvm":
            return self.llvm_ir
        raise OxlaError(f"the {self.backend} backend emits asm or llvm, not {kind}")

    def runtime(self) -> Runtime:
        """The runtime of the device the environment chooses (a backend overrides it).

        Raises:
            OxlaError: no device to run on.
        """
        raise NotImplementedError

    def replica(self) -> GPUExecutable:
        """The same program with its own device state (arena, slots, graphs), for
        another process of a grid running it at the same time (:mod:`.hostops`)."""
        twin = copy.copy(self)
        twin.stats = dict(self.stats)
        twin._lock, twin._loaded, twin._host = threading.Lock(), None, threading.local()
        twin._nccl = None  # an in-process grid's processes stage their collectives
        return twin

    def call_as_process(self, grid: Any, process: tuple[int, int], *args: Any) -> list:
        """Runs one call as ``process`` of a collective ``grid`` (one rank of an MPI job,
        see ``oxla.sharding.mpi``): its host-staged collectives meet the grid's other
        processes, its NCCL ones (:meth:`attach_mpi`) the other ranks; otherwise like
        ``__call__``."""
        with member_of(grid, process):
            return list(self(*args))

    def attach_mpi(self, comm: Any, family: str, timeout: float) -> NcclCollectives | None:
        """Makes this executable's collectives NCCL calls on its stream (one rank per
        GPU; :mod:`oxla_codegen_llvm.gpu.nccl`: NCCL on cuda, RCCL on hip); on the
        simulated device the same calls
        run over MPI on its memory. Every rank calls it once, in the same order, before
        its first call: it finds the rank's local rank, which picks the device when none
        is made yet (:func:`~oxla_codegen_llvm.gpu.device.set_local_rank_from`), makes
        the world's communicator and splits one per process group of the program's
        collectives, each waited for against ``timeout``.

        Args:
            comm: ``MPI.COMM_WORLD`` (mpi4py); rank 0 makes the NCCL id, every rank
                receives it over ``comm``.
            family: the MPI's ABI family (unused: NCCL needs none of MPI's handles).
            timeout: seconds (``OXLA_COLLECTIVE_TIMEOUT``) that making the
                communicators or one op's NCCL group may take: each is polled against
                it, then this rank names the op and itself and every rank is aborted
                (:meth:`~oxla_codegen_llvm.gpu.nccl.NcclCollectives.wait`).

        Returns:
            The :class:`~oxla_codegen_llvm.gpu.nccl.NcclCollectives` (``summary()``
            after a call: what ran on NCCL), or None when the program has no collective
            NCCL could run or the device has no NCCL binding.

        Raises:
            OxlaError: NCCL (RCCL) is not loadable (the error names what to install), or a
                launcher's local rank is malformed (a communicator that fails or never
                completes ends the job instead, as ``timeout`` says).
        """
        del family
        set_local_rank_from(comm)  # (the device, when not made yet: local rank % count)
        if not any(op.name in NCCL_OPS for op in self.program.host_ops):
            return None
        dev = self._load().rt.device
        if not hasattr(dev, "nccl_world"):
            return None
        nc = NcclCollectives(dev.nccl_world(comm), comm, timeout,
                             getattr(dev, "collective_library", "NCCL"))
        for op in self.program.host_ops:  # every group's communicator, now, in op order
            if op.name in NCCL_OPS:
                nc.prepare(op)
        self._nccl = nc
        return nc

    @property
    def probes(self) -> dict[str, list[np.ndarray]]:
        """``probe_id -> [value, ...]`` recorded by ``interpreter.probe`` during the last
        call on this thread (the interpreter's ``Context.probes``)."""
        call = getattr(self._host, "call", None)
        return call.probes if call is not None else {}

    def _load(self) -> _Loaded:
        if self._loaded is None:
            loaded = _Loaded(self.runtime(), self)
            weakref.finalize(self, loaded.close)
            self._loaded = loaded
        return self._loaded

    # -- calls ------------------------------------------------------------------------
    def __call__(self, *args: Any) -> list[np.ndarray]:
        """Runs the program; returns one new numpy array per result.

        Raises:
            RuntimeInputError: wrong number, shapes or dtypes of arguments.
            OxlaError: no device to run on (no vendor runtime, and the simulated device
                was not asked for).
        """
        return self._run(args, device_results=False)

    def run_on_device(self, *args: Any) -> list[Any]:
        """Like ``__call__``, but the results stay on the device:
        :class:`~oxla_codegen_llvm.gpu.arrays.DeviceArray` s (``.numpy()``, DLPack, CUDA
        array interface)."""
        return self._run(args, device_results=True)

    def _inputs(self, args: tuple) -> tuple[list[int | None], list[np.ndarray | None],
                                            list[DLPackInput]]:
        if len(args) != len(self._in_specs):
            check_inputs(self.signature.inputs, args)  # raises the count error
        device: list[int | None] = []
        held: list[DLPackInput] = []
        try:
            for i, (a, spec) in enumerate(zip(args, self._in_specs)):
                p = device_pointer(a, *spec, i) if spec is not None else None
                if p is None and spec is not None and is_dlpack_producer(a):
                    p = self._dlpack(a, spec, i, held)
                device.append(p)
            host_idx = [i for i, p in enumerate(device) if p is None]
            host: list[np.ndarray | None] = [None] * len(args)
            if host_idx:
                checked = check_inputs([self.signature.inputs[i] for i in host_idx],
                                       [args[i] for i in host_idx])
                for i, v in zip(host_idx, checked):
                    host[i] = np.ascontiguousarray(v) if self._in_specs[i] is not None else None
        except BaseException:
            for h in held:
                h.close()
            raise
        return device, host, held

    def _dlpack(self, value: Any, spec: tuple, index: int, held: list[DLPackInput]) -> int | None:
        """A DLPack producer's address on this executable's device, or None to copy it
        (host memory for a GPU; on the simulated device, host memory it did not allocate)."""
        dev = self.runtime().device
        h = dlpack_input(value, *spec, index, tuple(dev.dlpack_device))
        if h is None:
            return None
        owns = getattr(dev, "owns", None)
        if owns is not None and not owns(h.ptr, h.nbytes):
            h.close()
            return None
        held.append(h)
        return h.ptr

    def _run(self, args: tuple, device_results: bool) -> list[Any]:
        device_in, host_in, held = self._inputs(args)
        try:
            return self._run_inputs(device_in, host_in, device_results)
        finally:  # the call's stream is synchronized: producers may free their tensors
            for h in held:
                h.close()

    def _run_inputs(self, device_in: list[int | None], host_in: list[np.ndarray | None],
                    device_results: bool) -> list[Any]:
        with self._lock:
            loaded = self._load()
            rt, dev = loaded.rt, loaded.rt.device
            with rt.stream() as s:
                ptrs = []
                for i, (p, h) in enumerate(zip(device_in, host_in)):
                    if p is None:
                        p = loaded.inputs[i]
                        if h is not None:
                            dev.copy_to_device(p, h, s)
                    ptrs.append(p if self._in_specs[i] is not None else 0)
                bases = {"arg": ptrs, "result": loaded.results, "arena": [loaded.arena],
                         "const": loaded.consts}
                if self.use_graphs:
                    key = tuple(ptrs)
                    graph = loaded.graphs.get(key)
                    if graph is None:
                        dev.begin_capture(s)
                        try:
                            self._steps(self.program.steps, bases, loaded, s)
                        finally:
                            graph = dev.end_capture(s)
                        loaded.graphs[key] = graph
                        self.stats["graph_captures"] += 1
                        if len(loaded.graphs) > GRAPHS:
                            dev.graph_destroy(loaded.graphs.popitem(last=False)[1])
                    else:
                        loaded.graphs.move_to_end(key)
                    dev.graph_launch(graph, s)
                    self.stats["graph_launches"] += 1
                else:
                    host = HostCall() if self.program.host_ops else None
                    self._host.call = host
                    self._steps(self.program.steps, bases, loaded, s, host)
                outs: list[Any] = []
                for spec, slot, nb in zip(self._out_specs, loaded.results, self.out_bytes):
                    if spec is None:
                        outs.append(TOKEN)
                    elif device_results:
                        ptr = rt.alloc(nb, s)
                        dev.copy_device(ptr, slot, nb, s)
                        outs.append(DeviceArray(rt, ptr, *spec))
                    else:
                        host = np.empty(*spec)
                        dev.copy_to_host(host, slot, s)
                        outs.append(host)
        return outs

    def _steps(self, steps: list[dict[str, Any]], bases: dict[str, list[int]],
               loaded: _Loaded, s: Any, host: HostCall | None = None) -> None:
        dev = loaded.rt.device

        def addr(ref: list) -> int:
            region, index, offset = ref
            return int(bases[region][index]) + int(offset)

        for st in steps:
            op = st["op"]
            if op == "launch":
                args = [(kind, addr(v) if kind == "buf" else int(v)) for kind, v in st["args"]]
                dev.launch(loaded.functions[st["kernel"]], tuple(st["grid"]),
                           tuple(st["block"]), st["shared"], s, args)
            elif op == "custom":
                args = [(a[0], addr(a[1]), a[2]) if a[0] in ("in", "out") else
                        (a[0], a[1], 0) for a in st["args"]]
                dev.launch_custom(loaded.custom[st["kernel"]], tuple(st["grid"]),
                                  tuple(st["block"]), st["shared"], s, args)
            elif op == "gemm":
                dev.gemm(dot_call(st["batch"], st["m"], st["n"], st["k"], st["trans_lhs"],
                                  st["trans_rhs"], st["dtype"], addr(st["lhs"]),
                                  addr(st["rhs"]), addr(st["out"])), s)
            elif op == "fft":
                if not hasattr(dev, "fft"):
                    raise NotSupportedError(f"the {self.backend} device has no FFT library "
                                            "binding yet ('stablehlo.fft')")
                dev.fft(fft_call(st["type"], st["dtype"], tuple(st["length"]), st["batch"],
                                 addr(st["src"]), addr(st["dst"]), addr(st["work"])), s)
            elif op == "host":
                assert host is not None
                self._host_step(st, addr, dev, s, host)
            elif op == "copy":
                dev.copy_device(addr(st["dst"]), addr(st["src"]), st["nbytes"], s)
            elif op == "zero":
                dev.memset_zero(addr(st["dst"]), st["nbytes"], s)
            elif op == "while":
                self._steps(st["init"], bases, loaded, s, host)
                while True:
                    self._steps(st["cond"], bases, loaded, s, host)
                    if not self._predicate(st, addr, dev, s):
                        break
                    self._steps(st["body"], bases, loaded, s, host)
            elif op in ("if", "case"):
                value = self._predicate(st, addr, dev, s)
                branches = st["branches"]
                if op == "if":
                    pick = 0 if value else 1
                else:  # out of [0, n) runs the last branch (spec: case)
                    pick = value if 0 <= value < len(branches) else len(branches) - 1
                self._steps(branches[pick], bases, loaded, s, host)
            else:
                raise OxlaError(f"internal: unknown step '{op}'")

    def _host_step(self, st: dict[str, Any], addr, dev: Any, s: Any, host: HostCall) -> None:
        """A host op (:mod:`.hostops`): operands to the host, the op, results back."""
        op = self.program.host_ops[st["index"]]
        if self._nccl is not None and op.name in NCCL_OPS and \
                self._nccl_step(st, op, addr, dev, s, self._nccl):
            return
        args: list[Any] = []
        for v, ref in zip(op.operands, st["ins"]):
            spec = value_spec(v)
            if spec is None:
                args.append(TOKEN)
                continue
            a = np.empty(*spec)
            dev.copy_to_host(a, addr(ref), s)
            args.append(a)
        dev.stream_synchronize(s)
        results = host.run(op, args)
        for v, ref, r in zip(op.results, st["outs"], results):
            spec = value_spec(v)
            if spec is not None:
                dev.copy_to_device(addr(ref), np.ascontiguousarray(r, spec[1]).reshape(spec[0]),
                                   s)
        dev.stream_synchronize(s)  # the host arrays are the copies' sources

    @staticmethod
    def _nccl_step(st: dict[str, Any], op: Any, addr, dev: Any, s: Any,
                   nc: NcclCollectives) -> bool:
        """A collective as one NCCL group on the stream, waited for against the
        deadline (:meth:`NcclCollectives.run`); False (the host-staged step runs) for a
        form NCCL cannot run, which every rank decides alike."""
        kind = op.name.split(".", 1)[1]
        try:
            calls = nccl_calls(op, [addr(r) for r in st["ins"]],
                               [addr(r) for r in st["outs"]], nc.rank, nc.size)
        except NotSupportedError as e:
            nc.fallback[st["index"]] = f"{kind}: {e}"
            return False
        nc.prepare(op)
        nc.run(op, dev.nccl(calls, nc.comm, s))
        nc.native[st["index"]] = kind
        return True

    @staticmethod
    def _predicate(st: dict[str, Any], addr, dev: Any, s: Any) -> int:
        """The predicate (i1) or index (signed) copied back to the host."""
        n = st["pred_bytes"]
        host = np.empty(n, np.uint8)
        dev.copy_to_host(host, addr(st["pred"]), s)
        dev.stream_synchronize(s)
        if st["op"] != "case":
            return int(host[0] & 1)
        return int(host.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[n])[0])

    # -- artifacts --------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes a ``.oxla`` artifact: manifest, StableHLO, the launch program (JSON),
        the image's members (PTX and cubins, code objects), the kernels' SIMT IR (the
        simulated device's host twins are built from it) and the constants (``.npy``)."""
        save_artifact(self, path)


def _nbytes(spec: tuple | None) -> int:
    if spec is None:
        return 0
    shape, dtype = spec
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def program_json(program: Program) -> bytes:
    """The launch program and kernel table as JSON (the artifact's ``program.json``)."""
    return json.dumps({"steps": program.steps, "temp_bytes": program.temp_bytes,
                       "constants": len(program.constants),
                       "host_ops": len(program.host_ops)}).encode()


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def save_artifact(exe: GPUExecutable, path: str | os.PathLike[str]) -> None:
    """Writes ``exe`` to ``path`` (module doc).

    Raises:
        NotSupportedError: the program launches custom-call kernels (their launch
            records are not serialized yet), or a host step's op (collectives,
            streaming, probes; kept in ``host_ops.mlir``) does not read back alone.
    """
    if exe.program.custom:
        raise NotSupportedError(f"a {exe.backend} executable with custom-call kernels "
                                "cannot be saved yet (their launch records are not "
                                "serialized); compile the program where it runs")
    kernels = [{"name": k.name, "grid": list(k.grid), "block": list(k.block),
                "shared_bytes": int(k.shared_bytes), "llvm_ir": k.llvm_ir,
                "params": [[p.kind, int(p.value)] for p in k.params]}
               for k in exe.program.kernels]
    files = {"module.mlir": exe.module_text.encode(), "program.json": program_json(exe.program),
             "kernels.json": json.dumps(kernels).encode()}
    if exe.program.host_ops:
        files[HOST_OPS_MEMBER] = host_ops_text(exe.program.host_ops).encode()
    files.update(exe.image.members())
    for i, c in enumerate(exe.program.constants):
        files[f"const{i}.npy"] = _npy(c)
    stats = {k: v for k, v in exe.stats.items()
             if isinstance(v, int | float | str) and not k.startswith("graph_")}
    write_artifact(path, exe.backend, files, {"archs": list(exe.image.archs), "stats": stats,
                                          "stages": exe.stages})
