"""Elementwise ATen ops: arithmetic, comparison, logic, unary math, conversions, where.

Operands are converted to the node's result dtype (arithmetic) or to the promoted dtype of
the operands (comparisons), then broadcast numpy-style to the result shape, as ATen does.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from oxla.errors import NotSupportedError
from oxla.ir import Value
from oxla.ir.types import ElementType, IntegerType, is_float
from oxla_frontend_torch.registry import LoweringContext, element_type, etype, lowering

aten = torch.ops.aten


def _operands(ctx: LoweringContext, et: ElementType, *xs: Any) -> list[Value]:
    shape = ctx.out_type().shape
    return [ctx.broadcast_to(ctx.operand(x, et), shape) for x in xs]


def _arith(op: str):
    def rule(ctx: LoweringContext, x: Any, y: Any, alpha: Any = 1) -> Value:
        et = ctx.out_type().element_type
        a, b = _operands(ctx, et, x, y)
        if alpha != 1:
            b = ctx.b.multiply(b, ctx.broadcast_to(ctx.const(alpha, et), ctx.out_type().shape))
        return getattr(ctx.b, op)(a, b)

    return rule


lowering(aten.add.Tensor, aten.add.Scalar)(_arith("add"))
lowering(aten.sub.Tensor, aten.sub.Scalar)(_arith("subtract"))
lowering(aten.mul.Tensor, aten.mul.Scalar)(_arith("multiply"))
lowering(aten.maximum.default)(_arith("maximum"))
lowering(aten.minimum.default)(_arith("minimum"))
lowering(aten.atan2.default)(_arith("atan2"))


@lowering(aten.rsub.Scalar, aten.rsub.Tensor)
def _rsub(ctx: LoweringContext, x: Any, y: Any, alpha: Any = 1) -> Value:
    """``y - alpha * x``."""
    et = ctx.out_type().element_type
    a, b = _operands(ctx, et, x, y)
    if alpha != 1:
        a = ctx.b.multiply(a, ctx.broadcast_to(ctx.const(alpha, et), ctx.out_type().shape))
    return ctx.b.subtract(b, a)


@lowering(aten.div.Tensor, aten.div.Scalar)
def _div(ctx: LoweringContext, x: Any, y: Any) -> Value:
    et = ctx.out_type().element_type
    return ctx.b.divide(*_operands(ctx, et, x, y))


@lowering(aten.div.Tensor_mode, aten.div.Scalar_mode)
def _div_mode(ctx: LoweringContext, x: Any, y: Any, rounding_mode: str | None = None) -> Value:
    et = ctx.out_type().element_type
    a, b = _operands(ctx, et, x, y)
    if rounding_mode is None:
        return ctx.b.divide(a, b)
    if is_float(et):
        q = ctx.b.divide(a, b)
        if rounding_mode == "floor":
            return ctx.b.floor(q)
        return ctx.b.multiply(ctx.b.sign(q), ctx.b.floor(ctx.b.abs(q)))
    q = ctx.b.divide(a, b)  # truncates toward zero
    if rounding_mode == "trunc":
        return q
    shape = ctx.out_type().shape
    zero = ctx.broadcast_to(ctx.const(0, et), shape)
    one = ctx.broadcast_to(ctx.const(1, et), shape)
    inexact = ctx.b.compare("NE", ctx.b.remainder(a, b), zero)
    signs_differ = ctx.b.compare("NE", ctx.b.compare("LT", a, zero), ctx.b.compare("LT", b, zero))
    return ctx.b.select(ctx.b.and_(inexact, signs_differ), ctx.b.subtract(q, one), q)


@lowering(aten.remainder.Tensor, aten.remainder.Scalar)
def _remainder(ctx: LoweringContext, x: Any, y: Any) -> Value:
    """Python-style modulo: the result has the divisor's sign."""
    et = ctx.out_type().element_type
    a, b = _operands(ctx, et, x, y)
    r = ctx.b.remainder(a, b)
    zero = ctx.broadcast_to(ctx.const(0, et), ctx.out_type().shape)
    fix = ctx.b.and_(ctx.b.compare("NE", r, zero),
                     ctx.b.compare("NE", ctx.b.compare("LT", r, zero),
                                   ctx.b.compare("LT", b, zero)))
    return ctx.b.select(fix, ctx.b.add(r, b), r)


@lowering(aten.fmod.Tensor, aten.fmod.Scalar)
def _fmod(ctx: LoweringContext, x: Any, y: Any) -> Value:
    return ctx.b.remainder(*_operands(ctx, ctx.out_type().element_type, x, y))


@lowering(aten.pow.Tensor_Scalar, aten.pow.Tensor_Tensor, aten.pow.Scalar)
def _pow(ctx: LoweringContext, x: Any, y: Any) -> Value:
    et = ctx.out_type().element_type
    if not isinstance(y, Value):
        base = _operands(ctx, et, x)[0]
        if y == 1:
            return base
        if y == 2:
            return ctx.b.multiply(base, base)
        if y == 3:
            return ctx.b.multiply(ctx.b.multiply(base, base), base)
        if y == 0.5 and is_float(et):
            return ctx.b.sqrt(base)
        if y == -0.5 and is_float(et):
            return ctx.b.rsqrt(base)
    return ctx.b.power(*_operands(ctx, et, x, y))


_COMPARE = {"eq": "EQ", "ne": "NE", "lt": "LT", "le": "LE", "gt": "GT", "ge": "GE"}


def _compare(direction: str):
    def rule(ctx: LoweringContext, x: Any, y: Any) -> Value:
        et = _promoted(x, y)
        return ctx.b.compare(direction, *_operands(ctx, et, x, y))

    return rule


def _promoted(*xs: Any) -> ElementType:
    """ATen's type promotion for tensors and Python scalars."""
    dtypes = []
    scalars = []
    for x in xs:
        if isinstance(x, Value):
            dtypes.append(etype(x))
        else:
            scalars.append(x)
    tensor_dtype = _TORCH_OF.get(dtypes[0]) if dtypes else None
    for et in dtypes[1:]:
        tensor_dtype = torch.promote_types(tensor_dtype, _TORCH_OF[et])
    if tensor_dtype is None:
        tensor_dtype = torch.get_default_dtype()
    if any(isinstance(s, float) for s in scalars) and not tensor_dtype.is_floating_point:
        tensor_dtype = torch.get_default_dtype()
    return element_type(tensor_dtype)


_TORCH_OF = {element_type(d): d for d in (torch.float32, torch.float64, torch.float16,
                                          torch.bfloat16, torch.int64, torch.int32,
                                          torch.int16, torch.int8, torch.uint8, torch.bool)}

for _name, _dir in _COMPARE.items():
    op = getattr(aten, _name)
    lowering(op.Tensor, op.Scalar)(_compare(_dir))


def _logical(op: str):
    def rule(ctx: LoweringContext, x: Any, y: Any) -> Value:
        i1 = IntegerType(1)
        a, b = [ctx.b.compare("NE", v, ctx.splat(0, etype(v), v)) if etype(v) != i1 else v
                for v in (ctx.broadcast_to(ctx.operand(x, _promoted(x)), ctx.out_type().shape),
                          ctx.broadcast_to(ctx.operand(y, _promoted(y)), ctx.out_type().shape))]
        return getattr(ctx.b, op)(a, b)

    return rule


lowering(aten.logical_and.default)(_logical("and_"))
lowering(aten.logical_or.default)(_logical("or_"))
lowering(aten.logical_xor.default)(_logical("xor"))


def _bitwise(op: str):
    def rule(ctx: LoweringContext, x: Any, y: Any) -> Value:
        return getattr(ctx.b, op)(*_operands(ctx, ctx.out_type().element_type, x, y))

    return rule


lowering(aten.bitwise_and.Tensor, aten.bitwise_and.Scalar)(_bitwise("and_"))
lowering(aten.bitwise_or.Tensor, aten.bitwise_or.Scalar)(_bitwise("or_"))
lowering(aten.bitwise_xor.Tensor, aten.bitwise_xor.Scalar)(_bitwise("xor"))


@lowering(aten.bitwise_not.default)
def _bitwise_not(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.not_(x)


@lowering(aten.logical_not.default)
def _logical_not(ctx: LoweringContext, x: Value) -> Value:
    if etype(x) == IntegerType(1):
        return ctx.b.not_(x)
    return ctx.b.compare("EQ", x, ctx.splat(0, etype(x), x))


def _unary(op: str, float_only: bool = True):
    def rule(ctx: LoweringContext, x: Value) -> Value:
        et = ctx.out_type().element_type
        return getattr(ctx.b, op)(ctx.convert(x, et))

    return rule


for _aten_name, _op in (("exp", "exponential"), ("log", "log"), ("tanh", "tanh"),
                        ("sigmoid", "logistic"), ("rsqrt", "rsqrt"), ("sqrt", "sqrt"),
                        ("abs", "abs"), ("neg", "negate"), ("sin", "sine"), ("cos", "cosine"),
                        ("floor", "floor"), ("ceil", "ceil"), ("sign", "sign"),
                        ("expm1", "exponential_minus_one"), ("log1p", "log_plus_one")):
    lowering(getattr(aten, _aten_name).default)(_unary(_op))


@lowering(aten.round.default)
def _round(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.create("stablehlo.round_nearest_even", [x]).results[0]


@lowering(aten.reciprocal.default)
def _reciprocal(ctx: LoweringContext, x: Value) -> Value:
    et = ctx.out_type().element_type
    x = ctx.convert(x, et)
    return ctx.b.divide(ctx.splat(1, et, x), x)


@lowering(aten.erf.default)
def _erf(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.create("chlo.erf", [ctx.convert(x, ctx.out_type().element_type)]).results[0]


@lowering(aten.erfinv.default)
def _erfinv(ctx: LoweringContext, x: Value) -> Value:
    """Inverse error function (``chlo.erf_inv``, Giles' polynomials): ``±inf`` at ``±1``,
    NaN outside ``[-1, 1]``."""
    return ctx.b.create("chlo.erf_inv", [ctx.convert(x, ctx.out_type().element_type)]
                        ).results[0]


@lowering(aten.relu.default)
def _relu(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.maximum(x, ctx.splat(0, etype(x), x))


@lowering(aten.gelu.default)
def _gelu(ctx: LoweringContext, x: Value, approximate: str = "none") -> Value:
    """``0.5 x (1 + erf(x / sqrt 2))``, or the tanh form when ``approximate="tanh"``."""
    et, shape = etype(x), x.type.shape

    def c(v: float) -> Value:
        return ctx.broadcast_to(ctx.const(v, et), shape)

    if approximate == "tanh":
        inner = ctx.b.multiply(c(math.sqrt(2 / math.pi)), ctx.b.add(
            x, ctx.b.multiply(c(0.044715), ctx.b.multiply(ctx.b.multiply(x, x), x))))
        t = ctx.b.tanh(inner)
    else:
        t = ctx.b.create("chlo.erf", [ctx.b.multiply(x, c(1 / math.sqrt(2)))]).results[0]
    return ctx.b.multiply(ctx.b.multiply(c(0.5), x), ctx.b.add(c(1.0), t))


@lowering(aten.silu.default)
def _silu(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.multiply(x, ctx.b.logistic(x))


@lowering(aten.isnan.default)
def _isnan(ctx: LoweringContext, x: Value) -> Value:
    return ctx.b.compare("NE", x, x)


@lowering(aten.clamp.default, aten.clamp.Tensor)
def _clamp(ctx: LoweringContext, x: Value, min: Any = None, max: Any = None) -> Value:
    et, shape = ctx.out_type().element_type, ctx.out_type().shape
    v = ctx.broadcast_to(ctx.convert(x, et), shape)
    if min is not None:
        v = ctx.b.maximum(v, ctx.broadcast_to(ctx.operand(min, et), shape))
    if max is not None:
        v = ctx.b.minimum(v, ctx.broadcast_to(ctx.operand(max, et), shape))
    return v


@lowering(aten.clamp_min.default, aten.clamp_min.Tensor)
def _clamp_min(ctx: LoweringContext, x: Value, min: Any) -> Value:
    return _clamp(ctx, x, min, None)


@lowering(aten.clamp_max.default, aten.clamp_max.Tensor)
def _clamp_max(ctx: LoweringContext, x: Value, max: Any) -> Value:
    return _clamp(ctx, x, None, max)


@lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def _where(ctx: LoweringContext, cond: Value, x: Any, y: Any) -> Value:
    out = ctx.out_type()
    pred = ctx.broadcast_to(ctx.convert(cond, IntegerType(1)), out.shape)
    a, b = _operands(ctx, out.element_type, x, y)
    return ctx.b.select(pred, a, b)


@lowering(aten.masked_fill.Scalar, aten.masked_fill.Tensor)
def _masked_fill(ctx: LoweringContext, x: Value, mask: Value, value: Any) -> Value:
    return _where(ctx, mask, value, x)


@lowering(aten._to_copy.default, aten.to.dtype, aten.to.dtype_layout)
def _to_copy(ctx: LoweringContext, x: Value, *args: Any, **kwargs: Any) -> Value:
    if kwargs.get("device") is not None and str(kwargs["device"]) not in ("cpu", "meta"):
        raise NotSupportedError(f"'{ctx.node.target}' to device {kwargs['device']}",
                                loc=ctx.b.loc)
    return ctx.convert(x, ctx.out_type().element_type)


@lowering(aten.clone.default, aten.alias.default, aten.detach.default,
          aten.lift_fresh_copy.default, aten.contiguous.default, aten.copy.default)
def _identity(ctx: LoweringContext, x: Value, *args: Any, **kwargs: Any) -> Value:
    if ctx.node.target is aten.copy.default:  # copy(dst, src): the result is src
        return ctx.broadcast_to(ctx.convert(args[0], etype(x)), x.type.shape, x)
    return x


@lowering(aten._assert_tensor_metadata.default, aten._assert_scalar.default,
          aten.sym_constrain_range_for_size.default, aten.sym_constrain_range.default)
def _no_op(ctx: LoweringContext, *args: Any, **kwargs: Any) -> None:
    return None
