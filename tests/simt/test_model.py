"""The SIMT model end to end on loop fusions: the host twin agrees with the interpreter,
ptxas accepts the PTX for sm_80 and sm_90, and the PTX keeps a separate multiply and add
apart (no FMA contraction)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from oxla_codegen_llvm.simt import check_ptx

from oxla.errors import LoweringError
from tests.simt.conftest import check_ptxas, check_twin, need_ptxas

ELEMENTWISE = """
func.func @main(%x: tensor<4x5xf32>, %y: tensor<5xf32>) -> tensor<5x4xf32> {
  %b = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<5xf32>) -> tensor<4x5xf32>
  %m = stablehlo.multiply %x, %b : tensor<4x5xf32>
  %a = stablehlo.add %m, %x : tensor<4x5xf32>
  %t = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x5xf32>) -> tensor<5x4xf32>
  return %t : tensor<5x4xf32>
}
"""


def _xy():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((4, 5)).astype(np.float32),
            rng.standard_normal(5).astype(np.float32)]


def test_elementwise_twin_matches_interpreter_bitwise():
    kernels = check_twin(ELEMENTWISE, _xy())
    assert len(kernels) == 1 and kernels[0].block == (256, 1, 1)


def test_ptx_has_no_fma_for_separate_multiply_add():
    kernels = check_twin(ELEMENTWISE, _xy())
    for arch, ptx in check_ptxas(kernels).items():
        assert f".target {arch}" in ptx
        assert ".entry loop0" in ptx and "ld.global" in ptx and "st.global" in ptx
        assert not re.search(r"\bfma\.", ptx), ptx
        assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx


def test_check_ptx_reports_ptxas_log():
    need_ptxas()
    with pytest.raises(LoweringError, match="ptxas"):
        check_ptx(".version 7.8\n.target sm_90\n.address_size 64\nbogus;\n", "sm_90")


def test_math_function_through_libdevice_and_libm():
    text = """
func.func @main(%x: tensor<37xf32>) -> tensor<37xf32> {
  %l = stablehlo.log %x : tensor<37xf32>
  %s = stablehlo.sine %l : tensor<37xf32>
  %e = stablehlo.exponential %s : tensor<37xf32>
  return %e : tensor<37xf32>
}
"""
    x = np.linspace(0.1, 20, 37, dtype=np.float32)
    kernels = check_twin(text, [x], rtol=2e-6)
    ptx = check_ptxas(kernels)["sm_90"]
    assert ".extern" not in ptx.split(".entry")[0] or "__nv" not in ptx  # libdevice inlined
