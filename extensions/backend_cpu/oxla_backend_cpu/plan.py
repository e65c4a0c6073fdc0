"""The cpu backend's program plan: buffers and kernels (what fusion produces, what
scheduling orders, what buffer assignment places and codegen emits)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from oxla.ir import Operation, Value


@dataclass(eq=False)
class Buf:
    """One buffer of the program.

    Attributes:
        name: a readable name for dumps (``%3``, ``arg0``, ``pack.lhs.2``).
        nbytes: size in bytes.
        kind: ``arg`` (an input, by index), ``result`` (an output, by index), ``temp``
            (in the arena, at ``offset``) or ``const`` (a global holding ``data``).
        index: argument or result index.
        offset: byte offset in the arena (temps, set by buffer assignment).
        data: the constant's array (``const`` only).
        base: for a temporary of a control-flow region, the scratch buffer its
            ``offset`` is relative to (regions get their own arena inside the parent's).
        recipe: for a ``const`` computed from another constant (weights packed at compile
            time), how: ``{"source_memory": (address, nbytes), **parameters}`` (see
            :func:`oxla_backend_cpu.packed_gemm.rebuild`); the compile cache stores that
            instead of the data.
    """

    name: str
    nbytes: int
    kind: str
    index: int = -1
    offset: int = -1
    data: np.ndarray | None = None
    base: Buf | None = None
    recipe: dict | None = None


@dataclass(eq=False)
class LoopKernel:
    """A loop fusion: ``out[i] = root(i)`` over ``root``'s shape, computing every fused
    op from the materialized values in ``inputs``."""

    name: str
    root: Value
    inputs: list[Value]
    out: Buf
    fused_ops: list[Operation] = field(default_factory=list)


@dataclass(eq=False)
class OpKernel:
    """One op with its own emitter (``reduce`` with any body, ``scatter``, ``sort``...),
    writing every result of ``op`` (``outs[i]`` holds result ``i``).

    Attributes:
        inputs: the materialized values it reads (operands whose producers were not fused).
        fused_ops: producers computed inside the kernel (elementwise chains feeding a
            ``reduce``), plus ``op`` itself last.
    """

    name: str
    op: Operation
    inputs: list[Value]
    outs: list[Buf]
    fused_ops: list[Operation] = field(default_factory=list)

    @property
    def out(self) -> Buf:
        return self.outs[0]


@dataclass(eq=False)
class PackKernel:
    """Copies ``src`` (in ``src_buf``) into ``out`` with its dimensions permuted to
    ``perm`` (``out`` dimension i = ``src`` dimension ``perm[i]``), for BLAS."""

    name: str
    src: Value
    src_buf: Buf
    perm: tuple[int, ...]
    out: Buf


@dataclass(eq=False)
class DotKernel:
    """``dot_general`` as ``batch`` GEMMs ``[M,K] x [K,N] -> [M,N]`` through BLAS.

    ``trans_lhs`` means ``lhs`` is laid out ``[B,K,M]``; ``trans_rhs`` that ``rhs`` is
    ``[B,N,K]``. ``packed_nr`` > 0: ``rhs`` is a constant packed at compile time into
    panels of that many columns, and oxla's own microkernel runs the GEMM
    (:mod:`oxla_backend_cpu.packed_gemm`; ``batch`` is 1). ``batched_nr`` > 0: the
    microkernel runs each GEMM of the batch, packing its ``rhs`` at run time
    (:mod:`oxla_backend_cpu.batched_gemm`)."""

    name: str
    op: Operation
    lhs: Buf
    rhs: Buf
    out: Buf
    batch: int
    m: int
    n: int
    k: int
    trans_lhs: bool
    trans_rhs: bool
    dtype: str  # "f32" | "f64"
    packed_nr: int = 0
    batched_nr: int = 0


@dataclass(eq=False)
class ControlKernel:
    """``while``, ``if`` or ``case``: loops and branches around sub-plans, emitted inline
    in the entry function (:mod:`oxla_backend_cpu.control`).

    Attributes:
        kind: ``while``, ``if`` or ``case``.
        pred: ``while``: the condition's i1 result (written by ``plans[0]``); ``if``: the
            predicate's buffer; ``case``: the index's buffer (i32).
        plans: ``while``: [cond, body] (the body ends with copies of its results into
            ``outs``, the loop-carried buffers); ``if``/``case``: one per branch, each
            writing ``outs``.
        init: ``while`` only: copies of the operands into ``outs`` before the loop.
        outs: one buffer per result.
        reads: every buffer outside the sub-plans' scratch that the kernel reads.
        scratch: the sub-plans' temporaries (None when they have none).
    """

    name: str
    op: Operation
    kind: str
    pred: Buf
    plans: list[Plan]
    init: list[Kernel]
    outs: list[Buf]
    reads: list[Buf]
    scratch: Buf | None = None


Kernel = LoopKernel | OpKernel | PackKernel | DotKernel | ControlKernel


def kernel_reads(k: Kernel, vbuf: dict[Value, Buf]) -> list[Buf]:
    """The buffers kernel ``k`` reads."""
    if hasattr(k, "buffers_read"):  # kernels defined elsewhere (conv.ConvKernel)
        return k.buffers_read(vbuf)
    if isinstance(k, ControlKernel):
        return list(k.reads)
    if isinstance(k, LoopKernel | OpKernel):
        return [vbuf[v] for v in k.inputs]
    if isinstance(k, PackKernel):
        return [k.src_buf]
    return [k.lhs, k.rhs]


def kernel_writes(k: Kernel) -> list[Buf]:
    """The buffers kernel ``k`` writes (one per result of its op; a control kernel's
    scratch too)."""
    if hasattr(k, "buffers_written"):
        return k.buffers_written()
    if isinstance(k, ControlKernel):
        return list(k.outs) + ([k.scratch] if k.scratch is not None else [])
    return list(k.outs) if isinstance(k, OpKernel) else [k.out]


@dataclass
class Plan:
    """The whole program: kernels in schedule order and its buffers.

    Attributes:
        kernels: in execution order.
        vbuf: materialized value -> its buffer.
        args, results: the entry's argument and result buffers.
        temp_bytes: arena size (set by buffer assignment).
        notes: one line per stage for dumps (``fusion: 3 loop kernels, ...``).
    """

    kernels: list[Kernel]
    vbuf: dict[Value, Buf]
    args: list[Buf]
    results: list[Buf]
    temp_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """A readable listing of the plan (for dumps and debugging)."""
        return "\n".join(list(self.notes) + self._lines("") +
                         [f"temp_bytes: {self.temp_bytes}"])

    def _lines(self, indent: str) -> list[str]:
        lines = []
        for k in self.kernels:
            if isinstance(k, ControlKernel):
                lines.append(f"{indent}{k.name}: {k.kind}({k.pred.name}) -> "
                             + ", ".join(o.name for o in k.outs))
                for i in k.init:
                    lines.append(f"{indent}  {i.name}: copy {i.src_buf.name} -> {i.out.name}")
                for j, p in enumerate(k.plans):
                    lines.append(f"{indent}  region {j}:")
                    lines += p._lines(indent + "    ")
                continue
            reads = ", ".join(b.name for b in kernel_reads(k, self.vbuf))
            extra = ""
            if isinstance(k, LoopKernel | OpKernel):
                extra = " fuses " + ", ".join(o.name for o in k.fused_ops)
            outs = ", ".join(f"{o.name} [{o.kind}@{o.offset if o.kind == 'temp' else o.index}]"
                             for o in kernel_writes(k))
            lines.append(f"{indent}{k.name}: {type(k).__name__}({reads}) -> {outs}{extra}")
        return lines
