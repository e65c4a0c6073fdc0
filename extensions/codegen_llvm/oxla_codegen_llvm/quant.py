"""Scalar emitters of uniformly quantized values (per-tensor quantization).

A quantized scalar is its storage integer in registers and in memory. ``uniform_quantize``
and ``uniform_dequantize`` compute as the reference interpreter does
(``oxla.interpreter.rules.util``): dequantize is ``(storage - zero_point) * scale`` in
the expressed type; quantize is ``x / scale + zero_point`` in the expressed type, clamped
to the storage range, rounded half to even, NaN to 0. Any other elementwise op on
quantized operands is spec ``dequantize_op_quantize``: the operands dequantized, the
op emitted on expressed values, the result quantized.

Per-axis quantization raises :class:`NotSupportedError` (it needs the element's index).
"""

from __future__ import annotations

from types import SimpleNamespace

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import Operation
from oxla.ir import types as T
from oxla_codegen_llvm.scalar import (
    convert,
    emit_scalar,
    llvm_type,
    register_element_kind,
    round_to,
)


def is_quantized(et) -> bool:
    return isinstance(et, T.QuantizedType)


def _check(op: Operation, qt: T.QuantizedType) -> None:
    if qt.is_per_axis:
        raise NotSupportedError(f"'{op.name}' on per-axis quantized type {qt} is not "
                                "supported by the llvm emitters yet", op.loc)


def dequantize(s, op: Operation, qt: T.QuantizedType, x: ir.Value) -> ir.Value:
    """Storage integer ``x`` as a value of ``qt``'s expressed type (its register type)."""
    _check(op, qt)
    b, et = s.b, qt.expressed_type
    ty = llvm_type(et)
    wide = convert(s, x, qt.storage_type, T.IntegerType(64))
    sub = b.sub(wide, ir.Constant(ir.IntType(64), int(qt.zero_points[0])))
    f = round_to(s, et, convert(s, sub, T.IntegerType(64), et))
    scale = _expressed_const(et, ty, qt.scales[0])
    return round_to(s, et, b.fmul(f, scale))


def quantize(s, op: Operation, qt: T.QuantizedType, x: ir.Value) -> ir.Value:
    """Expressed value ``x`` (register type of ``qt.expressed_type``) as a storage integer."""
    _check(op, qt)
    b, et = s.b, qt.expressed_type
    ty = llvm_type(et)
    y = round_to(s, et, b.fdiv(x, _expressed_const(et, ty, qt.scales[0])))
    y = round_to(s, et, b.fadd(y, _expressed_const(et, ty, float(qt.zero_points[0]))))
    lo, hi = ir.Constant(ty, float(qt.storage_min)), ir.Constant(ty, float(qt.storage_max))
    y = b.select(b.fcmp_ordered("<", y, lo), lo, y)
    y = b.select(b.fcmp_ordered(">", y, hi), hi, y)
    y = s.math("roundeven", y)
    y = b.select(b.fcmp_unordered("uno", y, y), ir.Constant(ty, 0.0), y)
    return b.fptosi(y, llvm_type(qt.storage_type))


def _expressed_const(et: T.FloatType, ty: ir.Type, x: float) -> ir.Constant:
    """``x`` rounded to the expressed type ``et`` (as numpy's ``astype(et)``)."""
    import numpy as np

    return ir.Constant(ty, float(np.asarray(x, np.float64).astype(et.dtype)))


def _expressed(v) -> SimpleNamespace:
    t = v.type
    et = t.element_type
    if is_quantized(et):
        t = t.with_element_type(et.expressed_type)
    return SimpleNamespace(type=t)


def emit_quantized(s, op: Operation, args: list) -> ir.Value:
    """Emits ``op`` with a quantized operand or result (see the module doc).

    Raises:
        NotSupportedError: per-axis quantization, or an op with no float emitter.
    """
    in_ets = [v.type.element_type for v in op.operands]
    out_et = op.results[0].type.element_type
    vals = [dequantize(s, op, et, a) if is_quantized(et) else a for a, et in zip(args, in_ets)]
    if op.name in ("stablehlo.uniform_quantize", "stablehlo.uniform_dequantize"):
        x = vals[0]
    else:
        view = SimpleNamespace(name=op.name, operands=[_expressed(v) for v in op.operands],
                               results=[_expressed(v) for v in op.results], attr=op.attr,
                               loc=op.loc)
        x = emit_scalar(s, view, vals)  # type: ignore[arg-type]
    if is_quantized(out_et):
        return quantize(s, op, out_et, x)
    return x


register_element_kind("quant", SimpleNamespace(emit_quantized=emit_quantized))
