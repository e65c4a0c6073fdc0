"""Complex CHLO trigonometric and hyperbolic ops decomposed into StableHLO on the real
and imaginary parts (computed in the component type: f32 for ``complex<f32>``).

* ``asin``/``acos``/``asinh``/``acosh``: the algorithm of Hull, Fairgrieve and Tang
  (ACM TOMS 23(3), 1997) that StableHLO's decomposition also follows, with the
  overflow branch ``|z| >= sqrt(max)/8`` and the underflow branch for tiny ``y``.
* ``atanh``: ``re = log1p(4x / ((1-x)^2 + y^2)) / 4``,
  ``im = atan2(2y, (1-x)(1+x) - y^2) / 2``; ``atan(z) = -i atanh(iz)``.
* ``sinh``/``cosh``: ``sinh x cos y + i cosh x sin y`` (and kin) with the real
  ``sinh``/``cosh`` of ``chlo_legalize`` (accurate for large ``|x|``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from oxla.ir import Operation, Value
from oxla.ir import types as T
from oxla.passes.chlo_common import Emitter, legalizes
from oxla.passes.rewrite import Rewriter

Parts = tuple[Value, Value]


def _asin_kernel(e: Emitter, x: Value, y: Value) -> Parts:
    """For ``x, y >= 0``: ``(den, im)`` with ``asin(x + iy) = atan2(x, den) + i im``."""
    info = np.finfo(x.type.element_type.dtype)
    safe_max = math.sqrt(float(info.max)) / 8
    safe_min = math.sqrt(float(info.tiny)) * 4
    one, half = e.const(1.0, x), e.const(0.5, x)
    xp1, xm1 = e.add(x, one), e.subtract(x, one)
    r = e.sqrt(e.add(e.multiply(xp1, xp1), e.multiply(y, y)))
    s = e.sqrt(e.add(e.multiply(xm1, xm1), e.multiply(y, y)))
    a = e.multiply(half, e.add(r, s))
    half_apx = e.multiply(half, e.add(a, x))
    yy = e.multiply(y, y)
    rpxp1, smxm1, spxm1 = e.add(r, xp1), e.subtract(s, xm1), e.add(s, xm1)
    x_le1 = e.cmp(x, one, "LE")
    den = e.sel(
        x_le1,
        e.sqrt(e.multiply(half_apx, e.add(e.divide(yy, rpxp1), smxm1))),
        e.multiply(y, e.sqrt(e.add(e.divide(half_apx, rpxp1), e.divide(half_apx, spxm1)))),
    )
    am1 = e.sel(
        e.cmp(x, one, "LT"),
        e.multiply(half, e.add(e.divide(yy, rpxp1), e.divide(yy, smxm1))),
        e.multiply(half, e.add(e.divide(yy, rpxp1), spxm1)),
    )
    im = e.log_plus_one(e.add(am1, e.sqrt(e.multiply(am1, e.add(a, one)))))
    # |z| tiny in y with x < 1: yy underflows; im = y / sqrt(1 - x^2).
    tiny = e.and_(e.cmp(y, e.const(safe_min, x), "LT"), e.cmp(x, one, "LT"))
    im = e.sel(tiny, e.divide(y, e.sqrt(e.multiply(xp1, e.negate(xm1)))), im)
    # |z| huge: asin(z) ~ atan2(x, y) + i (log 2 + log|z|).
    mx, mn = e.maximum(x, y), e.minimum(x, y)
    ratio = e.divide(mn, mx)
    big_im = e.add(
        e.add(e.const(math.log(2.0), x), e.log(mx)),
        e.multiply(half, e.log_plus_one(e.multiply(ratio, ratio))),
    )
    big = e.cmp(mx, e.const(safe_max, x), "GE")
    return e.sel(big, y, den), e.sel(big, big_im, im)


def _copysign(e: Emitter, mag: Value, s: Value) -> Value:
    return e.sel(e.cmp(s, e.const(0.0, s), "LT"), e.negate(mag), mag)


def _asin(e: Emitter, x: Value, y: Value) -> Parts:
    den, im = _asin_kernel(e, e.abs(x), e.abs(y))
    return e.atan2(x, den), _copysign(e, im, y)


def _acos(e: Emitter, x: Value, y: Value) -> Parts:
    den, im = _asin_kernel(e, e.abs(x), e.abs(y))
    return e.atan2(den, x), e.negate(_copysign(e, im, y))


def _asinh(e: Emitter, x: Value, y: Value) -> Parts:
    a, b = _asin(e, e.negate(y), x)  # asinh(z) = -i asin(iz)
    return b, e.negate(a)


def _acosh(e: Emitter, x: Value, y: Value) -> Parts:
    p, q = _acos(e, x, y)  # acosh(z) = (|im acos z|, copysign(re acos z, y))
    return e.abs(q), _copysign(e, p, y)


def _atanh(e: Emitter, x: Value, y: Value) -> Parts:
    one = e.const(1.0, x)
    omx = e.subtract(one, x)
    yy = e.multiply(y, y)
    den = e.add(e.multiply(omx, omx), yy)
    re = e.multiply(e.const(0.25, x), e.log_plus_one(e.divide(e.multiply(e.const(4.0, x), x), den)))
    im = e.multiply(
        e.const(0.5, x),
        e.atan2(e.multiply(e.const(2.0, x), y), e.subtract(e.multiply(omx, e.add(one, x)), yy)),
    )
    return re, im


def _atan(e: Emitter, x: Value, y: Value) -> Parts:
    a, b = _atanh(e, e.negate(y), x)  # atan(z) = -i atanh(iz)
    return b, e.negate(a)


def _sinh_cosh(op: Operation, e: Emitter, x: Value, y: Value) -> Parts:
    """``sinh(x+iy) = sinh x cos y + i cosh x sin y`` and ``cosh(x+iy) = cosh x cos y +
    i sinh x sin y``, with the accurate real ``sinh``/``cosh`` (the form ``exp(z +
    log(1/2)) ± exp(-z + log(1/2))`` loses up to 24 ulp for large ``|x|``). A zero
    ``y`` gives a zero imaginary part (C99 ``csinh``/``ccosh``; never ``inf * 0``), a
    zero ``x`` a zero real part of ``sinh``."""
    from oxla.passes.chlo_legalize import _cosh, _sinh

    z = e.op("stablehlo.complex", [x, y], x.type.with_element_type(T.ComplexType(
        x.type.element_type)))
    pair = _exp_pair(op, e, z)
    sh, ch = _sinh(e, x), _cosh(e, x)
    cy, sy = e.cosine(y), e.sine(y)
    zero = e.const(0.0, x)
    y0 = e.cmp(y, zero, "EQ")
    if op.name == "chlo.sinh":
        re = e.sel(e.cmp(x, zero, "EQ"), x, e.multiply(sh, cy))
        im = e.sel(y0, y, e.multiply(ch, sy))
    else:
        re = e.multiply(ch, cy)
        im = e.sel(y0, e.multiply(e.sign(x), y), e.multiply(sh, sy))
    # Below PAIR_LIMIT XLA's form (its shifted argument costs at most a few ulp there)
    # gives the values StableHLO's tests expect bit for bit; the product form above it.
    part = x.type
    near = e.cmp(e.abs(x), e.const(PAIR_LIMIT, x), "LT")
    re = e.sel(near, e.op("stablehlo.real", [pair], part), re)
    im = e.sel(near, e.op("stablehlo.imag", [pair], part), im)
    return re, im


PAIR_LIMIT = 10.0
"""``|re z|`` below which complex ``sinh``/``cosh`` use ``exp(z + log(1/2)) ∓ exp(-z +
log(1/2))``, XLA's form."""


def _exp_pair(op: Operation, e: Emitter, z: Value) -> Value:
    """``exp(z + log(1/2)) ± exp(-z + log(1/2))`` in complex arithmetic (XLA's form)."""
    half = e.const(math.log(0.5), z)
    sign = "subtract" if op.name == "chlo.sinh" else "add"
    return e.op(
        f"stablehlo.{sign}", [e.exponential(e.add(z, half)), e.exponential(e.subtract(half, z))]
    )


def _complex_rule(fn: Callable[[Emitter, Value, Value], Parts] | None, name: str):
    def rule(op: Operation, rw: Rewriter) -> bool:
        z = op.operands[0]
        t = z.type
        if not (
            isinstance(t, T.TensorType)
            and t.is_static
            and isinstance(t.element_type, T.ComplexType)
        ):
            return False
        e = Emitter(op, rw)
        part = t.with_element_type(t.element_type.element_type)
        x = e.op("stablehlo.real", [z], part)
        y = e.op("stablehlo.imag", [z], part)
        re, im = _sinh_cosh(op, e, x, y) if fn is None else fn(e, x, y)
        rw.replace_op(op, [e.op("stablehlo.complex", [re, im], t)])
        return True

    rule.__name__ = name + "_complex"
    rule.__doc__ = fn.__doc__ if fn is not None else _sinh_cosh.__doc__
    return rule


for _name, _fn in (
    ("asin", _asin),
    ("acos", _acos),
    ("asinh", _asinh),
    ("acosh", _acosh),
    ("atanh", _atanh),
    ("atan", _atan),
    ("sinh", None),
    ("cosh", None),
):
    legalizes(f"chlo.{_name}")(_complex_rule(_fn, _name))
