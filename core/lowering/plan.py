"""The kernel plan: buffers and kernels (what fusion produces, what scheduling orders,
what buffer assignment places and a backend's codegen emits).

Every kernel describes itself through the :class:`Kernel` protocol, so scheduling and
buffer assignment never ask which kind a kernel is:

* ``reads(vbuf)``: the buffers it reads (``vbuf`` maps materialized values to buffers);
* ``writes()``: the buffers it writes (one per result; a control kernel's scratch too);
* ``in_place_inputs(vbuf)``: the input buffers whose bytes its output may take when the
  kernel is their last reader (each read of them is at the output's own index);
* ``has_effect``: it communicates or has a side effect (from the op table's
  ``SIDE_EFFECT``/``COLLECTIVE`` traits, :mod:`oxla.lowering.effects`): never dropped,
  kept in program order among the kernels with effects;
* ``over_input(vbuf)`` / ``place_over_input(flag)``: a kernel whose output may overlap
  the dead part of an input (a GEMM-mode convolution run last to first) says where:
  ``(input, output, distance in bytes from the input's start)``; buffer assignment
  tells it whether it placed the output there.

A backend may add kernel kinds of its own (subclass :class:`KernelBase`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from oxla.ir import Operation, Value
from oxla.lowering.effects import has_effect
from oxla.lowering.shapes import same_index_inputs


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
            time), how: ``{"source_memory": (address, nbytes), **parameters}``, set by
            the backend's policy; a compile cache stores that instead of the data.
    """

    name: str
    nbytes: int
    kind: str
    index: int = -1
    offset: int = -1
    data: np.ndarray | None = None
    base: Buf | None = None
    recipe: dict | None = None


@runtime_checkable
class Kernel(Protocol):
    """What scheduling and buffer assignment ask of a kernel (module doc)."""

    name: str

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]: ...

    def writes(self) -> list[Buf]: ...

    def in_place_inputs(self, vbuf: dict[Value, Buf]) -> list[Buf]: ...

    @property
    def has_effect(self) -> bool: ...

    def over_input(self, vbuf: dict[Value, Buf]) -> tuple[Buf, Buf, int] | None: ...

    def place_over_input(self, flag: bool) -> None: ...


class KernelBase:
    """Defaults of the :class:`Kernel` protocol: no in-place inputs, no effect, no
    placement over an input."""

    def in_place_inputs(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return []

    @property
    def has_effect(self) -> bool:
        return False

    def over_input(self, vbuf: dict[Value, Buf]) -> tuple[Buf, Buf, int] | None:
        return None

    def place_over_input(self, flag: bool) -> None:
        return None


def _same_index_bufs(inputs: list[Value], same: set[Value],
                     vbuf: dict[Value, Buf]) -> list[Buf]:
    """The buffers of ``inputs`` every read of which is in ``same`` (a buffer read twice,
    once elsewhere, is out)."""
    by_buf: dict[int, tuple[Buf, bool]] = {}
    for v in inputs:
        b = vbuf[v]
        ok = by_buf.get(id(b), (b, True))[1] and v in same
        by_buf[id(b)] = (b, ok)
    return [b for b, ok in by_buf.values() if ok]


@dataclass(eq=False)
class LoopKernel(KernelBase):
    """A loop fusion: ``out[i] = root(i)`` over ``root``'s shape, computing every fused
    op from the materialized values in ``inputs``."""

    name: str
    root: Value
    inputs: list[Value]
    out: Buf
    fused_ops: list[Operation] = field(default_factory=list)

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return [vbuf[v] for v in self.inputs]

    def writes(self) -> list[Buf]:
        return [self.out]

    def in_place_inputs(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return _same_index_bufs(self.inputs, same_index_inputs(self.root, self.inputs), vbuf)


@dataclass(eq=False)
class OpKernel(KernelBase):
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

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return [vbuf[v] for v in self.inputs]

    def writes(self) -> list[Buf]:
        return list(self.outs)

    @property
    def has_effect(self) -> bool:
        return has_effect(self.op)


@dataclass(eq=False)
class PackKernel(KernelBase):
    """Copies ``src`` (in ``src_buf``) into ``out`` with its dimensions permuted to
    ``perm`` (``out`` dimension i = ``src`` dimension ``perm[i]``): a layout change for
    a library call, or a plain copy (control flow's loop-carried values)."""

    name: str
    src: Value
    src_buf: Buf
    perm: tuple[int, ...]
    out: Buf

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return [self.src_buf]

    def writes(self) -> list[Buf]:
        return [self.out]


@dataclass(eq=False)
class DotKernel(KernelBase):
    """``dot_general``/``dot`` as ``batch`` GEMMs ``[M,K] x [K,N] -> [M,N]``.

    ``trans_lhs`` means ``lhs`` is laid out ``[B,K,M]``; ``trans_rhs`` that ``rhs`` is
    ``[B,N,K]``. ``strategy`` is the backend policy's choice of how the GEMM runs
    (``library`` by default: a BLAS-like call; a policy may name its own kernels, e.g.
    the cpu backend's ``packed`` and ``batched`` microkernels) and ``tile`` that
    strategy's parameter (panel width), 0 when it has none."""

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
    strategy: str = "library"
    tile: int = 0

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return [self.lhs, self.rhs]

    def writes(self) -> list[Buf]:
        return [self.out]


@dataclass(eq=False)
class ControlKernel(KernelBase):
    """``while``, ``if`` or ``case``: loops and branches around sub-plans
    (:mod:`oxla.lowering.control`).

    Attributes:
        kind: ``while``, ``if`` or ``case``.
        pred: ``while``: the condition's i1 result (written by ``plans[0]``); ``if``: the
            predicate's buffer; ``case``: the index's buffer (i32).
        plans: ``while``: [cond, body] (the body ends with copies of its results into
            ``outs``, the loop-carried buffers); ``if``/``case``: one per branch, each
            writing ``outs``.
        init: ``while`` only: copies of the operands into ``outs`` before the loop.
        outs: one buffer per result.
        inputs: every buffer outside the sub-plans' scratch that the kernel reads.
        scratch: the sub-plans' temporaries (None when they have none).
        pre: ``while`` only: the loop-invariant kernels, run once after ``init`` and the
            first true condition, before the first body (None when there are none; see
            :mod:`oxla.lowering.control`).
    """

    name: str
    op: Operation
    kind: str
    pred: Buf
    plans: list[Plan]
    init: list[Kernel]
    outs: list[Buf]
    inputs: list[Buf]
    scratch: Buf | None = None
    pre: Plan | None = None

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return list(self.inputs)

    def writes(self) -> list[Buf]:
        return list(self.outs) + ([self.scratch] if self.scratch is not None else [])

    @property
    def has_effect(self) -> bool:
        return has_effect(self.op)


def kernel_reads(k: Kernel, vbuf: dict[Value, Buf]) -> list[Buf]:
    """The buffers kernel ``k`` reads (``k.reads(vbuf)``)."""
    return k.reads(vbuf)


def kernel_writes(k: Kernel) -> list[Buf]:
    """The buffers kernel ``k`` writes (``k.writes()``)."""
    return k.writes()


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
                if k.pre is not None:
                    lines.append(f"{indent}  before the loop (invariant):")
                    lines += k.pre._lines(indent + "    ")
                for j, p in enumerate(k.plans):
                    lines.append(f"{indent}  region {j}:")
                    lines += p._lines(indent + "    ")
                continue
            reads = ", ".join(b.name for b in k.reads(self.vbuf))
            extra = ""
            if isinstance(k, LoopKernel | OpKernel):
                extra = " fuses " + ", ".join(o.name for o in k.fused_ops)
            outs = ", ".join(f"{o.name} [{o.kind}@{o.offset if o.kind == 'temp' else o.index}]"
                             for o in k.writes())
            lines.append(f"{indent}{k.name}: {type(k).__name__}({reads}) -> {outs}{extra}")
        return lines
