"""Compile-time paths of the cpu backend: identical kernels are compiled once
(MergeFunctions) and still compute each its own result."""

from __future__ import annotations

import numpy as np

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(3)


def test_identical_kernels_are_merged_and_stay_correct():
    # tanh(a) and tanh(b) are two kernels (each feeds the dot) with the same shapes and
    # signatures: the same IR, which LLVM's MergeFunctions compiles once
    text = """
func.func @main(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = stablehlo.tanh %a : tensor<64x64xf32>
  %1 = stablehlo.tanh %b : tensor<64x64xf32>
  %2 = stablehlo.dot_general %0, %1, contracting_dims = [1] x [0]
      : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %2 : tensor<64x64xf32>
}"""
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    b = (RNG.standard_normal((64, 64)) * 0.1).astype(np.float32)
    exe, _ = run_both(text, [a, b], rtol=1e-4, atol=1e-5)
    defined = [ln for ln in exe.llvm_ir.splitlines() if ln.startswith("define")]
    tanh_kernels = [ln for ln in defined if "@loop" in ln and ".task" not in ln]
    assert len(tanh_kernels) == 1, defined
