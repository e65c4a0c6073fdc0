"""Rules for ``uniform_quantize`` and ``uniform_dequantize`` (spec sections of the same
names), per-tensor and per-axis; quantized -> quantized is a requantization."""

from __future__ import annotations

from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import dequantize, quantize, result_type
from oxla.ir import types as T


@interpreter_rule("stablehlo.uniform_quantize")
def uniform_quantize(ctx, op, args):
    """Spec section ``uniform_quantize``: ``quantize(operand)`` for float operands,
    ``quantize(dequantize(operand))`` for quantized ones."""
    src = op.operands[0].type.element_type
    dst = result_type(op).element_type
    x = args[0]
    if isinstance(src, T.QuantizedType):
        x = dequantize(x, src).astype(dst.expressed_type.dtype)
    return [quantize(x, dst)]


@interpreter_rule("stablehlo.uniform_dequantize")
def uniform_dequantize(ctx, op, args):
    """Spec section ``uniform_dequantize``."""
    return [dequantize(args[0], op.operands[0].type.element_type)]
