"""Parse errors carry the right message, line and column."""

from __future__ import annotations

import pytest

from oxla.errors import ParseError
from oxla.ir import parse_module

F = "func.func @main(%a: tensor<f32>) -> tensor<f32> {{\n  {body}\n  return %0 : tensor<f32>\n}}\n"


@pytest.mark.parametrize("text,line,col,msg", [
    ("func.func @main(%a: tensor<2xf99>) -> () {\n  return\n}\n", 1, 30,
     "expected a type, got 'f99'"),
    (F.format(body="%0 = stablehlo.addd %a, %a : tensor<f32>"), 2, 8,
     "unknown operation 'stablehlo.addd'"),
    (F.format(body="%0 = stablehlo.add %a, %b : tensor<f32>"), 2, 26,
     "use of undeclared SSA value '%b'"),
    (F.format(body="%0 = stablehlo.add %a, %a : tensor<i32>"), 2, 31,
     "operand #0 of 'stablehlo.add' has type tensor<f32>, but the signature says tensor<i32>"),
    (F.format(body="%0 = stablehlo.add %a, %a : tensor<f32"), 3, 3, "expected '>', got 'return'"),
])
def test_parse_error_location_and_message(text, line, col, msg):
    with pytest.raises(ParseError) as info:
        parse_module(text, "bad.mlir")
    e = info.value
    assert msg in e.message
    assert (e.loc.line, e.loc.col) == (line, col)
    rendered = e.render()
    assert rendered.startswith(f"bad.mlir:{line}:{col}: error: ")
    assert "^" in rendered.splitlines()[-1]
