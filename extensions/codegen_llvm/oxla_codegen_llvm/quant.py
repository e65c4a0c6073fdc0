"""Scalar emitters of uniformly quantized values (per-tensor and per-axis quantization).

A quantized scalar is its storage integer in registers and in memory. ``uniform_quantize``
and ``uniform_dequantize`` compute as the reference interpreter does
(``oxla.interpreter.rules.util``): dequantize is ``(storage - zero_point) * scale`` in
the expressed type; quantize is ``x / scale + zero_point`` in the expressed type, clamped
to the storage range, rounded half to even, NaN to 0. Any other elementwise op on
quantized operands is spec ``dequantize_op_quantize``: the operands dequantized, the
op emitted on expressed values, the result quantized.

Per-axis quantization (spec "Quantized element types": one scale and zero point per
slice along ``quantization_dimension``) needs the element's index: ``uniform_quantize``
and ``uniform_dequantize`` are index rules of the fused emitter, which pick the element's
scale and zero point from two constant arrays by its index along that dimension. Other
ops on per-axis operands raise :class:`NotSupportedError`.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import Operation
from oxla.ir import types as T
from oxla_codegen_llvm.fused import FusedEmitter, index_rule
from oxla_codegen_llvm.loops import I64
from oxla_codegen_llvm.scalar import (
    convert,
    emit_scalar,
    llvm_type,
    register_element_kind,
    round_to,
)


def is_quantized(et) -> bool:
    return isinstance(et, T.QuantizedType)


def _check(op: Operation, qt: T.QuantizedType, axis: ir.Value | None) -> None:
    if qt.is_per_axis and axis is None:
        raise NotSupportedError(f"'{op.name}' on per-axis quantized type {qt} is not "
                                "supported by the llvm emitters yet", op.loc)


def _parameters(s, qt: T.QuantizedType, axis: ir.Value | None) -> tuple[ir.Value, ir.Value]:
    """``(scale, zero point)`` of the element: ``qt``'s own for per-tensor types, else
    element ``axis`` (i64) of two constant arrays, in the expressed type and i64."""
    import numpy as np

    et = qt.expressed_type
    ty = llvm_type(et)
    if not qt.is_per_axis:
        return _expressed_const(et, ty, qt.scales[0]), ir.Constant(I64, qt.zero_points[0])
    scales = np.asarray(qt.scales, np.float64).astype(et.dtype)
    arrays = []
    for kind, elt, vals in (("scales", ty, [float(v) for v in scales]),
                            ("zero_points", I64, [int(v) for v in qt.zero_points])):
        digest = hashlib.sha1(str(qt).encode()).hexdigest()[:16]
        name = f"oxla.quant.{kind}.{digest}"  # one per type and module, same every run
        g = s.module.globals.get(name)
        if g is None:
            arr = ir.ArrayType(elt, len(vals))
            g = ir.GlobalVariable(s.module, arr, name)
            g.global_constant, g.linkage = True, "internal"
            g.initializer = ir.Constant(arr, vals)
        zero = ir.Constant(ir.IntType(32), 0)
        arrays.append(s.b.load(s.b.gep(g, [zero, axis], inbounds=True)))
    return arrays[0], arrays[1]


def dequantize(s, op: Operation, qt: T.QuantizedType, x: ir.Value,
               axis: ir.Value | None = None) -> ir.Value:
    """Storage integer ``x`` as a value of ``qt``'s expressed type (its register type);
    ``axis``: the element's index along a per-axis type's quantization dimension."""
    _check(op, qt, axis)
    b, et = s.b, qt.expressed_type
    scale, zp = _parameters(s, qt, axis)
    wide = convert(s, x, qt.storage_type, T.IntegerType(64))
    sub = b.sub(wide, zp)
    f = round_to(s, et, convert(s, sub, T.IntegerType(64), et))
    return round_to(s, et, b.fmul(f, scale))


def quantize(s, op: Operation, qt: T.QuantizedType, x: ir.Value,
             axis: ir.Value | None = None) -> ir.Value:
    """Expressed value ``x`` (register type of ``qt.expressed_type``) as a storage integer;
    ``axis`` as for :func:`dequantize`."""
    _check(op, qt, axis)
    b, et = s.b, qt.expressed_type
    ty = llvm_type(et)
    scale, zp = _parameters(s, qt, axis)
    y = round_to(s, et, b.fdiv(x, scale))
    y = round_to(s, et, b.fadd(y, convert(s, zp, T.IntegerType(64), et)))
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


def _axis(et: T.ElementType, idx: list) -> ir.Value | None:
    return idx[et.quantized_dimension] if is_quantized(et) and et.is_per_axis else None


@index_rule("stablehlo.uniform_quantize")
@index_rule("stablehlo.uniform_dequantize")
def _uniform_quantize(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    """``uniform_quantize`` / ``uniform_dequantize`` (spec) at ``idx``: same-shape ops, so
    the operand is read at ``idx`` and a per-axis type's parameters chosen by it."""
    s = f.s
    (src,), dst = op.operands, op.results[0].type.element_type
    x = f.value_at(src, idx)
    et = src.type.element_type
    if is_quantized(et):
        x = dequantize(s, op, et, x, _axis(et, idx))
    if is_quantized(dst):
        x = quantize(s, op, dst, x, _axis(dst, idx))
    return x
