"""``while``, ``if`` and ``case`` on the cpu backend against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

WHILE_SWAP = """
func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> (tensor<i32>, tensor<4xf32>, tensor<4xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %y = stablehlo.multiply %x, %x : tensor<4xf32>
  %r:3 = stablehlo.while(%i = %c0, %a = %x, %b = %y) : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %s = stablehlo.add %a, %y : tensor<4xf32>
      stablehlo.return %i1, %b, %s : tensor<i32>, tensor<4xf32>, tensor<4xf32>
    }
  return %r#0, %r#1, %r#2 : tensor<i32>, tensor<4xf32>, tensor<4xf32>
}"""


@pytest.mark.parametrize("n", [0, 1, 6])
def test_while_carries_swapped_values_and_captures(n):
    x = np.arange(4, dtype=np.float32) - 1.5
    _, got = run_both(WHILE_SWAP, [x, np.array(n, np.int32)])
    assert got[0] == max(n, 0)


NESTED = """
func.func @main(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %acc = %x) : tensor<i32>, tensor<3x2xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %three, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %s:2 = stablehlo.while(%j = %c0, %t = %acc) : tensor<i32>, tensor<3x2xf32>
        cond {
          %lt2 = stablehlo.compare LT, %j, %i, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %lt2 : tensor<i1>
        } do {
          %j1 = stablehlo.add %j, %one : tensor<i32>
          %t2 = stablehlo.multiply %t, %x : tensor<3x2xf32>
          %t3 = stablehlo.add %t2, %acc : tensor<3x2xf32>
          stablehlo.return %j1, %t3 : tensor<i32>, tensor<3x2xf32>
        }
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %z = stablehlo.constant dense<0.5> : tensor<3x2xf32>
      %m = stablehlo.multiply %s#1, %z : tensor<3x2xf32>
      stablehlo.return %i1, %m : tensor<i32>, tensor<3x2xf32>
    }
  return %r#1 : tensor<3x2xf32>
}"""


def test_nested_while_with_outer_captures():
    run_both(NESTED, [np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2)], rtol=1e-6)


IF_CASE = """
func.func @main(%p: tensor<i1>, %k: tensor<i32>, %x: tensor<5xi32>) -> (tensor<5xi32>,
    tensor<5xi32>, tensor<i32>) {
  %y = stablehlo.add %x, %x : tensor<5xi32>
  %r = "stablehlo.if"(%p) ({
    %a = stablehlo.multiply %y, %x : tensor<5xi32>
    stablehlo.return %a : tensor<5xi32>
  }, {
    stablehlo.return %x : tensor<5xi32>
  }) : (tensor<i1>) -> tensor<5xi32>
  %c:2 = "stablehlo.case"(%k) ({
    %s = stablehlo.constant dense<7> : tensor<i32>
    stablehlo.return %y, %s : tensor<5xi32>, tensor<i32>
  }, {
    %n = stablehlo.negate %r : tensor<5xi32>
    %s = stablehlo.constant dense<8> : tensor<i32>
    stablehlo.return %n, %s : tensor<5xi32>, tensor<i32>
  }, {
    %s = stablehlo.constant dense<9> : tensor<i32>
    stablehlo.return %r, %s : tensor<5xi32>, tensor<i32>
  }) : (tensor<i32>) -> (tensor<5xi32>, tensor<i32>)
  return %r, %c#0, %c#1 : tensor<5xi32>, tensor<5xi32>, tensor<i32>
}"""


@pytest.mark.parametrize("p", [True, False])
@pytest.mark.parametrize("k", [0, 1, 2, 3, -1])
def test_if_and_case_with_out_of_range_index(p, k):
    x = np.arange(5, dtype=np.int32) - 2
    _, got = run_both(IF_CASE, [np.array(p), np.array(k, np.int32), x])
    assert int(got[2]) == {0: 7, 1: 8}.get(k, 9)


def test_fori_loop_accumulates_matmuls():
    text = """
func.func @main(%w: tensor<8x8xf32>, %h: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %n = stablehlo.constant dense<10> : tensor<i64>
  %r:2 = stablehlo.while(%i = %c0, %s = %h) : tensor<i64>, tensor<2x8xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %d = stablehlo.dot_general %s, %w, contracting_dims = [1] x [0] :
          (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
      %t = stablehlo.tanh %d : tensor<2x8xf32>
      %i1 = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %i1, %t : tensor<i64>, tensor<2x8xf32>
    }
  return %r#1 : tensor<2x8xf32>
}"""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 8)).astype(np.float32) * 0.3
    h = rng.standard_normal((2, 8)).astype(np.float32)
    exe, _ = run_both(text, [w, h], rtol=1e-4, atol=1e-6)
    assert exe.stats["temp_bytes"] > 0
    assert compile_cpu(text)(w, h)[0].shape == (2, 8)
