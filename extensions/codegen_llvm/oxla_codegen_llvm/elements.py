"""Element-level helpers shared by the cpu backend's op emitters and the SIMT kernels
(:mod:`oxla_codegen_llvm.simt`): the raw bits of a register value (spec
``bitcast_convert``, ``rng_bit_generator``) and a dot's multiply-accumulate step.

Each takes a :class:`~oxla_codegen_llvm.scalar.Scalar` (a SIMT region's is ``r.s``).
"""

from __future__ import annotations

import llvmlite.ir as ir

from oxla.ir import types as T
from oxla_codegen_llvm.complex import make, parts
from oxla_codegen_llvm.scalar import Scalar, from_storage, storage_type, to_storage


def raw_bits(s: Scalar, et: T.ElementType, v: ir.Value, width: int) -> ir.Value:
    """The ``width`` bits of register value ``v`` of ``et`` as an ``i<width>``."""
    bits = to_storage(s, et, v)
    if not isinstance(bits.type, ir.IntType):
        bits = s.b.bitcast(bits, ir.IntType(width))
    if bits.type.width != width:
        bits = s.b.trunc(bits, ir.IntType(width))
    return bits


def from_raw_bits(s: Scalar, et: T.ElementType, bits: ir.Value) -> ir.Value:
    """The register value of ``et`` whose storage bits are ``bits`` (zero-extended when
    narrower)."""
    st = storage_type(et)
    if isinstance(st, ir.IntType):
        if st.width != bits.type.width:
            bits = s.b.zext(bits, st)
    else:
        bits = s.b.bitcast(bits, st)
    return from_storage(s, et, bits)


def mac(s: Scalar, acc_et: T.ElementType, acc: ir.Value, x: ir.Value, y: ir.Value
        ) -> ir.Value:
    """``acc + x * y`` as a separate multiply and add, never contracted: complex<f32>
    rounds every step to f32 (XLA's complex64 arithmetic, which the conformance files'
    expected values come from), complex<f64> is plain f64, a boolean dot is an or of
    ands."""
    b = s.b
    if isinstance(acc_et, T.ComplexType):
        def rd(v: ir.Value) -> ir.Value:
            if acc_et.element_type.name == "f64":
                return v
            return b.fpext(b.fptrunc(v, ir.FloatType()), ir.DoubleType())

        (ar, ai), (xr, xi), (yr, yi) = parts(b, acc), parts(b, x), parts(b, y)
        pr = rd(b.fsub(rd(b.fmul(xr, yr)), rd(b.fmul(xi, yi))))
        pi = rd(b.fadd(rd(b.fmul(xr, yi)), rd(b.fmul(xi, yr))))
        return make(b, rd(b.fadd(ar, pr)), rd(b.fadd(ai, pi)))
    if isinstance(acc_et, T.FloatType):
        return b.fadd(acc, b.fmul(x, y, flags=s.flags), flags=s.flags)
    if acc_et.width == 1:
        return b.or_(acc, b.and_(x, y))
    return b.add(acc, b.mul(x, y))
