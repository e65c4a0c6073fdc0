"""Rules for type conversions: ``convert``, ``bitcast_convert``, ``reduce_precision``
and ``iota`` (spec sections of the same names).

Where the spec leaves a conversion open (#180: out-of-range float -> int, int -> narrower
int), oxla follows XLA: integers wrap around (two's complement truncation), floats
converted to integers truncate toward zero and saturate at the integer's range with
NaN going to 0.
"""

from __future__ import annotations

import numpy as np

from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.elementwise import round_float, to_wide_int, wrap_int
from oxla.interpreter.rules.util import attr, dequantize, quantize, result_type
from oxla.ir import types as T


def convert_values(x: np.ndarray, src: T.ElementType, dst: T.ElementType) -> np.ndarray:
    """Spec ``convert`` of runtime values from element type ``src`` to ``dst``."""
    x = np.asarray(x)
    if isinstance(src, T.ComplexType) and not isinstance(dst, T.ComplexType):
        x = x.real  # the imaginary part is dropped
        src = src.element_type
    if isinstance(dst, T.IntegerType) and dst.width == 1:
        return (x != 0).astype(np.bool_)
    if isinstance(src, T.IntegerType) and src.width == 1:
        x = x.astype(np.int64)
        src = T.IntegerType(64)
    if isinstance(dst, T.IntegerType | T.IndexType):
        if isinstance(src, T.IntegerType | T.IndexType):
            return wrap_int(to_wide_int(x, src), dst)
        # float -> integer: truncate, saturate, NaN -> 0
        f = np.trunc(x.astype(np.float64))
        lo, hi = dst.min_value, dst.max_value
        out = np.zeros(f.shape, dtype=dst.dtype)
        big = f >= float(hi)
        small = f <= float(lo)
        mid = ~(big | small | np.isnan(f))
        out[big] = hi
        out[small] = lo
        mid_vals = f[mid]
        out[mid] = wrap_int(mid_vals.astype(np.uint64 if dst.unsigned else np.int64), dst)
        return out
    if isinstance(dst, T.ComplexType):
        if isinstance(src, T.ComplexType):
            return x.astype(dst.dtype)
        re = convert_values(x, src, dst.element_type)
        out = np.zeros(re.shape, dtype=dst.dtype)
        out.real = re
        return out
    # -> float, rounded once (through f64: exact for floats and for |ints| <= 2**53)
    with np.errstate(all="ignore"):
        if dst.dtype.itemsize < 4 or isinstance(src, T.FloatType) and src.bitwidth == 64:
            return round_float(x.astype(np.float64), dst.dtype)
        return x.astype(dst.dtype)


@interpreter_rule("stablehlo.convert")
def convert(ctx, op, args):
    """Spec section ``convert``."""
    src = op.operands[0].type.element_type
    dst = result_type(op).element_type
    x = args[0]
    if isinstance(src, T.QuantizedType):
        x, src = dequantize(x, src), src.expressed_type
    if isinstance(dst, T.QuantizedType):
        return [quantize(convert_values(x, src, dst.expressed_type), dst)]
    return [convert_values(x, src, dst)]


# -- bitcast_convert ---------------------------------------------------------------------


def _bitwidth(et: T.ElementType) -> int:
    if isinstance(et, T.QuantizedType):
        return et.storage_type.width
    return et.bitwidth


def _to_bits(x: np.ndarray, et: T.ElementType) -> np.ndarray:
    """Bit patterns (uint64) of elements of a type at most 64 bits wide."""
    x = np.asarray(x)
    w = _bitwidth(et)
    n = x.dtype.itemsize
    u = x.view(np.dtype(f"u{n}")).astype(np.uint64)
    if w < 8 * n:
        u = u & np.uint64((1 << w) - 1)
    return u


def _from_bits(u: np.ndarray, et: T.ElementType) -> np.ndarray:
    dt = et.dtype
    w = _bitwidth(et)
    n = dt.itemsize
    if isinstance(et, T.IntegerType) and w == 1:
        return (u & np.uint64(1)).astype(np.bool_)
    if isinstance(et, T.IntegerType | T.QuantizedType) and w < 8 * n:
        st = et.storage_type if isinstance(et, T.QuantizedType) else et
        return wrap_int(u.astype(np.int64), st)
    return u.astype(np.dtype(f"u{n}")).view(dt)


@interpreter_rule("stablehlo.bitcast_convert")
def bitcast_convert(ctx, op, args):
    """Spec section ``bitcast_convert``: same bits; a narrower result gets an extra last
    dimension (little-endian order), a wider one consumes the operand's last dimension."""
    src = op.operands[0].type.element_type
    rt = result_type(op)
    dst = rt.element_type
    x = np.array(args[0], order="C")
    wi, wo = _bitwidth(src), _bitwidth(dst)
    ddt = dst.dtype
    byte_ok = (wi % 8 == 0 and wo % 8 == 0 and x.dtype.itemsize * 8 == wi
               and ddt.itemsize * 8 == wo)
    # the result shape comes from the operand (the result type may have `?` dims)
    if wi == wo:
        shape = x.shape
    elif wi > wo:
        shape = (*x.shape, wi // wo)
    else:
        shape = x.shape[:-1]
    if byte_ok:
        return [x.reshape(-1).view(np.uint8).view(ddt).reshape(shape).copy()]
    bits = _to_bits(x, src)
    if wi == wo:
        out = bits
    elif wi > wo:
        k = wi // wo
        shifts = (np.arange(k, dtype=np.uint64) * np.uint64(wo))
        out = (bits[..., None] >> shifts) & np.uint64((1 << wo) - 1)
    else:
        k = wo // wi
        shifts = (np.arange(k, dtype=np.uint64) * np.uint64(wi))
        out = np.bitwise_or.reduce(bits << shifts, axis=-1)
    return [_from_bits(np.asarray(out, dtype=np.uint64), dst).reshape(shape)]


# -- reduce_precision --------------------------------------------------------------------

_FORMATS = {  # numpy float dtype -> (unsigned view dtype, exponent bits, mantissa bits)
    np.dtype(np.float64): (np.uint64, 11, 52),
    np.dtype(np.float32): (np.uint32, 8, 23),
    np.dtype(np.float16): (np.uint16, 5, 10),
}


def _reduce_bits(u: np.ndarray, nbits: int, src_e: int, src_m: int, e: int, m: int):
    """XLA's bit-level reduce_precision on unsigned bit patterns (uint64 arithmetic)."""
    one = np.uint64(1)
    if m < src_m:
        shift = np.uint64(src_m - m)
        last = one << shift
        base_bias = (last >> one) - one
        last_bit = (u & last) >> shift
        u = (u + last_bit + base_bias) & ~(last - one)
        if nbits < 64:
            u = u & np.uint64((1 << nbits) - 1)
    if e < src_e:
        sign_mask = one << np.uint64(nbits - 1)
        exp_mask = np.uint64(((1 << src_e) - 1) << src_m)
        bias = (1 << (src_e - 1)) - 1
        red_bias = (1 << (e - 1)) - 1
        max_exp = np.uint64((bias + red_bias) << src_m)
        min_exp = np.uint64((bias - red_bias) << src_m)
        x_exp = u & exp_mask
        signed_zero = u & sign_mask
        signed_inf = signed_zero | exp_mask
        u = np.where(x_exp > max_exp, signed_inf, np.where(x_exp <= min_exp, signed_zero, u))
    return u


def reduce_precision_values(x: np.ndarray, e: int, m: int) -> np.ndarray:
    """Spec ``reduce_precision``: round the mantissa to ``m`` bits (ties to even), then
    overflow to signed infinity / underflow to signed zero outside an ``e``-bit exponent
    range. NaN stays NaN."""
    x = np.asarray(x)
    dt = x.dtype
    if dt in _FORMATS:
        udt, src_e, src_m = _FORMATS[dt]
        w = x
    elif dt.name == "bfloat16":
        udt, src_e, src_m = np.uint16, 8, 7
        w = x
    else:  # narrow floats: exact in f64
        w = x.astype(np.float64)
        udt, src_e, src_m = _FORMATS[np.dtype(np.float64)]
    nbits = np.dtype(udt).itemsize * 8
    u = np.array(w, order="C").view(udt).astype(np.uint64)
    r = _reduce_bits(u, nbits, src_e, src_m, e, m)
    out = r.astype(udt).view(w.dtype)
    # NaN stays NaN; with no mantissa bits left it becomes +inf (StableHLO interpreter).
    nan_to = w if m > 0 else np.array(np.inf).astype(w.dtype)
    out = np.where(np.isnan(w.astype(np.float64)), nan_to, out)
    return out.astype(dt)


@interpreter_rule("stablehlo.reduce_precision")
def reduce_precision(ctx, op, args):
    """Spec section ``reduce_precision`` (quantized: ``dequantize_op_quantize``)."""
    e, m = attr(op, "exponent_bits"), attr(op, "mantissa_bits")
    et = op.operands[0].type.element_type
    rt = result_type(op).element_type
    x = args[0]
    if isinstance(et, T.QuantizedType):
        x = dequantize(x, et)
    with np.errstate(all="ignore"):
        r = reduce_precision_values(x, e, m)
    return [quantize(r, rt) if isinstance(rt, T.QuantizedType) else r]


# -- iota --------------------------------------------------------------------------------


@interpreter_rule("stablehlo.iota")
def iota(ctx, op, args):
    """Spec section ``iota``: element index along ``iota_dimension``."""
    rt = result_type(op)
    dim = attr(op, "iota_dimension")
    shape = tuple(rt.shape)
    idx = np.arange(shape[dim], dtype=np.int64)
    bshape = [1] * len(shape)
    bshape[dim] = shape[dim]
    idx = np.broadcast_to(idx.reshape(bshape), shape)
    et = rt.element_type
    if isinstance(et, T.QuantizedType):
        return [quantize(idx.astype(np.float64), et)]
    return [np.ascontiguousarray(convert_values(idx, T.IntegerType(64), et))]
