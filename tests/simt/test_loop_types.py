"""Loop fusions on the GPU kernels for every element kind the shared emitters support:
floats (f64, f32, f16, bf16, f8), signed/unsigned integers, booleans, complex; plus the
index-mapping ops (broadcast, transpose, slice, pad, concatenate, reverse, iota, gather,
dynamic_slice). Host twin bitwise against the interpreter; ptxas for sm_80/sm_90."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.simt.conftest import check_ptxas, check_twin

TYPES = {"f64": np.float64, "f32": np.float32, "f16": np.float16,
         "bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
         "i8": np.int8, "i32": np.int32, "i64": np.int64, "ui16": np.uint16,
         "ui32": np.uint32}


def _arith(t: str, n: int = 33) -> str:
    div = "stablehlo.divide" if t.startswith(("f", "b")) else "stablehlo.maximum"
    return f"""
func.func @main(%x: tensor<{n}x{t}>, %y: tensor<{n}x{t}>) -> (tensor<{n}x{t}>, tensor<{n}xf32>, tensor<{n}xi1>) {{
  %m = stablehlo.multiply %x, %y : tensor<{n}x{t}>
  %a = stablehlo.add %m, %x : tensor<{n}x{t}>
  %d = {div} %a, %y : tensor<{n}x{t}>
  %s = stablehlo.subtract %d, %x : tensor<{n}x{t}>
  %c = stablehlo.convert %s : (tensor<{n}x{t}>) -> tensor<{n}xf32>
  %lt = stablehlo.compare LT, %x, %y : (tensor<{n}x{t}>, tensor<{n}x{t}>) -> tensor<{n}xi1>
  return %s, %c, %lt : tensor<{n}x{t}>, tensor<{n}xf32>, tensor<{n}xi1>
}}
"""


def _values(t: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dt = TYPES[t]
    if t.startswith(("f", "b")):
        return (rng.standard_normal(n) * 3).astype(np.float32).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi, n).astype(dt) + (1 if t.startswith("u") else 0)


@pytest.mark.parametrize("t", list(TYPES))
def test_arithmetic_every_type(t):
    x, y = _values(t, 33, 1), _values(t, 33, 2)
    if not t.startswith(("f", "b")):
        y = np.where(y == 0, 1, y).astype(TYPES[t])
    kernels = check_twin(_arith(t), [x, y])
    if t in ("f32", "bf16", "i64"):
        check_ptxas(kernels)


INDEXING = """
func.func @main(%x: tensor<4x6xf32>, %i: tensor<3x1xi32>, %s: tensor<i32>) -> (tensor<9x13xf32>, tensor<6x8xf32>, tensor<3x6xf32>, tensor<2x3xf32>) {
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  %r = stablehlo.reverse %t, dims = [0] : tensor<6x4xf32>
  %io = stablehlo.iota dim = 1 : tensor<6x4xf32>
  %c = stablehlo.concatenate %r, %io, dim = 1 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x8xf32>
  %z = stablehlo.constant dense<-1.0> : tensor<f32>
  %p = stablehlo.pad %x, %z, low = [1, 2], high = [1, 0], interior = [1, 1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<9x13xf32>
  %g = "stablehlo.gather"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 6>} : (tensor<4x6xf32>, tensor<3x1xi32>) -> tensor<3x6xf32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %ds = stablehlo.dynamic_slice %x, %s, %zero, sizes = [2, 3] : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
  return %p, %c, %g, %ds : tensor<9x13xf32>, tensor<6x8xf32>, tensor<3x6xf32>, tensor<2x3xf32>
}
"""


def test_index_mapping_ops():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    idx = np.array([[3], [0], [7]], dtype=np.int32)  # 7 is clamped
    kernels = check_twin(INDEXING, [x, idx, np.array(3, np.int32)])
    check_ptxas(kernels)


COMPLEX = """
func.func @main(%x: tensor<5xcomplex<f32>>, %y: tensor<5xcomplex<f32>>) -> tensor<5xcomplex<f32>> {
  %m = stablehlo.multiply %x, %y : tensor<5xcomplex<f32>>
  %a = stablehlo.add %m, %x : tensor<5xcomplex<f32>>
  return %a : tensor<5xcomplex<f32>>
}
"""


def test_complex():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    y = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    check_ptxas(check_twin(COMPLEX, [x, y], rtol=1e-6))


@pytest.mark.parametrize("perm,shape,t", [((1, 0), (40, 50), "f32"),
                                          ((2, 0, 1), (3, 20, 70), "bf16"),
                                          ((0, 2, 1), (2, 33, 17), "i8")])
def test_tiled_transpose(perm, shape, t):
    out = [shape[p] for p in perm]
    s, o = "x".join(map(str, shape)), "x".join(map(str, out))
    text = f"""
func.func @main(%x: tensor<{s}x{t}>) -> tensor<{o}x{t}> {{
  %a = stablehlo.add %x, %x : tensor<{s}x{t}>
  %r = stablehlo.transpose %a, dims = {list(perm)} : (tensor<{s}x{t}>) -> tensor<{o}x{t}>
  return %r : tensor<{o}x{t}>
}}
"""
    x = np.arange(np.prod(shape)).reshape(shape).astype(np.float32).astype(TYPES[t])
    kernels = check_twin(text, [x])
    assert kernels[0].block == (32, 8, 1) and kernels[0].shared_bytes > 0
    if t == "f32":
        check_ptxas(kernels)
