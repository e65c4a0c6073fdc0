"""Sweep cases of ``jax.lax`` (control flow, reductions, windows, sorting, bit ops,
precision, data movement), ``jax.nn``, ``jax.random`` and the transformations (grad,
jvp, vjp, vmap, hessian, custom_vjp/jvp, checkpoint)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from sweep_common import Case, arr, ins

CTL = "jax.lax control flow"
LRED = "jax.lax reductions"
WIN = "jax.lax windows and convolutions"
SRT = "jax.lax sorting"
BIT = "jax.lax bit ops"
PREC = "jax.lax precision and conversions"
MOV = "jax.lax data movement"
NN = "jax.nn"
RND = "jax.random"
TRF = "transformations"
FL = ("f32", "f64")
FLB = ("f32", "bf16", "f64")
NUM = ("f32", "bf16", "f64", "i32", "i64")
INT = ("i32", "u32", "i8", "u8", "i64", "u64")
MAT = ins((4, 6), (2, 3, 5))


def _switch(i, x):
    return lax.switch(jnp.clip(i, 0, 2), [jnp.sin, jnp.cos, lambda v: -v], x)


def _idx_x(rng: np.random.Generator, dt: str):
    return [(np.int32(rng.integers(0, 3)), arr(rng, (3, 4), dt)),
            (np.int32(-1), arr(rng, (5,), dt))]


def _while(x):
    def body(c):
        i, v = c
        return i + 1, v * 0.9 + jnp.sin(v)
    return lax.while_loop(lambda c: (c[0] < 5) & (jnp.sum(c[1]) < 100.0), body, (0, x))


def _scan(x):
    def step(c, v):
        c = c * 0.5 + v
        return c, jnp.tanh(c)
    return lax.scan(step, jnp.zeros_like(x[0]), x), lax.scan(step, x[0], x, reverse=True)


CONTROL = [
    Case("lax.cond", CTL, lambda p, x: lax.cond(jnp.sum(p) > 0, jnp.sin,
         lambda v: jnp.cos(v) * 2, x), ins([(3,), (3, 4)], [(2,), ()]), FLB, "elementwise"),
    Case("lax.cond_pytree", CTL, lambda p, x: lax.cond(p[0] > 0, lambda a: (a, a * 2),
         lambda a: (-a, a + 1), x), ins([(1,), (3, 4)]), NUM, "elementwise"),
    Case("lax.switch", CTL, _switch, _idx_x, FLB, "elementwise"),
    Case("lax.while_loop", CTL, _while, ins((3,), (2, 4)), FL, "reduction"),
    Case("lax.fori_loop", CTL, lambda x: lax.fori_loop(0, 6, lambda i, v: v * 3 - i, x),
         ins((3,), (2, 4)), NUM, "reduction"),
    Case("lax.fori_loop_dynamic", CTL, lambda n, x: lax.fori_loop(
         0, jnp.abs(n[0]) % 7, lambda i, v: v * 3 - i, x), ins([(1,), (4,)]),
         ("i32",), "exact"),
    Case("lax.scan", CTL, _scan, ins((5, 3), (4, 2, 2)), FLB, "reduction"),
    Case("lax.map", CTL, lambda x: lax.map(lambda r: jnp.sort(r) * jnp.sum(r), x),
         MAT, FL, "reduction"),
    Case("lax.associative_scan", CTL, lambda x: (lax.associative_scan(jnp.add, x),
         lax.associative_scan(jnp.maximum, x, axis=1, reverse=True)), MAT, NUM, "reduction"),
    Case("lax.select_n", CTL, lambda c, a, b: lax.select_n(c > 0, a, b),
         ins([(3, 4)] * 3), NUM, "exact"),
    Case("lax.while_nested", CTL, lambda x: lax.fori_loop(0, 3, lambda i, v: lax.fori_loop(
         0, 2, lambda j, w: w * 0.5 + i * j, v), x), ins((4,)), FL, "reduction"),
    Case("lax.cond_in_scan", CTL, lambda x: lax.scan(lambda c, v: (lax.cond(
         v[0] > 0, lambda: c + v, lambda: c * v), None), jnp.ones_like(x[0]), x)[0],
         ins((5, 3)), FL, "reduction"),
]

REDUCE = [
    Case("lax.reduce", LRED, lambda x: lax.reduce(x, np.array(0, x.dtype), lax.add, (0,)),
         MAT, NUM, "reduction"),
    Case("lax.reduce_variadic", LRED, lambda x: lax.reduce(
         (x, jnp.abs(x)), (np.array(-np.inf, x.dtype), np.array(0, x.dtype)),
         lambda a, b: (jnp.maximum(a[0], b[0]), a[1] + b[1]), (1,)), MAT, FL, "reduction"),
    Case("lax.reduce_sum", LRED, lambda x: lax.reduce_sum(x, (0, 1)), MAT,
         NUM + ("c64",), "reduction"),
    Case("lax.reduce_max", LRED, lambda x: lax.reduce_max(x, (1,)), MAT, NUM, "exact"),
    Case("lax.reduce_min", LRED, lambda x: lax.reduce_min(x, (0,)), MAT, NUM, "exact"),
    Case("lax.reduce_prod", LRED, lambda x: lax.reduce_prod(x, (1,)), MAT, FL + ("i32",),
         "reduction"),
    Case("lax.reduce_and", LRED, lambda x: lax.reduce_and(x, (1,)), MAT, ("i32", "u8", "bool"),
         "exact"),
    Case("lax.reduce_or", LRED, lambda x: lax.reduce_or(x, (0,)), MAT, ("i32", "u8", "bool"),
         "exact"),
    Case("lax.reduce_xor", LRED, lambda x: lax.reduce_xor(x, (1,)), MAT, ("i32", "u8", "bool"),
         "exact"),
    Case("lax.argmax", LRED, lambda x: lax.argmax(x, 1, jnp.int32), MAT, NUM, "exact"),
    Case("lax.argmin", LRED, lambda x: lax.argmin(x, 0, jnp.int32), MAT, NUM, "exact"),
    Case("lax.cumsum", LRED, lambda x: lax.cumsum(x, 1, reverse=True), MAT, NUM, "reduction"),
    Case("lax.cumprod", LRED, lambda x: lax.cumprod(x, 0), MAT, FL, "reduction"),
    Case("lax.cummax", LRED, lambda x: lax.cummax(x, 1), MAT, NUM, "exact"),
    Case("lax.cummin", LRED, lambda x: lax.cummin(x, 0, reverse=True), MAT, NUM, "exact"),
    Case("lax.cumlogsumexp", LRED, lambda x: lax.cumlogsumexp(x, 1), MAT, FL, "reduction"),
]


def _pool(x, op, init, window=(1, 2, 2, 1), strides=(1, 2, 2, 1), padding="VALID"):
    return lax.reduce_window(x, np.array(init, x.dtype), op, window, strides, padding)


def _conv_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (2, 3, 8, 7), dt), arr(rng, (4, 3, 3, 2), dt))]


WINDOWS = [
    Case("lax.reduce_window_max", WIN, lambda x: (_pool(x, lax.max, -np.inf),
         _pool(x, lax.max, -np.inf, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")),
         ins((2, 6, 5, 3)), FLB, "exact"),
    Case("lax.reduce_window_sum", WIN, lambda x, y: (_pool(x, lax.add, 0),
         lax.reduce_window(y, np.array(0, x.dtype), lax.add, (2, 3), (1, 2), "VALID",
                           window_dilation=(1, 2), base_dilation=(2, 1))),
         ins([(2, 6, 8, 3), (6, 9)]), ("f32", "f64", "i32"), "reduction"),
    Case("lax.reduce_window_min_padded", WIN, lambda x: lax.reduce_window(
         x, np.array(np.inf, x.dtype), lax.min, (3,), (2,), ((1, 2),)), ins((9,)), FL,
         "exact"),
    Case("lax.conv_general_dilated", WIN, lambda x, k: (
         lax.conv_general_dilated(x, k, (1, 1), "SAME"),
         lax.conv_general_dilated(x, k, (2, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2))),
         _conv_make, FLB, "reduction"),
    Case("lax.conv_nhwc_groups", WIN, lambda x, k: lax.conv_general_dilated(
         x, k, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
         feature_group_count=2), ins([(1, 6, 6, 4), (3, 3, 2, 6)]), FL, "reduction"),
    Case("lax.conv_lhs_dilation", WIN, lambda x, k: lax.conv_general_dilated(
         x, k, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2)), _conv_make, FL, "reduction"),
    Case("lax.conv_transpose", WIN, lambda x, k: lax.conv_transpose(
         x, k, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")),
         ins([(1, 4, 5, 3), (3, 3, 3, 2)]), FL, "reduction"),
    Case("lax.conv_1d", WIN, lambda x, k: lax.conv(x, k, (1,), "SAME"),
         ins([(2, 3, 10), (4, 3, 3)]), ("f32", "f64", "c64"), "reduction"),
    Case("lax.max_pool_grad", WIN, jax.grad(lambda x: jnp.sum(_pool(x, lax.max, -np.inf)
         ** 2)), ins((1, 6, 6, 2)), FL, "reduction"),
    Case("lax.avg_pool_grad", WIN, jax.grad(lambda x: jnp.sum(jnp.sin(_pool(
         x, lax.add, 0, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")))), ins((1, 5, 5, 2)), FL,
         "reduction"),
]

SORTING = [
    Case("lax.sort", SRT, lambda x: (lax.sort(x), lax.sort(x, dimension=0)), MAT, NUM,
         "exact"),
    Case("lax.sort_multi", SRT, lambda k, v: lax.sort((jnp.round(k), v), num_keys=1,
         is_stable=True), ins([(9,), (9,)], [(3, 5), (3, 5)]), ("f32", "i32"), "exact"),
    Case("lax.sort_key_val", SRT, lambda k, v: lax.sort_key_val(k, v, dimension=-1),
         ins([(3, 6), (3, 6)]), ("f32", "i32", "bf16"), "exact"),
    Case("lax.top_k", SRT, lambda x: lax.top_k(x, 3), ins((9,), (3, 7)), NUM, "exact"),
    Case("lax.sort_nan", SRT, lambda x: lax.sort(jnp.where(x > 1, jnp.nan, x)), ins((9,)), FL,
         "exact"),
    Case("jax.lax.approx_max_k", SRT, lambda x: lax.approx_max_k(x, 2, recall_target=1.0),
         ins((3, 8)), FL, "exact"),
]


def _bits_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (3, 4), dt), arr(rng, (3, 4), dt, "shift"))]


BITS = [
    Case("lax.shift_left", BIT, lax.shift_left, _bits_make, INT, "exact"),
    Case("lax.shift_right_logical", BIT, lax.shift_right_logical, _bits_make, INT, "exact"),
    Case("lax.shift_right_arithmetic", BIT, lax.shift_right_arithmetic, _bits_make, INT,
         "exact"),
    Case("lax.population_count", BIT, lax.population_count, MAT, INT, "exact"),
    Case("lax.clz", BIT, lax.clz, MAT, INT, "exact"),
    Case("lax.bitwise_not", BIT, lax.bitwise_not, MAT, INT + ("bool",), "exact"),
    Case("lax.bitwise_and_or_xor", BIT, lambda a, b: (lax.bitwise_and(a, b),
         lax.bitwise_or(a, b), lax.bitwise_xor(a, b)), ins([(3, 4), (3, 4)]),
         INT + ("bool",), "exact"),
    Case("lax.bitcast_convert_type", BIT, lambda x: (lax.bitcast_convert_type(x, jnp.int32),
         lax.bitcast_convert_type(x, jnp.uint8), lax.bitcast_convert_type(
         x.astype(jnp.bfloat16), jnp.uint16)), MAT, ("f32",), "exact"),
    Case("lax.bitcast_int_to_float", BIT, lambda x: lax.bitcast_convert_type(
         x, jnp.float32), MAT, ("i32", "u32"), "exact"),
    Case("lax.bitcast_widen", BIT, lambda x: lax.bitcast_convert_type(
         x.reshape(-1, 2), jnp.float64 if x.dtype == jnp.float32 else jnp.uint16),
         ins((6,)), ("f32", "u8"), "exact"),
]

PRECISION = [
    Case("lax.dot_highest", PREC, lambda a, b: jnp.dot(a, b, precision=lax.Precision.HIGHEST),
         ins([(5, 7), (7, 3)]), ("f32", "f64", "bf16"), "reduction"),
    Case("lax.dot_general_preferred", PREC, lambda a, b: lax.dot_general(
         a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), (((1,), (0,)), ((), ())),
         preferred_element_type=jnp.float32), ins([(4, 8), (8, 3)]), ("f32",), "reduction"),
    Case("lax.dot_general_int8", PREC, lambda a, b: lax.dot_general(
         a.astype(jnp.int8), b.astype(jnp.int8), (((1,), (0,)), ((), ())),
         preferred_element_type=jnp.int32), ins([(4, 8), (8, 3)]), ("i32",), "exact"),
    Case("lax.dot_general_batch", PREC, lambda a, b: lax.dot_general(
         a, b, (((2,), (1,)), ((0,), (0,)))), ins([(2, 3, 4), (2, 4, 5)]),
         ("f32", "f64", "c64", "i32"), "reduction"),
    Case("lax.reduce_precision", PREC, lambda x: (lax.reduce_precision(x, 8, 7),
         lax.reduce_precision(x * 1e5, 5, 10)), MAT, FL, "exact"),
    Case("lax.convert_element_type", PREC, lambda x: (
         lax.convert_element_type(x, jnp.bfloat16), lax.convert_element_type(x * 10, jnp.int32),
         lax.convert_element_type(x, jnp.float16), lax.convert_element_type(x, jnp.complex64)),
         MAT, FL, "exact"),
    Case("lax.convert_float8", PREC, lambda x: (x.astype(jnp.float8_e4m3fn).astype(x.dtype),
         x.astype(jnp.float8_e5m2).astype(x.dtype)), MAT, ("f32",), "exact"),
    Case("lax.integer_pow", PREC, lambda x: (lax.integer_pow(x, 3), lax.integer_pow(x, -2)),
         ins((7,), (3, 4), kind="pos"), FLB, "elementwise"),
    Case("lax.rsqrt", PREC, lax.rsqrt, ins((7,), (3, 4), kind="pos"), FLB, "elementwise"),
    Case("lax.erf_inv", PREC, lax.erf_inv, ins((7,), kind="unit"), FL, "special"),
    Case("lax.logistic", PREC, lax.logistic, MAT, FLB, "elementwise"),
    Case("lax.igamma_lgamma", PREC, lambda a, x: (lax.igamma(a, x), lax.lgamma(a),
         lax.digamma(a), lax.igammac(a, x)), ins([(7,), (7,)], kind="pos"), FL, "special"),
    Case("lax.bessel_i1e", PREC, lambda x: (lax.bessel_i0e(x), lax.bessel_i1e(x)), MAT, FL,
         "special"),
    Case("lax.complex", PREC, lambda a, b: (lax.complex(a, b), lax.abs(lax.complex(a, b))),
         ins([(3, 4), (3, 4)]), FL, "elementwise"),
    Case("lax.rem_int", PREC, lambda a, b: lax.rem(a, jnp.where(b == 0, 1, b)),
         ins([(3, 4), (3, 4)]), ("i32", "i64", "u32", "i8"), "exact"),
    Case("lax.atan2_cbrt", PREC, lambda a, b: (lax.atan2(a, b), lax.cbrt(a), lax.tan(a)),
         ins([(3, 4), (3, 4)]), FLB, "elementwise"),
]


def _dyn_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (5, 6), dt), np.int32(rng.integers(-2, 6)), np.int32(rng.integers(0, 4)),
             arr(rng, (2, 3), dt))]


def _scatter_make(rng: np.random.Generator, dt: str):
    return [(arr(rng, (6, 3), dt), rng.integers(0, 6, size=(4, 1)).astype(np.int32),
             arr(rng, (4, 3), dt))]


_SDN = lax.ScatterDimensionNumbers((1,), (0,), (0,))

MOVEMENT = [
    Case("lax.dynamic_slice", MOV, lambda x, i, j, u: lax.dynamic_slice(x, (i, j), (2, 3)),
         _dyn_make, NUM, "exact"),
    Case("lax.dynamic_update_slice", MOV, lambda x, i, j, u: lax.dynamic_update_slice(
         x, u, (i, j)), _dyn_make, NUM, "exact"),
    Case("lax.dynamic_index_in_dim", MOV, lambda x, i, j, u: lax.dynamic_index_in_dim(x, i, 1),
         _dyn_make, NUM, "exact"),
    Case("lax.scatter_add", MOV, lambda x, i, u: lax.scatter_add(x, i, u, _SDN), _scatter_make,
         ("f32", "f64", "i32"), "reduction"),
    Case("lax.scatter", MOV, lambda x, i, u: lax.scatter(x, i, u, _SDN, unique_indices=False),
         lambda r, d: [(arr(r, (6, 3), d), np.array([[0], [3], [5]], np.int32),
                        arr(r, (3, 3), d))], ("f32", "i32"), "exact"),
    Case("lax.scatter_mul_max", MOV, lambda x, i, u: (lax.scatter_mul(x, i, u, _SDN),
         lax.scatter_max(x, i, u, _SDN), lax.scatter_min(x, i, u, _SDN)), _scatter_make,
         FL + ("i32",), "reduction"),
    Case("lax.gather", MOV, lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers(
         offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)), (1, 3),
         mode=lax.GatherScatterMode.CLIP), lambda r, d: [(arr(r, (6, 3), d), r.integers(
         -2, 8, size=(5, 1)).astype(np.int32))], NUM, "exact"),
    Case("lax.pad", MOV, lambda x: (lax.pad(x, np.array(0, x.dtype), ((1, 2, 1), (-1, 1, 0))),
         lax.pad(x, np.array(1, x.dtype), ((0, 0, 2), (2, -2, 1)))), ins((3, 4)), NUM,
         "exact"),
    Case("lax.concatenate", MOV, lambda a, b: lax.concatenate([a, b, a], 1),
         ins([(3, 2), (3, 4)]), NUM, "exact"),
    Case("lax.clamp", MOV, lambda x: lax.clamp(np.array(-0.5, x.dtype), x,
         np.array(0.8, x.dtype)), MAT, FLB, "exact"),
    Case("lax.iota", MOV, lambda x: x[0] + lax.broadcasted_iota(x.dtype, (3, 4), 1), ins((1,)),
         NUM, "exact"),
    Case("lax.rev", MOV, lambda x: lax.rev(x, (0, 1)), MAT, NUM, "exact"),
    Case("lax.broadcast_in_dim", MOV, lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
         ins((3, 1), (3, 4)), NUM, "exact"),
    Case("lax.collapse_expand", MOV, lambda x: (lax.collapse(x, 0, 2), lax.expand_dims(x, (1,)),
         lax.squeeze(lax.expand_dims(x, (0,)), (0,))), ins((2, 3, 4)), NUM, "exact"),
    Case("lax.slice", MOV, lambda x: (lax.slice(x, (0, 1), (3, 5), (2, 2)),
         lax.slice_in_dim(x, 1, 3, axis=0)), ins((4, 6)), NUM, "exact"),
    Case("lax.transpose", MOV, lambda x: lax.transpose(x, (2, 0, 1)), ins((2, 3, 4)), NUM,
         "exact"),
    Case("lax.linalg.tridiagonal_solve", MOV, lambda dl, d, du, b: lax.linalg.tridiagonal_solve(
         dl.at[0].set(0), d + 4, du.at[-1].set(0), b), ins([(5,), (5,), (5,), (5, 2)]), FL,
         "linalg"),
]

CASES = CONTROL + REDUCE + WINDOWS + SORTING + BITS + PRECISION + MOVEMENT
