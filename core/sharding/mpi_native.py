"""Collectives of compiled (cpu backend) code calling MPI through its C ABI.

The cpu backend's code calls its runtime ops through one function pointer
(``oxla_collective_callback``: ``(op_index, ins, outs)``), normally a Python callback.
Under MPI, :func:`attach` points it at a dispatcher compiled here with llvmlite: for
``all_reduce``, ``all_gather``, ``reduce_scatter`` (over flattened device ids, along
the leading dimension), ``partition_id`` and ``replica_id`` it calls ``libmpi``
directly (``MPI_Iallreduce``/``MPI_Iallgather``/``MPI_Ireduce_scatter_block``,
then ``MPI_Test`` polled against the ``OXLA_COLLECTIVE_TIMEOUT`` deadline with
``MPI_Wtime``, yielding the CPU between polls), so no Python runs on the hot path. The
reduction is the program's own combiner, registered once with ``MPI_Op_create``
(an adapter to MPI's user-function signature), over a contiguous datatype of the
combiner's element size. Any other runtime op goes to the previous (Python) callback.

Handles and constants differ per implementation (MPICH: ``int`` handles,
``MPI_STATUS_IGNORE = (MPI_Status *)1``, ``MPI_IN_PLACE = (void *)-1``; Open MPI:
pointer handles, ``NULL``, ``(void *)1``): :data:`ABI` holds them, the artifact's
sidecar records the implementation and handle size it was built for, and
:func:`oxla.sharding.mpi.check_library` refuses a mismatch. On a timeout the
dispatcher calls back into Python once, to print which op and rank, then
``MPI_Abort``.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import time
from typing import Any

import numpy as np

ABI = {
    "mpich": {"handle": "i32", "request": "i32", "status_ignore": 1, "in_place": -1},
    "openmpi": {"handle": "ptr", "request": "ptr", "status_ignore": 0, "in_place": 1},
}
"""Per MPI family: the LLVM type of ``MPI_Comm``/``MPI_Datatype``/``MPI_Op`` and of
``MPI_Request``, and the values of ``MPI_STATUS_IGNORE`` and ``MPI_IN_PLACE``."""

_TIMEOUT_CB = ctypes.CFUNCTYPE(None, ctypes.c_int64)
_FUNCS = ("MPI_Iallreduce", "MPI_Iallgather", "MPI_Ireduce_scatter_block", "MPI_Test",
          "MPI_Wtime", "MPI_Op_create")


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
        kinds: dict[str, int] = {}
        for k in self.native.values():
            kinds[k] = kinds.get(k, 0) + 1
        return ("native MPI collectives: " + (", ".join(f"{k} {n}" for k, n in
                                                       sorted(kinds.items())) or "none")
                + f"; python fallbacks: {len(self.fallback)}")


def _handle(v: int, kind: str) -> str:
    if kind == "ptr":
        return f"ptr inttoptr (i64 {v} to ptr)"
    v &= 0xFFFFFFFF
    return f"i32 {v - (1 << 32) if v >= 1 << 31 else v}"


def _libmpi_symbols() -> dict[str, int]:
    """Addresses of the MPI functions in the libmpi mpi4py loaded."""
    path = None
    with open("/proc/self/maps") as f:
        for line in f:
            if "/libmpi.so" in line:
                path = line.split()[-1]
                break
    lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL) if path else ctypes.CDLL(None)
    return {n: ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0 for n in _FUNCS}


def _rename(line: str, index: int) -> str:
    """SSA names unique per case block (they share the dispatcher's function)."""
    return re.sub(r"%(i|o|r|same|src|op)\b", rf"%\g<1>_{index}", line)


def _leading(shape, dim: int) -> bool:
    return int(np.prod(shape[:dim], dtype=np.int64)) == 1


def attach(exe: Any, comm: Any, family: str, timeout: float) -> NativeCollectives | None:
    """Points ``exe``'s runtime-op callback at native MPI code (every rank calls this,
    in the same order: it splits communicators); None when ``exe`` has no runtime ops
    or llvmlite is missing (the Python path then runs them).

    Args:
        exe: a cpu backend executable (``exe.runtime`` with ``describe`` and
            ``callback_slot``).
        comm: ``MPI.COMM_WORLD`` (mpi4py); a rank is device ``comm.Get_rank()``.
        family: ``mpich`` or ``openmpi`` (:data:`ABI`).
        timeout: seconds a collective may wait before every rank is aborted.
    """
    from mpi4py import MPI

    rt = getattr(exe, "runtime", None)
    if rt is None or not getattr(rt, "callback_slot", 0) or family not in ABI:
        return None
    try:
        from oxla_codegen_llvm.jit import compile_ir
        from oxla_codegen_llvm.target import CPUTarget
    except ImportError:
        return None
    abi = ABI[family]
    ht, rq = abi["handle"], abi["request"]
    rank, size = comm.Get_rank(), comm.Get_size()
    nc = NativeCollectives()
    comms: dict[tuple, Any] = {}

    def group_comm(groups: list[list[int]]) -> Any:
        key = tuple(tuple(g) for g in groups)
        if key not in comms:
            gs = groups or [list(range(size))]
            mine = [i for i, g in enumerate(gs) if rank in g]
            c = comm.Split(mine[0] if mine else MPI.UNDEFINED,
                           gs[mine[0]].index(rank) if mine else 0)
            comms[key] = c
            nc._keep.append(c)
        return comms[key]

    decls = [f"declare i32 @MPI_Iallreduce(ptr, ptr, i32, {ht}, {ht}, {ht}, ptr)",
             f"declare i32 @MPI_Iallgather(ptr, i32, {ht}, ptr, i32, {ht}, {ht}, ptr)",
             f"declare i32 @MPI_Ireduce_scatter_block(ptr, ptr, i32, {ht}, {ht}, {ht}, ptr)",
             "declare i32 @MPI_Test(ptr, ptr, ptr)", "declare double @MPI_Wtime()",
             "declare i32 @MPI_Op_create(ptr, i32, ptr)", "declare i32 @sched_yield()"]
    body: list[str] = []
    cases: list[str] = []
    init: list[str] = []
    blocks: list[list[str]] = []
    byte = _handle(MPI._handleof(MPI.BYTE), ht)
    in_place = f"inttoptr (i64 {abi['in_place']} to ptr)"
    index = 0
    while (d := rt.describe(index)) is not None:
        kind = d.kind
        ok_ids = d.channel > 0 and d.global_ids
        ins = d.ins[0] if d.ins else None
        label = f"op{index}"
        code: list[str] = []
        if kind in ("partition_id", "replica_id"):
            code = ["  %o = load ptr, ptr %outs",
                    f"  store i32 {rank if kind == 'partition_id' else 0}, ptr %o"]
        elif kind in ("all_reduce", "reduce_scatter", "all_gather") and ok_ids and \
                len(d.ins) == 1 and len(d.outs) == 1 and group_comm(d.groups) != MPI.COMM_NULL:
            c = _handle(MPI._handleof(group_comm(d.groups)), ht)
            shape, dt = ins
            count = int(np.prod(shape, dtype=np.int64))
            head = ["  %i = load ptr, ptr %ins", "  %o = load ptr, ptr %outs",
                    f"  %r = alloca {rq}", "  %same = icmp eq ptr %i, %o",
                    f"  %src = select i1 %same, ptr {in_place}, ptr %i"]
            if kind == "all_gather" and _leading(shape, d.attrs.get("all_gather_dim", 0)):
                nbytes = count * np.dtype(dt).itemsize
                code = head + [f"  call i32 @MPI_Iallgather(ptr %i, i32 {nbytes}, {byte}, "
                               f"ptr %o, i32 {nbytes}, {byte}, {c}, ptr %r)"]
            elif kind != "all_gather" and d.combine is not None and (
                    kind == "all_reduce" or _leading(d.outs[0][0],
                                                     d.attrs.get("scatter_dimension", 0))):
                isz = np.dtype(d.region_dtype).itemsize
                t = MPI.BYTE.Create_contiguous(isz).Commit()
                nc._keep.append(t)
                tdt = _handle(MPI._handleof(t), ht)
                fn = ctypes.cast(d.combine, ctypes.c_void_p).value
                body += [f"@opslot{index} = internal global {ht} "
                         f"{'null' if ht == 'ptr' else '0'}",
                         f"define internal void @adapter{index}(ptr %a, ptr %b, ptr %n, ptr %t) {{",
                         "  %k = load i32, ptr %n", "  %k64 = sext i32 %k to i64",
                         f"  %f = inttoptr i64 {fn} to ptr",
                         "  call void %f(ptr %b, ptr %a, i64 %k64)", "  ret void", "}"]
                init.append(f"  call i32 @MPI_Op_create(ptr @adapter{index}, i32 1, "
                            f"ptr @opslot{index})")
                code = head + [f"  %op = load {ht}, ptr @opslot{index}"]
                if kind == "all_reduce":
                    code.append(f"  call i32 @MPI_Iallreduce(ptr %src, ptr %o, i32 {count}, "
                                f"{tdt}, {ht} %op, {c}, ptr %r)")
                else:
                    n_out = int(np.prod(d.outs[0][0], dtype=np.int64))
                    code.append(f"  call i32 @MPI_Ireduce_scatter_block(ptr %i, ptr %o, "
                                f"i32 {n_out}, {tdt}, {ht} %op, {c}, ptr %r)")
            if code:
                code.append(f"  call void @oxla_mpi_wait(ptr %r, i64 {index})")
        if code:
            nc.native[index] = kind
            cases.append(f"i64 {index}, label %{label}")
            blocks.append([f"{label}:"] + [_rename(x, index) for x in code] + ["  ret void"])
        else:
            nc.fallback.append(index)
        index += 1
    if not nc.native:
        return nc
    status = f"inttoptr (i64 {abi['status_ignore']} to ptr)"
    on_timeout = _timeout_callback(rt, comm, rank, timeout)
    nc._keep.append(on_timeout)
    fallback = ctypes.c_void_p.from_address(rt.callback_slot).value or 0
    text = "\n".join(decls + body + [
        "define void @oxla_mpi_init() {", *init, "  ret void", "}",
        "define internal void @oxla_mpi_wait(ptr %r, i64 %idx) {",
        "entry:", "  %flag = alloca i32", "  %t0 = call double @MPI_Wtime()",
        f"  %deadline = fadd double %t0, {float(timeout):e}", "  br label %loop",
        "loop:", f"  call i32 @MPI_Test(ptr %r, ptr %flag, ptr {status})",
        "  %f = load i32, ptr %flag", "  %done = icmp ne i32 %f, 0",
        "  br i1 %done, label %exit, label %check",
        "check:", "  %now = call double @MPI_Wtime()",
        "  %late = fcmp ogt double %now, %deadline", "  br i1 %late, label %late_, label %yield",
        "yield:", "  call i32 @sched_yield()", "  br label %loop",
        "late_:", f"  %cb = inttoptr i64 {ctypes.cast(on_timeout, ctypes.c_void_p).value} to ptr",
        "  call void %cb(i64 %idx)", "  br label %exit",
        "exit:", "  ret void", "}",
        "define void @oxla_mpi_dispatch(i64 %idx, ptr %ins, ptr %outs) {",
        "entry:", f"  switch i64 %idx, label %fallback [ {' '.join(cases)} ]",
        *[line for blk in blocks for line in blk],
        "fallback:", f"  %fb = inttoptr i64 {fallback} to ptr",
        "  call void %fb(i64 %idx, ptr %ins, ptr %outs)", "  ret void", "}", ""])
    jit = compile_ir(text, CPUTarget.host(), symbols=_libmpi_symbols(), opt=2)
    nc._keep.append(jit)
    ctypes.CFUNCTYPE(None)(jit.address("oxla_mpi_init"))()
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


__all__ = ["attach", "NativeCollectives", "ABI"]
