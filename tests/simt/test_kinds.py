"""The kinds the other files leave out: the layout copy (PackKernel, what a GPU policy
makes for a library call's operand), select_and_scatter, serial reductions and the loop
dot, on the host twin, ptxas and gpuocelot."""

from __future__ import annotations

import numpy as np
from oxla_codegen_llvm.simt import HostTwin, kernels_for
from oxla_codegen_llvm.simt.harness import plan_for

from oxla.lowering import Buf, PackKernel
from tests.simt.conftest import check_ptxas, check_twin, on_ocelot
from tests.simt.test_reduce import _sum

IDENTITY = """
func.func @main(%x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  return %x : tensor<3x4x5xf32>
}
"""


def test_pack_kernel_permutes_layout():
    plan = plan_for(IDENTITY)
    mod_arg = next(v for v, b in plan.vbuf.items() if b is plan.args[0])
    out = Buf("pack.out", 3 * 4 * 5 * 4, "temp")
    (k,) = kernels_for(PackKernel("pack0", mod_arg, plan.args[0], (2, 0, 1), out), plan)
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    y = np.zeros((5, 3, 4), np.float32)
    HostTwin([k]).launch(k.name, k.grid, k.block, k.shared_bytes,
                         [x.ctypes.data, y.ctypes.data])
    np.testing.assert_array_equal(y, x.transpose(2, 0, 1))
    check_ptxas([k])


SELECT_SCATTER = """
func.func @main(%x: tensor<6x7xf32>, %s: tensor<3x3xf32>) -> tensor<6x7xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %s, %z) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %ge = stablehlo.compare GE, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %ge : tensor<i1>
  }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %sum = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %sum : tensor<f32>
  }) {window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 2, 2>,
      padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>}
     : (tensor<6x7xf32>, tensor<3x3xf32>, tensor<f32>) -> tensor<6x7xf32>
  return %r : tensor<6x7xf32>
}
"""


def _select_args():
    rng = np.random.default_rng(8)
    return [rng.integers(0, 5, (6, 7)).astype(np.float32),  # ties: the first wins
            rng.integers(1, 9, (3, 3)).astype(np.float32)]


def test_select_and_scatter_twin_ptxas_ocelot():
    kernels = check_twin(SELECT_SCATTER, _select_args())
    assert kernels[1].block == (256, 1, 1)  # atomic adds
    check_ptxas(kernels)
    got, want, _ = on_ocelot(SELECT_SCATTER, _select_args())
    np.testing.assert_array_equal(got[0], want[0])


DOT_I32 = """
func.func @main(%a: tensor<4x5xi32>, %b: tensor<5x3xi32>) -> tensor<4x3xi32> {
  %d = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
     : (tensor<4x5xi32>, tensor<5x3xi32>) -> tensor<4x3xi32>
  return %d : tensor<4x3xi32>
}
"""


def test_serial_reduce_and_loop_dot_ptxas_ocelot():
    x = np.random.default_rng(9).integers(-9, 9, (4, 7, 3)).astype(np.int32)
    text = _sum((4, 7, 3), [1], "i32")
    kernels = check_twin(text, [x])
    check_ptxas(kernels)
    got, want, _ = on_ocelot(text, [x])
    np.testing.assert_array_equal(got[0], want[0])
    rng = np.random.default_rng(10)
    a = rng.integers(-9, 9, (4, 5)).astype(np.int32)
    b = rng.integers(-9, 9, (5, 3)).astype(np.int32)
    got, want, _ = on_ocelot(DOT_I32, [a, b])
    np.testing.assert_array_equal(got[0], want[0])
