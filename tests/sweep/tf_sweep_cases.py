"""Sweep cases of TensorFlow: ``tf.math``, shapes and indexing, ``tf.linalg``,
``tf.signal``, ``tf.nn``, ``tf.image``, stateless random and Keras layers (the table
the TF sweep runs; see ``sweep_common`` for the fields).

Keras layers are built by their first call (the sweep seeds Keras first) and called
with ``training=False``; one input shape each (a built layer keeps its weights' shapes).
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from sweep_common import Case, arr, ins, spd

MATH = "tf.math"
SHP = "tf shapes and indexing"
LIN = "tf.linalg"
SIG = "tf.signal"
NN = "tf.nn"
IMG = "tf.image"
RND = "tf.random (stateless)"
KER = "keras layers"
FL = ("f32", "f64")
FI = ("f32", "f64", "i32")
VALUE_SHAPED = ("TF's jit_compile=True compiles it per value of a must-be-constant argument "
                "(the output size, max(x) + 1 before clamping); oxla lowers from shapes, where "
                "TF's bridge refuses it")
BOUNDED = ("TF lowers it to XLA bounded dynamic shapes (set_dimension_size with a run-time "
           "size, a bounded main result), which oxla does not support")
U = ins((7,), (3, 4))


def _m(name: str, fn, kind="normal", dtypes=FL, tol="elementwise") -> Case:
    return Case(f"tf.math.{name}", MATH, fn, ins((7,), (3, 4), kind=kind), dtypes, tol)


def _m2(name: str, fn, kind="normal", dtypes=FL, tol="elementwise") -> Case:
    return Case(f"tf.math.{name}", MATH, fn, ins([(3, 4), (3, 4)], [(2, 3), (3,)], kind=kind),
                dtypes, tol)


M = tf.math
MATHS = [
    _m("abs", M.abs, dtypes=FI), _m("negative", M.negative, dtypes=FI),
    _m("sign", M.sign, dtypes=FI), _m("floor", M.floor), _m("ceil", M.ceil),
    _m("round", lambda x: M.round(x * 4)), _m("exp", M.exp), _m("expm1", M.expm1),
    _m("log", M.log, "pos"), _m("log1p", M.log1p, "pos"), _m("sqrt", M.sqrt, "pos"),
    _m("rsqrt", M.rsqrt, "pos"), _m("square", M.square, dtypes=FI),
    _m("reciprocal", M.reciprocal, "pos"), _m("sin", M.sin), _m("cos", M.cos),
    _m("tan", M.tan, "unit"), _m("asin", M.asin, "unit"), _m("acos", M.acos, "unit"),
    _m("atan", M.atan), _m("sinh", M.sinh), _m("cosh", M.cosh), _m("tanh", M.tanh),
    _m("asinh", M.asinh), _m("acosh", M.acosh, "gt1"), _m("atanh", M.atanh, "unit"),
    _m("erf", M.erf), _m("erfc", M.erfc), _m("erfinv", M.erfinv, "unit", tol="special"),
    _m("lgamma", M.lgamma, "pos", tol="special"), _m("digamma", M.digamma, "pos",
                                                     tol="special"),
    _m("sigmoid", M.sigmoid), _m("softplus", M.softplus), _m("softsign", M.softsign),
    _m("is_nan", lambda x: M.is_nan(M.sqrt(x))), _m("is_finite", lambda x: M.is_finite(
        M.log(x))), _m("bessel_i0e", M.bessel_i0e, tol="special"),
    _m2("add", M.add, dtypes=FI), _m2("subtract", M.subtract, dtypes=FI),
    _m2("multiply", M.multiply, dtypes=FI), _m2("divide", M.divide, ("normal", "pos")),
    _m2("floordiv", M.floordiv, ("normal", "pos"), FI),
    _m2("floormod", M.floormod, ("normal", "pos"), FI),
    _m2("pow", M.pow, ("pos", "normal")), _m2("maximum", M.maximum, dtypes=FI),
    _m2("minimum", M.minimum, dtypes=FI), _m2("squared_difference", M.squared_difference),
    _m2("atan2", M.atan2), _m2("xlogy", M.xlogy, ("normal", "pos")),
    _m2("xdivy", M.xdivy, ("normal", "pos")),
    _m2("divide_no_nan", lambda a, b: M.divide_no_nan(a, M.round(b))),
    _m2("compare", lambda a, b: (M.equal(a, b), M.less(a, b), M.greater_equal(a, b),
        M.not_equal(a, b)), dtypes=FI, tol="exact"),
    _m2("logical", lambda a, b: (M.logical_and(a > 0, b > 0), M.logical_or(a > 0, b > 0),
        M.logical_xor(a > 0, b > 0), M.logical_not(a > 0)), tol="exact"),
    _m2("bitwise", lambda a, b: (tf.bitwise.bitwise_and(a, b), tf.bitwise.bitwise_or(a, b),
        tf.bitwise.bitwise_xor(a, b), tf.bitwise.invert(a)), dtypes=("i32",), tol="exact"),
    _m2("shifts", lambda a, b: (tf.bitwise.left_shift(a, M.abs(b) % 8),
        tf.bitwise.right_shift(a, M.abs(b) % 8)), dtypes=("i32",), tol="exact"),
    Case("tf.math.reduce_sum", MATH, lambda x: (M.reduce_sum(x), M.reduce_sum(x, 1)),
         ins((3, 4), (2, 3, 5)), FI, "reduction"),
    Case("tf.math.reduce_mean", MATH, lambda x: M.reduce_mean(x, -1), ins((3, 4)), FL,
         "reduction"),
    Case("tf.math.reduce_max_min", MATH, lambda x: (M.reduce_max(x, 0), M.reduce_min(x, 1)),
         ins((3, 4)), FI, "reduction"),
    Case("tf.math.reduce_prod", MATH, lambda x: M.reduce_prod(x, 1), ins((3, 4)), FL,
         "reduction"),
    Case("tf.math.reduce_all_any", MATH, lambda x: (M.reduce_all(x > -1, 1),
         M.reduce_any(x > 1, 0)), ins((3, 4)), FL, "exact"),
    Case("tf.math.reduce_logsumexp", MATH, lambda x: M.reduce_logsumexp(x, -1), ins((3, 4)),
         FL, "reduction"),
    Case("tf.math.reduce_std", MATH, lambda x: (M.reduce_std(x, 1), M.reduce_variance(x, 0)),
         ins((3, 4)), FL, "reduction"),
    Case("tf.math.argmax", MATH, lambda x: (M.argmax(x, 1), M.argmin(x, 0)), ins((3, 4)),
         FI, "exact"),
    Case("tf.math.cumsum", MATH, lambda x: (M.cumsum(x, 1), M.cumsum(x, 0, exclusive=True,
         reverse=True)), ins((3, 4)), FI, "reduction"),
    Case("tf.math.cumprod", MATH, lambda x: M.cumprod(x, 1), ins((3, 4)), FL, "reduction"),
    Case("tf.math.cumulative_logsumexp", MATH, lambda x: M.cumulative_logsumexp(x, 1),
         ins((3, 4)), FL, "reduction"),
    Case("tf.math.top_k", MATH, lambda x: tuple(M.top_k(x, 3)), ins((3, 8)), FI, "exact"),
    Case("tf.math.unsorted_segment_sum", MATH, lambda x: M.unsorted_segment_sum(
         x, tf.constant([0, 2, 0, 1, 2]), 3), ins((5, 3)), FI, "reduction"),
    Case("tf.math.segment_max", MATH, lambda x: M.segment_max(x, tf.constant([0, 0, 1, 1, 2])),
         ins((5, 3)), FI, "exact"),
    Case("tf.math.polyval", MATH, lambda x: M.polyval([x[0], x[1], x[2]], x), ins((4,)), FL,
         "reduction"),
    Case("tf.math.bincount", MATH, lambda x: M.bincount(M.abs(x), minlength=21, maxlength=21),
         ins((12,)), ("i32",), "exact", VALUE_SHAPED),
]

SHAPES = [
    Case("tf.reshape", SHP, lambda x: tf.reshape(x, (-1, 2)), ins((3, 4)), FI, "exact"),
    Case("tf.transpose", SHP, lambda x: tf.transpose(x, (2, 0, 1)), ins((2, 3, 4)), FI,
         "exact"),
    Case("tf.concat", SHP, lambda a, b: tf.concat([a, b, a], 1), ins([(3, 2), (3, 4)]), FI,
         "exact"),
    Case("tf.stack", SHP, lambda a, b: (tf.stack([a, b]), tf.unstack(a, axis=1)),
         ins([(3, 4), (3, 4)]), FI, "exact"),
    Case("tf.split", SHP, lambda x: tf.split(x, [1, 3], axis=1), ins((3, 4)), FI, "exact"),
    Case("tf.tile", SHP, lambda x: tf.tile(x, (2, 3)), ins((3, 4)), FI, "exact"),
    Case("tf.pad", SHP, lambda x: (tf.pad(x, [[1, 2], [0, 1]]), tf.pad(x, [[1, 1], [2, 2]],
         "REFLECT"), tf.pad(x, [[1, 1], [1, 1]], "SYMMETRIC")), ins((3, 4)), FI, "exact"),
    Case("tf.gather", SHP, lambda x: (tf.gather(x, [2, 0, 1, 2]), tf.gather(x, [3, 1],
         axis=1)), ins((3, 4)), FI, "exact"),
    Case("tf.gather_nd", SHP, lambda x: tf.gather_nd(x, [[0, 1], [2, 3]]), ins((3, 4)), FI,
         "exact"),
    Case("tf.scatter_nd", SHP, lambda u: tf.scatter_nd([[1], [3], [1]], u, (5, 3)),
         ins((3, 3)), FI, "reduction"),
    Case("tf.tensor_scatter_nd_update", SHP, lambda x, u: (
         tf.tensor_scatter_nd_update(x, [[0], [2]], u), tf.tensor_scatter_nd_add(
         x, [[1], [1]], u)), ins([(3, 4), (2, 4)]), FI, "reduction"),
    Case("tf.slice", SHP, lambda x: (tf.slice(x, [1, 0], [2, 3]), x[1:, ::2], x[..., -1]),
         ins((3, 4)), FI, "exact"),
    Case("tf.strided_slice", SHP, lambda x: tf.strided_slice(x, [0, 3], [3, 0], [2, -1]),
         ins((3, 4)), FI, "exact"),
    Case("tf.reverse", SHP, lambda x: tf.reverse(x, [0, 1]), ins((3, 4)), FI, "exact"),
    Case("tf.roll", SHP, lambda x: tf.roll(x, [1, -2], [0, 1]), ins((3, 4)), FI, "exact"),
    Case("tf.one_hot", SHP, lambda x: tf.one_hot(tf.abs(x) % 5, 5), ins((4,), (2, 3)),
         ("i32",), "exact"),
    Case("tf.where", SHP, lambda c, a: tf.where(c > 0, a, -a), ins([(3, 4), (3, 4)]), FI,
         "exact"),
    Case("tf.clip_by_value", SHP, lambda x: tf.clip_by_value(x, -0.5, 0.7), ins((3, 4)), FL,
         "exact"),
    Case("tf.expand_squeeze", SHP, lambda x: (tf.expand_dims(x, 1), tf.squeeze(
         tf.expand_dims(x, 0))), ins((3, 4)), FI, "exact"),
    Case("tf.broadcast_to", SHP, lambda x: tf.broadcast_to(x, (2, 3, 4)), ins((3, 1)), FI,
         "exact"),
    Case("tf.einsum", SHP, lambda a, b: tf.einsum("bij,bjk->bik", a, b),
         ins([(2, 3, 4), (2, 4, 5)]), FL, "reduction"),
    Case("tf.matmul", SHP, lambda a, b: (tf.matmul(a, b), tf.matmul(a, a, transpose_b=True)),
         ins([(3, 4), (4, 5)]), FI, "reduction"),
    Case("tf.tensordot", SHP, lambda a, b: tf.tensordot(a, b, [[1, 2], [0, 1]]),
         ins([(2, 3, 4), (3, 4, 2)]), FL, "reduction"),
    Case("tf.range_linspace", SHP, lambda x: (x[0] + tf.range(2.0, 9.0, 2.0, dtype=x.dtype),
         x[0] * tf.linspace(tf.constant(-1.0, x.dtype), 2.0, 5)), ins((1,)), FL, "exact"),
    Case("tf.eye_fill", SHP, lambda x: (x[0] * tf.eye(3, 4, dtype=x.dtype),
         tf.fill((2, 2), x[0]), tf.zeros_like(x), tf.ones_like(x)), ins((3,)), FI, "exact"),
    Case("tf.cast", SHP, lambda x: (tf.cast(x, tf.int32), tf.cast(x, tf.bfloat16),
         tf.cast(x > 0, tf.float32), tf.cast(x, tf.float16)), ins((3, 4)), FL, "exact"),
    Case("tf.bitcast", SHP, lambda x: (tf.bitcast(x, tf.int32), tf.bitcast(x, tf.uint8)),
         ins((3, 4)), ("f32",), "exact"),
    Case("tf.sort", SHP, lambda x: (tf.sort(x), tf.sort(x, direction="DESCENDING", axis=0),
         tf.argsort(x, stable=True)), ins((3, 6)), FI, "exact"),
    Case("tf.searchsorted", SHP, lambda s, v: tf.searchsorted(tf.sort(s), v),
         ins([(2, 6), (2, 3)]), FL, "exact"),
    Case("tf.boolean_mask_fixed", SHP, lambda x: tf.reduce_sum(tf.where(x > 0, x, 0.0), 1),
         ins((3, 4)), FL, "reduction"),
]


def _sq(rng: np.random.Generator, dt: str):
    return [((arr(rng, (4, 4), dt) + 3 * np.eye(4)).astype(arr(rng, (), dt).dtype),)]


def _sq_rhs(rng: np.random.Generator, dt: str):
    (a,), = _sq(rng, dt)
    return [(a, arr(rng, (4, 2), dt))]


def _spd(rng: np.random.Generator, dt: str):
    return [(spd(rng, (4, 4), dt),), (spd(rng, (2, 3, 3), dt),)]


L = tf.linalg
LINALG = [
    Case("tf.linalg.det", LIN, L.det, _sq, FL, "linalg"),
    Case("tf.linalg.inv", LIN, L.inv, _sq, FL, "linalg"),
    Case("tf.linalg.slogdet", LIN, lambda a: tuple(L.slogdet(a)), _sq, FL, "linalg"),
    Case("tf.linalg.logdet", LIN, L.logdet, _spd, FL, "linalg"),
    Case("tf.linalg.cholesky", LIN, L.cholesky, _spd, FL, "linalg"),
    Case("tf.linalg.qr", LIN, lambda a: (lambda q, r: (q @ r, tf.abs(r)))(*L.qr(a)), _sq, FL,
         "linalg"),
    Case("tf.linalg.svd", LIN, lambda a: L.svd(a, compute_uv=False), _sq, FL, "linalg"),
    Case("tf.linalg.eigh", LIN, lambda a: L.eigh(a)[0], _spd, FL, "linalg"),
    Case("tf.linalg.solve", LIN, L.solve, _sq_rhs, FL, "linalg"),
    Case("tf.linalg.triangular_solve", LIN, lambda a, b: L.triangular_solve(
         L.band_part(a, -1, 0), b), _sq_rhs, FL, "linalg"),
    Case("tf.linalg.cholesky_solve", LIN, lambda a, b: L.cholesky_solve(L.cholesky(a), b),
         lambda r, d: [(spd(r, (4, 4), d), arr(r, (4, 2), d))], FL, "linalg"),
    Case("tf.linalg.lu", LIN, lambda a: L.lu_reconstruct(*L.lu(a)), _sq, FL, "linalg"),
    Case("tf.linalg.lstsq", LIN, lambda a, b: L.lstsq(a, b), _sq_rhs, FL, "linalg"),
    Case("tf.linalg.pinv", LIN, L.pinv, _sq, FL, "linalg"),
    Case("tf.linalg.expm", LIN, lambda a: L.expm(0.3 * a), _sq, FL, "linalg"),
    Case("tf.linalg.matrix_transpose", LIN, L.matrix_transpose, ins((2, 3, 4)), FI, "exact"),
    Case("tf.linalg.band_part", LIN, lambda a: L.band_part(a, 1, 0), ins((4, 5)), FI, "exact"),
    Case("tf.linalg.diag", LIN, lambda v, a: (L.diag(v), L.diag_part(a), L.set_diag(a, v[:4])),
         ins([(4,), (4, 5)]), FI, "exact"),
    Case("tf.linalg.trace", LIN, L.trace, ins((2, 4, 4)), FI, "linalg"),
    Case("tf.linalg.norm", LIN, lambda a: (tf.norm(a), tf.norm(a, ord=1, axis=1),
         L.global_norm([a, a])), ins((3, 4)), FL, "linalg"),
    Case("tf.linalg.matvec", LIN, L.matvec, ins([(3, 4), (4,)]), FL, "linalg"),
    Case("tf.linalg.cross", LIN, L.cross, ins([(4, 3), (4, 3)]), FL, "linalg"),
    Case("tf.linalg.l2_normalize", LIN, lambda a: L.l2_normalize(a, axis=-1), ins((3, 4)), FL,
         "linalg"),
    Case("tf.linalg.tridiagonal_solve", LIN, lambda d, b: L.tridiagonal_solve(
         [d * 0.3, d + 4.0, d * 0.2], b, diagonals_format="sequence", partial_pivoting=False),
         ins([(5,), (5, 2)]), FL, "linalg"),
    Case("tf.linalg.matrix_square_root", LIN, lambda a: L.sqrtm(a) @ L.sqrtm(a), _spd, FL,
         "linalg"),
]

SIGNAL = [
    Case("tf.signal.fft", SIG, lambda x: (tf.signal.fft(x), tf.signal.ifft(x)), ins((8,),
         (3, 6)), ("c64", "c128"), "fft"),
    Case("tf.signal.rfft", SIG, lambda x: tf.signal.rfft(x), ins((8,), (3, 6)), ("f32",),
         "fft"),
    Case("tf.signal.irfft", SIG, lambda x: tf.signal.irfft(x), ins((5,), (3, 5)), ("c64",),
         "fft"),
    Case("tf.signal.fft2d", SIG, lambda x: (tf.signal.fft2d(x), tf.signal.ifft2d(x)),
         ins((4, 6)), ("c64",), "fft"),
    Case("tf.signal.rfft2d", SIG, tf.signal.rfft2d, ins((4, 6)), ("f32",), "fft"),
    Case("tf.signal.frame", SIG, lambda x: tf.signal.frame(x, 4, 2), ins((12,)), FL, "exact"),
    Case("tf.signal.hann_window", SIG, lambda x: x[0] * tf.signal.hann_window(8), ins((1,)),
         ("f32",), "elementwise"),
    Case("tf.signal.stft", SIG, lambda x: tf.signal.stft(x, 8, 4, 8), ins((32,)), ("f32",),
         "fft"),
    Case("tf.signal.dct", SIG, lambda x: tf.signal.dct(x, type=2), ins((3, 8)), ("f32",),
         "fft"),
]


def _conv_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (2, 7, 6, 3), dt), arr(rng, (3, 3, 3, 4), dt))]


NNS = [
    Case("tf.nn.activations", NN, lambda x: (tf.nn.relu(x), tf.nn.relu6(x * 4), tf.nn.elu(x),
         tf.nn.selu(x), tf.nn.leaky_relu(x, 0.1), tf.nn.silu(x)), U, FL),
    Case("tf.nn.gelu", NN, lambda x: (tf.nn.gelu(x), tf.nn.gelu(x, approximate=True)), U, FL),
    Case("tf.nn.softmax", NN, lambda x: (tf.nn.softmax(x), tf.nn.log_softmax(x, 0)),
         ins((3, 5)), FL, "reduction"),
    Case("tf.nn.conv2d", NN, lambda x, k: (tf.nn.conv2d(x, k, 1, "SAME"), tf.nn.conv2d(
         x, k, 2, "VALID", dilations=1)), _conv_make, FL, "reduction"),
    Case("tf.nn.conv1d", NN, lambda x, k: tf.nn.conv1d(x, k, 1, "SAME"),
         ins([(2, 9, 3), (3, 3, 4)]), FL, "reduction"),
    Case("tf.nn.conv2d_transpose", NN, lambda x, k: tf.nn.conv2d_transpose(
         x, k, (1, 8, 8, 2), 2, "SAME"), ins([(1, 4, 4, 3), (3, 3, 2, 3)]), FL, "reduction"),
    Case("tf.nn.depthwise_conv2d", NN, lambda x, k: tf.nn.depthwise_conv2d(
         x, k, (1, 1, 1, 1), "SAME"), ins([(1, 6, 6, 3), (3, 3, 3, 2)]), FL, "reduction"),
    Case("tf.nn.pools", NN, lambda x: (tf.nn.max_pool2d(x, 2, 2, "VALID"), tf.nn.avg_pool2d(
         x, 3, 1, "SAME")), ins((2, 6, 6, 3)), FL, "reduction"),
    Case("tf.nn.batch_normalization", NN, lambda x: (lambda m, v: tf.nn.batch_normalization(
         x, m, v, 0.1, 1.5, 1e-3))(*tf.nn.moments(x, [0, 1])), ins((4, 5, 3)), FL,
         "reduction"),
    Case("tf.nn.losses", NN, lambda lo, la: (tf.nn.sigmoid_cross_entropy_with_logits(
         tf.sigmoid(la), lo), tf.nn.softmax_cross_entropy_with_logits(tf.nn.softmax(la), lo)),
         ins([(3, 5), (3, 5)]), FL, "reduction"),
    Case("tf.nn.sparse_softmax_cross_entropy", NN, lambda lo: tf.nn.
         sparse_softmax_cross_entropy_with_logits(tf.constant([1, 0, 4]), lo), ins((3, 5)), FL,
         "reduction"),
    Case("tf.nn.bias_add", NN, tf.nn.bias_add, ins([(2, 3, 4), (4,)]), FL),
    Case("tf.nn.local_response_normalization", NN, lambda x: tf.nn.local_response_normalization(
         x, 2), ins((1, 3, 3, 6)), ("f32",), "reduction"),
    Case("tf.nn.space_to_depth", NN, lambda x: (tf.nn.space_to_depth(x, 2), tf.nn.depth_to_space(
         x, 2)), ins((1, 4, 4, 4)), FL, "exact"),
]

IMAGES = [
    Case("tf.image.resize_bilinear", IMG, lambda x: tf.image.resize(x, (7, 9)),
         ins((1, 4, 5, 3)), ("f32",), "reduction"),
    Case("tf.image.resize_nearest", IMG, lambda x: tf.image.resize(x, (8, 10), "nearest"),
         ins((1, 4, 5, 3)), ("f32",), "exact"),
    Case("tf.image.rgb_to_grayscale", IMG, tf.image.rgb_to_grayscale, ins((2, 4, 4, 3)),
         ("f32",), "reduction"),
    Case("tf.image.flips", IMG, lambda x: (tf.image.flip_left_right(x), tf.image.flip_up_down(
         x)), ins((2, 4, 5, 3)), ("f32",), "exact"),
    Case("tf.image.rot90", IMG, tf.image.rot90, ins((2, 4, 5, 3)), ("f32",), "exact", BOUNDED),
    Case("tf.image.adjust", IMG, lambda x: (tf.image.adjust_brightness(x, 0.2),
         tf.image.adjust_contrast(x, 1.5)), ins((2, 4, 4, 3)), ("f32",), "reduction"),
    Case("tf.image.per_image_standardization", IMG, tf.image.per_image_standardization,
         ins((2, 4, 4, 3)), ("f32",), "reduction"),
    Case("tf.image.crop_pad", IMG, lambda x: (tf.image.central_crop(x, 0.5),
         tf.image.pad_to_bounding_box(x, 1, 2, 8, 8)), ins((1, 6, 6, 3)), ("f32",), "exact"),
    Case("tf.image.sobel_edges", IMG, tf.image.sobel_edges, ins((1, 5, 5, 1)), ("f32",),
         "reduction"),
]


def _rnd_make(rng: np.random.Generator, dt: str):
    return [(np.array([int(rng.integers(0, 1000)), 7], np.int32),)]


RANDOM = [
    Case("tf.random.stateless_uniform", RND, lambda s: tf.random.stateless_uniform(
         (3, 4), s), _rnd_make, ("f32",), "elementwise"),
    Case("tf.random.stateless_normal", RND, lambda s: tf.random.stateless_normal((3, 4), s),
         _rnd_make, ("f32",), "special"),
    Case("tf.random.stateless_uniform_int", RND, lambda s: tf.random.stateless_uniform(
         (5,), s, 0, 10, tf.int32), _rnd_make, ("f32",), "exact"),
    Case("tf.random.stateless_truncated_normal", RND, lambda s: tf.random.
         stateless_truncated_normal((3, 4), s), _rnd_make, ("f32",), "special"),
]


def _layer(name: str, make_layer, shape, tol: str = "reduction", n_inputs: int = 1) -> Case:
    layer = make_layer()  # built, with seeded weights, by the first call (tf_sweep_run)
    if n_inputs == 1:
        fn = layer
    else:
        def fn(*xs):
            return layer(list(xs))
    shapes = [shape] * n_inputs if n_inputs > 1 else shape
    return Case(f"keras.layers.{name}", KER, fn, ins(shapes), ("f32",), tol)


K = keras.layers


class SweepMHA(K.Layer):
    """``MultiHeadAttention(q, v)`` as a two-input layer."""

    def __init__(self):
        super().__init__()
        self.mha = K.MultiHeadAttention(num_heads=2, key_dim=4)

    def call(self, xs):
        return self.mha(xs[0], xs[1])


class SweepAddConcat(K.Layer):
    def call(self, xs):
        return K.Concatenate()([K.Add()(xs), K.Multiply()(xs)])


KERAS = [
    _layer("Dense", lambda: K.Dense(5, activation="relu"), (3, 4)),
    _layer("Conv1D", lambda: K.Conv1D(4, 3, padding="same"), (2, 9, 3)),
    _layer("Conv2D", lambda: K.Conv2D(4, 3, strides=2), (2, 8, 8, 3)),
    _layer("DepthwiseConv2D", lambda: K.DepthwiseConv2D(3, padding="same"), (1, 6, 6, 4)),
    _layer("SeparableConv2D", lambda: K.SeparableConv2D(5, 3), (1, 7, 7, 3)),
    _layer("Conv2DTranspose", lambda: K.Conv2DTranspose(3, 3, strides=2), (1, 4, 4, 2)),
    _layer("MaxPooling2D", lambda: K.MaxPooling2D(2), (2, 6, 6, 3)),
    _layer("AveragePooling2D", lambda: K.AveragePooling2D(3, 1, "same"), (2, 6, 6, 3)),
    _layer("GlobalAveragePooling2D", K.GlobalAveragePooling2D, (2, 5, 5, 3)),
    _layer("BatchNormalization", K.BatchNormalization, (4, 6)),
    _layer("LayerNormalization", K.LayerNormalization, (3, 4, 6)),
    _layer("GroupNormalization", lambda: K.GroupNormalization(2), (2, 5, 4)),
    _layer("Embedding", lambda: K.Embedding(10, 4), (2, 3), "exact"),
    _layer("LSTM", lambda: K.LSTM(5), (2, 6, 3)),
    _layer("GRU", lambda: K.GRU(4, return_sequences=True), (2, 5, 3)),
    _layer("SimpleRNN", lambda: K.SimpleRNN(4), (2, 5, 3)),
    _layer("MultiHeadAttention", lambda: SweepMHA(), (2, 5, 8), n_inputs=2),
    _layer("Attention", K.Attention, (2, 4, 6), n_inputs=2),
    _layer("Flatten_Reshape", lambda: keras.Sequential([K.Flatten(), K.Reshape((3, 8))]),
           (2, 4, 6), "exact"),
    _layer("UpSampling2D", lambda: K.UpSampling2D(2), (1, 3, 3, 2), "exact"),
    _layer("ZeroPadding2D_Cropping2D", lambda: keras.Sequential([K.ZeroPadding2D(2),
           K.Cropping2D(1)]), (1, 3, 3, 2), "exact"),
    _layer("Dropout_Activation", lambda: keras.Sequential([K.Dropout(0.5),
           K.Activation("gelu"), K.Softmax()]), (3, 5)),
    _layer("Add_Concatenate", lambda: SweepAddConcat(), (3, 4), n_inputs=2),
    _layer("Permute", lambda: K.Permute((2, 1)), (2, 3, 4), "exact"),
    _layer("Sequential_MLP", lambda: keras.Sequential([K.Dense(8, activation="tanh"),
           K.Dense(3), K.Softmax()]), (4, 5)),
]


CASES = MATHS + SHAPES + LINALG + SIGNAL + NNS + IMAGES + RANDOM + KERAS
