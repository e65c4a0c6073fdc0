"""Sequences of a static length, kept at import time as lists of values:
SequenceConstruct, SequenceEmpty, SequenceAt, SequenceLength, SequenceInsert,
SequenceErase, SplitToSequence, ConcatFromSequence. A sequence graph input or output,
or one whose length is only known at run time, is refused by name."""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla_frontend_onnx.emit import norm_axis, shape_of
from oxla_frontend_onnx.registry import NodeContext, rule


def _pos(ctx: NodeContext, i: int, n: int, default: int) -> int:
    if not ctx.has(i):
        return default
    p = int(np.asarray(ctx.const_required(i, "the sequence position")).reshape(-1)[0])
    return p + n if p < 0 else p


@rule("SequenceConstruct", since=11)
def _construct(ctx: NodeContext) -> list[list[Value]]:
    return [ctx.inputs()]


@rule("SequenceEmpty", since=11)
def _empty(ctx: NodeContext) -> list[list[Value]]:
    return [[]]


@rule("SequenceAt", since=11)
def _at(ctx: NodeContext) -> list[Value]:
    seq = ctx.sequence(0)
    p = _pos(ctx, 1, len(seq), 0)
    if not 0 <= p < len(seq):
        raise ctx.fail(f"position {p} is outside the sequence of length {len(seq)}")
    return [seq[p]]


@rule("SequenceLength", since=11)
def _length(ctx: NodeContext) -> list[Value]:
    from oxla.ir.types import i64

    return [ctx.constant(np.array(len(ctx.sequence(0)), np.int64), i64)]


@rule("SequenceInsert", since=11)
def _insert(ctx: NodeContext) -> list[list[Value]]:
    seq = ctx.sequence(0)
    p = _pos(ctx, 2, len(seq), len(seq))
    return [seq[:p] + [ctx.input(1)] + seq[p:]]


@rule("SequenceErase", since=11)
def _erase(ctx: NodeContext) -> list[list[Value]]:
    seq = ctx.sequence(0)
    p = _pos(ctx, 1, len(seq), len(seq) - 1)
    return [seq[:p] + seq[p + 1:]]


@rule("SplitToSequence", since=11)
def _split_to_sequence(ctx: NodeContext) -> list[list[Value]]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    axis = norm_axis(ctx.attr("axis", 0), len(shape))
    keep = ctx.attr("keepdims", 1)
    split = ctx.const_required(1, "SplitToSequence's split") if ctx.has(1) else None
    n = shape[axis]
    if split is None:
        sizes, squeeze = [1] * n, not keep
    elif np.asarray(split).ndim == 0:
        k = int(split)
        sizes, squeeze = [min(k, n - i) for i in range(0, n, k)], False
    else:
        sizes, squeeze = [int(v) for v in np.asarray(split)], False
    out, start = [], 0
    for s in sizes:
        lo, hi = [0] * len(shape), list(shape)
        lo[axis], hi[axis] = start, start + s
        part = b.slice(x, lo, hi)
        if squeeze:
            part = b.reshape(part, [d for i, d in enumerate(shape_of(part)) if i != axis])
        out.append(part)
        start += s
    return [out]


@rule("ConcatFromSequence", since=11)
def _concat_from_sequence(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    seq = ctx.sequence(0)
    if not seq:
        raise ctx.fail("ConcatFromSequence of an empty sequence")
    r = len(shape_of(seq[0]))
    new_axis = ctx.attr("new_axis", 0)
    axis = norm_axis(ctx.attr("axis"), r + 1 if new_axis else r)
    if new_axis:
        seq = [b.reshape(v, [*shape_of(v)[:axis], 1, *shape_of(v)[axis:]]) for v in seq]
    return [seq[0] if len(seq) == 1 else b.concatenate(seq, axis)]
