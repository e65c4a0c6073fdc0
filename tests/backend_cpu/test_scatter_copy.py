"""``scatter`` copies its operand on oxla's threads when the operand is large
(``oxla_backend_cpu.opkernels._copy_operands``), then applies the updates in order on
one thread: fused operands (a splat broadcast, an elementwise chain), variadic
scatters, repeated and out-of-bounds indices, i8/f64/f32, sizes on both sides of the
threshold. Every case against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(23)


def _rows(v: int, d: int, t: int, et: str, operand: str, body: str) -> str:
    tt = f"tensor<{v}x{d}x{et}>"
    ut = f"tensor<{t}x{d}x{et}>"
    return f"""func.func @main(%x: {tt}, %i: tensor<{t}x1xi32>, %u: {ut}) -> {tt} {{
{operand}
  %r = "stablehlo.scatter"(%o, %i, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<
      update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0],
      index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false}}> ({{
    ^bb0(%a: tensor<{et}>, %b: tensor<{et}>):
      %s = stablehlo.add %a, %b : tensor<{et}>
      stablehlo.return {body} : tensor<{et}>
  }}) : ({tt}, tensor<{t}x1xi32>, {ut}) -> {tt}
  return %r : {tt}
}}"""


OPERANDS = {
    "argument": lambda tt, et: f"  %o = stablehlo.add %x, %x : {tt}",
    "zeros": lambda tt, et: f"""  %z = stablehlo.constant dense<0> : tensor<{et}>
  %o = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<{et}>) -> {tt}""",
}


def _ids(v: int, t: int) -> np.ndarray:
    ids = RNG.integers(0, v, (t, 1)).astype(np.int32)
    ids[::5] = ids[0]           # repeated: applied in order
    ids[1::9] = -1              # out of bounds: skipped
    ids[2::11] = v
    return ids


@pytest.mark.parametrize("v,d,t", [(3000, 64, 300), (513, 257, 40), (40, 16, 7)])
@pytest.mark.parametrize("et,dtype", [("f32", np.float32), ("f64", np.float64),
                                      ("i8", np.int8)])
@pytest.mark.parametrize("operand", ["argument", "zeros"])
@pytest.mark.parametrize("body", ["%b", "%s"], ids=["set", "add"])
def test_scatter_rows_with_threaded_copy(v, d, t, et, dtype, operand, body):
    tt = f"tensor<{v}x{d}x{et}>"
    text = _rows(v, d, t, et, OPERANDS[operand](tt, et), body)
    if dtype == np.int8:
        x, u = (RNG.integers(-60, 60, s).astype(dtype) for s in ((v, d), (t, d)))
    else:
        x, u = (RNG.standard_normal(s).astype(dtype) for s in ((v, d), (t, d)))
    run_both(text, [x, _ids(v, t), u], rtol=1e-6)


def test_threshold_cases_are_on_both_sides():
    from oxla_backend_cpu.parallel import worth_parallel

    assert worth_parallel(3000, 64) and worth_parallel(513, 257)
    assert not worth_parallel(40, 16)


def test_variadic_scatter_copies_every_operand():
    t = "tensor<2000x40xf32>"
    it = "tensor<2000x40xi32>"
    text = f"""func.func @main(%x: {t}, %y: {it}, %i: tensor<50x1xi32>, %u: tensor<50x40xf32>,
    %w: tensor<50x40xi32>) -> ({t}, {it}) {{
  %r:2 = "stablehlo.scatter"(%x, %y, %i, %u, %w) <{{scatter_dimension_numbers =
      #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<i32>):
      %s = stablehlo.add %a, %c : tensor<f32>
      %m = stablehlo.maximum %b, %d : tensor<i32>
      stablehlo.return %s, %m : tensor<f32>, tensor<i32>
  }}) : ({t}, {it}, tensor<50x1xi32>, tensor<50x40xf32>, tensor<50x40xi32>) -> ({t}, {it})
  return %r#0, %r#1 : {t}, {it}
}}"""
    args = [RNG.standard_normal((2000, 40)).astype(np.float32),
            RNG.integers(-9, 9, (2000, 40)).astype(np.int32), _ids(2000, 50),
            RNG.standard_normal((50, 40)).astype(np.float32),
            RNG.integers(-9, 9, (50, 40)).astype(np.int32)]
    run_both(text, args, rtol=1e-6)
