"""stablehlo-refine-shapes refines shapes only: element types stay as written."""

from __future__ import annotations

from oxla.ir import parse_module
from oxla.passes import run_pipeline

TEXT = """
func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<?xf64> {
  %0 = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<
    lhs_batching_dimensions = [0], rhs_batching_dimensions = [0],
    lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>}
    : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<?xf64>
  return %0 : tensor<?xf64>
}
"""


def test_refine_keeps_wider_dot_result_type():
    m = parse_module(TEXT)
    run_pipeline(m, "stablehlo-refine-shapes")
    dot = next(op for op in m.walk() if op.name == "stablehlo.dot_general")
    assert str(dot.results[0].type) == "tensor<2xf64>"
