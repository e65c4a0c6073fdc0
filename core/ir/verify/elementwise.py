"""Elementwise ops: shape and element-type agreement (spec "Ops", e.g. ``add`` C1-C7).

Shapes are compared with ``?`` compatible with any size; quantized operands are
compared by baseline element type (storage and expressed type, not scales).
"""

from __future__ import annotations

from collections.abc import Callable

from oxla.ir.operation import Operation
from oxla.ir.ops.chlo import CHLO_BINARY, CHLO_UNARY
from oxla.ir.ops.stablehlo import BINARY, UNARY
from oxla.ir.types import ComplexType, ElementType, IntegerType
from oxla.ir.verify import register_verifier
from oxla.ir.verify.helpers import (
    baseline_elem,
    elem,
    fail,
    is_bool,
    is_complex,
    is_float,
    is_int,
    is_quant,
    rank,
    shape,
    shapes_ok,
)

I1 = IntegerType(1)


def _same_shapes(op: Operation, cid: str) -> None:
    """All operands and results have compatible shapes."""
    vals = [*op.operands, *op.results]
    ref = next((v for v in vals if shape(v.type) is not None), None)
    if ref is None:
        return
    for v in vals:
        if not shapes_ok(shape(ref.type), shape(v.type)):
            what = "operands" if not op.results or v is not op.results[0] else "types"
            fail(op, cid, f"{what} have types {ref.type} and {v.type}; expected the same shape")


def _all_same_type(op: Operation) -> bool:
    """True when every operand and result has the type of the first result (the common
    case, which then needs no shape or element-type comparison)."""
    if not op.results:
        return False
    t = op.results[0].type
    for v in op.operands:
        if v.type is not t and v.type != t:
            return False
    for v in op.results:
        if v.type is not t and v.type != t:
            return False
    return True


def _same_elems(op: Operation, cid: str, values) -> None:
    es = [(v, elem(v.type)) for v in values if elem(v.type) is not None]
    if not es:
        return
    quant = [e for _, e in es if is_quant(e)]
    if quant and len(quant) != len(es):
        # Mixed quantized / expressed types appear only in hybrid ops; compare the
        # expressed type of quantized values with the plain element types.
        keys = {(e.expressed_type if is_quant(e) else e) for _, e in es}
    else:
        keys = {baseline_elem(e) for _, e in es}
    if len(keys) > 1:
        ts = ", ".join(sorted({str(v.type) for v, _ in es}))
        fail(op, cid, f"operands and result have types {ts}; expected the same element type")


def _operand_kinds(op: Operation, cid: str, ok: Callable[[ElementType], bool], what: str):
    for v in op.operands:
        e = elem(v.type)
        if e is not None and not is_quant(e) and not ok(e):
            fail(op, cid, f"operand has type {v.type}; expected a tensor of {what}")


_INT_OR_BOOL = {"and", "or", "xor", "not"}
_INT_ONLY = {"popcnt", "count_leading_zeros", "shift_left", "shift_right_arithmetic",
             "shift_right_logical"}
_FLOAT_OR_COMPLEX = {
    "cbrt", "cosine", "exponential", "exponential_minus_one", "log", "log_plus_one",
    "logistic", "rsqrt", "sine", "sqrt", "tan", "tanh", "atan2", "ceil", "floor",
    "round_nearest_afz", "round_nearest_even",
}


def verify_same_type_elementwise(op: Operation) -> None:
    """``add`` (C1): ``type(lhs) = type(rhs) = type(result)`` and its unary/binary kin."""
    short = op.name.split(".", 1)[1]
    if short in ("abs", "real", "imag"):
        _same_shapes(op, "C1")
        _verify_to_real(op, short)
        if short == "abs":
            _operand_kinds(op, "C1", _signed_float_or_complex,
                           "signed integers, floats or complex numbers")
        return
    if not _all_same_type(op):
        _same_shapes(op, "C1")
        _same_elems(op, "C1", [*op.operands, *op.results])
    if short in _INT_OR_BOOL:
        _operand_kinds(op, "C1", lambda e: is_int(e) or is_bool(e), "integers or booleans")
    elif short in _INT_ONLY:
        _operand_kinds(op, "C1", is_int, "integers")
    elif short == "sign":  # spec (I1): no unsigned integers, no booleans
        _operand_kinds(op, "C1", _signed_float_or_complex,
                       "signed integers, floats or complex numbers")
    elif short in _FLOAT_OR_COMPLEX:
        _operand_kinds(op, "C1", lambda e: is_float(e) or is_complex(e),
                       "floats or complex numbers")


def _signed_float_or_complex(e: ElementType) -> bool:
    return is_float(e) or is_complex(e) or (
        isinstance(e, IntegerType) and e.width > 1 and not e.unsigned)


def _verify_to_real(op: Operation, short: str) -> None:
    """``abs`` (C2), ``real``/``imag`` (C2): complex operands give their float part."""
    e, r = elem(op.operands[0].type), elem(op.results[0].type)
    if e is None or r is None or is_quant(e) or is_quant(r):
        return
    want = e.element_type if isinstance(e, ComplexType) else e
    if r != want:
        fail(op, "C2", f"result has type {op.results[0].type}; expected element type {want}")


for _n in [*UNARY, *BINARY]:
    register_verifier(f"stablehlo.{_n}")(verify_same_type_elementwise)


@register_verifier(*(f"chlo.{n}" for n in [*CHLO_UNARY, *CHLO_BINARY]), "chlo.mulhi")
def verify_chlo_elementwise(op: Operation) -> None:
    """CHLO elementwise ops: operands and results have the same shape."""
    _same_shapes(op, "C1")


@register_verifier("stablehlo.compare")
def verify_compare(op: Operation) -> None:
    """``compare`` (C1) same baseline element type, (C2) same shapes, result of i1."""
    lhs, rhs = op.operands
    _same_elems(op, "C1", [lhs, rhs])
    _same_shapes(op, "C2")
    r = elem(op.results[0].type)
    if r is not None and not is_bool(r):
        fail(op, "C2", f"result has type {op.results[0].type}; expected a tensor of i1")


@register_verifier("stablehlo.is_finite")
def verify_is_finite(op: Operation) -> None:
    """``is_finite`` (C1) float operand, (C2) same shape, i1 result."""
    _operand_kinds(op, "C1", is_float, "floats")
    _same_shapes(op, "C2")
    r = elem(op.results[0].type)
    if r is not None and not is_bool(r):
        fail(op, "C2", f"result has type {op.results[0].type}; expected a tensor of i1")


@register_verifier("stablehlo.convert", "stablehlo.uniform_quantize",
                   "stablehlo.uniform_dequantize")
def verify_convert(op: Operation) -> None:
    """``convert`` (C1): ``shape(operand) = shape(result)``."""
    _same_shapes(op, "C1")


@register_verifier("stablehlo.reduce_precision")
def verify_reduce_precision(op: Operation) -> None:
    """``reduce_precision`` (C1) same baseline type, (C2) exponent_bits >= 1,
    (C3) mantissa_bits >= 0."""
    _same_shapes(op, "C1")
    _same_elems(op, "C1", [*op.operands, *op.results])
    eb = op.attributes.get("exponent_bits")
    mb = op.attributes.get("mantissa_bits")
    if eb is not None and eb.value < 1:
        fail(op, "C2", f"exponent_bits is {eb.value}; expected at least 1")
    if mb is not None and mb.value < 0:
        fail(op, "C3", f"mantissa_bits is {mb.value}; expected at least 0")


@register_verifier("stablehlo.complex")
def verify_complex(op: Operation) -> None:
    """``complex`` (C1) same lhs/rhs type, (C2) same shapes, (C3) complex result."""
    lhs, rhs = op.operands
    if lhs.type != rhs.type and not (shapes_ok(shape(lhs.type), shape(rhs.type))
                                     and elem(lhs.type) == elem(rhs.type)):
        fail(op, "C1", f"operands have types {lhs.type} and {rhs.type}; expected the same type")
    _same_shapes(op, "C2")
    e, r = elem(lhs.type), elem(op.results[0].type)
    if e is not None and r is not None and r != ComplexType(e):  # type: ignore[arg-type]
        fail(op, "C3", f"result has type {op.results[0].type}; expected complex<{e}> elements")


@register_verifier("stablehlo.select")
def verify_select(op: Operation) -> None:
    """``select`` (C1) scalar or same-shape pred, (C2) same baseline types."""
    pred, t, f = op.operands
    pr = rank(pred.type)
    if pr not in (None, 0) and not shapes_ok(shape(pred.type), shape(t.type)):
        fail(op, "C1", f"pred has type {pred.type} and on_true {t.type}; expected a scalar "
                       "pred or the same shape")
    for v in (f, op.results[0]):
        if not shapes_ok(shape(t.type), shape(v.type)):
            fail(op, "C2", f"types {t.type} and {v.type}; expected the same shape")
    _same_elems(op, "C2", [t, f, op.results[0]])


@register_verifier("stablehlo.clamp")
def verify_clamp(op: Operation) -> None:
    """``clamp`` (C1-C2) scalar or same-shape bounds, (C3-C4) same types."""
    mn, x, mx = op.operands
    for cid, b in (("C1", mn), ("C2", mx)):
        if rank(b.type) not in (None, 0) and not shapes_ok(shape(b.type), shape(x.type)):
            fail(op, cid, f"bound has type {b.type} and operand {x.type}; expected a scalar "
                          "or the same shape")
    _same_elems(op, "C3", [mn, x, mx])
    if not shapes_ok(shape(x.type), shape(op.results[0].type)):
        fail(op, "C4", f"result has type {op.results[0].type}; expected {x.type}")
    _same_elems(op, "C4", [x, op.results[0]])


@register_verifier("stablehlo.bitcast_convert")
def verify_bitcast_convert(op: Operation) -> None:
    """``bitcast_convert`` (C1) shapes by bit widths, (C2) complex to complex only."""
    x, r = op.operands[0].type, op.results[0].type
    e, er = elem(x), elem(r)
    if e is None or er is None:
        return
    if is_complex(e) != is_complex(er):
        fail(op, "C2", f"operand has type {x} and result {r}; expected both complex or neither")
    bx, br = e.bitwidth, er.bitwidth
    sx, sr = shape(x), shape(r)
    if sx is None or sr is None:
        return
    if bx == br:
        ok = shapes_ok(sx, sr)
    elif br < bx:
        ok = len(sr) == len(sx) + 1 and shapes_ok(sx, sr[:-1]) and (
            sr[-1] is None or sr[-1] * br == bx)
    else:
        ok = len(sr) == len(sx) - 1 and shapes_ok(sx[:-1], sr) and (
            sx[-1] is None or sx[-1] * bx == br)
    if not ok:
        fail(op, "C1", f"cannot bitcast {x} to {r}; shapes do not match the bit widths")


__all__ = ["verify_same_type_elementwise", "I1"]
