"""The cpu backend's collectives under MPI: compiled code calling ``libmpi`` through its
C ABI, no Python on the hot path.

The generated code calls its runtime ops through one function pointer
(``oxla_collective_callback``: ``(op_index, ins, outs)``, see
:mod:`oxla_backend_cpu.collectives`), normally the Python :class:`Runtime` callback.
Under MPI (one rank per device, ``oxla.sharding.mpi``), :func:`attach` points it at a
dispatcher compiled here with llvmlite, one ``switch`` case per runtime op it handles:

* ``all_reduce`` and ``reduce_scatter`` (flattened device ids; ``reduce_scatter`` along
  the leading non-unit dimension): ``MPI_Iallreduce`` / ``MPI_Ireduce_scatter_block``
  with the program's own combiner, registered once with ``MPI_Op_create`` (an adapter to
  MPI's user-function signature) over a contiguous datatype of the combiner's element;
* ``all_gather`` (flattened ids, any ``all_gather_dim``): ``MPI_Iallgather`` into a
  vector datatype resized to one peer's block, so each block lands strided along the
  gather dimension;
* ``all_to_all`` (cross-partition, one operand, any split/concat dimensions):
  ``MPI_Ialltoallw`` with one vector datatype for the send chunks along
  ``split_dimension`` and one for the receive blocks along ``concat_dimension``
  (displacements in bytes);
* ``collective_permute`` (cross-partition): ``MPI_Isend`` to this rank's target and
  ``MPI_Irecv`` from its source on a duplicate of the world communicator (tag = op
  index); a rank that no pair targets writes zeros (spec "collective_permute");
* ``partition_id`` / ``replica_id``: the rank / 0 stored directly.

Every request is polled with ``MPI_Testall`` against the ``OXLA_COLLECTIVE_TIMEOUT``
deadline (``MPI_Wtime``, yielding the CPU between polls); on a timeout the dispatcher
calls back into Python once to print which op and rank, then ``MPI_Abort``. An operand
that aliases its result is copied first (MPI forbids overlapping send and receive
buffers). Any other runtime op, or an op outside these forms, goes to the previous
(Python) callback. Handles come from mpi4py's public ``handle`` attribute; their LLVM
type and the constants that differ per implementation are :data:`ABI`.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from oxla_codegen_llvm.jit import compile_ir
from oxla_codegen_llvm.target import CPUTarget

ABI = {
    "mpich": {"handle": "i32", "request": "i32", "status_ignore": 1, "in_place": -1},
    "openmpi": {"handle": "ptr", "request": "ptr", "status_ignore": 0, "in_place": 1},
}
"""Per MPI family (``oxla.sharding.mpi.mpi_library()["family"]``): the LLVM type of
``MPI_Comm``/``MPI_Datatype``/``MPI_Op`` and of ``MPI_Request`` (MPICH's ``mpi.h``:
``int``; Open MPI's: pointers), and the values of ``MPI_STATUS(ES)_IGNORE`` and
``MPI_IN_PLACE``."""

_INT_MAX = 2**31 - 1  # MPI counts and byte displacements are C ints
_TIMEOUT_CB = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_FUNCS = ("MPI_Iallreduce", "MPI_Iallgather", "MPI_Ireduce_scatter_block",
          "MPI_Ialltoallw", "MPI_Isend", "MPI_Irecv", "MPI_Testall", "MPI_Wtime",
          "MPI_Op_create")
_PARAMS = ("idx", "ins", "outs")  # the dispatcher's parameters (not renamed per case)


class NativeCollectives:
    """The dispatcher attached to one executable (keeps its code and MPI objects alive).

    Attributes:
        native: runtime op index -> kind, for the ops handled in native code.
        fallback: runtime op indices left to the Python callback.
    """

    def __init__(self) -> None:
        self.native: dict[int, str] = {}
        self.fallback: list[int] = []
        self._keep: list[Any] = []

    def summary(self) -> str:
        """``native MPI collectives: all_reduce 2, all_to_all 1; python fallbacks: 0``."""
        kinds: dict[str, int] = {}
        for k in self.native.values():
            kinds[k] = kinds.get(k, 0) + 1
        return ("native MPI collectives: " + (", ".join(f"{k} {n}" for k, n in
                                                       sorted(kinds.items())) or "none")
                + f"; python fallbacks: {len(self.fallback)}")


class _Ctx:
    """What the per-kind emitters share: the ABI, this rank, the communicators (one per
    process group, split once), the module-level lines (globals, adapters) and the
    ``MPI_Op_create`` calls of ``oxla_mpi_init``."""

    def __init__(self, comm: Any, family: str, nc: NativeCollectives):
        from mpi4py import MPI

        self.MPI = MPI
        self.comm = comm
        self.abi = ABI[family]
        self.ht, self.rq = self.abi["handle"], self.abi["request"]
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.nc = nc
        self.globals: list[str] = []
        self.init: list[str] = []
        self._comms: dict[tuple, Any] = {}
        self._p2p: Any = None

    def keep(self, obj: Any) -> Any:
        self.nc._keep.append(obj)
        return obj

    def handle(self, obj: Any) -> str:
        """``obj``'s MPI handle (mpi4py's ``.handle``) as a typed LLVM operand."""
        return _handle(int(obj.handle), self.ht)

    def group_comm(self, groups: list[list[int]]) -> Any:
        """The communicator of this rank's group (ranks ordered as in the group), or
        ``MPI.COMM_NULL`` when the rank is in none; every rank splits, in op order."""
        key = tuple(tuple(g) for g in groups)
        if key not in self._comms:
            gs = groups or [list(range(self.size))]
            mine = [i for i, g in enumerate(gs) if self.rank in g]
            c = self.comm.Split(mine[0] if mine else self.MPI.UNDEFINED,
                                gs[mine[0]].index(self.rank) if mine else 0)
            self._comms[key] = self.keep(c)
        return self._comms[key]

    def p2p_comm(self) -> Any:
        """A duplicate of the world communicator for ``collective_permute`` messages (so
        they never match another library's point-to-point traffic)."""
        if self._p2p is None:
            self._p2p = self.keep(self.comm.Dup())
        return self._p2p

    def datatype(self, dt: Any) -> Any:
        return self.keep(dt.Commit())

    def const_array(self, name: str, elem: str, values: list[str]) -> str:
        """Defines ``@name = [n x elem]`` of ``values`` (LLVM operands without type)."""
        self.globals.append(f"@{name} = internal constant [{len(values)} x {elem}] "
                            f"[{', '.join(f'{elem} {v}' for v in values)}]")
        return f"@{name}"


def _handle(v: int, kind: str) -> str:
    if kind == "ptr":
        return f"ptr inttoptr (i64 {v} to ptr)"
    v &= 0xFFFFFFFF
    return f"i32 {v - (1 << 32) if v >= 1 << 31 else v}"


def _bare(operand: str) -> str:
    """A typed operand without its type (``i32 5`` -> ``5``)."""
    return operand.split(" ", 1)[1]


def _rows(shape, dim: int, itemsize: int) -> tuple[int, int, int]:
    """``shape`` seen as ``(outer, shape[dim], inner bytes)`` around dimension ``dim``."""
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64)) * itemsize
    return outer, int(shape[dim]), inner


def _strided(ctx: _Ctx, shape, dim: int, block: int, itemsize: int,
             extent: int | None = None) -> Any:
    """An MPI datatype of one ``block``-long slab of ``shape`` along ``dim`` (in bytes:
    ``outer`` runs of ``block * inner`` bytes, ``shape[dim] * inner`` apart), resized to
    ``extent`` bytes when given."""
    outer, n, inner = _rows(shape, dim, itemsize)
    t = ctx.MPI.BYTE.Create_vector(outer, block * inner, n * inner)
    if extent is not None:
        t = t.Create_resized(0, extent)
    return ctx.datatype(t)


def _fits(*counts: int) -> bool:
    return all(0 <= c <= _INT_MAX for c in counts)


# ---------------------------------------------------------------------------
# Per-kind emitters: (ctx, desc, index) -> the case block's lines, or None (fallback).
# Locals are renamed per case by :func:`_rename`; ``%i``/``%o`` are the first operand
# and result, ``%r`` the request array waited on by ``oxla_mpi_wait``.


def _io(rq: str, nreq: int) -> list[str]:
    return ["  %i = load ptr, ptr %ins", "  %o = load ptr, ptr %outs",
            f"  %r = alloca [{nreq} x {rq}]"]


def _private_copy(label: str, nbytes: int) -> list[str]:
    """``%src``: the operand, or a malloc'd copy of it when it aliases the result
    (``%tofree`` is that copy or null)."""
    return ["  %same = icmp eq ptr %i, %o",
            "  br i1 %same, label %copy, label %go",
            "copy:", f"  %tmp = call ptr @malloc(i64 {nbytes})",
            f"  call void @llvm.memcpy.p0.p0.i64(ptr %tmp, ptr %i, i64 {nbytes}, i1 false)",
            "  br label %go",
            "go:", f"  %src = phi ptr [ %tmp, %copy ], [ %i, %{label} ]",
            f"  %tofree = phi ptr [ %tmp, %copy ], [ null, %{label} ]"]


def _wait(index: int, nreq: int) -> list[str]:
    return [f"  call void @oxla_mpi_wait(ptr %r, i32 {nreq}, i64 {index})"]


def _ids(ctx: _Ctx, d: Any, index: int) -> list[str] | None:
    return ["  %o = load ptr, ptr %outs",
            f"  store i32 {ctx.rank if d.kind == 'partition_id' else 0}, ptr %o"]


def _flattened_group(ctx: _Ctx, d: Any) -> Any:
    """The group communicator of a reducing/gathering op over flattened device ids (the
    partitioner's form), else None."""
    if not (d.channel > 0 and d.global_ids and len(d.ins) == 1 and len(d.outs) == 1):
        return None
    c = ctx.group_comm(d.groups)
    return None if c == ctx.MPI.COMM_NULL else c


def _all_gather(ctx: _Ctx, d: Any, index: int) -> list[str] | None:
    c = _flattened_group(ctx, d)
    if c is None:
        return None
    shape, dt = d.ins[0]
    isz = np.dtype(dt).itemsize
    dim = int(d.attrs.get("all_gather_dim", 0))
    nbytes = int(np.prod(shape, dtype=np.int64)) * isz
    _, n, inner = _rows(shape, dim, isz)
    out_shape = d.outs[0][0]
    if not _fits(nbytes, int(np.prod(out_shape, dtype=np.int64)) * isz):
        return None
    block = _strided(ctx, out_shape, dim, n, isz, extent=n * inner)
    byte = ctx.handle(ctx.MPI.BYTE)
    return _io(ctx.rq, 1) + [
        f"  call i32 @MPI_Iallgather(ptr %i, i32 {nbytes}, {byte}, ptr %o, i32 1, "
        f"{ctx.handle(block)}, {ctx.handle(c)}, ptr %r)"] + _wait(index, 1)


def _reducing(ctx: _Ctx, d: Any, index: int) -> list[str] | None:
    """``all_reduce`` and ``reduce_scatter`` with the program's combiner as an MPI op."""
    c = _flattened_group(ctx, d)
    if c is None or d.combine is None:
        return None
    if d.kind == "reduce_scatter":
        dim = int(d.attrs.get("scatter_dimension", 0))
        if int(np.prod(d.outs[0][0][:dim], dtype=np.int64)) != 1:
            return None
    count = int(np.prod(d.ins[0][0], dtype=np.int64))
    if not _fits(count):
        return None
    ht = ctx.ht
    tdt = ctx.handle(ctx.datatype(ctx.MPI.BYTE.Create_contiguous(
        np.dtype(d.region_dtype).itemsize)))
    fn = ctypes.cast(d.combine, ctypes.c_void_p).value
    ctx.globals += [
        f"@opslot{index} = internal global {ht} {'null' if ht == 'ptr' else '0'}",
        f"define internal void @adapter{index}(ptr %a, ptr %b, ptr %n, ptr %t) {{",
        "  %k = load i32, ptr %n", "  %k64 = sext i32 %k to i64",
        f"  %f = inttoptr i64 {fn} to ptr",
        "  call void %f(ptr %b, ptr %a, i64 %k64)", "  ret void", "}"]
    ctx.init.append(f"  call i32 @MPI_Op_create(ptr @adapter{index}, i32 1, "
                    f"ptr @opslot{index})")
    in_place = f"inttoptr (i64 {ctx.abi['in_place']} to ptr)"
    code = _io(ctx.rq, 1) + [
        "  %same = icmp eq ptr %i, %o",
        f"  %src = select i1 %same, ptr {in_place}, ptr %i",
        f"  %op = load {ht}, ptr @opslot{index}"]
    if d.kind == "all_reduce":
        code.append(f"  call i32 @MPI_Iallreduce(ptr %src, ptr %o, i32 {count}, {tdt}, "
                    f"{ht} %op, {ctx.handle(c)}, ptr %r)")
    else:
        n_out = int(np.prod(d.outs[0][0], dtype=np.int64))
        code.append(f"  call i32 @MPI_Ireduce_scatter_block(ptr %i, ptr %o, i32 {n_out}, "
                    f"{tdt}, {ht} %op, {ctx.handle(c)}, ptr %r)")
    return code + _wait(index, 1)


def _all_to_all(ctx: _Ctx, d: Any, index: int) -> list[str] | None:
    """Chunk ``j`` along ``split_dimension`` goes to group member ``j``; the block from
    member ``j`` lands at offset ``j`` along ``concat_dimension`` (spec "all_to_all")."""
    if d.channel <= 0 or len(d.ins) != 1 or len(d.outs) != 1:
        return None
    c = ctx.group_comm(d.groups)
    if c == ctx.MPI.COMM_NULL:
        return None
    (shape, dt), out_shape = d.ins[0], d.outs[0][0]
    split, concat = int(d.attrs["split_dimension"]), int(d.attrs["concat_dimension"])
    n = int(d.attrs["split_count"])
    if c.Get_size() != n:
        return None
    isz = np.dtype(dt).itemsize
    nbytes = int(np.prod(shape, dtype=np.int64)) * isz
    if not _fits(nbytes):
        return None
    chunk = shape[split] // n
    _, _, s_inner = _rows(shape, split, isz)
    part = out_shape[concat] // n
    _, _, r_inner = _rows(out_shape, concat, isz)
    send = _strided(ctx, shape, split, chunk, isz)
    recv = _strided(ctx, out_shape, concat, part, isz)
    ones = ctx.const_array(f"a2a_one{index}", "i32", ["1"] * n)
    sd = ctx.const_array(f"a2a_sd{index}", "i32", [str(j * chunk * s_inner) for j in range(n)])
    rd = ctx.const_array(f"a2a_rd{index}", "i32", [str(j * part * r_inner) for j in range(n)])
    st = ctx.const_array(f"a2a_st{index}", ctx.ht, [_bare(ctx.handle(send))] * n)
    rt = ctx.const_array(f"a2a_rt{index}", ctx.ht, [_bare(ctx.handle(recv))] * n)
    return _io(ctx.rq, 1) + _private_copy(f"op{index}", nbytes) + [
        f"  call i32 @MPI_Ialltoallw(ptr %src, ptr {ones}, ptr {sd}, ptr {st}, ptr %o, "
        f"ptr {ones}, ptr {rd}, ptr {rt}, {ctx.handle(c)}, ptr %r)"] + _wait(index, 1) + [
        "  call void @free(ptr %tofree)"]


def _collective_permute(ctx: _Ctx, d: Any, index: int) -> list[str] | None:
    """This rank sends to the target of its pair and receives from the source of its
    pair (partition ids are world ranks: the grid is ``1 x size``)."""
    if d.channel <= 0 or len(d.ins) != 1 or len(d.outs) != 1:
        return None
    if any(not 0 <= i < ctx.size for p in d.pairs for i in p):
        return None  # the Python path reports the bad id
    shape, dt = d.ins[0]
    nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
    if not _fits(nbytes):
        return None
    targets = [t for s, t in d.pairs if s == ctx.rank]
    sources = [s for s, t in d.pairs if t == ctx.rank]
    byte, c = ctx.handle(ctx.MPI.BYTE), ctx.handle(ctx.p2p_comm())
    nreq = len(targets[:1]) + len(sources[:1])
    code = _io(ctx.rq, max(nreq, 1)) + _private_copy(f"op{index}", nbytes)
    k = 0
    if sources:
        code.append(f"  call i32 @MPI_Irecv(ptr %o, i32 {nbytes}, {byte}, i32 {sources[0]}, "
                    f"i32 {index}, {c}, ptr %r)")
        k = 1
    elif nbytes:
        code.append(f"  call void @llvm.memset.p0.i64(ptr %o, i8 0, i64 {nbytes}, i1 false)")
    if targets:
        code += [f"  %r1 = getelementptr {ctx.rq}, ptr %r, i64 {k}",
                 f"  call i32 @MPI_Isend(ptr %src, i32 {nbytes}, {byte}, i32 {targets[0]}, "
                 f"i32 {index}, {c}, ptr %r1)"]
    if nreq:
        code += _wait(index, nreq)
    return code + ["  call void @free(ptr %tofree)"]


EMITTERS: dict[str, Callable[[_Ctx, Any, int], list[str] | None]] = {
    "partition_id": _ids, "replica_id": _ids, "all_gather": _all_gather,
    "all_reduce": _reducing, "reduce_scatter": _reducing, "all_to_all": _all_to_all,
    "collective_permute": _collective_permute,
}
"""The runtime ops handled natively, by descriptor kind."""


def _libmpi_symbols() -> dict[str, int]:
    """Addresses of the MPI functions in the libmpi that mpi4py loaded."""
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            if "/libmpi.so" in line:
                path = line.split()[-1]
                break
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) if path else ctypes.CDLL(None)
    return {n: ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0 for n in _FUNCS}


def _rename(line: str, index: int) -> str:
    """SSA names and labels unique per case block (they share the dispatcher)."""
    if re.fullmatch(r"[A-Za-z_]\w*:", line):
        return f"{line[:-1]}_{index}:"
    return re.sub(r"%([A-Za-z_]\w*)\b",
                  lambda m: m.group(0) if m.group(1) in _PARAMS or m.group(1) == f"op{index}"
                  else f"%{m.group(1)}_{index}", line)


def _declarations(ht: str) -> list[str]:
    return [f"declare i32 @MPI_Iallreduce(ptr, ptr, i32, {ht}, {ht}, {ht}, ptr)",
            f"declare i32 @MPI_Iallgather(ptr, i32, {ht}, ptr, i32, {ht}, {ht}, ptr)",
            f"declare i32 @MPI_Ireduce_scatter_block(ptr, ptr, i32, {ht}, {ht}, {ht}, ptr)",
            f"declare i32 @MPI_Ialltoallw(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, {ht}, ptr)",
            f"declare i32 @MPI_Isend(ptr, i32, {ht}, i32, i32, {ht}, ptr)",
            f"declare i32 @MPI_Irecv(ptr, i32, {ht}, i32, i32, {ht}, ptr)",
            "declare i32 @MPI_Testall(i32, ptr, ptr, ptr)", "declare double @MPI_Wtime()",
            "declare i32 @MPI_Op_create(ptr, i32, ptr)", "declare i32 @sched_yield()",
            "declare ptr @malloc(i64)", "declare void @free(ptr)",
            "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)",
            "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)"]


def _wait_function(status_ignore: int, timeout: float, on_timeout: int) -> list[str]:
    """``oxla_mpi_wait(reqs, n, op_index)``: ``MPI_Testall`` until done or the deadline."""
    status = f"inttoptr (i64 {status_ignore} to ptr)"
    return [
        "define internal void @oxla_mpi_wait(ptr %r, i32 %n, i64 %idx) {",
        "entry:", "  %flag = alloca i32", "  %t0 = call double @MPI_Wtime()",
        f"  %deadline = fadd double %t0, {float(timeout):e}", "  br label %loop",
        "loop:", f"  call i32 @MPI_Testall(i32 %n, ptr %r, ptr %flag, ptr {status})",
        "  %f = load i32, ptr %flag", "  %done = icmp ne i32 %f, 0",
        "  br i1 %done, label %exit, label %check",
        "check:", "  %now = call double @MPI_Wtime()",
        "  %late = fcmp ogt double %now, %deadline", "  br i1 %late, label %late_, label %yield",
        "yield:", "  call i32 @sched_yield()", "  br label %loop",
        "late_:", f"  %cb = inttoptr i64 {on_timeout} to ptr",
        "  call void %cb(i64 %idx)", "  br label %exit",
        "exit:", "  ret void", "}"]


def attach(exe: Any, comm: Any, family: str, timeout: float) -> NativeCollectives | None:
    """Points ``exe``'s runtime-op callback at native MPI code (every rank calls this,
    in the same order: it splits communicators).

    Args:
        exe: a cpu executable (``exe.runtime``: ``describe`` and ``callback_slot``).
        comm: ``MPI.COMM_WORLD`` (mpi4py); a rank is device ``comm.Get_rank()``.
        family: ``mpich`` or ``openmpi`` (:data:`ABI`).
        timeout: seconds a collective may wait before every rank is aborted.

    Returns:
        The dispatcher (its ``native`` ops may be empty), or None when ``exe`` has no
        runtime ops or ``family`` is unknown (the Python path then runs them).
    """
    rt = getattr(exe, "runtime", None)
    if rt is None or not getattr(rt, "callback_slot", 0) or family not in ABI:
        return None
    nc = NativeCollectives()
    ctx = _Ctx(comm, family, nc)
    cases: list[str] = []
    blocks: list[str] = []
    index = 0
    while (d := rt.describe(index)) is not None:
        emit = EMITTERS.get(d.kind)
        code = emit(ctx, d, index) if emit is not None else None
        if code:
            nc.native[index] = d.kind
            cases.append(f"i64 {index}, label %op{index}")
            blocks += [f"op{index}:"] + [_rename(x, index) for x in code] + ["  ret void"]
        else:
            nc.fallback.append(index)
        index += 1
    if not nc.native:
        return nc
    on_timeout = ctx.keep(_timeout_callback(rt, comm, ctx.rank, timeout))
    fallback = ctypes.c_void_p.from_address(rt.callback_slot).value or 0
    text = "\n".join(
        _declarations(ctx.ht) + ctx.globals
        + ["define void @oxla_mpi_init() {", *ctx.init, "  ret void", "}"]
        + _wait_function(ctx.abi["status_ignore"], timeout,
                         ctypes.cast(on_timeout, ctypes.c_void_p).value)
        + ["define void @oxla_mpi_dispatch(i64 %idx, ptr %ins, ptr %outs) {",
           "entry:", f"  switch i64 %idx, label %fallback [ {' '.join(cases)} ]", *blocks,
           "fallback:", f"  %fb = inttoptr i64 {fallback} to ptr",
           "  call void %fb(i64 %idx, ptr %ins, ptr %outs)", "  ret void", "}", ""])
    jit = ctx.keep(compile_ir(text, CPUTarget.host(), symbols=_libmpi_symbols(), opt=2))
    ctypes.CFUNCTYPE(None)(jit.address("oxla_mpi_init"))()
    rt.native = nc  # (the slot points into its code: it lives as long as the runtime)
    ctypes.c_void_p.from_address(rt.callback_slot).value = jit.address("oxla_mpi_dispatch")
    return nc


def _timeout_callback(rt: Any, comm: Any, rank: int, timeout: float):
    def late(index: int) -> None:
        d = rt.describe(index)
        what = f"'{d.kind}' (channel {d.channel})" if d is not None else f"op {index}"
        sys.stderr.flush()
        os.write(2, (f"error: {what} on rank {rank} did not complete within {timeout:g}s "
                     "(OXLA_COLLECTIVE_TIMEOUT): a rank died or never arrived; aborting "
                     "every rank\n").encode())
        time.sleep(0.5)  # (mpiexec forwards the line before the abort ends the job)
        comm.Abort(3)
        os._exit(3)  # (the native caller must not go on with the unfinished result)

    return _TIMEOUT_CB(late)


__all__ = ["attach", "NativeCollectives", "ABI", "EMITTERS"]
