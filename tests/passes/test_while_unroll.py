"""canonicalize's ``while_unroll`` (oxla.passes.canon_control): a ``while`` with a
compile-time trip count of at most ``UNROLL_MAX_TRIPS`` becomes that many copies of its
body. Each case runs the original (interpreted as written, no passes) against the
rewritten module on the interpreter, and checks whether the loop is gone."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import InterpreterBackend
from oxla.ir import parse_module
from oxla.passes import run_pipeline
from oxla.passes.canon_control import UNROLL_MAX_TRIPS

RNG = np.random.default_rng(11)


def _loop(ity: str, start: int, step: int, bound: int, direction: str, body: str = "",
          cmp_type: str = "SIGNED", swapped: bool = False, shape: str = "5x3") -> str:
    """``for i = start; i <direction> bound; i += step: v = v * 0.5 + w`` carrying the
    counter, a ``shape`` f32 state and a swapped pair of states."""
    t = f"tensor<{shape}xf32>"
    i_t = f"tensor<{ity}>"
    lhs, rhs = ("%n", "%i") if swapped else ("%i", "%n")
    return f"""func.func @main(%x: {t}, %w: {t}) -> ({i_t}, {t}, {t}, {t}) {{
  %c0 = stablehlo.constant dense<{start}> : {i_t}
  %r:4 = stablehlo.while(%i = %c0, %v = %x, %a = %x, %b = %w) : {i_t}, {t}, {t}, {t}
    cond {{
      %n = stablehlo.constant dense<{bound}> : {i_t}
      %p = stablehlo.compare {direction}, {lhs}, {rhs}, {cmp_type} : ({i_t}, {i_t}) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %s = stablehlo.constant dense<{step}> : {i_t}
      %i1 = stablehlo.add %s, %i : {i_t}
      %h = stablehlo.constant dense<0.5> : {t}
      %m = stablehlo.multiply %v, %h : {t}
      %v1 = stablehlo.add %m, %w : {t}
{body}
      stablehlo.return %i1, %v1, %b, %a : {i_t}, {t}, {t}, {t}
    }}
  return %r#0, %r#1, %r#2, %r#3 : {i_t}, {t}, {t}, {t}
}}"""


def _check(text: str, unrolled: bool, shape=(5, 3)) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(shape).astype(np.float32)
    want = InterpreterBackend().compile(parse_module(text, "t.mlir"))(x, w)
    module = parse_module(text, "t.mlir")
    run_pipeline(module, "canonicalize")
    assert ("stablehlo.while" not in str(module)) == unrolled
    got = InterpreterBackend().compile(module)(x, w)
    for g, e in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


@pytest.mark.parametrize("ity,start,step,bound,direction,cmp,trips", [
    ("i32", 0, 1, 5, "LT", "SIGNED", 5),          # JAX's fori_loop (threefry: 5 trips)
    ("i32", 0, 1, 1, "LT", "SIGNED", 1),
    ("i64", -3, 2, 8, "LT", "SIGNED", 6),         # odd start, step 2
    ("i32", 7, -1, 0, "GT", "SIGNED", 7),         # counting down
    ("ui32", 0, 3, 12, "NE", "UNSIGNED", 4),      # != bound
    ("i8", 120, 1, 126, "LE", "SIGNED", 7),       # i8 up to 126 inclusive
    ("ui8", 250, 2, 2, "NE", "UNSIGNED", 4),      # wraps 254 -> 0 as integer add does
    ("i32", 0, 1, UNROLL_MAX_TRIPS, "LT", "SIGNED", UNROLL_MAX_TRIPS),
])
def test_counted_loops_unroll_to_the_same_values(ity, start, step, bound, direction, cmp,
                                                 trips):
    text = _loop(ity, start, step, bound, direction, cmp_type=cmp)
    _check(text, unrolled=True)
    out = InterpreterBackend().compile(parse_module(text, "t.mlir"))(
        np.zeros((5, 3), np.float32), np.zeros((5, 3), np.float32))
    dtype = {"i8": np.int8, "ui8": np.uint8, "i32": np.int32, "ui32": np.uint32,
             "i64": np.int64}[ity]
    assert int(np.asarray(out[0])) == np.array(start + trips * step).astype(dtype)


def test_bound_on_the_left_unrolls():
    _check(_loop("i32", 0, 1, 3, "GT", swapped=True), unrolled=True)


def test_odd_shapes_and_three_dimensional_state():
    _check(_loop("i32", 0, 1, 4, "LT", shape="1x7x13"), unrolled=True, shape=(1, 7, 13))


@pytest.mark.parametrize("bound", [UNROLL_MAX_TRIPS + 1, 1000])
def test_too_many_trips_keep_the_loop(bound):
    _check(_loop("i32", 0, 1, bound, "LT"), unrolled=False)


def test_an_unbounded_counter_keeps_the_loop():
    # 0, 0, 0, ...: never reaches the bound (an infinite loop is not unrolled)
    module = parse_module(_loop("i32", 0, 0, 3, "LT"), "t.mlir")
    run_pipeline(module, "canonicalize")
    assert "stablehlo.while" in str(module)


def test_condition_on_a_non_counter_keeps_the_loop():
    # v[0, 0] < -100: false at once for these inputs, but unknown at compile time
    text = _loop("i32", 0, 1, 3, "LT").replace(
        "%p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>",
        """%e = stablehlo.slice %v [0:1, 0:1] : (tensor<5x3xf32>) -> tensor<1x1xf32>
      %f = stablehlo.reshape %e : (tensor<1x1xf32>) -> tensor<f32>
      %z = stablehlo.constant dense<-100.0> : tensor<f32>
      %p = stablehlo.compare LT, %f, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>""")
    _check(text, unrolled=False)


def test_a_counter_bound_from_outside_the_condition_keeps_the_loop():
    # the bound is a function argument: unknown at compile time
    text = """func.func @main(%x: tensor<4xf32>, %n: tensor<i32>) -> tensor<4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<4xf32>
    cond {
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %v1 = stablehlo.sine %v : tensor<4xf32>
      stablehlo.return %i1, %v1 : tensor<i32>, tensor<4xf32>
    }
  return %r#1 : tensor<4xf32>
}"""
    module = parse_module(text, "t.mlir")
    run_pipeline(module, "canonicalize")
    assert "stablehlo.while" in str(module)


def test_a_body_with_a_side_effect_keeps_the_loop():
    text = _loop("i32", 0, 1, 3, "LT", body="""      %o = stablehlo.custom_call @record(%v1) {has_side_effect = true}
        : (tensor<5x3xf32>) -> tensor<5x3xf32>""")
    module = parse_module(text, "t.mlir")
    run_pipeline(module, "canonicalize")
    assert "stablehlo.while" in str(module)
