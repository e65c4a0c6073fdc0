"""Rules for the elementwise ops (spec sections ``abs`` ... ``xor``, one per op).

Every op is a *kernel* ``kernel(xs, et, out_et) -> ndarray`` over operand arrays of
element type ``et`` producing an array of ``out_et``'s dtype. The rule wrapper handles
quantized operands once for all ops, per the spec's ``dequantize_op_quantize`` (and
``dequantize_compare`` / ``dequantize_select_quantize``).

Numerics:
    * Integers wrap around at their width (``i2``/``i4``/``ui2``/``ui4`` included):
      arithmetic runs in 64 bits and is reduced modulo ``2**width``.
    * Floats narrower than ``f64`` are computed in ``f64`` and rounded once to the
      result type. For ``+ - * /`` and ``sqrt`` this equals the correctly rounded
      IEEE result (``53 >= 2p + 2`` for every ``p <= 24``); transcendental functions
      are as accurate as the ``f64`` libm allows. Subnormals are never flushed.
    * Integer ``divide``/``remainder`` by zero and ``INT_MIN / -1`` follow XLA, the
      semantics StableHLO inherits (the spec leaves them open): ``x / 0`` is ``-1``
      (all ones), ``x % 0`` is ``x``, ``INT_MIN / -1`` is ``INT_MIN`` and
      ``INT_MIN % -1`` is ``0``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import attr, dequantize, quantize
from oxla.ir import types as T

Kernel = Callable[[list, T.ElementType, T.ElementType], np.ndarray]


# -- element-type helpers ----------------------------------------------------------------


def _is_int(et: T.ElementType) -> bool:
    return isinstance(et, T.IntegerType | T.IndexType) and getattr(et, "width", 64) > 1


def _is_bool(et: T.ElementType) -> bool:
    return isinstance(et, T.IntegerType) and et.width == 1


def _is_unsigned(et: T.ElementType) -> bool:
    return isinstance(et, T.IntegerType) and et.unsigned


def _width(et: T.ElementType) -> int:
    return et.width if isinstance(et, T.IntegerType) else 64


def to_wide_int(x: np.ndarray, et: T.ElementType) -> np.ndarray:
    """Integers as int64 (uint64 for ``ui64``) for wrap-around arithmetic."""
    if _is_unsigned(et) and _width(et) == 64:
        return np.asarray(x).astype(np.uint64)
    return np.asarray(x).astype(np.int64)


def wrap_int(y: np.ndarray, et: T.ElementType) -> np.ndarray:
    """Reduces 64-bit integers modulo ``2**width`` into ``et``'s range and dtype."""
    w = _width(et)
    y = np.asarray(y)
    if w < 64:
        y = y.astype(np.int64) & ((1 << w) - 1)
        if not _is_unsigned(et):
            y = np.where(y >= (1 << (w - 1)), y - (1 << w), y)
    return y.astype(et.dtype)


def to_wide_float(x: np.ndarray, et: T.ElementType) -> np.ndarray:
    """Floats as float64, complex as complex128."""
    if isinstance(et, T.ComplexType):
        return np.asarray(x).astype(np.complex128)
    return np.asarray(x).astype(np.float64)


_EXACT_CASTS = {np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)}


def round_float(y: np.ndarray, dtype) -> np.ndarray:
    """``y`` rounded once (to nearest, ties to even) to float ``dtype``.

    numpy rounds f64 to f32/f16 correctly, but ml_dtypes goes through f32, rounding
    twice; for its types the f64 -> f32 step rounds to odd instead, which makes the
    second rounding exact (f32 keeps more than p + 2 bits of every narrower type).
    """
    y = np.asarray(y)
    dtype = np.dtype(dtype)
    if y.dtype != np.float64 or dtype in _EXACT_CASTS or dtype.kind == "c":
        return y.astype(dtype)
    with np.errstate(all="ignore"):
        f = y.astype(np.float32)
        back = f.astype(np.float64)
        inexact = (back != y) & ~np.isnan(y)
        toward = np.where(y > back, np.float32(np.inf), np.float32(-np.inf))
        other = np.nextafter(f, toward)
        even = (f.view(np.uint32) & 1) == 0
        f = np.where(inexact & even, other, f)
        return f.astype(dtype)


def _out(y: np.ndarray, out_et: T.ElementType) -> np.ndarray:
    return round_float(y, out_et.dtype)


# -- kernel builders ---------------------------------------------------------------------


def _float_fn(fn: Callable, cfn: Callable | None = None) -> Kernel:
    """A kernel applying ``fn`` on f64 (``cfn`` or ``fn`` on complex128) values."""

    def kernel(xs, et, out_et):
        wide = [to_wide_float(x, et) for x in xs]
        f = cfn if (cfn is not None and isinstance(et, T.ComplexType)) else fn
        with np.errstate(all="ignore"):
            return _out(f(*wide), out_et)

    return kernel


def _int_fn(fn: Callable) -> Callable:
    def kernel(xs, et, out_et):
        with np.errstate(all="ignore"):
            return wrap_int(fn(*[to_wide_int(x, et) for x in xs]), out_et)

    return kernel


def _typed(int_k=None, float_k=None, bool_k=None, name: str = "") -> Kernel:
    """Dispatches a kernel on the operand element type."""

    def kernel(xs, et, out_et):
        if _is_bool(et) and bool_k is not None:
            return _out(bool_k(*[np.asarray(x, dtype=bool) for x in xs]), out_et)
        if (_is_int(et) or _is_bool(et)) and int_k is not None:
            return int_k(xs, et, out_et)
        if isinstance(et, T.FloatType | T.ComplexType) and float_k is not None:
            return float_k(xs, et, out_et)
        raise NotImplementedError(f"'{name}' does not accept element type {et}")

    return kernel


# -- rule registration -------------------------------------------------------------------


def _et(v) -> T.ElementType:
    return v.type.element_type


def _register(name: str, kernel: Kernel, select_like: bool = False) -> None:
    """Registers ``stablehlo.<name>`` running ``kernel``, handling quantized types."""

    def rule(ctx, op, args):
        in_ets = [_et(v) for v in op.operands]
        out_et = _et(op.results[0])
        # select's predicate / clamp's bounds may differ: use the data operand's type.
        data = 1 if select_like else 0
        et = in_ets[data]
        if any(isinstance(t, T.QuantizedType) for t in in_ets + [out_et]):
            xs = [dequantize(a, t) if isinstance(t, T.QuantizedType) else a
                  for a, t in zip(args, in_ets)]
            q_et = et.expressed_type if isinstance(et, T.QuantizedType) else et
            q_out = out_et.expressed_type if isinstance(out_et, T.QuantizedType) else out_et
            res = kernel(xs, q_et, q_out)
            return [quantize(res, out_et) if isinstance(out_et, T.QuantizedType) else res]
        return [kernel(list(args), et, out_et)]

    rule.__name__ = name
    rule.__doc__ = f"Spec section ``{name}``."
    interpreter_rule("stablehlo." + name)(rule)


# -- arithmetic --------------------------------------------------------------------------


def _int_div(a, b):
    """Truncating division with XLA's result ``-1`` (all ones) for ``/0``."""
    zero = b == 0
    safe_b = np.where(zero, 1, b).astype(a.dtype)
    q = a // safe_b
    if a.dtype != np.uint64:
        r = a - q * safe_b
        q = np.where((r != 0) & ((a < 0) ^ (safe_b < 0)), q + 1, q)
    return np.where(zero, np.array(-1).astype(a.dtype), q)


def _int_rem(a, b):
    zero = b == 0
    safe_b = np.where(zero, 1, b).astype(a.dtype)
    if a.dtype == np.uint64:
        r = a % safe_b
    else:
        r = np.fmod(a, safe_b)
    return np.where(zero, a, r)


def _sdiv(xs, et, out_et):
    a, b = (to_wide_int(x, et) for x in xs)
    with np.errstate(all="ignore"):
        if _width(et) == 64 and not _is_unsigned(et):
            # INT64_MIN / -1 overflows np.abs; it wraps to INT64_MIN.
            ovf = (a == np.iinfo(np.int64).min) & (b == -1)
            q = _int_div(np.where(ovf, 0, a), np.where(ovf, 1, b))
            q = np.where(ovf, a, q)
        else:
            q = _int_div(a, b)
    return wrap_int(q, out_et)


def _srem(xs, et, out_et):
    a, b = (to_wide_int(x, et) for x in xs)
    with np.errstate(all="ignore"):
        if _width(et) == 64 and not _is_unsigned(et):
            ovf = b == -1
            r = np.where(ovf, 0, _int_rem(a, np.where(ovf, 1, b)))
        else:
            r = _int_rem(a, b)
    return wrap_int(r, out_et)


def _ipow(xs, et, out_et):
    """Integer exponentiation by squaring, wrapping; negative exponents give 0 except
    for bases 1 and -1 (as XLA and the StableHLO interpreter do)."""
    base, exp = (to_wide_int(x, et) for x in xs)
    signed = not _is_unsigned(et)
    result = np.ones_like(base)
    b = base.copy()
    e = exp.copy()
    if signed:
        neg = e < 0
        e = np.where(neg, 0, e)
    with np.errstate(all="ignore"):
        while np.any(e > 0):
            odd = (e & 1) == 1
            result = np.where(odd, result * b, result)
            b = b * b
            e = e >> 1
    if signed:
        neg_res = np.where(base == 1, 1, np.where(base == -1,
                                                  np.where((exp & 1) == 1, -1, 1), 0))
        result = np.where(neg, neg_res, result)
    return wrap_int(result, out_et)


def _logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def _round_afz(x):
    r = np.trunc(x)
    r = np.where(np.abs(x - r) >= 0.5, r + np.sign(x), r)
    return np.copysign(r, x)


def _complex_atan2(y, x):
    # atan2(y, x) = -i * log((x + i*y) / sqrt(x**2 + y**2))
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def _float_sign(x):
    if np.iscomplexobj(x):
        a = np.abs(x)
        return np.where(a == 0, x, x / np.where(a == 0, 1, a))
    return np.where(np.isnan(x) | (x == 0), x, np.sign(x))


def _fmod(a, b):
    return np.fmod(a, b)


def _complex_rem(a, b):
    raise NotImplementedError("remainder of complex numbers is TBD in the spec (#997)")


def _abs_kernel(xs, et, out_et):
    if _is_int(et):
        return wrap_int(np.abs(to_wide_int(xs[0], et)) if not _is_unsigned(et)
                        else to_wide_int(xs[0], et), out_et)
    with np.errstate(all="ignore"):
        return _out(np.abs(to_wide_float(xs[0], et)), out_et)


def _clz_popcnt(count_ones: bool) -> Kernel:
    def kernel(xs, et, out_et):
        w = _width(et)
        u = to_wide_int(xs[0], et).astype(np.uint64)
        if w < 64:
            u = u & np.uint64((1 << w) - 1)
        n = np.zeros(u.shape, dtype=np.int64)
        for b in range(w):
            s = u >> np.uint64(b)
            n += ((s & np.uint64(1)) if count_ones else (s != 0)).astype(np.int64)
        return wrap_int(n if count_ones else w - n, out_et)

    return kernel


def _not(xs, et, out_et):
    if _is_bool(et):
        return np.logical_not(xs[0])
    return wrap_int(~to_wide_int(xs[0], et), out_et)


def _bitwise(fn) -> Kernel:
    def kernel(xs, et, out_et):
        if _is_bool(et):
            return _out(fn(*[np.asarray(x, dtype=bool) for x in xs]), out_et)
        return wrap_int(fn(*[to_wide_int(x, et) for x in xs]), out_et)

    return kernel


def _shift(kind: str) -> Kernel:
    """Shifts: an amount that is negative or at least the bit width gives 0, or the
    sign fill for ``shift_right_arithmetic`` (StableHLO interpreter semantics: LLVM
    ``shl``/``lshr``/``ashr`` with the amount read as unsigned)."""

    def kernel(xs, et, out_et):
        w = _width(et)
        a = to_wide_int(xs[0], et)
        n = to_wide_int(xs[1], et)
        big = (n < 0) | (n >= w) if not _is_unsigned(et) else (n >= w)
        s = np.where(big, 0, n).astype(a.dtype)
        with np.errstate(all="ignore"):
            if kind == "left":
                r = np.where(big, 0, a << s)
            elif kind == "arith":
                # the top bit is the sign, for unsigned types too (LLVM's ashr, as XLA)
                sa = a.view(np.int64) if a.dtype == np.uint64 else a
                if _is_unsigned(et) and w < 64:
                    sa = np.where(sa >= (1 << (w - 1)), sa - (1 << w), sa)
                fill = np.where(sa < 0, -1, 0)
                r = np.where(big, fill, sa >> s.astype(np.int64))
            else:
                ua = a.astype(np.uint64)
                if w < 64:
                    ua = ua & np.uint64((1 << w) - 1)
                r = np.where(big, 0, ua >> s.astype(np.uint64))
        return wrap_int(r, out_et)

    return kernel


# -- maximum / minimum / clamp (NaN propagates; -0.0 < +0.0) -------------------------------


def _lex_gt(a, b):
    """``a > b`` with complex numbers compared lexicographically (real, imag)."""
    if np.iscomplexobj(a) or np.iscomplexobj(b):
        a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
        return (a.real > b.real) | ((a.real == b.real) & (a.imag > b.imag))
    return a > b


def float_max(a, b, want_max: bool = True):
    """IEEE-754 2019 ``maximum``/``minimum``: NaN if either is NaN, ``-0.0 < +0.0``."""
    a, b = np.broadcast_arrays(a, b)
    gt = _lex_gt(a, b) if want_max else _lex_gt(b, a)
    r = np.where(gt, a, b)
    if not np.iscomplexobj(r):
        zeros = (a == 0) & (b == 0)
        pick_a = np.signbit(b) if want_max else np.signbit(a)
        r = np.where(zeros, np.where(pick_a, a, b), r)
        r = np.where(np.isnan(a), a, np.where(np.isnan(b), b, r))
    else:
        nan_a = np.isnan(a.real) | np.isnan(a.imag)
        nan_b = np.isnan(b.real) | np.isnan(b.imag)
        r = np.where(nan_a, a, np.where(nan_b, b, r))
    return r


def _maxmin(want_max: bool) -> Kernel:
    def kernel(xs, et, out_et):
        if _is_bool(et):
            f = np.logical_or if want_max else np.logical_and
            return f(*[np.asarray(x, bool) for x in xs])
        if _is_int(et):
            f = np.maximum if want_max else np.minimum
            return f(*[to_wide_int(x, et) for x in xs]).astype(out_et.dtype)
        with np.errstate(all="ignore"):
            return _out(float_max(*[to_wide_float(x, et) for x in xs], want_max), out_et)

    return kernel


def _clamp(xs, et, out_et):
    lo, x, hi = xs
    mx, mn = _maxmin(True), _maxmin(False)
    shape = np.shape(x)
    lo = np.broadcast_to(lo, shape)
    hi = np.broadcast_to(hi, shape)
    return mn([mx([x, lo], et, out_et), hi], et, out_et)


def _select(xs, et, out_et):
    pred, a, b = xs
    return np.where(np.asarray(pred, dtype=bool), a, b).astype(out_et.dtype)


def _complex(xs, et, out_et):
    re, im = np.broadcast_arrays(*xs)
    out = np.empty(re.shape, dtype=out_et.dtype)
    out.real = re
    out.imag = im
    return out


def _real_imag(part: str) -> Kernel:
    def kernel(xs, et, out_et):
        x = np.asarray(xs[0])
        if isinstance(et, T.ComplexType):
            return _out(x.real if part == "real" else x.imag, out_et)
        return _out(x if part == "real" else np.zeros_like(x), out_et)

    return kernel


def _is_finite(xs, et, out_et):
    return np.isfinite(to_wide_float(xs[0], et))


def _arith(int_fn, float_fn, bool_fn=None, name="") -> Kernel:
    return _typed(_int_fn(int_fn), _float_fn(float_fn), bool_fn, name)


_register("add", _arith(np.add, np.add, np.logical_or, "add"))
_register("subtract", _arith(np.subtract, np.subtract, None, "subtract"))
_register("multiply", _arith(np.multiply, np.multiply, np.logical_and, "multiply"))
_register("divide", _typed(_sdiv, _float_fn(np.divide), None, "divide"))
_register("remainder", _typed(_srem, _float_fn(_fmod, _complex_rem), None, "remainder"))
def _ieee_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """IEEE-754 ``pow`` (spec "power"; complex values: numpy's complex power). numpy
    computes ``x ** 0.5`` as ``sqrt(x)``, which differs from ``pow`` at -inf (``pow``
    gives +inf) and at -0 (+0)."""
    r = np.power(x, y)
    if np.isrealobj(r):
        fix = (np.asarray(y) == 0.5) & (np.isneginf(x) | (x == 0))
        r = np.where(fix, np.abs(x), r)
    return r


_register("power", _typed(_ipow, _float_fn(_ieee_pow, np.power), None, "power"))
_register("negate", _arith(np.negative, np.negative, None, "negate"))
_register("abs", _abs_kernel)
_register("sign", _typed(_int_fn(np.sign), _float_fn(_float_sign), None, "sign"))
_register("maximum", _maxmin(True))
_register("minimum", _maxmin(False))
_register("clamp", _clamp, select_like=True)
_register("select", _select, select_like=True)
_register("and", _bitwise(np.bitwise_and))
_register("or", _bitwise(np.bitwise_or))
_register("xor", _bitwise(np.bitwise_xor))
_register("not", _not)
_register("shift_left", _shift("left"))
_register("shift_right_arithmetic", _shift("arith"))
_register("shift_right_logical", _shift("logical"))
_register("count_leading_zeros", _clz_popcnt(False))
_register("popcnt", _clz_popcnt(True))
_register("complex", _complex)
_register("real", _real_imag("real"))
_register("imag", _real_imag("imag"))
_register("is_finite", _is_finite)
_register("atan2", _float_fn(np.arctan2, _complex_atan2))
_register("cbrt", _float_fn(np.cbrt, lambda z: np.power(z, 1.0 / 3.0)))
_register("ceil", _float_fn(np.ceil))
_register("floor", _float_fn(np.floor))
_register("cosine", _float_fn(np.cos))
_register("sine", _float_fn(np.sin))
_register("tan", _float_fn(np.tan))
_register("tanh", _float_fn(np.tanh))
_register("exponential", _float_fn(np.exp))
_register("exponential_minus_one", _float_fn(np.expm1))
_register("log", _float_fn(np.log))
_register("log_plus_one", _float_fn(np.log1p))
_register("logistic", _float_fn(_logistic))
_register("sqrt", _float_fn(np.sqrt))
_register("rsqrt", _float_fn(lambda x: 1.0 / np.sqrt(x)))
_register("round_nearest_afz", _float_fn(_round_afz))
_register("round_nearest_even", _float_fn(np.rint))


# -- compare -----------------------------------------------------------------------------


def total_order_key(x: np.ndarray) -> np.ndarray:
    """IEEE-754 ``totalOrder`` as int64 keys: ``-NaN < -inf < ... < -0 < +0 < ... < +NaN``
    (floats of any width widened exactly to f64 first)."""
    bits = np.asarray(x, dtype=np.float64).view(np.int64)
    return np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)


_CMP = {
    "EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
    "GT": np.greater, "LE": np.less_equal, "LT": np.less,
}


def compare_values(a, b, et: T.ElementType, direction: str, compare_type: str | None):
    """Spec ``compare`` on runtime values of element type ``et``."""
    fn = _CMP[direction]
    if _is_bool(et):
        return fn(np.asarray(a, bool).astype(np.int8), np.asarray(b, bool).astype(np.int8))
    if _is_int(et):
        return fn(to_wide_int(a, et), to_wide_int(b, et))
    if isinstance(et, T.ComplexType):
        a, b = np.asarray(a, np.complex128), np.asarray(b, np.complex128)
        if direction in ("EQ", "NE"):
            with np.errstate(invalid="ignore"):
                return fn(a, b)
        if compare_type == "TOTALORDER":
            ra, rb = total_order_key(a.real), total_order_key(b.real)
            ia, ib = total_order_key(a.imag), total_order_key(b.imag)
        else:
            ra, rb, ia, ib = a.real, b.real, a.imag, b.imag
        strict = {"GE": "GT", "GT": "GT", "LE": "LT", "LT": "LT"}[direction]
        with np.errstate(invalid="ignore"):
            return _CMP[strict](ra, rb) | ((ra == rb) & fn(ia, ib))
    wa, wb = to_wide_float(a, et), to_wide_float(b, et)
    if compare_type == "TOTALORDER":
        return fn(total_order_key(wa), total_order_key(wb))
    with np.errstate(invalid="ignore"):
        return fn(wa, wb)


@interpreter_rule("stablehlo.compare")
def compare(ctx, op, args):
    """Spec section ``compare``; quantized operands per ``dequantize_compare``."""
    et = _et(op.operands[0])
    a, b = args
    if isinstance(et, T.QuantizedType):
        a = dequantize(a, et)
        b = dequantize(b, _et(op.operands[1]))
        et = et.expressed_type
    direction = attr(op, "comparison_direction")
    ctype = attr(op, "compare_type")
    return [np.asarray(compare_values(a, b, et, direction, ctype), dtype=np.bool_)]
