"""``chlo-legalize-to-stablehlo``: CHLO ops decomposed into StableHLO ops.

Decompositions follow XLA's ``chlo_legalize_to_stablehlo`` (numerically stable forms:
``expm1``/``log1p`` near zero, ``log(2) + log|x|`` where ``x*x`` would overflow).
Ops without a decomposition here stay as they are and are listed in a warning (or a
PassError with ``strict=true``); the interpreter still evaluates them directly.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from oxla.errors import PassError
from oxla.ir import Module, Operation, Value, i64_array
from oxla.ir import types as T
from oxla.ir.attributes import splat
from oxla.passes.chlo_common import (
    LEGALIZATIONS,
    Emitter,
    legalizes,
    register_float,
    static_float,
)
from oxla.passes.rewrite import GreedyDriver, Pattern, PatternSet, Rewriter, source_of

_B = Emitter
_legalizes = legalizes
_reg = register_float


def _float_operand(op: Operation) -> Value | None:
    v = op.operands[0]
    return v if static_float(v) else None


def _log_max(x: Value) -> float:
    """The largest ``t`` of ``x``'s type whose ``exp(t)`` is finite."""
    dt = x.type.element_type.dtype
    t = dt.type(math.log(float(np.finfo(dt).max)))
    with np.errstate(over="ignore"):
        return float(np.nextafter(t, dt.type(0)) if not np.isfinite(np.exp(t)) else t)


def _exp_half_squared(b: _B, ax: Value) -> Value:
    """``exp(ax) / 2`` also where ``exp(ax)`` alone overflows: ``(exp(ax/2) / 2) *
    exp(ax/2)`` (the halvings are exact; two roundings and twice exp's error)."""
    w = b.exponential(b.multiply(ax, b.const(0.5, ax)))
    return b.multiply(b.multiply(w, b.const(0.5, ax)), w)


def _sinh(b: _B, x: Value) -> Value:
    """``sinh(x) = sign(x) * s(|x|)``, where below ``log(max)`` ``s(a) = (t + t/(t+1))/2``
    with ``t = expm1(a)`` (no cancellation, no error in a shifted argument, unlike
    ``exp(a + log(1/2)) - exp(-a + log(1/2))``, up to 6 ulp off for large ``|x|``), and
    above it ``exp(a/2)/2 * exp(a/2)`` (finite up to sinh's own overflow)."""
    ax = b.abs(x)
    t = b.exponential_minus_one(ax)
    mid = b.multiply(b.add(t, b.divide(t, b.add(t, b.const(1.0, x)))), b.const(0.5, x))
    r = b.sel(b.cmp(ax, b.const(_log_max(x), x), "LT"), mid, _exp_half_squared(b, ax))
    return b.multiply(b.sign(x), r)  # keeps -0 and NaN


def _cosh(b: _B, x: Value) -> Value:
    """``cosh(x)``: below ``|x| = 10`` XLA's ``exp(x + log(1/2)) + exp(-x + log(1/2))``
    (its shifted argument costs a few ulp there, and StableHLO's tests expect its values
    bit for bit); above it ``exp(|x|)/2 (+ exp(-|x|)/2)``, and beyond ``log(max)``
    ``exp(|x|/2)/2 * exp(|x|/2)``: exact halvings only (XLA's form is 24 ulp off at 79)."""
    from oxla.passes.chlo_complex import PAIR_LIMIT

    ax = b.abs(x)
    half = b.const(math.log(0.5), x)
    pair = b.add(b.exponential(b.add(ax, half)), b.exponential(b.subtract(half, ax)))
    e = b.exponential(ax)
    mid = b.multiply(b.add(e, b.divide(b.const(1.0, x), e)), b.const(0.5, x))
    far = b.sel(b.cmp(ax, b.const(_log_max(x), x), "LT"), mid, _exp_half_squared(b, ax))
    return b.sel(b.cmp(ax, b.const(PAIR_LIMIT, x), "LT"), pair, far)


def _asin(b: _B, x: Value) -> Value:
    one = b.const(1.0, x)
    root = b.sqrt(b.multiply(b.subtract(one, x), b.add(one, x)))
    return b.multiply(b.const(2.0, x), b.atan2(x, b.add(one, root)))


def _acos(b: _B, x: Value) -> Value:
    one = b.const(1.0, x)
    root = b.sqrt(b.multiply(b.subtract(one, x), b.add(one, x)))
    r = b.multiply(b.const(2.0, x), b.atan2(root, b.add(one, x)))
    return b.sel(b.cmp(x, b.const(-1.0, x), "NE"), r, b.const(math.pi, x))


def _atan(b: _B, x: Value) -> Value:
    return b.atan2(x, b.const(1.0, x))


def _big(x: Value) -> float:
    return math.sqrt(float(np.finfo(x.type.element_type.dtype).max))


def _asinh(b: _B, x: Value) -> Value:
    ax = b.abs(x)
    one = b.const(1.0, x)
    x2 = b.multiply(ax, ax)
    small = b.log_plus_one(b.add(ax, b.divide(x2, b.add(one, b.sqrt(b.add(one, x2))))))
    large = b.add(b.log(ax), b.const(math.log(2.0), x))
    r = b.sel(b.cmp(ax, b.const(_big(x), x), "GE"), large, small)
    return b.multiply(b.sign(x), r)


def _acosh(b: _B, x: Value) -> Value:
    one = b.const(1.0, x)
    y = b.subtract(x, one)
    small = b.log_plus_one(b.add(y, b.sqrt(b.multiply(y, b.add(x, one)))))
    large = b.add(b.log(x), b.const(math.log(2.0), x))
    r = b.sel(b.cmp(x, b.const(_big(x), x), "GE"), large, small)
    # x < -1: y * (x + 1) > 0 would give a finite value; the domain says NaN.
    return b.sel(b.cmp(x, b.const(-1.0, x), "LT"), b.const(np.nan, x), r)


def _atanh(b: _B, x: Value) -> Value:
    r = b.subtract(b.log_plus_one(x), b.log_plus_one(b.negate(x)))
    r = b.multiply(b.const(0.5, x), r)
    nan = b.const(np.nan, x)
    return b.sel(b.cmp(b.abs(x), b.const(1.0, x), "GT"), nan, r)


for _name, _fn in (
    ("chlo.sinh", _sinh),
    ("chlo.cosh", _cosh),
    ("chlo.asin", _asin),
    ("chlo.acos", _acos),
    ("chlo.atan", _atan),
    ("chlo.asinh", _asinh),
    ("chlo.acosh", _acosh),
    ("chlo.atanh", _atanh),
):
    _reg(_name, _fn)


@_legalizes("chlo.tan")
def tan(op: Operation, rw: Rewriter) -> bool:
    """``chlo.tan`` → ``stablehlo.tan`` (same semantics)."""
    new = rw.create_before(op, "stablehlo.tan", list(op.operands), [op.results[0].type])
    rw.replace_op(op, new.results)
    return True


@_legalizes("chlo.square")
def square(op: Operation, rw: Rewriter) -> bool:
    """``square(x) → x * x``."""
    x = op.operands[0]
    rw.replace_op(op, [_B(op, rw).multiply(x, x)])
    return True


@_legalizes("chlo.conj")
def conj(op: Operation, rw: Rewriter) -> bool:
    """``conj(x) → complex(real(x), -imag(x))``; real ``x`` is returned unchanged."""
    x = op.operands[0]
    et = x.type.element_type
    if not isinstance(et, T.ComplexType):
        rw.replace_op(op, [x])
        return True
    b = _B(op, rw)
    part = x.type.with_element_type(et.element_type)
    re = b.op("stablehlo.real", [x], part)
    im = b.op("stablehlo.imag", [x], part)
    rw.replace_op(op, [b.op("stablehlo.complex", [re, b.negate(im)], x.type)])
    return True


@_legalizes("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def is_inf(op: Operation, rw: Rewriter) -> bool:
    """``is_inf(x) → |x| == inf``, ``is_pos_inf(x) → x == inf``, ``is_neg_inf → x == -inf``
    (NaN compares unequal: false, as required)."""
    x = _float_operand(op)
    if x is None:
        return False
    b = _B(op, rw)
    if op.name == "chlo.is_inf":
        r = b.cmp(b.abs(x), b.const(np.inf, x), "EQ")
    else:
        r = b.cmp(x, b.const(np.inf if op.name == "chlo.is_pos_inf" else -np.inf, x), "EQ")
    rw.replace_op(op, [r])
    return True


@_legalizes("chlo.constant")
def constant(op: Operation, rw: Rewriter) -> bool:
    """``chlo.constant`` → ``stablehlo.constant`` with the same value."""
    new = rw.create_before(
        op, "stablehlo.constant", [], [op.results[0].type], {"value": op.attributes["value"]}
    )
    rw.replace_op(op, new.results)
    return True


@_legalizes("chlo.constant_like")
def constant_like(op: Operation, rw: Rewriter) -> bool:
    """``constant_like(x){value}`` → a splat ``stablehlo.constant`` of ``x``'s type."""
    t = op.results[0].type
    if not (isinstance(t, T.TensorType) and t.is_static):
        return False
    from oxla.ir import to_python

    val = to_python(op.attributes["value"])
    value = splat(np.asarray(val).reshape(-1)[0], t)
    new = rw.create_before(op, "stablehlo.constant", [], [t], {"value": value})
    rw.replace_op(op, new.results)
    return True


def _broadcast_to(b: _B, v: Value, shape: tuple, dims: tuple | None) -> Value | None:
    t = v.type
    if not (isinstance(t, T.TensorType) and t.is_static):
        return None
    if t.shape == shape:
        return v
    if dims is None or len(dims) != t.rank:
        dims = tuple(range(len(shape) - t.rank, len(shape)))
    return b.op(
        "stablehlo.broadcast_in_dim", [v], t.with_shape(shape), broadcast_dimensions=i64_array(dims)
    )


def _broadcasting(op: Operation, rw: Rewriter) -> bool:
    """``chlo.broadcast_<op>(a, b)`` → ``broadcast_in_dim`` of each operand to the
    result shape (``broadcast_dimensions`` for the lower-rank one, else numpy-style
    trailing alignment) followed by the elementwise op."""
    rt = op.results[0].type
    if not (isinstance(rt, T.TensorType) and rt.is_static):
        return False
    b = _B(op, rw)
    dims = op.attributes.get("broadcast_dimensions")
    dims = tuple(dims) if dims is not None else None
    ops = [_broadcast_to(b, v, rt.shape, dims) for v in op.operands]
    if any(v is None for v in ops):
        return False
    short = op.name.removeprefix("chlo.broadcast_")
    attrs = {k: v for k, v in op.attributes.items() if k != "broadcast_dimensions"}
    target = {"compare": "stablehlo.compare", "select": "stablehlo.select"}.get(short)
    if target is None:
        target = ("chlo." if short in ("next_after", "polygamma", "zeta") else "stablehlo.") + short
    new = rw.create_before(op, target, ops, [rt], attrs)
    rw.replace_op(op, new.results)
    return True


for _n in (
    "add",
    "and",
    "atan2",
    "complex",
    "divide",
    "maximum",
    "minimum",
    "multiply",
    "next_after",
    "or",
    "polygamma",
    "power",
    "remainder",
    "shift_left",
    "shift_right_arithmetic",
    "shift_right_logical",
    "subtract",
    "xor",
    "zeta",
    "compare",
    "select",
):
    LEGALIZATIONS.append(
        Pattern(
            f"chlo.broadcast_{_n}", _broadcasting, 1, "broadcast_" + _n, source_of(_broadcasting)
        )
    )


@_legalizes("chlo.mulhi")
def mulhi(op: Operation, rw: Rewriter) -> bool:
    """``mulhi(a, b)`` for integers up to 32 bits: the high half of the product,
    computed exactly in 64 bits (``(a * b) >> width``)."""
    x = op.operands[0]
    et = x.type.element_type
    if not isinstance(et, T.IntegerType) or et.width > 32:
        return False
    b = _B(op, rw)
    wide = x.type.with_element_type(T.IntegerType(64, et.unsigned))
    a64 = b.op("stablehlo.convert", [op.operands[0]], wide)
    b64 = b.op("stablehlo.convert", [op.operands[1]], wide)
    prod = b.multiply(a64, b64)
    shift = b.const(et.width, prod)
    name = "shift_right_logical" if et.unsigned else "shift_right_arithmetic"
    hi = b.op("stablehlo." + name, [prod, shift])
    rw.replace_op(op, [b.op("stablehlo.convert", [hi], op.results[0].type)])
    return True


@dataclass(frozen=True)
class ChloLegalizeToStablehlo:
    """Decomposes CHLO ops into StableHLO.

    Assumes: static shapes for the broadcasting ops. Guarantees: every CHLO op with a
    decomposition here is gone; the rest are reported (warning, or PassError with
    ``strict``). Float decompositions follow XLA's and match the reference within the
    tolerances of the conformance checks.
    """

    name: str = "chlo-legalize-to-stablehlo"
    strict: bool = False

    def run(self, module: Module) -> None:
        GreedyDriver(PatternSet(LEGALIZATIONS), max_iterations=4, remove_dead=False).run(module.op)
        left = sorted({op.name for op in module.walk() if op.name.startswith("chlo.")})
        if not left:
            return
        msg = f"chlo-legalize-to-stablehlo left {len(left)} op kinds: {', '.join(left)}"
        if self.strict:
            raise PassError(msg)
        warnings.warn(msg, stacklevel=2)


# The other decomposition modules register their patterns on import.
from oxla.passes import chlo_complex as _chlo_complex  # noqa: E402, F401
from oxla.passes import chlo_math as _chlo_math  # noqa: E402, F401
from oxla.passes import chlo_struct as _chlo_struct  # noqa: E402, F401
