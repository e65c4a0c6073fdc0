"""Opt-in per-kernel profiling of compiled programs (``OXLA_PROFILE=1``).

With ``OXLA_PROFILE=1`` in the environment at compile time (or
``CompileOptions(extra={"profile": True})``), the entry function reads libc's
``clock_gettime(CLOCK_MONOTONIC)`` before and after every kernel call (a loop kernel's
parallel-for, thread wake-up included; a dot's BLAS calls; an op kernel) and adds the
difference to that kernel's slot of the global ``oxla_prof`` (``[n x i64]``
nanoseconds, one slot per call site), and counts the calls in ``oxla_prof_calls``.
The labels (kernel name, kind, shapes, fused ops) are in
``exe.stats["profile_labels"]``. The option is part of the compile cache key
(``extra``), so profiled and plain code never share an entry.

:func:`read_profile` returns the counters; :func:`reset_profile` zeroes them;
``bench/profile_kernels.py`` prints the top kernels of a model. The overhead is two
``clock_gettime`` calls per kernel (~50 ns each on Linux's vDSO).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import llvmlite.ir as ir

I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
ENV = "OXLA_PROFILE"
NS_GLOBAL, CALLS_GLOBAL = "oxla_prof", "oxla_prof_calls"
MAX_SITES = 1 << 13


def enabled(extra: dict[str, Any]) -> bool:
    """True when profiling is asked for (``extra["profile"]`` or ``OXLA_PROFILE=1``)."""
    if "profile" in extra:
        return bool(extra["profile"])
    return os.environ.get(ENV, "") not in ("", "0")


class Profiler:
    """Instruments kernel call sites of one LLVM module (see the module doc).

    Attributes:
        labels: one label per call site, in slot order.
    """

    def __init__(self, module: ir.Module):
        self.module = module
        self.labels: list[str] = []
        arr = ir.ArrayType(I64, MAX_SITES)
        self._ns = ir.GlobalVariable(module, arr, NS_GLOBAL)
        self._calls = ir.GlobalVariable(module, arr, CALLS_GLOBAL)
        for g in (self._ns, self._calls):
            g.initializer = ir.Constant(arr, None)
            g.align = 64
        self._clock = ir.Function(module, ir.FunctionType(I32, [I32, PTR]), "clock_gettime")

    def now(self, b: ir.IRBuilder) -> ir.Value:
        """Emits a read of the monotonic clock; returns nanoseconds (i64)."""
        ts = b.alloca(ir.ArrayType(I64, 2))
        b.call(self._clock, [ir.Constant(I32, 1), ts])  # CLOCK_MONOTONIC
        sec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 0)]), typ=I64)
        nsec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 1)]), typ=I64)
        return b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec)

    def record(self, b: ir.IRBuilder, label: str, t0: ir.Value) -> None:
        """Emits ``oxla_prof[site] += now() - t0; oxla_prof_calls[site] += 1`` for a new
        call site labelled ``label``."""
        site = len(self.labels)
        if site >= MAX_SITES:
            return
        self.labels.append(label)
        dt = b.sub(self.now(b), t0)
        for g, inc in ((self._ns, dt), (self._calls, ir.Constant(I64, 1))):
            p = b.gep(g, [ir.Constant(I32, 0), ir.Constant(I64, site)])
            b.store(b.add(b.load(p, typ=I64), inc), p)


def kernel_label(k: Any) -> str:
    """A one-line description of a kernel: name, kind, shapes, fused ops."""
    from oxla.lowering import DotKernel, LoopKernel, OpKernel, PackKernel

    def shape(v: Any) -> str:
        return "x".join(str(d) for d in getattr(v.type, "shape", ())) or "scalar"

    if isinstance(k, DotKernel):
        t = ("T" if k.trans_lhs else "N") + ("P" if k.strategy == "packed" else "T" if k.trans_rhs
                                              else "N")
        return f"{k.name} dot b{k.batch} m{k.m} n{k.n} k{k.k} {t}"
    if isinstance(k, PackKernel):
        return f"{k.name} pack {shape(k.src)} perm{list(k.perm)}"
    if isinstance(k, LoopKernel):
        ops = list(dict.fromkeys(o.name.split(".")[-1] for o in k.fused_ops
                                 if o.name != "stablehlo.constant"))
        return f"{k.name} loop {shape(k.root)} [{','.join(ops)}]"
    if isinstance(k, OpKernel):
        ops = list(dict.fromkeys(o.name.split(".")[-1] for o in k.fused_ops
                                 if o.name != "stablehlo.constant"))
        return f"{k.name} op {shape(k.op.results[0])} [{','.join(ops)}]"
    if hasattr(k, "label"):  # kernels defined elsewhere (conv.ConvKernel)
        return k.label()
    return f"{k.name} {type(k).__name__}"


def _counters(exe: Any) -> tuple[Any, Any, list[str]]:
    labels = list(exe.stats.get("profile_labels") or [])
    jit = exe._jit
    if not labels or not hasattr(jit, "global_address"):
        return None, None, []
    arr = ctypes.c_int64 * len(labels)
    ns = arr.from_address(jit.global_address(NS_GLOBAL))
    calls = arr.from_address(jit.global_address(CALLS_GLOBAL))
    return ns, calls, labels


def read_profile(exe: Any) -> list[tuple[str, int, int]]:
    """(label, total nanoseconds, calls) per call site of a profiled cpu executable;
    empty when it was compiled without profiling."""
    ns, calls, labels = _counters(exe)
    return [(lab, int(ns[i]), int(calls[i])) for i, lab in enumerate(labels)]


def reset_profile(exe: Any) -> None:
    """Zeroes the counters of a profiled cpu executable (no-op otherwise)."""
    ns, calls, labels = _counters(exe)
    for i in range(len(labels)):
        ns[i] = calls[i] = 0
