"""Elementwise math Core ATen keeps whole: inverse and hyperbolic trigonometry (``chlo``
ops, legalized to StableHLO by the core's ``chlo-legalize-to-stablehlo``), ``tan``,
``log2``/``log10`` and ``trunc``."""

from __future__ import annotations

import math

import torch

from oxla.ir import Value
from oxla.ir.types import is_float
from oxla_frontend_torch.registry import LoweringContext, lowering

aten = torch.ops.aten


def _op(name: str):
    def rule(ctx: LoweringContext, x: Value) -> Value:
        x = ctx.convert(x, ctx.out_type().element_type)
        return ctx.b.create(name, [x]).results[0]

    return rule


for _aten_name, _name in (("acos", "chlo.acos"), ("acosh", "chlo.acosh"), ("asin", "chlo.asin"),
                          ("asinh", "chlo.asinh"), ("atan", "chlo.atan"),
                          ("atanh", "chlo.atanh"), ("cosh", "chlo.cosh"),
                          ("sinh", "chlo.sinh"), ("tan", "stablehlo.tan")):
    lowering(getattr(aten, _aten_name).default)(_op(_name))


def _log_base(base: float):
    def rule(ctx: LoweringContext, x: Value) -> Value:
        et = ctx.out_type().element_type
        y = ctx.b.log(ctx.convert(x, et))
        return ctx.b.multiply(y, ctx.splat(1.0 / math.log(base), et, y))

    return rule


lowering(aten.log2.default)(_log_base(2.0))
lowering(aten.log10.default)(_log_base(10.0))


@lowering(aten.trunc.default)
def _trunc(ctx: LoweringContext, x: Value) -> Value:
    """Rounds toward zero: ``ceil`` below zero, ``floor`` above; integers unchanged."""
    et = ctx.out_type().element_type
    if not is_float(et):
        return x
    neg = ctx.b.compare("LT", x, ctx.splat(0, et, x))
    return ctx.b.select(neg, ctx.b.ceil(x), ctx.b.floor(x))
