"""Floats narrower than 16 bits (the f8, f6 and f4 types of the spec): computed in f32,
stored one per byte as ml_dtypes stores them, rounded from f32 by bit manipulation
exactly as ml_dtypes converts (round to nearest even).

Kinds of format:

* ``ieee`` (``f8E3M4``, ``f8E4M3``, ``f8E5M2``): infinities and NaNs (all-ones
  exponent): overflow rounds to ±inf, NaN becomes the quiet NaN ``s 11..1 10..0``.
* ``fn`` (``f8E4M3FN``): no infinities, one NaN per sign (all ones): overflow and ±inf
  become NaN of their sign.
* ``fnuz`` (``f8E4M3FNUZ``, ``f8E5M2FNUZ``, ``f8E4M3B11FNUZ``): no infinities, no
  negative zero, the NaN is ``0x80``: overflow, ±inf and NaN become it, -0 becomes +0.
* ``finite`` (``f4E2M1FN``, ``f6E2M3FN``, ``f6E3M2FN``): no infinities or NaNs:
  overflow and ±inf saturate to ±max, NaN becomes a zero of the opposite sign.

``f8E8M0FNU`` (unsigned powers of two ``2^-127 .. 2^127``, ``0xFF`` NaN, no zero) is
computed in f64 instead (:func:`e8m0_to_f64`, :func:`f32_to_e8m0`): every value is
exact in f32 too (``2^-127`` as a subnormal), but products and quotients of its values
leave f32's range, and the interpreter computes them in f64.
"""

from __future__ import annotations

import llvmlite.ir as ir

#: name -> (exponent bits, mantissa bits, exponent bias, kind)
SMALL_FLOATS: dict[str, tuple[int, int, int, str]] = {
    "f8E3M4": (3, 4, 3, "ieee"),
    "f8E4M3": (4, 3, 7, "ieee"),
    "f8E5M2": (5, 2, 15, "ieee"),
    "f8E4M3FN": (4, 3, 7, "fn"),
    "f8E4M3FNUZ": (4, 3, 8, "fnuz"),
    "f8E5M2FNUZ": (5, 2, 16, "fnuz"),
    "f8E4M3B11FNUZ": (4, 3, 11, "fnuz"),
    "f4E2M1FN": (2, 1, 1, "finite"),
    "f6E2M3FN": (2, 3, 1, "finite"),
    "f6E3M2FN": (3, 2, 3, "finite"),
}

_I8, _I32, _F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()
_I64, _F64 = ir.IntType(64), ir.DoubleType()

E8M0 = "f8E8M0FNU"


def _c(v: int) -> ir.Constant:
    return ir.Constant(_I32, v)


def f32_to_small(b: ir.IRBuilder, name: str, v: ir.Value) -> ir.Value:
    """f32 register ``v`` rounded to the ``name`` format's bits (an ``i8``)."""
    e, m, bias, kind = SMALL_FLOATS[name]
    width, sh = e + m, 23 - m
    x = b.bitcast(v, _I32)
    sign = b.shl(b.lshr(x, _c(31)), _c(width))
    a = b.and_(x, _c(0x7FFFFFFF))
    lsb = b.and_(b.lshr(a, _c(sh)), _c(1))
    normal = b.lshr(b.add(b.add(b.sub(a, _c((127 - bias) << 23)), _c((1 << (sh - 1)) - 1)),
                          lsb), _c(sh))
    # |v| below the smallest normal: adding K, whose f32 ulp is the format's subnormal
    # ulp 2^(1-bias-m), makes the FPU round to nearest even for us.
    k = float(2.0 ** (1 - bias - m + 23))
    fa = b.bitcast(a, _F32)
    sub = b.sub(b.bitcast(b.fadd(fa, ir.Constant(_F32, k)), _I32),
                b.bitcast(ir.Constant(_F32, k), _I32))
    out = b.select(b.icmp_unsigned("<", a, _c((128 - bias) << 23)), sub, normal)
    is_nan = b.icmp_unsigned(">", a, _c(0x7F800000))
    if kind == "ieee":
        inf = ((1 << e) - 1) << m
        out = b.select(b.icmp_unsigned(">=", out, _c(inf)), _c(inf), out)
        out = b.select(is_nan, _c(inf | (1 << (m - 1))), out)
    elif kind == "fn":
        nan = (1 << width) - 1
        out = b.select(b.or_(is_nan, b.icmp_unsigned(">", out, _c(nan))), _c(nan), out)
    elif kind == "fnuz":
        bad = b.or_(is_nan, b.icmp_unsigned(">", out, _c((1 << width) - 1)))
        sign = b.select(b.icmp_unsigned("==", out, _c(0)), _c(0), sign)  # no negative zero
        out = b.select(bad, _c(1 << width), out)
        sign = b.select(bad, _c(0), sign)
    else:
        top = (1 << width) - 1
        out = b.select(b.icmp_unsigned(">", out, _c(top)), _c(top), out)
        out = b.select(is_nan, _c(0), out)
        sign = b.select(is_nan, b.xor(sign, _c(1 << width)), sign)
    return b.trunc(b.or_(out, sign), _I8)


def small_to_f32(b: ir.IRBuilder, name: str, h: ir.Value) -> ir.Value:
    """The exact f32 value of the ``name`` bits ``h`` (an ``i8``; bits above the format's
    width ignored)."""
    e, m, bias, kind = SMALL_FLOATS[name]
    width = e + m
    hz = b.zext(h, _I32)
    mag = b.and_(hz, _c((1 << width) - 1))
    bits = b.shl(mag, _c(23 - m))
    out = b.bitcast(b.fmul(b.bitcast(bits, _F32), ir.Constant(_F32, 2.0 ** (127 - bias))),
                    _I32)
    if kind == "ieee":
        special = b.or_(bits, _c(0x7F800000))
        out = b.select(b.icmp_unsigned(">=", mag, _c(((1 << e) - 1) << m)), special, out)
    elif kind == "fn":
        out = b.select(b.icmp_unsigned("==", mag, _c((1 << width) - 1)), _c(0x7FC00000), out)
    elif kind == "fnuz":
        out = b.select(b.icmp_unsigned("==", b.and_(hz, _c((1 << (width + 1)) - 1)), _c(1 << width)),
                       _c(0x7FC00000), out)
    sign = b.shl(b.and_(b.lshr(hz, _c(width)), _c(1)), _c(31))
    return b.bitcast(b.or_(out, sign), _F32)



def f32_to_e8m0(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """f32 register ``v`` rounded to ``f8E8M0FNU`` bits (an ``i8``) exactly as ml_dtypes
    rounds: a normal f32 gives its exponent, plus one when the mantissa is at least
    half (ties round up), NaN ``0xFF`` past ``2^127``; an f32 subnormal rounds to the
    nearer of ``2^-127`` (``0x00``, also for everything below it) and ``2^-126``
    (``0x01``), the tie ``1.5 * 2^-127`` (bits ``0x600000``) up; zero, negatives,
    infinities and NaN give ``0xFF``. (f64 values reach here rounded to odd f32, as the
    interpreter rounds them.)"""
    x = b.bitcast(v, _I32)
    a = b.and_(x, _c(0x7FFFFFFF))
    e = b.lshr(a, _c(23))
    up = b.zext(b.icmp_unsigned(">=", b.and_(a, _c(0x7FFFFF)), _c(0x400000)), _I32)
    r = b.add(e, up)
    r = b.select(b.icmp_unsigned(">", r, _c(254)), _c(255), r)
    sub = b.zext(b.icmp_unsigned(">=", a, _c(0x600000)), _I32)
    r = b.select(b.icmp_unsigned("==", e, _c(0)), sub, r)
    bad = b.or_(b.icmp_signed("<", x, _c(0)),
                b.or_(b.icmp_unsigned("==", a, _c(0)), b.icmp_unsigned(">=", a, _c(0x7F800000))))
    return b.trunc(b.select(bad, _c(255), r), _I8)


def e8m0_to_f64(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
    """The exact f64 value ``2^(h - 127)`` of ``f8E8M0FNU`` bits ``h`` (``i8``); NaN for
    ``0xFF``."""
    hz = b.zext(h, _I64)
    bits = b.shl(b.add(hz, ir.Constant(_I64, 1023 - 127)), ir.Constant(_I64, 52))
    return b.select(b.icmp_unsigned("==", hz, ir.Constant(_I64, 255)),
                    ir.Constant(_F64, float("nan")), b.bitcast(bits, _F64))
