"""Parser regressions of issue #20: inputs that were refused or crashed the parser."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.errors import ParseError, VerifyError
from oxla.interpreter import run_function
from oxla.ir import parse_module, parse_type, print_module, verify

ADD = """func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}"""


@pytest.mark.parametrize("tail", ["\n// end }", "// end }", "\n//", "\n// }}} )", "\n  // x\n// y"])
def test_comment_on_last_line_without_newline(tail):
    m = parse_module(ADD + tail)
    assert [op.name for op in m.main.regions[0].blocks[0].ops] == ["stablehlo.add", "func.return"]


@pytest.mark.parametrize("text", ["", "// only a comment", "// a\n// b\n", "\n\n  \n"])
def test_comment_only_input_is_an_empty_module(text):
    m = parse_module(text)
    assert list(m.body.ops) == []
    assert list(parse_module(print_module(m)).body.ops) == []


def test_interpreter_print_pretty_form_round_trips_and_prints(capsys):
    text = """func.func @main(%a: tensor<2xi32>) -> tensor<2xi32> {
  %0 = interpreter.print %a : tensor<2xi32>
  return %0 : tensor<2xi32>
}"""
    m = parse_module(text)
    verify(m)
    printed = print_module(m)
    assert "interpreter.print %" in printed
    assert print_module(parse_module(printed)) == printed
    generic = print_module(m, generic=True)
    assert print_module(parse_module(generic), generic=True) == generic
    (out,) = run_function(m, args=[np.array([3, -4], np.int32)])
    np.testing.assert_array_equal(out, [3, -4])
    assert "[ 3 -4]" in capsys.readouterr().out


BROADCAST = """func.func @main(%x: tensor<2xi64>, %y: tensor<3xf32>{extra_arg}) -> (tensor<2xi64>, tensor<3xf32>) {{
  %r:2 = "stablehlo.collective_broadcast"(%x, %y{extra}) {{
    replica_groups = dense<[[0]]> : tensor<1x1xi64>{attr}
  }} : (tensor<2xi64>, tensor<3xf32>{extra_t}) -> (tensor<2xi64>, tensor<3xf32>)
  return %r#0, %r#1 : tensor<2xi64>, tensor<3xf32>
}}"""


def test_collective_broadcast_variadic_form():
    m = parse_module(BROADCAST.format(extra_arg="", extra="", attr="", extra_t=""))
    verify(m)
    x, y = np.array([1, 2], np.int64), np.array([1.5, 2, 3], np.float32)
    outs = run_function(m, args=[x, y])
    np.testing.assert_array_equal(outs[0], x)
    np.testing.assert_array_equal(outs[1], y)
    printed = print_module(m)
    assert print_module(parse_module(printed)) == printed


def test_collective_broadcast_dynamic_root_form():
    m = parse_module(BROADCAST.format(
        extra_arg=", %roots: tensor<2xi32>", extra=", %roots",
        attr=",\n    has_dynamic_root = true", extra_t=", tensor<2xi32>"))
    verify(m)
    outs = run_function(m, args=[np.array([7, 8], np.int64), np.zeros(3, np.float32),
                          np.zeros(2, np.int32)])
    np.testing.assert_array_equal(outs[0], [7, 8])


def test_collective_broadcast_result_count_is_checked():
    text = """func.func @main(%x: tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>) {
  %r:2 = "stablehlo.collective_broadcast"(%x) {
    replica_groups = dense<[[0]]> : tensor<1x1xi64>
  } : (tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  return %r#0, %r#1 : tensor<2xi64>, tensor<2xi64>
}"""
    with pytest.raises(VerifyError, match="C5"):
        verify(parse_module(text))


@pytest.mark.parametrize("depth", [3000, 20000])
def test_deeply_nested_tuple_type_is_a_parse_error(depth):
    ty = "tuple<" * depth + "tensor<f32>" + ">" * depth
    with pytest.raises(ParseError, match="nested too deeply"):
        parse_type(ty)
    text = f"func.func @main(%a: {ty}) -> () {{\n  return\n}}"
    with pytest.raises(ParseError, match="nested too deeply") as info:
        parse_module(text, "deep.mlir")
    assert info.value.render().startswith("deep.mlir:1:")


@pytest.mark.parametrize("text", [
    "func.func @main() -> () {\n  %0 = stablehlo.constant dense<" + "[" * 5000 + "1"
    + "]" * 5000 + "> : tensor<1xf32>\n  return\n}",
    "func.func @main() -> () {\n" + "  \"stablehlo.case\"() ({\n" * 2000 + "  return\n}",
])
def test_other_deep_nesting_is_a_parse_error(text):
    with pytest.raises(ParseError):
        parse_module(text)


def test_moderate_nesting_still_parses():
    ty = "tuple<" * 50 + "tensor<f32>" + ">" * 50
    assert str(parse_type(ty)) == ty


def test_reduce_reducer_arguments_may_carry_locations():
    # TensorFlow's bridge writes `reducer(%a: tensor<f32> loc(...), ...)` (tf.math.argmax)
    text = """func.func @main(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%x init: %c) across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
   reducer(%a: tensor<f32> loc(fused[#loc1, "b"]), %b: tensor<f32> loc(#loc1))  {
    %1 = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %1 : tensor<f32>
  }
  return %0 : tensor<3xf32>
}
#loc1 = loc("sum")"""
    m = parse_module(text)
    verify(m)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (out,) = run_function(m, "main", [x])
    np.testing.assert_array_equal(out, x.sum(1))
