"""Sliding-window reductions as fused window slices, rewritten before fusion.

A ``reduce_window`` (spec section "reduce_window") with one operand, a constant-size
window of 2 to :data:`MAX_WINDOW` positions and a body that is one binary elementwise
op of its two arguments (max/avg pooling, sliding sums and products) becomes::

    p   = pad(x, init, low, high, base_dilations - 1)      (when any is nonzero)
    acc = broadcast_in_dim(init, out_shape)
    for each window position w, in row-major order:
        s_w = slice(p, w * window_dilations, ..., strides = window_strides)
        acc = body(acc, s_w)

``s_w[i]`` is element ``w`` of output ``i``'s window, so every output folds its window
from ``init`` in row-major order, padding and base-dilation holes reading as ``init``:
the order and operations of the scalar emitter
(:func:`oxla_backend_cpu.opkernels.emit_reduce_window`), hence bit-identical results
for every element type, floats included (NaNs propagate alike). ``body(acc, s_w)``
keeps the region's operand order. The slices and binary ops are index rules and
elementwise ops, so the loop fuser makes them one loop kernel over the output: parallel
and vectorized, where the scalar emitter runs one thread with a window loop and bounds
checks per output element. The padded operand, read by every slice, is recomputed in
that kernel for a window of a few positions and otherwise written once by a loop kernel
of its own (the fuser's rule for shared producers, ``oxla.lowering.fusion``).

With a stride ``s > 1`` in the last (contiguous) dimension, slices of ``p`` would read
it at stride ``s``: LLVM then vectorizes the short output rows only partly (an
interleaved load group with a gap leaves a scalar remainder). So ``p``'s last dimension
is padded or cut to ``m * s`` elements and split into its ``s`` phases,
``q = transpose(reshape(p, [..., m, s]), [..., s, m])``, and each slice reads one phase
at stride 1.
The elements are the same, so the results are too; the extra padding is never read.

Left as they are: prefix windows (cumsum and the like, the O(n) scans of
:mod:`oxla_backend_cpu.scan`), variadic reductions (argmax), bodies of more than one op
or whose types differ from the operand's, windows of one position or of more than
:data:`MAX_WINDOW`, empty operands or results, and dynamic shapes.
"""

from __future__ import annotations

import itertools
import math

from oxla.ir import Builder, Module, Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla_backend_cpu.scan import prefix_scan, window_params

MAX_WINDOW = 64
"""The most window positions rewritten: each is one slice and one op in the fused loop
(its code grows with the window)."""

BODIES = ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.multiply",
          "stablehlo.and", "stablehlo.or")


def _body_op(op: Operation) -> tuple[str, bool] | None:
    """``(op name, swapped)`` when the body is ``return name(arg0, arg1)`` (``swapped``:
    ``name(arg1, arg0)``) on scalars of the operand's element type, else None."""
    region = op.regions[0]
    if len(region.blocks) != 1:
        return None
    block = region.blocks[0]
    ops = list(block.ops)
    if len(ops) != 2 or ops[0].name not in BODIES or ops[1].name != "stablehlo.return":
        return None
    body, ret = ops
    if len(ret.operands) != 1 or ret.operands[0] is not body.results[0]:
        return None
    a0, a1 = block.args
    if list(body.operands) not in ([a0, a1], [a1, a0]):
        return None
    scalar = T.TensorType((), op.results[0].type.element_type)
    if any(v.type != scalar for v in (a0, a1, body.results[0])):
        return None
    return body.name, body.operands[0] is a1


def _is_window_slices(op: Operation) -> bool:
    if op.name != "stablehlo.reduce_window" or len(op.operands) != 2:
        return False
    x, init = op.operands
    y = op.results[0]
    if not all(isinstance(v.type, T.TensorType) and v.type.is_static for v in (x, init, y)):
        return False
    if x.type.element_type != y.type.element_type or 0 in x.type.shape \
            or 0 in y.type.shape or x.type.rank == 0:
        return False
    wd = window_params(op, x.type.rank)[0]
    if not 2 <= math.prod(wd) <= MAX_WINDOW:
        return False
    return _body_op(op) is not None and prefix_scan(op) is None


def _rewrite(op: Operation) -> None:
    x, init = op.operands
    out = op.results[0].type.shape
    rank = x.type.rank
    wd, ws, bd, wdl, lo, hi = window_params(op, rank)
    name, swapped = _body_op(op)
    b = Builder.before(op, op.loc)
    last, s = rank - 1, ws[-1]
    hi = list(hi)
    if s > 1:  # p's last dim padded or cut to m * s elements: m rows of s phases
        m = ((out[-1] - 1) * s + (wd[-1] - 1) * wdl[-1]) // s + 1
        size = (x.type.shape[-1] - 1) * bd[-1] + 1 + lo[-1] + hi[-1]
        hi[-1] += m * s - size
    p = x
    if any(lo) or any(hi) or any(d != 1 for d in bd):
        attrs = {"edge_padding_low": A.i64_array(lo), "edge_padding_high": A.i64_array(hi),
                 "interior_padding": A.i64_array([d - 1 for d in bd])}
        p = b.create("stablehlo.pad", [x, init], attrs).results[0]
    if s > 1:
        # p[..., o * s + a] is q[..., a % s, o + a // s]: the slices read q at stride 1
        # in the last dim (a strided read leaves LLVM a scalar remainder loop)
        lead = list(p.type.shape[:-1])
        q = b.transpose(b.reshape(p, [*lead, m, s]), [*range(last), last + 1, last])
    acc: Value = b.broadcast_in_dim(init, out, [])
    for w in itertools.product(*(range(n) for n in wd)):
        start = [wi * dl for wi, dl in zip(w, wdl)]
        limit = [a + (o - 1) * st + 1 for a, o, st in zip(start, out, ws)]
        if s > 1:
            j, k = divmod(start[-1], s)
            s_w = b.slice(q, [*start[:-1], k, j], [*limit[:-1], k + 1, j + out[-1]],
                          [*ws[:-1], 1, 1])
            s_w = b.reshape(s_w, out)
        else:
            s_w = b.slice(p, start, limit, ws)
        acc = b.create(name, [s_w, acc] if swapped else [acc, s_w]).results[0]
    op.results[0].replace_all_uses_with(acc)
    op.erase()


def rewrite_window_slices(module: Module) -> int:
    """Rewrites the sliding-window ``reduce_window``s of ``module`` (see the module doc)
    into fused window slices; returns how many."""
    count = 0
    for op in [o for o in module.walk() if _is_window_slices(o)]:
        _rewrite(op)
        count += 1
    return count
