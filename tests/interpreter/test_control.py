"""``while``, ``if``, ``case``, ``map`` and ``sort`` rules (spec sections of the same
names); expected values worked out by hand from the spec."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module


def run(body: str, sig: str, *args):
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def test_while_runs_zero_or_more_times():
    body = """-> tensor<i64> {
      %one = stablehlo.constant dense<1> : tensor<i64>
      %ten = stablehlo.constant dense<10> : tensor<i64>
      %r = stablehlo.while(%i = %a) : tensor<i64>
        cond {
          %c = stablehlo.compare LT, %i, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
          stablehlo.return %c : tensor<i1>
        } do {
          %n = stablehlo.add %i, %one : tensor<i64>
          stablehlo.return %n : tensor<i64>
        }
      return %r : tensor<i64> }"""
    assert run(body, "%a: tensor<i64>", np.int64(3))[0] == 10
    assert run(body, "%a: tensor<i64>", np.int64(12))[0] == 12


def test_if_selects_branch():
    body = """-> tensor<i32> {
      %r = "stablehlo.if"(%p) ({
        %t = stablehlo.constant dense<1> : tensor<i32>
        stablehlo.return %t : tensor<i32>
      }, {
        %f = stablehlo.constant dense<2> : tensor<i32>
        stablehlo.return %f : tensor<i32>
      }) : (tensor<i1>) -> tensor<i32>
      return %r : tensor<i32> }"""
    assert run(body, "%p: tensor<i1>", np.bool_(True))[0] == 1
    assert run(body, "%p: tensor<i1>", np.bool_(False))[0] == 2


@pytest.mark.parametrize(("index", "expected"), [(0, 10), (1, 11), (2, 12), (3, 12), (-1, 12)])
def test_case_out_of_range_index_takes_last_branch(index, expected):
    branches = ", ".join(f"""{{
        %c = stablehlo.constant dense<{10 + b}> : tensor<i32>
        stablehlo.return %c : tensor<i32>
      }}""" for b in range(3))
    body = f"""-> tensor<i32> {{
      %r = "stablehlo.case"(%i) ({branches}) : (tensor<i32>) -> tensor<i32>
      return %r : tensor<i32> }}"""
    assert run(body, "%i: tensor<i32>", np.int32(index))[0] == expected


MAP = """-> tensor<2x2xi64> {
      %r = "stablehlo.map"(%a, %b) ({
        ^bb0(%x: tensor<i64>, %y: tensor<i64>):
          %m = stablehlo.multiply %x, %y : tensor<i64>
          stablehlo.return %m : tensor<i64>
      }) {dimensions = array<i64: 0, 1>} : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi64>
      return %r : tensor<2x2xi64> }"""


def test_map_elementwise():
    (r,) = run(MAP, "%a: tensor<2x2xi64>, %b: tensor<2x2xi64>",
               np.array([[0, 1], [2, 3]]), np.array([[4, 5], [6, 7]]))
    np.testing.assert_array_equal(r, [[0, 5], [12, 21]])


def sort_program(direction: str, dim: str = "", compare_type: str = "") -> str:
    return f"""-> (tensor<2x4xi32>, tensor<2x4xi32>) {{
      %r:2 = "stablehlo.sort"(%k, %v) ({{
        ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
          %lt = stablehlo.compare {direction}, %a, %b{compare_type}
            : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %lt : tensor<i1>
      }}) {{{dim}is_stable = true}} : (tensor<2x4xi32>, tensor<2x4xi32>)
        -> (tensor<2x4xi32>, tensor<2x4xi32>)
      return %r#0, %r#1 : tensor<2x4xi32>, tensor<2x4xi32> }}"""


KEYS = np.array([[2, 1, 2, 1], [0, 0, -1, 3]], np.int32)
VALS = np.array([[0, 1, 2, 3], [4, 5, 6, 7]], np.int32)


def test_sort_stable_along_default_last_dimension():
    (k, v) = run(sort_program("LT"), "%k: tensor<2x4xi32>, %v: tensor<2x4xi32>", KEYS, VALS)
    np.testing.assert_array_equal(k, [[1, 1, 2, 2], [-1, 0, 0, 3]])
    np.testing.assert_array_equal(v, [[1, 3, 0, 2], [6, 4, 5, 7]])


def test_sort_descending_along_dimension_0():
    (k, v) = run(sort_program("GT", "dimension = 0 : i64, "),
                 "%k: tensor<2x4xi32>, %v: tensor<2x4xi32>", KEYS, VALS)
    np.testing.assert_array_equal(k, [[2, 1, 2, 3], [0, 0, -1, 1]])
    np.testing.assert_array_equal(v, [[0, 1, 2, 7], [4, 5, 6, 3]])


def test_sort_with_non_strict_comparator_still_orders_keys():
    # LE is not a strict weak order: the per-pair fallback still sorts the keys.
    (k, _) = run(sort_program("LE"), "%k: tensor<2x4xi32>, %v: tensor<2x4xi32>", KEYS, VALS)
    np.testing.assert_array_equal(k, [[1, 1, 2, 2], [-1, 0, 0, 3]])


def test_sort_total_order_places_nan_and_signed_zeros():
    (r,) = run("""-> tensor<5xf32> {
      %r = "stablehlo.sort"(%k) ({
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %lt = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
          stablehlo.return %lt : tensor<i1>
      }) {dimension = 0 : i64, is_stable = true} : (tensor<5xf32>) -> tensor<5xf32>
      return %r : tensor<5xf32> }""", "%k: tensor<5xf32>",
               np.array([np.nan, 0.0, -0.0, -np.inf, 1.0], np.float32))
    assert np.isnan(r[4])
    np.testing.assert_array_equal(r[:4], [-np.inf, -0.0, 0.0, 1.0])
    assert np.signbit(r[1]) and not np.signbit(r[2])
