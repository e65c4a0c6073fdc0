"""Scalar semantics of the elementwise ops: the op -> emitter table.

An emitter has one signature, ``emit(s: Scalar, op, args) -> ir.Value``: ``args`` are
LLVM scalars of the operands' element types (``i1`` for booleans), the result is a
scalar of the result's element type. Semantics follow the spec and mirror the
reference interpreter (``oxla.interpreter.rules.elementwise``):

* no fast-math flags unless ``fast_math`` (so no reassociation and no FMA contraction:
  separate ``fmul``/``fadd`` are never fused by LLVM under its default
  ``-fp-contract=on`` for IR);
* integers wrap; ``x / 0 == -1`` (all ones), ``x % 0 == x``, ``INT_MIN / -1 ==
  INT_MIN``, ``INT_MIN % -1 == 0``; shifts by a negative amount or at least the bit
  width give 0 (the sign fill for ``shift_right_arithmetic``);
* ``maximum``/``minimum`` on floats are IEEE-754 2019 (NaN propagates, ``-0 < +0``);
* float -> int ``convert`` saturates and maps NaN to 0 (``llvm.fpto[su]i.sat``); the
  spec leaves out-of-range values implementation-defined;
* transcendental functions come from the target (libm on the CPU, < 1 ulp in glibc),
  while the interpreter computes them in f64 and rounds once: expect a few ulp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import Operation
from oxla.ir import types as T
from oxla_codegen_llvm.rules import RULES
from oxla_codegen_llvm.smallfloat import (
    E8M0,
    SMALL_FLOATS,
    e8m0_to_f64,
    f32_to_e8m0,
    f32_to_small,
    small_to_f32,
)
from oxla_codegen_llvm.target import Target

ELEMENT_KINDS: dict[str, Any] = {}
"""Rules of the element types that have a module of their own (``complex``: complex
numbers, ``quant``: quantized types), registered by those modules when they are
imported (:func:`register_element_kind`; ``oxla_codegen_llvm/__init__`` imports them).
This module dispatches to them and they call back into it (``convert``,
``emit_scalar``), so the import arrow runs one way: complex -> scalar, quant -> scalar."""


def register_element_kind(kind: str, rules: Any) -> None:
    """Registers the rules of element kind ``kind`` (an object whose attributes are the
    functions and types this module calls).

    Raises:
        ValueError: ``kind`` is registered already.
    """
    if kind in ELEMENT_KINDS:
        raise ValueError(f"element kind '{kind}' is registered twice")
    ELEMENT_KINDS[kind] = rules


def element_kind(kind: str) -> Any:
    """The rules registered for element kind ``kind``.

    Raises:
        NotSupportedError: nothing registered them (``oxla_codegen_llvm`` not imported).
    """
    rules = ELEMENT_KINDS.get(kind)
    if rules is None:
        raise NotSupportedError(f"{kind} element types have no llvm rules registered "
                                "(import oxla_codegen_llvm)")
    return rules

Emitter = Callable[["Scalar", Operation, list], ir.Value]
EMITTERS = RULES.view("scalar")
"""The generic scalar rules (``op -> rule``, read-only: register through
:func:`emitter` or :func:`oxla_codegen_llvm.rules.register`)."""


def emitter(*names: str, platform: str | None = None) -> Callable[[Emitter], Emitter]:
    """Registers a scalar rule for one or more op names (``stablehlo.add``), for every
    platform or only ``platform`` (``RULES.register(op, fn, platform, "scalar")``).

    Raises:
        ValueError: a rule for one of the names (on that platform) exists.
    """

    def deco(fn: Emitter) -> Emitter:
        for n in names:
            RULES.register(n, fn, platform, "scalar")
        return fn

    return deco


HALF_TYPES = ("f16", "bf16")
NARROW_FLOATS = HALF_TYPES + tuple(SMALL_FLOATS) + (E8M0,)


def llvm_type(et: T.ElementType) -> ir.Type:
    """The LLVM type of a scalar of ``et`` in registers (``i1`` for booleans, ``iN`` for
    every integer width; ``f16``/``bf16`` and the 8/4-bit floats of
    :mod:`oxla_codegen_llvm.smallfloat` are computed in ``float`` (``f8E8M0FNU`` in
    ``double``) and rounded to their type after every op, see :func:`round_to`).

    Raises:
        NotSupportedError: for element types the emitters do not handle yet.
    """
    if isinstance(et, T.IntegerType):
        return ir.IntType(et.width)
    if isinstance(et, T.FloatType) and et.name == E8M0:
        return ir.DoubleType()
    if isinstance(et, T.FloatType) and et.name in ("f32",) + NARROW_FLOATS:
        return ir.FloatType()
    if isinstance(et, T.FloatType) and et.name == "f64":
        return ir.DoubleType()
    if isinstance(et, T.QuantizedType):
        return llvm_type(et.storage_type)
    if isinstance(et, T.ComplexType) and et.element_type.name in ("f32", "f64"):
        return element_kind("complex").CREG
    raise NotSupportedError(f"element type {et} is not supported by the llvm emitters yet")


def storage_type(et: T.ElementType) -> ir.Type:
    """The LLVM type of one element in memory: ``i8`` for ``i1``/``i2``/``i4`` (one per
    byte, as numpy and ml_dtypes store them), ``i16`` bits for ``f16``/``bf16``, ``i8``
    bits for the 8/4-bit floats."""
    t = llvm_type(et)
    if isinstance(et, T.ComplexType):
        return element_kind("complex").complex_storage(et)
    if isinstance(t, ir.IntType) and t.width < 8:
        return ir.IntType(8)
    if is_half(et):
        return ir.IntType(16 if et.name in HALF_TYPES else 8)
    return t


def is_half(et: T.ElementType) -> bool:
    """True for the floats narrower than f32 (computed in f32, stored in 16, 8 bits)."""
    return isinstance(et, T.FloatType) and et.name in NARROW_FLOATS


_I16, _I32, _I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
_F32, _F64 = ir.FloatType(), ir.DoubleType()


def to_storage(s: Scalar, et: T.ElementType, v: ir.Value) -> ir.Value:
    """A register value of ``et`` as it is stored (sub-byte ints zero-extended to a byte,
    as ml_dtypes does; halves rounded to nearest even from f32 by bit manipulation, so
    no compiler-rt call is needed)."""
    st = storage_type(et)
    if isinstance(et, T.ComplexType):
        return element_kind("complex").to_storage_c(s.b, et, v)
    if v.type == st:
        return v
    if isinstance(st, ir.IntType) and isinstance(v.type, ir.IntType):
        return s.b.zext(v, st)
    if et.name == "bf16":
        return _f32_to_bf16(s.b, v)
    if et.name == E8M0:
        return f32_to_e8m0(s.b, v if v.type == _F32 else f64_to_f32_odd(s.b, v))
    if et.name in SMALL_FLOATS:
        return f32_to_small(s.b, et.name, v)
    return _f32_to_f16(s.b, v)


def from_storage(s: Scalar, et: T.ElementType, v: ir.Value) -> ir.Value:
    """The inverse of :func:`to_storage` (exact)."""
    t = llvm_type(et)
    if isinstance(et, T.ComplexType):
        return element_kind("complex").from_storage_c(s.b, et, v)
    if v.type == t:
        return v
    b = s.b
    if isinstance(t, ir.IntType):
        return b.trunc(v, t)
    if et.name == "bf16":
        return b.bitcast(b.shl(b.zext(v, _I32), _const(_I32, 16)), _F32)
    if et.name == E8M0:
        return e8m0_to_f64(b, v)
    if et.name in SMALL_FLOATS:
        return small_to_f32(b, et.name, v)
    # f16: (h & 0x7fff) << 13 as f32 bits, times 2^112 (exact, subnormals too); inf/NaN
    # get the all-ones exponent directly; then the sign.
    h = b.zext(v, _I32)
    mag = b.and_(h, _const(_I32, 0x7FFF))
    bits = b.shl(mag, _const(_I32, 13))
    normal = b.bitcast(b.fmul(b.bitcast(bits, _F32), _const(_F32, 2.0 ** 112)), _I32)
    special = b.or_(bits, _const(_I32, 0x7F800000))
    out = b.select(b.icmp_unsigned(">=", mag, _const(_I32, 0x7C00)), special, normal)
    sign = b.shl(b.and_(h, _const(_I32, 0x8000)), _const(_I32, 16))
    return b.bitcast(b.or_(out, sign), _F32)


def round_to(s: Scalar, et: T.ElementType, v: ir.Value) -> ir.Value:
    """``v`` (computed in f32) rounded to ``et`` when ``et`` is a half type (complex<f32>
    parts computed in f64, rounded to f32)."""
    if isinstance(et, T.ComplexType):
        return element_kind("complex").round_c(s.b, et, v)
    if not is_half(et):
        return v
    return from_storage(s, et, to_storage(s, et, v))


def _f32_to_bf16(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    x = b.bitcast(v, _I32)
    lsb = b.and_(b.lshr(x, _const(_I32, 16)), _const(_I32, 1))
    rounded = b.lshr(b.add(b.add(x, _const(_I32, 0x7FFF)), lsb), _const(_I32, 16))
    nan = b.or_(b.lshr(x, _const(_I32, 16)), _const(_I32, 0x40))
    return b.trunc(b.select(b.fcmp_unordered("uno", v, v), nan, rounded), _I16)


def _f32_to_f16(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    x = b.bitcast(v, _I32)
    sign = b.and_(b.lshr(x, _const(_I32, 16)), _const(_I32, 0x8000))
    a = b.and_(x, _const(_I32, 0x7FFFFFFF))
    nan = b.or_(_const(_I32, 0x7E00), b.and_(b.lshr(a, _const(_I32, 13)),
                                             _const(_I32, 0x3FF)))
    lsb = b.and_(b.lshr(a, _const(_I32, 13)), _const(_I32, 1))
    normal = b.lshr(b.add(b.add(b.sub(a, _const(_I32, 0x38000000)), _const(_I32, 0xFFF)),
                          lsb), _const(_I32, 13))
    # |v| < 2^-14: adding 0.5 puts the f16 subnormal ulp (2^-24) at f32's ulp of 0.5, so
    # the FPU rounds to nearest even for us.
    fa = b.bitcast(a, _F32)
    sub = b.sub(b.bitcast(b.fadd(fa, _const(_F32, 0.5)), _I32), _const(_I32, 0x3F000000))
    out = b.select(b.icmp_unsigned("<", a, _const(_I32, 0x38800000)), sub, normal)
    out = b.select(b.icmp_unsigned(">=", a, _const(_I32, 0x477FF000)),
                   _const(_I32, 0x7C00), out)
    out = b.select(b.icmp_unsigned(">", a, _const(_I32, 0x7F800000)), nan, out)
    return b.trunc(b.or_(out, sign), _I16)


def f64_to_f32_odd(b: ir.IRBuilder, d: ir.Value) -> ir.Value:
    """``d`` rounded to f32 with round-to-odd, so that a second rounding to a narrower
    type (f16) is correctly rounded."""
    f = b.fptrunc(d, _F32)
    back = b.fpext(f, _F64)
    inexact = b.fcmp_ordered("!=", back, d)
    fabs_gt = b.fcmp_ordered(">", b.call(_fabs64(b), [back]), b.call(_fabs64(b), [d]))
    bits = b.bitcast(f, _I32)
    bits = b.select(fabs_gt, b.sub(bits, _const(_I32, 1)), bits)
    bits = b.or_(bits, _const(_I32, 1))
    return b.select(inexact, b.bitcast(bits, _F32), f)


def _fabs64(b: ir.IRBuilder) -> ir.Function:
    return b.module.declare_intrinsic("llvm.fabs", [_F64])


def is_float(et: T.ElementType) -> bool:
    return isinstance(et, T.FloatType)


def is_unsigned(et: T.ElementType) -> bool:
    return isinstance(et, T.IntegerType) and (et.unsigned or et.width == 1)


@dataclass
class Scalar:
    """What an emitter may use: the builder, the module, the target, the options."""

    b: ir.IRBuilder
    module: ir.Module
    target: Target
    fast_math: bool = False

    @property
    def flags(self) -> tuple[str, ...]:
        return ("fast",) if self.fast_math else ()

    def math(self, name: str, *args: ir.Value) -> ir.Value:
        return self.b.call(self.target.math_function(self.module, name, args[0].type),
                           list(args))

    def intrinsic(self, name: str, ty: ir.Type, *args: ir.Value) -> ir.Value:
        return self.b.call(self.module.declare_intrinsic(name, [ty]), list(args))


def _et(op: Operation, i: int = 0) -> T.ElementType:
    return op.operands[i].type.element_type


def _const(ty: ir.Type, v) -> ir.Constant:
    return ir.Constant(ty, v)


def emit_scalar(s: Scalar, op: Operation, args: list) -> ir.Value:
    """Emits ``op`` on scalars ``args``.

    Raises:
        NotSupportedError: the op (or this element type for it) has no emitter.
    """
    if any(isinstance(v.type.element_type, T.QuantizedType)
           for v in list(op.operands) + list(op.results)):
        return element_kind("quant").emit_quantized(s, op, args)
    if any(isinstance(v.type.element_type, T.ComplexType)
           for v in list(op.operands) + list(op.results)):
        return element_kind("complex").emit_complex(s, op, args)
    fn = RULES.lookup(op.name, "scalar", s.target.name)
    if fn is None:
        raise NotSupportedError(f"'{op.name}' has no llvm scalar emitter yet", op.loc)
    return fn(s, op, args)


def _arith(int_name: str, float_name: str, bool_name: str | None = None) -> Emitter:
    def emit(s: Scalar, op: Operation, args: list) -> ir.Value:
        et = _et(op)
        if is_float(et):
            return getattr(s.b, float_name)(*args, flags=s.flags)
        if et == T.IntegerType(1):
            if bool_name is None:
                raise NotSupportedError(f"'{op.name}' on booleans", op.loc)
            return getattr(s.b, bool_name)(*args)
        return getattr(s.b, int_name)(*args)

    return emit


emitter("stablehlo.add")(_arith("add", "fadd", "or_"))
emitter("stablehlo.subtract")(_arith("sub", "fsub"))
emitter("stablehlo.multiply")(_arith("mul", "fmul", "and_"))


@emitter("stablehlo.divide", "stablehlo.remainder")
def _divrem(s: Scalar, op: Operation, args: list) -> ir.Value:
    a, c = args
    et = _et(op)
    div = op.name == "stablehlo.divide"
    if is_float(et):
        return (s.b.fdiv if div else s.b.frem)(a, c, flags=s.flags)
    b, ty = s.b, a.type
    zero = b.icmp_unsigned("==", c, _const(ty, 0))
    bad = zero
    if not is_unsigned(et):
        int_min = _const(ty, -(1 << (ty.width - 1)))
        bad = b.or_(zero, b.and_(b.icmp_signed("==", a, int_min),
                                 b.icmp_signed("==", c, _const(ty, -1))))
    safe = b.select(bad, _const(ty, 1), c)
    if div:
        q = b.udiv(a, safe) if is_unsigned(et) else b.sdiv(a, safe)
        return b.select(zero, _const(ty, -1), q)
    r = b.urem(a, safe) if is_unsigned(et) else b.srem(a, safe)
    return b.select(zero, a, r)


@emitter("stablehlo.maximum", "stablehlo.minimum")
def _maxmin(s: Scalar, op: Operation, args: list) -> ir.Value:
    a, c = args
    et = _et(op)
    is_max = op.name == "stablehlo.maximum"
    if is_float(et):
        return s.math("maximum" if is_max else "minimum", a, c)
    cmp = s.b.icmp_unsigned if is_unsigned(et) else s.b.icmp_signed
    return s.b.select(cmp(">" if is_max else "<", a, c), a, c)


@emitter("stablehlo.clamp")
def _clamp(s: Scalar, op: Operation, args: list) -> ir.Value:
    lo, x, hi = args
    et = _et(op, 1)
    if is_float(et):
        return s.math("minimum", s.math("maximum", x, lo), hi)
    cmp = s.b.icmp_unsigned if is_unsigned(et) else s.b.icmp_signed
    x = s.b.select(cmp(">", lo, x), lo, x)
    return s.b.select(cmp("<", hi, x), hi, x)


@emitter("stablehlo.negate")
def _negate(s: Scalar, op: Operation, args: list) -> ir.Value:
    if is_float(_et(op)):
        return s.b.fneg(args[0], flags=s.flags)
    return s.b.neg(args[0])


@emitter("stablehlo.abs")
def _abs(s: Scalar, op: Operation, args: list) -> ir.Value:
    (a,) = args
    if is_float(_et(op)):
        return s.math("fabs", a)
    if is_unsigned(_et(op)):
        return a
    return s.b.select(s.b.icmp_signed("<", a, _const(a.type, 0)), s.b.neg(a), a)


def _float_unary(fn: Callable[[Scalar, ir.Value], ir.Value]) -> Emitter:
    def emit(s: Scalar, op: Operation, args: list) -> ir.Value:
        if not is_float(_et(op)):
            raise NotSupportedError(f"'{op.name}' on {_et(op)} is not supported by the "
                                    "llvm emitters yet", op.loc)
        return fn(s, args[0])

    return emit


for _name, _fn in {
    "exponential": "exp", "log": "log", "sqrt": "sqrt", "sine": "sin", "cosine": "cos",
    "floor": "floor", "ceil": "ceil", "tanh": "tanh", "exponential_minus_one": "expm1",
    "log_plus_one": "log1p", "round_nearest_even": "roundeven", "round_nearest_afz": "round",
    "tan": "tan", "cbrt": "cbrt",
}.items():
    emitter(f"stablehlo.{_name}")(_float_unary(lambda s, x, _f=_fn: s.math(_f, x)))


@emitter("stablehlo.rsqrt")
def _rsqrt(s: Scalar, op: Operation, args: list) -> ir.Value:
    x = args[0]
    return s.b.fdiv(_const(x.type, 1.0), s.math("sqrt", x), flags=s.flags)


@emitter("stablehlo.logistic")
def _logistic(s: Scalar, op: Operation, args: list) -> ir.Value:
    x = args[0]
    one = _const(x.type, 1.0)
    e = s.math("exp", s.b.fneg(x))
    return s.b.fdiv(one, s.b.fadd(one, e, flags=s.flags), flags=s.flags)


SMALL_POWERS = (0, 1, 2, 3, 4)
"""Constant integer exponents that ``stablehlo.power`` on f32/f64 computes with
multiplications instead of a libm ``pow`` call (which no loop vectorizer can widen: GPT-2's
GELU ``x ** 3`` ran at 7 ns per element)."""


@emitter("stablehlo.power")
def _power(s: Scalar, op: Operation, args: list) -> ir.Value:
    """``stablehlo.power`` (spec: power): integers by squaring; floats through ``pow``,
    except a constant exponent of :data:`SMALL_POWERS` on f32/f64, which is multiplied out
    as XLA's algebraic simplifier does (``x**3 = (x*x)*x``, ``x**4 = (x*x)*(x*x)``).

    Those agree with ``pow`` on NaN, ±inf, ±0 and overflow (``pow(x, 0)`` is 1 for every
    ``x``, NaN included); a finite result differs by rounding only: one rounding per
    multiply (at most 2 for ``x**3`` and ``x**4``) where ``pow`` rounds once.
    """
    if not is_float(_et(op)):
        return _ipow(s, op, *args)
    base, exp = args
    if isinstance(exp, ir.Constant) and isinstance(base.type, (ir.FloatType, ir.DoubleType)):
        n = exp.constant
        if isinstance(n, float) and n.is_integer() and int(n) in SMALL_POWERS:
            return _mul_power(s, base, int(n))
    return s.math("pow", *args)


def _mul_power(s: Scalar, x: ir.Value, n: int) -> ir.Value:
    """``x ** n`` for ``n`` in :data:`SMALL_POWERS`, by multiplications."""
    if n == 0:
        return _const(x.type, 1.0)
    if n == 1:
        return x
    sq = s.b.fmul(x, x, flags=s.flags)
    if n == 2:
        return sq
    return s.b.fmul(sq, x if n == 3 else sq, flags=s.flags)


def _ipow(s: Scalar, op: Operation, base: ir.Value, exp: ir.Value) -> ir.Value:
    """The interpreter's integer power: squaring over every exponent bit (unrolled, no
    branches), wrapping; a negative signed exponent gives 0 except for bases 1 and -1."""
    b, ty = s.b, base.type
    width = ty.width
    if width == 1:  # i1: x ** e is x or 1 (e == 0)
        return b.or_(base, b.not_(exp))
    signed = not is_unsigned(_et(op))
    zero, one = _const(ty, 0), _const(ty, 1)
    e = b.select(b.icmp_signed("<", exp, zero), zero, exp) if signed else exp
    result, sq = one, base
    for i in range(width):
        bit = b.icmp_unsigned("!=", b.and_(b.lshr(e, _const(ty, i)), one), zero)
        result = b.select(bit, b.mul(result, sq), result)
        sq = b.mul(sq, sq)
    if not signed:
        return result
    minus_one = _const(ty, -1)
    odd = b.icmp_unsigned("!=", b.and_(exp, one), zero)
    neg_res = b.select(b.icmp_signed("==", base, one), one,
                       b.select(b.icmp_signed("==", base, minus_one),
                                b.select(odd, minus_one, one), zero))
    return b.select(b.icmp_signed("<", exp, zero), neg_res, result)


@emitter("stablehlo.atan2")
def _atan2(s: Scalar, op: Operation, args: list) -> ir.Value:
    return s.math("atan2", *args)


@emitter("stablehlo.sign")
def _sign(s: Scalar, op: Operation, args: list) -> ir.Value:
    (x,) = args
    b, ty = s.b, x.type
    if is_float(_et(op)):
        # NaN -> NaN, ±0 -> ±0, else ±1 (copysign keeps the sign).
        one = s.math("copysign", _const(ty, 1.0), x)
        return b.select(b.fcmp_unordered("uno", x, x), x,
                        b.select(b.fcmp_ordered("==", x, _const(ty, 0.0)), x, one))
    pos = b.zext(b.icmp_signed(">", x, _const(ty, 0)), ty)
    neg = b.zext(b.icmp_signed("<", x, _const(ty, 0)), ty)
    return b.sub(pos, neg)


@emitter("stablehlo.is_finite")
def _is_finite(s: Scalar, op: Operation, args: list) -> ir.Value:
    x = args[0]
    return s.b.fcmp_ordered("<", s.math("fabs", x), _const(x.type, float("inf")))


@emitter("stablehlo.and", "stablehlo.or", "stablehlo.xor")
def _bitwise(s: Scalar, op: Operation, args: list) -> ir.Value:
    fn = {"stablehlo.and": s.b.and_, "stablehlo.or": s.b.or_, "stablehlo.xor": s.b.xor}
    return fn[op.name](*args)


@emitter("stablehlo.not")
def _not(s: Scalar, op: Operation, args: list) -> ir.Value:
    return s.b.not_(args[0])


@emitter("stablehlo.popcnt")
def _popcnt(s: Scalar, op: Operation, args: list) -> ir.Value:
    return s.intrinsic("llvm.ctpop", args[0].type, args[0])


@emitter("stablehlo.count_leading_zeros")
def _clz(s: Scalar, op: Operation, args: list) -> ir.Value:
    x = args[0]
    # declared by hand: llvmlite's declare_intrinsic gives ctlz one parameter, and the
    # mismatched call crashed LLVM's IR parser (i64 files: segfault)
    name = f"llvm.ctlz.i{x.type.width}"
    fn = s.module.globals.get(name) or ir.Function(
        s.module, ir.FunctionType(x.type, [x.type, ir.IntType(1)]), name)
    return s.b.call(fn, [x, ir.Constant(ir.IntType(1), 0)])


@emitter("stablehlo.shift_left", "stablehlo.shift_right_arithmetic",
         "stablehlo.shift_right_logical")
def _shift(s: Scalar, op: Operation, args: list) -> ir.Value:
    a, n = args
    b, ty = s.b, a.type
    big = b.icmp_unsigned(">=", n, _const(ty, ty.width))  # negative counts are huge too
    safe = b.select(big, _const(ty, 0), n)
    if op.name == "stablehlo.shift_left":
        return b.select(big, _const(ty, 0), b.shl(a, safe))
    if op.name == "stablehlo.shift_right_logical":
        return b.select(big, _const(ty, 0), b.lshr(a, safe))
    if is_unsigned(_et(op)):
        return b.select(big, _const(ty, 0), b.lshr(a, safe))
    fill = b.ashr(a, _const(ty, ty.width - 1))
    return b.select(big, fill, b.ashr(a, safe))


_CMP = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


@emitter("stablehlo.compare")
def _compare(s: Scalar, op: Operation, args: list) -> ir.Value:
    a, c = args
    et = _et(op)
    direction = op.attr("comparison_direction").value
    ctype = op.attr("compare_type")
    kind = ctype.value if ctype is not None else None
    sym = _CMP[direction]
    if is_float(et):
        if kind == "TOTALORDER":
            return s.b.icmp_signed(sym, _total_order_key(s, et, a), _total_order_key(s, et, c))
        if direction == "NE":
            return s.b.fcmp_unordered(sym, a, c)
        return s.b.fcmp_ordered(sym, a, c)
    unsigned = kind == "UNSIGNED" if kind is not None else is_unsigned(et)
    return (s.b.icmp_unsigned if unsigned else s.b.icmp_signed)(sym, a, c)


def _total_order_key(s: Scalar, et: T.ElementType, x: ir.Value) -> ir.Value:
    """An integer whose signed order is IEEE-754 totalOrder on ``x`` (-NaN < -inf < ...
    < -0 < +0 < ... < +inf < +NaN): the bits, magnitude bits flipped when negative."""
    b = s.b
    if et.name == E8M0:  # unsigned: the bits are the order
        bits = b.zext(to_storage(s, et, x), _I16)
    elif is_half(et):
        bits = to_storage(s, et, x)
    else:
        bits = b.bitcast(x, ir.IntType(x.type.width if isinstance(x.type, ir.IntType) else
                                       (32 if x.type == _F32 else 64)))
    ty = bits.type
    flipped = b.xor(bits, _const(ty, (1 << (ty.width - 1)) - 1))
    return b.select(b.icmp_signed("<", bits, _const(ty, 0)), flipped, bits)


@emitter("stablehlo.select")
def _select(s: Scalar, op: Operation, args: list) -> ir.Value:
    return s.b.select(*args)


@emitter("stablehlo.convert")
def _convert(s: Scalar, op: Operation, args: list) -> ir.Value:
    return convert(s, args[0], _et(op), op.results[0].type.element_type)


def convert(s: Scalar, x: ir.Value, src: T.ElementType, dst: T.ElementType) -> ir.Value:
    """Converts scalar ``x`` from ``src`` to ``dst`` (see the module doc for floats
    out of an integer range; f64 -> f16 and the 8/4-bit floats round once, through
    round-to-odd f32, as the interpreter does; f64 -> bf16 rounds through f32)."""
    b = s.b
    to = llvm_type(dst)
    if src == dst:
        return x
    if isinstance(src, T.ComplexType) or isinstance(dst, T.ComplexType):
        return element_kind("complex").convert_c(s, x, src, dst)
    if is_float(src) and is_float(dst):
        if is_half(dst):
            if x.type == _F64:
                x = b.fptrunc(x, _F32) if dst.name == "bf16" else f64_to_f32_odd(b, x)
            return round_to(s, dst, x)
        if x.type == to:
            return x
        return b.fptrunc(x, to) if x.type == _F64 else b.fpext(x, to)
    if is_float(dst):
        if is_half(dst):
            wide = b.uitofp(x, _F64) if is_unsigned(src) else b.sitofp(x, _F64)
            return convert(s, wide, T.FloatType("f64"), dst)
        return b.uitofp(x, to) if is_unsigned(src) else b.sitofp(x, to)
    if is_float(src):
        if to == ir.IntType(1):
            return b.fcmp_unordered("!=", x, _const(x.type, 0.0))
        kind = "fptoui" if is_unsigned(dst) else "fptosi"
        if to.width < 32:
            return _narrow_fp_to_int(b, x, to, is_unsigned(dst))
        name = f"llvm.{kind}.sat.i{to.width}.{'f32' if x.type == ir.FloatType() else 'f64'}"
        fn = s.module.globals.get(name) or ir.Function(s.module, ir.FunctionType(to, [x.type]),
                                                       name)
        return b.call(fn, [x])
    if to == ir.IntType(1):
        return b.icmp_unsigned("!=", x, _const(x.type, 0))
    if to.width < x.type.width:
        return b.trunc(x, to)
    if to.width == x.type.width:
        return x
    return b.zext(x, to) if is_unsigned(src) else b.sext(x, to)


def _narrow_fp_to_int(b: ir.IRBuilder, x: ir.Value, to: ir.IntType, unsigned: bool
                      ) -> ir.Value:
    """Saturating float -> 8/16-bit integer, NaN -> 0, as ``llvm.fpto[su]i.sat`` but
    as a float clamp to the integer range (both ends exact in f32), a conversion to i32
    and a truncation: the same values, and it vectorizes (the ``sat`` intrinsic at i8
    was scalarized on x86: a quantize loop ran 7x slower)."""
    lo, hi = (0, (1 << to.width) - 1) if unsigned else \
        (-(1 << (to.width - 1)), (1 << (to.width - 1)) - 1)
    c = b.select(b.fcmp_ordered("<", x, _const(x.type, float(lo))), _const(x.type, float(lo)), x)
    c = b.select(b.fcmp_ordered(">", c, _const(x.type, float(hi))), _const(x.type, float(hi)), c)
    c = b.select(b.fcmp_unordered("uno", x, x), _const(x.type, 0.0), c)
    return b.trunc(b.fptosi(c, ir.IntType(32)), to)


@emitter("stablehlo.bitcast_convert")
def _bitcast_convert(s: Scalar, op: Operation, args: list) -> ir.Value:
    src, dst = _et(op), op.results[0].type.element_type
    if op.operands[0].type.rank != op.results[0].type.rank:
        raise NotSupportedError("'stablehlo.bitcast_convert' between element types of "
                                "different widths is not supported by the llvm emitters "
                                "yet", op.loc)
    bits = to_storage(s, src, args[0])
    st = storage_type(dst)
    if bits.type != st:
        bits = s.b.bitcast(bits, st)
    return from_storage(s, dst, bits)


@emitter("stablehlo.reduce_precision")
def _reduce_precision(s: Scalar, op: Operation, args: list) -> ir.Value:
    """XLA's bit-level ``reduce_precision`` (the interpreter's ``_reduce_bits``): round
    the mantissa to ``mantissa_bits`` (ties to even), then overflow to ±inf / underflow
    to ±0 outside an ``exponent_bits`` range; NaN stays NaN (+inf with no mantissa bits).
    f16/bf16 work on their own 16-bit patterns, as the interpreter does."""
    from oxla.ir import attributes as A

    b, x, et = s.b, args[0], _et(op)
    e = int(A.to_python(op.attr("exponent_bits")))
    m = int(A.to_python(op.attr("mantissa_bits")))
    if is_half(et) and et.name in HALF_TYPES:  # 8/4-bit floats: on f32 bits (exact)
        nbits, src_e, src_m = (16, 5, 10) if et.name == "f16" else (16, 8, 7)
        u = to_storage(s, et, x)
    else:
        nbits, src_e, src_m = (64, 11, 52) if x.type == _F64 else (32, 8, 23)
        u = b.bitcast(x, ir.IntType(nbits))
    ity = ir.IntType(nbits)
    if m < src_m:
        shift = src_m - m
        last = 1 << shift
        last_bit = b.and_(b.lshr(u, _const(ity, shift)), _const(ity, 1))
        u = b.and_(b.add(b.add(u, last_bit), _const(ity, (last >> 1) - 1)),
                   _const(ity, ~(last - 1) & ((1 << nbits) - 1)))
    if e < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        bias, red = (1 << (src_e - 1)) - 1, (1 << (e - 1)) - 1
        x_exp = b.and_(u, _const(ity, exp_mask))
        zero = b.and_(u, _const(ity, 1 << (nbits - 1)))
        inf = b.or_(zero, _const(ity, exp_mask))
        u = b.select(b.icmp_unsigned(">", x_exp, _const(ity, (bias + red) << src_m)), inf,
                     b.select(b.icmp_unsigned("<=", x_exp, _const(ity, (bias - red) << src_m)),
                              zero, u))
    if et.name == E8M0:  # on its f64 value's bits, as the interpreter
        r = round_to(s, et, b.bitcast(u, x.type))
    else:
        r = from_storage(s, et, u) if is_half(et) else b.bitcast(u, x.type)
    nan_to = x if m > 0 else _const(x.type, float("inf"))
    return b.select(b.fcmp_unordered("uno", x, x), nan_to, r)


@emitter("stablehlo.uniform_quantize", "stablehlo.uniform_dequantize")
def _uniform_quantize(s: Scalar, op: Operation, args: list) -> ir.Value:
    """Only reached without a quantized type (see :mod:`oxla_codegen_llvm.quant`)."""
    raise NotSupportedError(f"'{op.name}' needs a quantized operand or result", op.loc)


@emitter("stablehlo.real", "stablehlo.imag", "stablehlo.complex")
def _real_imag(s: Scalar, op: Operation, args: list) -> ir.Value:
    """On real operands (complex ones go to :mod:`oxla_codegen_llvm.complex`): ``real``
    is the identity, ``imag`` is 0."""
    if op.name == "stablehlo.real":
        return args[0]
    if op.name == "stablehlo.imag":
        return _const(args[0].type, 0.0)
    raise NotSupportedError("'stablehlo.complex' needs a complex result", op.loc)
