"""Rules for the linear-algebra ops: dot products, convolutions, FFT, factorizations.

Spec sections: ``dot_general``, ``convolution``, ``fft``, ``cholesky``,
``triangular_solve``, ``batch_norm_inference``, ``batch_norm_training``,
``batch_norm_grad``, "Deprecated Operations" (``dot``, ``einsum``, ``unary_einsum``)
and ``dynamic_conv`` (``convolution`` with padding from an operand).

Dot products accumulate in a wide type (f64, c128, or 64-bit integers wrapping
modulo 2^64) and round or wrap once to the result element type; integer results
therefore wrap exactly as a per-step computation in the result type would.
``precision_config`` and ``algorithm`` do not change results here: the reference
computes at the highest precision, which every algorithm approximates.
Quantized operands go through the spec's ``dequantize_op_quantize``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules import util
from oxla.interpreter.rules.reduce import _fold_float, is_float_dtype, pad_with, wrap_int
from oxla.interpreter.rules.util import attr, dense_2d, result_dtype
from oxla.ir import attributes as A
from oxla.ir import types as T


def _wide_dtype(*arrays: np.ndarray) -> np.dtype:
    """The accumulation dtype for a product of ``arrays``."""
    dts = [np.dtype(a.dtype) for a in arrays]
    if any(d.kind == "c" for d in dts):
        return np.dtype(np.complex128)
    if any(is_float_dtype(d) for d in dts):
        return np.dtype(np.float64)
    if all(d == np.bool_ for d in dts):
        return np.dtype(np.int64)
    if any(d == np.uint64 for d in dts):
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def _finish(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Rounds (floats), wraps (integers) or tests non-zero (i1) into ``dt``."""
    dt = np.dtype(dt)
    if dt == np.bool_:
        return np.asarray(x) != 0
    if is_float_dtype(dt) or dt.kind == "c":
        with np.errstate(all="ignore"):
            if dt.kind != "c" and np.iscomplexobj(x):
                x = np.real(x)
            return np.asarray(x).astype(dt)
    return wrap_int(x, dt)


def _float_out(op) -> np.dtype | None:
    """The result's float dtype (the expressed type when quantized), else None."""
    et = op.results[0].type.element_type
    if isinstance(et, T.QuantizedType):
        et = et.expressed_type
    dt = np.dtype(et.dtype)
    return dt if (is_float_dtype(dt) or dt.kind == "c") else None


def _quantized(op) -> bool:
    fn = getattr(util, "is_quantized_op", None)
    return bool(fn and fn(op))


def _with_quantization(op, args: list, fn) -> list:
    """Spec ``dequantize_op_quantize`` around ``fn`` (one result), else ``fn`` as is."""
    if not _quantized(op):
        return [_finish(fn(*args), result_dtype(op))]
    arg_types = [v.type.element_type for v in op.operands]
    out_type = op.results[0].type.element_type
    out = util.dequantize_op_quantize(fn, list(args), arg_types, out_type)
    if isinstance(out_type, T.QuantizedType):
        return [out]
    return [_finish(out, out_type.dtype)]


# -- dot_general, dot, einsum -------------------------------------------------------


def acc_dtype(out: np.dtype) -> np.dtype:
    """The accumulation dtype of a float dot product with result type ``out``.

    f32/c64 results accumulate in f32/c64 (so do f16, bf16 and f8 ones, rounded once
    at the end), f64/c128 ones in f64/c128: XLA's choice, which the conformance
    files' 3-ULP checks see through cancellation.
    """
    out = np.dtype(out)
    if out.kind == "c":
        return out
    return np.dtype(np.float64 if out == np.float64 else np.float32)


def _fold_dot(l3: np.ndarray, r3: np.ndarray) -> np.ndarray:
    """Batched matmul as a left fold over the contracted axis: one rounded product
    and one rounded sum per step, no fused multiply-add."""
    b, m, k = l3.shape
    n = r3.shape[2]
    if b * m * n * k > _FOLD_LIMIT:
        return np.matmul(l3, r3)
    acc = np.zeros((b, m, n), dtype=l3.dtype)
    for i in range(k):
        acc = acc + l3[:, :, i, None] * r3[:, None, i, :]
    return acc


# Dot products bigger than this (multiply-adds) use numpy's matmul instead of a fold.
_FOLD_LIMIT = 1 << 26


def dot_general_arrays(lhs: np.ndarray, rhs: np.ndarray, lb: Sequence[int],
                       rb: Sequence[int], lc: Sequence[int], rc: Sequence[int],
                       out: np.dtype | None = None) -> np.ndarray:
    """Spec ``dot_general`` in the accumulation dtype (no final rounding).

    Integer products accumulate in 64-bit integers (wrapping); float ones in
    ``acc_dtype(out)`` as a fold (f64 when ``out`` is not given).
    """
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    wide = _wide_dtype(lhs, rhs)
    if wide.kind in "fc" and out is not None and (is_float_dtype(out) or
                                                  np.dtype(out).kind == "c"):
        wide = acc_dtype(out)
        if wide.kind != "c" and (lhs.dtype.kind == "c" or rhs.dtype.kind == "c"):
            wide = np.dtype(np.complex128)
    lb, rb, lc, rc = list(lb), list(rb), list(lc), list(rc)
    lfree = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    bshape = [lhs.shape[d] for d in lb]
    mshape = [lhs.shape[d] for d in lfree]
    nshape = [rhs.shape[d] for d in rfree]
    b = int(np.prod(bshape, dtype=np.int64))
    m = int(np.prod(mshape, dtype=np.int64))
    n = int(np.prod(nshape, dtype=np.int64))
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    l3 = np.transpose(lhs, lb + lfree + lc).astype(wide).reshape(b, m, k)
    r3 = np.transpose(rhs, rb + rc + rfree).astype(wide).reshape(b, k, n)
    with np.errstate(all="ignore"):
        res = _fold_dot(l3, r3) if wide.kind in "fc" else np.matmul(l3, r3)
    return res.reshape(bshape + mshape + nshape)


def _dims(dn, key: str) -> tuple[int, ...]:
    v = dn.get(key, ()) if isinstance(dn, A.StructAttr) else getattr(dn, key, ())
    return tuple(A.to_python(v) if isinstance(v, A.Attribute) else v or ())


@interpreter_rule("stablehlo.dot_general")
def dot_general(ctx, op, args):
    """Spec ``dot_general`` (``precision_config`` and ``algorithm`` do not change the
    result: it is computed exactly, then rounded once)."""
    dn = op.attributes["dot_dimension_numbers"]
    dims = [_dims(dn, f"{s}_{k}_dimensions") for k in ("batching", "contracting")
            for s in ("lhs", "rhs")]
    lb, rb, lc, rc = dims
    out = _float_out(op)
    return _with_quantization(
        op, args, lambda x, y: dot_general_arrays(x, y, lb, rb, lc, rc, out))


@interpreter_rule("stablehlo.dot")
def dot(ctx, op, args):
    """Deprecated ``dot``: contracts the last dimension of ``lhs`` with the first of
    ``rhs`` (vector/matrix operands)."""
    lr = np.ndim(args[0])
    out = _float_out(op)
    return _with_quantization(
        op, args, lambda x, y: dot_general_arrays(x, y, (), (), (lr - 1,), (0,), out))


@interpreter_rule("stablehlo.einsum")
def einsum(ctx, op, args):
    """Deprecated ``einsum``: ``np.einsum`` with the ``einsum_config`` equation."""
    config = attr(op, "einsum_config")
    wide = _wide_dtype(*[np.asarray(a) for a in args])

    def fn(x, y):
        with np.errstate(all="ignore"):
            return np.einsum(config, np.asarray(x).astype(wide), np.asarray(y).astype(wide))

    return _with_quantization(op, args, fn)


@interpreter_rule("stablehlo.unary_einsum")
def unary_einsum(ctx, op, args):
    """Deprecated ``unary_einsum``: ``np.einsum`` on one operand."""
    config = attr(op, "einsum_config")
    if "," in config.split("->")[0]:  # "," a -> b form from old exporters
        config = config.split(",", 1)[1]
    wide = _wide_dtype(np.asarray(args[0]))

    def fn(x):
        with np.errstate(all="ignore"):
            return np.einsum(config, np.asarray(x).astype(wide))

    return _with_quantization(op, args, fn)


# -- convolution --------------------------------------------------------------------


def conv_arrays(lhs: np.ndarray, rhs: np.ndarray, dn: A.ConvDimensionNumbers,
                strides: Sequence[int], padding: np.ndarray, lhs_dil: Sequence[int],
                rhs_dil: Sequence[int], reversal: Sequence[bool], fgc: int, bgc: int,
                ) -> np.ndarray:
    """Spec ``convolution`` in the wide accumulation dtype, result in its layout."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    wide = _wide_dtype(lhs, rhs)
    ns = len(dn.input_spatial_dimensions)
    # Canonical layouts: lhs (N, S..., C), rhs (S..., I, O), result (N, S..., O).
    x = np.transpose(lhs, (dn.input_batch_dimension, *dn.input_spatial_dimensions,
                           dn.input_feature_dimension)).astype(wide)
    w = np.transpose(rhs, (*dn.kernel_spatial_dimensions, dn.kernel_input_feature_dimension,
                           dn.kernel_output_feature_dimension)).astype(wide)
    if bgc > 1:
        xs = np.split(x, bgc, axis=0)
        ws = np.split(w, bgc, axis=-1)
        out = np.concatenate([_conv_canonical(a, b, strides, padding, lhs_dil, rhs_dil,
                                              reversal) for a, b in zip(xs, ws)], axis=-1)
    elif fgc > 1:
        xs = np.split(x, fgc, axis=-1)
        ws = np.split(w, fgc, axis=-1)
        out = np.concatenate([_conv_canonical(a, b, strides, padding, lhs_dil, rhs_dil,
                                              reversal) for a, b in zip(xs, ws)], axis=-1)
    else:
        out = _conv_canonical(x, w, strides, padding, lhs_dil, rhs_dil, reversal)
    # out axes: (N, S..., O) -> result layout.
    order = [dn.output_batch_dimension, *dn.output_spatial_dimensions,
             dn.output_feature_dimension]
    inv = np.argsort(order)
    assert out.ndim == ns + 2
    return np.transpose(out, inv)


def _conv_canonical(x, w, strides, padding, lhs_dil, rhs_dil, reversal) -> np.ndarray:
    """One group: ``x`` (N, S..., C), ``w`` (K..., C, O) -> (N, O_S..., O)."""
    ns = x.ndim - 2
    low = [0] + [int(p) for p in padding[:, 0]] + [0]
    high = [0] + [int(p) for p in padding[:, 1]] + [0]
    interior = [0] + [d - 1 for d in lhs_dil] + [0]
    xp = pad_with(x, np.zeros((), x.dtype), low, high, interior)
    ksz = w.shape[:ns]
    span = [(k - 1) * d + 1 for k, d in zip(ksz, rhs_dil)]
    sp_axes = tuple(range(1, ns + 1))
    out_sp = [max(0, (xp.shape[1 + i] - span[i]) // s + 1) if xp.shape[1 + i] >= span[i]
              else 0 for i, s in enumerate(strides)]
    if 0 in out_sp or 0 in xp.shape or 0 in w.shape:
        acc = np.zeros((x.shape[0], *out_sp, w.shape[-1]), dtype=x.dtype)
        return acc
    v = np.lib.stride_tricks.sliding_window_view(xp, span, axis=sp_axes)
    # v: (N, P..., C, span...) -> strides on P, dilation on span.
    idx = ((slice(None),) + tuple(slice(None, None, s) for s in strides) + (slice(None),)
           + tuple(slice(None, None, d) for d in rhs_dil))
    v = v[idx]
    rev = [ns + 2 + i for i, r in enumerate(reversal or ()) if r]
    if rev:
        v = np.flip(v, axis=rev)
    with np.errstate(all="ignore"):
        return np.tensordot(v, w, axes=([ns + 1] + [ns + 2 + i for i in range(ns)],
                                        [ns] + list(range(ns))))


def _conv_attrs(op, rank: int, padding: np.ndarray | None):
    ns = rank - 2
    strides = tuple(attr(op, "window_strides", None) or (1,) * ns)
    if padding is None:
        padding = dense_2d(op, "padding")
    if padding is None or padding.size == 0:
        padding = np.zeros((ns, 2), dtype=np.int64)
    padding = np.asarray(padding, dtype=np.int64).reshape(ns, 2)
    lhs_dil = tuple(attr(op, "lhs_dilation", None) or (1,) * ns)
    rhs_dil = tuple(attr(op, "rhs_dilation", None) or (1,) * ns)
    reversal = tuple(attr(op, "window_reversal", None) or (False,) * ns)
    fgc = int(attr(op, "feature_group_count", 1) or 1)
    bgc = int(attr(op, "batch_group_count", 1) or 1)
    for what, v in (("window_strides", strides), ("lhs_dilation", lhs_dil),
                    ("rhs_dilation", rhs_dil), ("window_reversal", reversal)):
        if len(v) != ns:  # spec C4-C8: one entry per spatial dimension
            raise InterpreterError(
                f"{op.name}: {what} has {len(v)} entries, expected {ns} (one per spatial "
                f"dimension)", op.loc)
    return strides, padding, lhs_dil, rhs_dil, reversal, fgc, bgc


@interpreter_rule("stablehlo.convolution")
def convolution(ctx, op, args):
    """Spec ``convolution``: windows of the padded, dilated ``lhs`` dotted with ``rhs``."""
    dn = op.attributes["dimension_numbers"]
    params = _conv_attrs(op, np.ndim(args[0]), None)
    return _with_quantization(op, args[:2], lambda x, y: conv_arrays(x, y, dn, *params))


@interpreter_rule("stablehlo.dynamic_conv")
def dynamic_conv(ctx, op, args):
    """Spec ``dynamic_conv``: ``convolution`` with ``padding`` given as an operand."""
    dn = op.attributes["dimension_numbers"]
    params = _conv_attrs(op, np.ndim(args[0]), np.asarray(args[2]))
    return _with_quantization(op, args[:2], lambda x, y: conv_arrays(x, y, dn, *params))


# -- fft ----------------------------------------------------------------------------


def _fft_module():
    """scipy.fft when installed (its single-precision pocketfft gives XLA's bits for
    f32/c64), else numpy.fft (which computes in double precision)."""
    try:
        import scipy.fft as sfft
    except ImportError:  # pragma: no cover - scipy is a test dependency
        return np.fft
    return sfft


@interpreter_rule("stablehlo.fft")
def fft(ctx, op, args):
    """Spec ``fft``: FFT/IFFT/RFFT/IRFFT over the trailing ``len(fft_length)`` axes.

    Computed in the operand's precision (f32/c64 natively, as XLA's ducc FFT does:
    the conformance files' 3-ULP checks see the difference from an exact FFT
    rounded once); f16/bf16 operands are computed in f32.
    """
    x = np.asarray(args[0])
    kind = attr(op, "fft_type")
    length = tuple(int(n) for n in attr(op, "fft_length"))
    axes = tuple(range(x.ndim - len(length), x.ndim))
    double = x.dtype in (np.float64, np.complex128)
    if x.dtype.kind == "c":
        wide = np.complex128 if double else np.complex64
    else:
        wide = np.float64 if double else np.float32
    xw = x.astype(wide)
    fftm = _fft_module()
    fns = {"FFT": fftm.fftn, "IFFT": fftm.ifftn, "RFFT": fftm.rfftn, "IRFFT": fftm.irfftn}
    if kind not in fns:
        raise InterpreterError(f"unknown fft_type '{kind}'", op.loc)
    if xw.size == 0 or 0 in length:
        return [np.zeros(op.results[0].type.shape, result_dtype(op))]
    out = fns[kind](xw, s=length, axes=axes)
    return [np.asarray(out).astype(result_dtype(op))]


# -- cholesky, triangular_solve ------------------------------------------------------


def _batched(x: np.ndarray) -> np.ndarray:
    return x.reshape((-1,) + x.shape[-2:])


def _cholesky_arrays(a: np.ndarray, lower: bool) -> np.ndarray:
    """Cholesky-Banachiewicz over a batch; reads one triangle, zeroes the other.

    A matrix that is not Hermitian positive-definite yields NaN where a square root
    of a negative number (or a division by it) occurs, as the StableHLO reference
    interpreter's algorithm does.
    """
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    m = _batched(a.astype(wide))
    if not lower:  # read the upper triangle: A = U^H U, U = L^H with L from A^H
        m = np.conj(np.swapaxes(m, -1, -2))
    n = m.shape[-1]
    low = np.zeros_like(m)
    with np.errstate(all="ignore"):
        for j in range(n):
            s = m[:, j, j] - np.sum(low[:, j, :j] * np.conj(low[:, j, :j]), axis=-1)
            d = np.sqrt(s.real.astype(np.float64)).astype(wide) if wide == np.complex128 \
                else np.sqrt(s)
            if wide == np.complex128:
                d = np.where(s.real < 0, np.nan, d)
            low[:, j, j] = d
            if j + 1 < n:
                t = m[:, j + 1:, j] - np.einsum("bik,bk->bi", low[:, j + 1:, :j],
                                                np.conj(low[:, j, :j]))
                low[:, j + 1:, j] = t / d[:, None]
    out = low if lower else np.conj(np.swapaxes(low, -1, -2))
    return out.reshape(a.shape)


@interpreter_rule("stablehlo.cholesky")
def cholesky(ctx, op, args):
    """Spec ``cholesky``; the opposite triangle of the result is zero."""
    lower = bool(attr(op, "lower", False))
    return _with_quantization(op, args, lambda a: _cholesky_arrays(np.asarray(a), lower))


def _substitute(m: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solves triangular ``m @ x = b`` (batched) by forward/back substitution."""
    n = m.shape[-1]
    x = np.zeros_like(b)
    order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = b[:, i, :] - np.einsum("bk,bkm->bm", m[:, i, done], x[:, done, :])
            x[:, i, :] = acc / m[:, i, i][:, None]
    return x


def _triangular_solve_arrays(a, b, left_side: bool, lower: bool, unit: bool,
                             transpose: str) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    wide = np.complex128 if (a.dtype.kind == "c" or b.dtype.kind == "c") else np.float64
    m = _batched(a.astype(wide))
    rhs = _batched(b.astype(wide))
    m = np.tril(m) if lower else np.triu(m)
    if unit:
        n = m.shape[-1]
        m[:, np.arange(n), np.arange(n)] = 1
    tri_lower = lower
    if transpose in ("TRANSPOSE", "ADJOINT"):
        m = np.swapaxes(m, -1, -2)
        if transpose == "ADJOINT":
            m = np.conj(m)
        tri_lower = not tri_lower
    if left_side:
        x = _substitute(m, rhs, tri_lower)
    else:  # x @ m = b  <=>  m^T @ x^T = b^T
        xt = _substitute(np.swapaxes(m, -1, -2), np.swapaxes(rhs, -1, -2), not tri_lower)
        x = np.swapaxes(xt, -1, -2)
    return x.reshape(b.shape)


@interpreter_rule("stablehlo.triangular_solve")
def triangular_solve(ctx, op, args):
    """Spec ``triangular_solve``: reads one triangle of ``a`` (unit diagonal if asked)."""
    left = bool(attr(op, "left_side", False))
    lower = bool(attr(op, "lower", False))
    unit = bool(attr(op, "unit_diagonal", False))
    transpose = attr(op, "transpose_a", "NO_TRANSPOSE")
    return _with_quantization(op, args, lambda a, b: _triangular_solve_arrays(
        a, b, left, lower, unit, transpose))


# -- batch norm ---------------------------------------------------------------------


def _bcast(v: np.ndarray, rank: int, fi: int) -> np.ndarray:
    shape = [1] * rank
    shape[fi] = -1
    return np.asarray(v).reshape(shape)


def _feature_sum(x: np.ndarray, fi: int) -> np.ndarray:
    """``reduce`` with ``add`` over every axis but ``fi``, folded in the element type."""
    moved = np.moveaxis(x, fi, 0)
    rows = moved.reshape(moved.shape[0], -1)
    if rows.shape[1] == 0:
        return np.zeros(rows.shape[0], x.dtype)
    return _fold_float("add", rows, 1)


def _count(x: np.ndarray, fi: int, dt) -> np.ndarray:
    return np.asarray(x.size // x.shape[fi]).astype(dt)


def _bn_inference(x, scale, offset, mean, var, eps, fi):
    dt = x.dtype
    r = x.ndim
    e = np.asarray(eps).astype(dt)
    centered = x - _bcast(mean, r, fi)
    stddev = np.sqrt(_bcast(var, r, fi) + e)
    return _bcast(scale, r, fi) * (centered / stddev) + _bcast(offset, r, fi)


def _mean(x, fi):
    return _feature_sum(x, fi) / _count(x, fi, x.dtype)


def _float_args(op, args):
    """Batch-norm operands dequantized when quantized (spec: dequantize, compute,
    quantize)."""
    out = []
    for v, a in zip(op.operands, args):
        et = v.type.element_type
        out.append(util.dequantize(a, et) if isinstance(et, T.QuantizedType) else np.asarray(a))
    return out


def _float_results(op, values):
    out = []
    for r, v in zip(op.results, values):
        et = r.type.element_type
        out.append(util.quantize(v, et) if isinstance(et, T.QuantizedType)
                   else np.asarray(v).astype(et.dtype))
    return out


@interpreter_rule("stablehlo.batch_norm_inference")
def batch_norm_inference(ctx, op, args):
    """Spec ``batch_norm_inference``, step by step in the element type."""
    eps, fi = attr(op, "epsilon"), int(attr(op, "feature_index"))
    with np.errstate(all="ignore"):
        return _float_results(op, [_bn_inference(*_float_args(op, args), eps, fi)])


@interpreter_rule("stablehlo.batch_norm_training")
def batch_norm_training(ctx, op, args):
    """Spec ``batch_norm_training``: batch mean and variance, then inference."""
    eps, fi = attr(op, "epsilon"), int(attr(op, "feature_index"))
    x, scale, offset = _float_args(op, args)
    with np.errstate(all="ignore"):
        mean = _mean(x, fi)
        centered = x - _bcast(mean, x.ndim, fi)
        var = _mean(centered * centered, fi)
        out = _bn_inference(x, scale, offset, mean, var, eps, fi)
    return _float_results(op, [out, mean, var])


@interpreter_rule("stablehlo.batch_norm_grad")
def batch_norm_grad(ctx, op, args):
    """Spec ``batch_norm_grad`` (XLA's batchnorm_expander formulas)."""
    eps, fi = attr(op, "epsilon"), int(attr(op, "feature_index"))
    x, scale, mean, var, gy = _float_args(op, args)
    r, dt = x.ndim, x.dtype
    with np.errstate(all="ignore"):
        e = np.asarray(eps).astype(dt)
        var_b = _bcast(var, r, fi)
        centered = x - _bcast(mean, r, fi)
        stddev = np.sqrt(var_b + e)
        normalized = centered / stddev
        n = _count(x, fi, gy.dtype)
        i1 = gy * n
        i2 = _bcast(_feature_sum(gy, fi), r, fi)
        i3 = _bcast(_feature_sum(gy * centered, fi), r, fi)
        i4 = i3 * centered
        i5 = i4 / (var_b + e)
        i6 = (i1 - i2) - i5
        grad_operand = ((_bcast(scale, r, fi) / stddev) / n) * i6
        grad_scale = _feature_sum(gy * normalized, fi)
        grad_offset = _feature_sum(gy, fi)
    return _float_results(op, [grad_operand, grad_scale, grad_offset])
