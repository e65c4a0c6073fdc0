"""Algebraic canonicalization patterns (after XLA's algebraic simplifier).

Each rule's docstring states the condition that makes it legal under the spec, and
the code checks it. No rule may change a result for NaN, ±inf, signed zero,
overflow or rounding: where a float identity fails for one of those, the rule is
limited to integers (``i1``, signless and unsigned integers wrap, so it holds there).
"""

from __future__ import annotations

import numpy as np

from oxla.ir import Operation, Value
from oxla.passes.rewrite import Rewriter, pattern
from oxla.passes.util import element_type, is_float, is_int, make_constant, splat_value


def _is_one(v: Value) -> bool:
    s = splat_value(v)
    return s is not None and not np.iscomplexobj(s) and bool(s == 1)


def _is_zero(v: Value) -> bool:
    s = splat_value(v)
    return s is not None and bool(s == 0)


def _is_neg_zero(v: Value) -> bool:
    s = splat_value(v)
    return s is not None and bool(s == 0) and bool(np.signbit(s))


def _is_pos_zero(v: Value) -> bool:
    s = splat_value(v)
    return s is not None and bool(s == 0) and not bool(np.signbit(s))


def _same_type(op: Operation, v: Value) -> bool:
    return v.type == op.results[0].type


def _replace_with_zeros(op: Operation, rw: Rewriter) -> None:
    t = op.results[0].type
    zeros = np.zeros(t.shape, dtype=element_type(op.results[0]).dtype)
    rw.replace_op(op, [rw.insert_before(op, make_constant(zeros, t, op.loc)).results[0]])


@pattern("stablehlo.multiply")
def mul_by_one(op: Operation, rw: Rewriter) -> bool:
    """``x * 1 → x`` and ``1 * x → x`` for integers and real floats.

    Legal: ``x * 1.0`` is exact and keeps NaN, ±inf and the sign of zero. Not applied
    to complex numbers: ``(inf + 0j) * (1 + 0j)`` is ``inf + nan j`` under the spec's
    formula, not ``x``.
    """
    lhs, rhs = op.operands
    if not (is_int(lhs) or is_float(lhs)):
        return False
    for keep, one in ((lhs, rhs), (rhs, lhs)):
        if _is_one(one) and _same_type(op, keep):
            rw.replace_op(op, [keep])
            return True
    return False


@pattern("stablehlo.multiply")
def mul_by_zero_int(op: Operation, rw: Rewriter) -> bool:
    """``x * 0 → 0`` for integers only.

    Legal for integers (wrapping multiplication by zero is zero). Illegal for floats:
    ``nan * 0 = nan``, ``inf * 0 = nan`` and ``-1.0 * 0.0 = -0.0``.
    """
    lhs, rhs = op.operands
    if not is_int(lhs) or not (_is_zero(lhs) or _is_zero(rhs)):
        return False
    _replace_with_zeros(op, rw)
    return True


@pattern("stablehlo.add")
def add_zero(op: Operation, rw: Rewriter) -> bool:
    """``x + 0 → x`` for integers; ``x + (-0.0) → x`` for floats.

    Legal: integer addition of zero is the identity. For floats only ``-0.0`` is an
    identity (``+0.0 + -0.0 = +0.0`` loses the sign of a negative zero, so
    ``x + 0.0`` stays); NaN and ±inf pass through unchanged.
    """
    lhs, rhs = op.operands
    if is_int(lhs):
        test = _is_zero
    elif is_float(lhs):
        test = _is_neg_zero
    else:
        return False
    for keep, zero in ((lhs, rhs), (rhs, lhs)):
        if test(zero) and _same_type(op, keep):
            rw.replace_op(op, [keep])
            return True
    return False


@pattern("stablehlo.subtract")
def sub_zero(op: Operation, rw: Rewriter) -> bool:
    """``x - 0 → x`` for integers; ``x - (+0.0) → x`` for floats.

    Legal: ``x - (+0.0) = x + (-0.0)`` is exact for every float including ``-0.0``
    (``-0.0 - 0.0 = -0.0``), NaN and ±inf. ``x - (-0.0)`` is not (``-0.0 - -0.0 = +0.0``).
    """
    lhs, rhs = op.operands
    test = _is_zero if is_int(lhs) else _is_pos_zero if is_float(lhs) else None
    if test is None or not test(rhs) or not _same_type(op, lhs):
        return False
    rw.replace_op(op, [lhs])
    return True


@pattern("stablehlo.subtract")
def sub_self_int(op: Operation, rw: Rewriter) -> bool:
    """``x - x → 0`` for integers only.

    Illegal for floats: ``nan - nan = nan`` and ``inf - inf = nan``.
    """
    lhs, rhs = op.operands
    if lhs is not rhs or not is_int(lhs):
        return False
    _replace_with_zeros(op, rw)
    return True


@pattern("stablehlo.divide")
def div_by_one(op: Operation, rw: Rewriter) -> bool:
    """``x / 1 → x`` for integers and real floats.

    Legal: division by one is exact, keeps NaN, ±inf and signed zeros. Complex numbers
    are excluded (the division formula can turn an infinite part into NaN).
    """
    lhs, rhs = op.operands
    if not (is_int(lhs) or is_float(lhs)) or not _is_one(rhs) or not _same_type(op, lhs):
        return False
    rw.replace_op(op, [lhs])
    return True


def _involution(op: Operation, rw: Rewriter) -> bool:
    inner = op.operands[0].owner_op
    if inner is None or inner.name != op.name:
        return False
    x = inner.operands[0]
    if x.type != op.results[0].type:
        return False
    rw.replace_op(op, [x])
    return True


@pattern("stablehlo.negate")
def double_negate(op: Operation, rw: Rewriter) -> bool:
    """``-(-x) → x`` for every type.

    Legal: negation flips the sign bit of floats (NaN, ±inf, ±0 round-trip exactly);
    for integers wrapping negation is an involution (``-(-MIN) = MIN``).
    """
    return _involution(op, rw)


@pattern("stablehlo.not")
def double_not(op: Operation, rw: Rewriter) -> bool:
    """``not(not x) → x`` for booleans and integers (bitwise complement twice)."""
    return _involution(op, rw)


@pattern("stablehlo.and", "stablehlo.or")
def and_or_self(op: Operation, rw: Rewriter) -> bool:
    """``and(x, x) → x`` and ``or(x, x) → x``: bitwise idempotence, always legal."""
    lhs, rhs = op.operands
    if lhs is not rhs or not _same_type(op, lhs):
        return False
    rw.replace_op(op, [lhs])
    return True
