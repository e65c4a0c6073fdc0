"""The parser's one-regex path for ``%r = op %a, %b : T`` agrees with the general one."""

from __future__ import annotations

import pytest

from oxla.errors import ParseError
from oxla.ir import parse_module, print_module, verify

_T = "tensor<2x3xf32>"


def _func(body: str) -> str:
    return f"func.func @main(%a: {_T}, %b: {_T}) -> {_T} {{\n{body}\n}}"


def test_simple_lines_parse_like_the_general_form():
    fast = parse_module(_func(
        f"  %0 = stablehlo.add %a, %b : {_T}\n"
        f"  %1 = stablehlo.tanh %0 : {_T} loc(\"here\")\n"
        f"  return %1 : {_T}"))
    generic = parse_module(_func(
        f'  %0 = "stablehlo.add"(%a, %b) : ({_T}, {_T}) -> {_T}\n'
        f'  %1 = "stablehlo.tanh"(%0) : ({_T}) -> {_T} loc("here")\n'
        f"  return %1 : {_T}"))
    verify(fast)
    assert print_module(fast) == print_module(generic)
    ops = list(fast.main.regions[0].block.ops)
    assert [op.name for op in ops] == ["stablehlo.add", "stablehlo.tanh", "func.return"]
    assert ops[1].operands[0] is ops[0].results[0] and ops[0].results[0].name_hint == "%0"
    assert "here" in str(ops[1].loc) and ":2:8" in str(ops[0].loc)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f"  %0 = stablehlo.add %a, %zz : {_T}", "use of undeclared SSA value '%zz'"),
        ("  %0 = stablehlo.add %a, %b : tensor<2x3xf64>", "has type tensor<2x3xf32>"),
        (f"  %a = stablehlo.add %a, %b : {_T}", "redefinition of SSA value '%a'"),
    ],
)
def test_errors_are_those_of_the_general_path(body: str, message: str):
    with pytest.raises(ParseError, match=message):
        parse_module(_func(body + f"\n  return %a : {_T}"))
