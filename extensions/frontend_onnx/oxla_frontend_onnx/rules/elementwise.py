"""Elementwise ONNX ops: arithmetic, math functions, comparisons, logic, activations,
Cast, Where, Clip (ONNX operator docs, multidirectional broadcasting)."""

from __future__ import annotations

import numpy as np

from oxla.ir import Value
from oxla.ir.types import FloatType, IntegerType, i1
from oxla_frontend_onnx.emit import (
    binary,
    broadcast_all,
    compare,
    convert,
    etype,
    is_unsigned,
    shape_of,
)
from oxla_frontend_onnx.registry import NodeContext, element_type, rule

_BINARY = {"Add": "add", "Sub": "subtract", "Mul": "multiply", "Pow": None,
           "And": "and", "Or": "or", "Xor": "xor", "BitwiseAnd": "and", "BitwiseOr": "or",
           "BitwiseXor": "xor"}


@rule("Add", "Sub", "Mul", "And", "Or", "Xor", since=7)
@rule("BitwiseAnd", "BitwiseOr", "BitwiseXor", since=18)
def _binary(ctx: NodeContext) -> list[Value]:
    return [binary(ctx.b, _BINARY[ctx.node.op_type], ctx.input(0), ctx.input(1))]


@rule("Div", since=7)
def _div(ctx: NodeContext) -> list[Value]:
    """Integer division truncates toward zero (C semantics), as stablehlo.divide does."""
    return [binary(ctx.b, "divide", ctx.input(0), ctx.input(1))]


@rule("Mod", since=10)
def _mod(ctx: NodeContext) -> list[Value]:
    """``fmod=0``: the sign of the divisor (Python ``%``); ``fmod=1``: C ``fmod``."""
    b = ctx.b
    x, y = broadcast_all(b, ctx.input(0), ctx.input(1))
    r = b.remainder(x, y)
    if ctx.attr("fmod", 0) == 1 or is_unsigned(etype(x)):
        return [r]
    zero = ctx.scalar_like(0, r)
    fix = b.and_(compare(b, "NE", r, zero),
                 b.xor(compare(b, "LT", r, zero), compare(b, "LT", y, zero)))
    return [b.select(fix, b.add(r, y), r)]


@rule("Pow", since=7)
def _pow(ctx: NodeContext) -> list[Value]:
    x, y = ctx.input(0), ctx.input(1)
    if etype(y) != etype(x):
        y = convert(ctx.b, y, etype(x))
    return [binary(ctx.b, "power", x, y)]


@rule("Max", "Min", "Sum", "Mean", since=8)
def _variadic(ctx: NodeContext) -> list[Value]:
    op = {"Max": "maximum", "Min": "minimum", "Sum": "add", "Mean": "add"}[ctx.node.op_type]
    vals = ctx.inputs()
    acc = vals[0]
    for v in vals[1:]:
        acc = binary(ctx.b, op, acc, v)
    if len(vals) == 1:
        acc = broadcast_all(ctx.b, acc)[0]
    if ctx.node.op_type == "Mean":
        acc = ctx.b.divide(acc, ctx.scalar_like(len(vals), acc))
    return [acc]


_UNARY = {"Abs": "abs", "Neg": "negate", "Exp": "exponential", "Log": "log", "Sqrt": "sqrt",
          "Tanh": "tanh", "Sigmoid": "logistic", "Sin": "sine", "Cos": "cosine",
          "Floor": "floor", "Ceil": "ceil", "Sign": "sign", "Not": "not",
          "BitwiseNot": "not", "Tan": "tan"}


@rule("Abs", "Neg", "Exp", "Log", "Sqrt", "Tanh", "Sigmoid", "Sin", "Cos", "Floor", "Ceil",
      "Not", "Tan", since=6)
@rule("Sign", since=9)
@rule("BitwiseNot", since=18)
def _unary(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    op = _UNARY[ctx.node.op_type]
    if op == "abs" and is_unsigned(etype(x)):
        return [x]
    if op == "sign" and is_unsigned(etype(x)):
        zero = ctx.scalar_like(0, x)
        return [ctx.b.select(compare(ctx.b, "GT", x, zero), ctx.scalar_like(1, x), zero)]
    return [ctx.b.create(f"stablehlo.{op}", [x]).results[0]]


@rule("Identity", since=1)
def _identity(ctx: NodeContext) -> list[Value]:
    return [ctx.input(0)]


@rule("Reciprocal", since=6)
def _reciprocal(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.divide(ctx.scalar_like(1, x), x)]


@rule("Round", since=11)
def _round(ctx: NodeContext) -> list[Value]:
    return [ctx.b.create("stablehlo.round_nearest_even", [ctx.input(0)]).results[0]]


@rule("Erf", since=9)
def _erf(ctx: NodeContext) -> list[Value]:
    return [ctx.b.create("chlo.erf", [ctx.input(0)]).results[0]]


_CHLO = {"Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh",
         "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh"}


@rule("Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", since=7)
def _chlo_unary(ctx: NodeContext) -> list[Value]:
    return [ctx.b.create(f"chlo.{_CHLO[ctx.node.op_type]}", [ctx.input(0)]).results[0]]


@rule("IsNaN", since=9)
def _isnan(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.compare("NE", x, x, "FLOAT")]


@rule("IsInf", since=10)
def _isinf(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    pos = compare(b, "EQ", x, ctx.scalar_like(np.inf, x))
    neg = compare(b, "EQ", x, ctx.scalar_like(-np.inf, x))
    detect_pos, detect_neg = ctx.attr("detect_positive", 1), ctx.attr("detect_negative", 1)
    if detect_pos and detect_neg:
        return [b.or_(pos, neg)]
    if detect_pos:
        return [pos]
    if detect_neg:
        return [neg]
    return [ctx.scalar_like(False, pos)]


_CMP = {"Equal": "EQ", "Greater": "GT", "Less": "LT", "GreaterOrEqual": "GE",
        "LessOrEqual": "LE"}


@rule("Equal", "Greater", "Less", since=7)
@rule("GreaterOrEqual", "LessOrEqual", since=12)
def _compare(ctx: NodeContext) -> list[Value]:
    return [compare(ctx.b, _CMP[ctx.node.op_type], ctx.input(0), ctx.input(1))]


@rule("Where", since=9)
def _where(ctx: NodeContext) -> list[Value]:
    c, x, y = broadcast_all(ctx.b, ctx.input(0), ctx.input(1), ctx.input(2))
    return [ctx.b.select(c, x, y)]


@rule("Cast", since=6)
def _cast(ctx: NodeContext) -> list[Value]:
    """Float -> int truncates toward zero; to bool is ``!= 0`` (ONNX Cast)."""
    x = ctx.input(0)
    to = element_type(ctx.attr("to"))
    return [cast(ctx, x, to)]


@rule("CastLike", since=15)
def _cast_like(ctx: NodeContext) -> list[Value]:
    return [cast(ctx, ctx.input(0), etype(ctx.input(1)))]


def cast(ctx: NodeContext, x: Value, to) -> Value:
    """ONNX Cast semantics on top of ``stablehlo.convert``."""
    src = etype(x)
    if src == to:
        return x
    if to == i1:
        return compare(ctx.b, "NE", x, ctx.scalar_like(0, x))
    if isinstance(src, FloatType) and isinstance(to, FloatType) and to.name.startswith("f8") \
            and ctx.attr("saturate", 1) == 1:
        fmax = float(np.finfo(to.dtype).max)  # saturate: +-inf too go to +-max
        x = ctx.b.clamp(ctx.scalar_like(-fmax, x), x, ctx.scalar_like(fmax, x))
    if isinstance(src, FloatType) and isinstance(to, IntegerType) and to.width <= 4:
        # out-of-range values become 0 (the reference's ml_dtypes conversion)
        lo, hi = (0, 2 ** to.width - 1) if to.unsigned else (-(2 ** (to.width - 1)),
                                                              2 ** (to.width - 1) - 1)
        t = ctx.b.select(compare(ctx.b, "LT", x, ctx.scalar_like(0, x)), ctx.b.ceil(x),
                         ctx.b.floor(x))
        ok = ctx.b.and_(compare(ctx.b, "GE", t, ctx.scalar_like(lo, x)),
                        compare(ctx.b, "LE", t, ctx.scalar_like(hi, x)))
        x = ctx.b.select(ok, t, ctx.scalar_like(0, x))
    return ctx.b.convert(x, to)


@rule("Clip", since=6)
def _clip6(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    lo = ctx.scalar_like(ctx.attr("min", -3.4028234663852886e38), x)
    hi = ctx.scalar_like(ctx.attr("max", 3.4028234663852886e38), x)
    return [ctx.b.minimum(ctx.b.maximum(x, lo), hi)]


@rule("Clip", since=11)
def _clip11(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    shape = shape_of(x)
    if ctx.has(1):
        x = b.maximum(x, b.broadcast_in_dim(ctx.input(1), shape, []))
    if ctx.has(2):
        x = b.minimum(x, b.broadcast_in_dim(ctx.input(2), shape, []))
    return [x]


# -- activations ------------------------------------------------------------------------
@rule("Relu", since=6)
def _relu(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.maximum(x, ctx.scalar_like(0, x))]


@rule("LeakyRelu", since=6)
def _leaky(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    neg = b.multiply(x, ctx.scalar_like(ctx.attr("alpha", 0.01), x))
    return [b.select(compare(b, "GT", x, ctx.scalar_like(0, x)), x, neg)]


@rule("PRelu", since=7)
def _prelu(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, slope = broadcast_all(b, ctx.input(0), ctx.input(1))
    return [b.select(compare(b, "LT", x, ctx.scalar_like(0, x)), b.multiply(x, slope), x)]


@rule("Elu", since=6)
def _elu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    alpha = ctx.scalar_like(ctx.attr("alpha", 1.0), x)
    neg = b.multiply(alpha, b.exponential_minus_one(x))
    return [b.select(compare(b, "LT", x, ctx.scalar_like(0, x)), neg, x)]


@rule("Celu", since=12)
def _celu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    a = ctx.scalar_like(ctx.attr("alpha", 1.0), x)
    neg = b.multiply(a, b.exponential_minus_one(b.divide(x, a)))
    zero = ctx.scalar_like(0, x)
    return [b.add(b.maximum(zero, x), b.minimum(zero, neg))]


@rule("Selu", since=6)
def _selu(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    alpha = ctx.scalar_like(ctx.attr("alpha", 1.67326319217681884765625), x)
    gamma = ctx.scalar_like(ctx.attr("gamma", 1.05070102214813232421875), x)
    neg = b.multiply(alpha, b.exponential_minus_one(x))
    y = b.select(compare(b, "GT", x, ctx.scalar_like(0, x)), x, neg)
    return [b.multiply(gamma, y)]


@rule("ThresholdedRelu", since=10)
def _thresholded(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    t = ctx.scalar_like(ctx.attr("alpha", 1.0), x)
    return [b.select(compare(b, "GT", x, t), x, ctx.scalar_like(0, x))]


@rule("HardSigmoid", since=6)
def _hard_sigmoid(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    y = b.add(b.multiply(x, ctx.scalar_like(ctx.attr("alpha", 0.2), x)),
              ctx.scalar_like(ctx.attr("beta", 0.5), x))
    return [b.clamp(ctx.scalar_like(0, x), y, ctx.scalar_like(1, x))]


@rule("HardSwish", since=14)
def _hard_swish(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    y = b.add(b.multiply(x, ctx.scalar_like(1 / 6, x)), ctx.scalar_like(0.5, x))
    y = b.clamp(ctx.scalar_like(0, x), y, ctx.scalar_like(1, x))
    return [b.multiply(x, y)]


def softplus(ctx: NodeContext, x: Value) -> Value:
    """``log(1 + exp(x))`` without overflow: ``max(x, 0) + log1p(exp(-|x|))``."""
    b = ctx.b
    return b.add(b.maximum(x, ctx.scalar_like(0, x)),
                 b.log_plus_one(b.exponential(b.negate(b.abs(x)))))


@rule("Softplus", since=1)
def _softplus(ctx: NodeContext) -> list[Value]:
    return [softplus(ctx, ctx.input(0))]


@rule("Softsign", since=1)
def _softsign(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    return [b.divide(x, b.add(ctx.scalar_like(1, x), b.abs(x)))]


@rule("Mish", since=18)
def _mish(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.multiply(x, ctx.b.tanh(softplus(ctx, x)))]


def gelu(ctx: NodeContext, x: Value, approximate: str = "none") -> Value:
    b = ctx.b
    half = ctx.scalar_like(0.5, x)
    if approximate == "tanh":
        inner = b.multiply(ctx.scalar_like(np.sqrt(2 / np.pi), x), b.add(
            x, b.multiply(ctx.scalar_like(0.044715, x), b.multiply(x, b.multiply(x, x)))))
        return b.multiply(b.multiply(half, x), b.add(ctx.scalar_like(1, x), b.tanh(inner)))
    erf = ctx.b.create("chlo.erf", [b.multiply(x, ctx.scalar_like(1 / np.sqrt(2), x))])
    return b.multiply(b.multiply(half, x), b.add(ctx.scalar_like(1, x), erf.results[0]))


@rule("Gelu", since=20)
def _gelu(ctx: NodeContext) -> list[Value]:
    return [gelu(ctx, ctx.input(0), ctx.attr("approximate", "none"))]


@rule("Swish", since=24)
def _swish(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    a = ctx.scalar_like(ctx.attr("alpha", 1.0), x)
    return [ctx.b.multiply(x, ctx.b.logistic(ctx.b.multiply(a, x)))]


@rule("Shrink", since=9)
def _shrink(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    lambd, bias = ctx.attr("lambd", 0.5), ctx.attr("bias", 0.0)
    lo = compare(b, "LT", x, ctx.scalar_like(-lambd, x))
    hi = compare(b, "GT", x, ctx.scalar_like(lambd, x))
    zero = ctx.scalar_like(0, x)
    return [b.select(lo, b.add(x, ctx.scalar_like(bias, x)),
                     b.select(hi, b.subtract(x, ctx.scalar_like(bias, x)), zero))]


@rule("BitShift", since=11)
def _bitshift(ctx: NodeContext) -> list[Value]:
    signed = not is_unsigned(etype(ctx.input(0)))
    op = "shift_left" if ctx.attr("direction") == "LEFT" else (
        "shift_right_arithmetic" if signed else "shift_right_logical")
    return [binary(ctx.b, op, ctx.input(0), ctx.input(1))]


@rule("Det", since=11)
def _det(ctx: NodeContext) -> list[Value]:
    raise ctx.fail("Det is not supported (no LU factorization in StableHLO)")

