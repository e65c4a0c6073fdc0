"""Tuples on the cpu backend: ``while``/``if``/``case`` over tuples and
``get_tuple_element`` run (``canonicalize`` rewrites them onto the leaves,
:mod:`oxla.passes.canon_tuple`), and a tuple at @main's boundary is a clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oxla.errors import NotSupportedError
from oxla.ir import parse_module
from oxla.passes import run_pipeline
from tests.backend_cpu.conftest import compile_cpu, run_both

WHILE_IF = (Path(__file__).parent / "tuple_while_if.mlir").read_text()

CASE = """
func.func @main(%i: tensor<i32>, %a: tensor<3xf32>) -> (tensor<3xf32>, tensor<i32>) {
  %k = stablehlo.constant dense<7> : tensor<i32>
  %c = "stablehlo.case"(%i) ({
      %n = stablehlo.negate %a : tensor<3xf32>
      %t = stablehlo.tuple %n, %k : tuple<tensor<3xf32>, tensor<i32>>
      stablehlo.return %t : tuple<tensor<3xf32>, tensor<i32>>
    }, {
      %t = stablehlo.tuple %a, %i : tuple<tensor<3xf32>, tensor<i32>>
      stablehlo.return %t : tuple<tensor<3xf32>, tensor<i32>>
    }) : (tensor<i32>) -> tuple<tensor<3xf32>, tensor<i32>>
  %x = stablehlo.get_tuple_element %c[0] : (tuple<tensor<3xf32>, tensor<i32>>) -> tensor<3xf32>
  %y = stablehlo.get_tuple_element %c[1] : (tuple<tensor<3xf32>, tensor<i32>>) -> tensor<i32>
  return %x, %y : tensor<3xf32>, tensor<i32>
}"""


def test_canonicalize_leaves_no_tuple_inside_the_function():
    for text in (WHILE_IF, CASE):
        m = run_pipeline(parse_module(text), "canonicalize")
        assert "tuple" not in str(m)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_while_and_if_over_nested_tuples_match_the_interpreter(n):
    a = np.array([0.5, 1, 2, -1], np.float32)
    _, got = run_both(WHILE_IF, [a, np.int32(n)], rtol=0)
    assert int(got[1]) == n


@pytest.mark.parametrize("i", [-1, 0, 1, 5])
def test_case_returning_a_tuple_matches_the_interpreter(i):
    _, got = run_both(CASE, [np.int32(i), np.array([1, -2, 3], np.float32)], rtol=0)
    assert int(got[1]) == (7 if i == 0 else i)


def test_tuple_result_of_main_is_a_clear_error():
    text = """
func.func @main(%a: tensor<4xf32>) -> tuple<tensor<4xf32>> {
  %t = stablehlo.tuple %a : tuple<tensor<4xf32>>
  return %t : tuple<tensor<4xf32>>
}"""
    with pytest.raises(NotSupportedError, match="result #0 of @main has tuple type"):
        compile_cpu(text)
