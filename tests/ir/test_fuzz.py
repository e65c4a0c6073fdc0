"""Property test: mutated programs raise only ParseError/VerifyError, and terminate."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oxla.errors import ParseError, VerifyError
from oxla.ir import parse_module, print_module, verify

SEEDS = [
    """func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  %2 = stablehlo.compare  GT, %1, %1,  FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %3 = stablehlo.select %2, %1, %1 : tensor<2xi1>, tensor<2xf32>
  return %3 : tensor<2xf32>
}
""",
    """module @m attributes {mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>) -> tensor<i32> {
    %c = stablehlo.constant dense<"0x01000000"> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %c) : tensor<i32>, tensor<i32>
    cond {
      %1 = stablehlo.compare  LT, %iterArg, %iterArg_0 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.add %iterArg, %iterArg_0 : tensor<i32>
      stablehlo.return %1, %iterArg_0 : tensor<i32>, tensor<i32>
    }
    %2 = "stablehlo.transpose"(%0#0) {permutation = array<i64>} : (tensor<i32>) -> tensor<i32> loc(#loc1)
    return %2 : tensor<i32>
  }
}
#loc1 = loc("x.py":3:4)
""",
]


def _mutate(text: str, ops: list[tuple[int, int, int]]) -> str:
    for kind, i, j in ops:
        if not text:
            break
        i, j = i % len(text), j % len(text)
        if kind == 0:
            text = text[:i] + text[i + 1:]
        elif kind == 1:
            text = text[:i] + text[i] + text[i:]
        elif kind == 2:
            a, b = sorted((i, j))
            text = text[:a] + text[b] + text[a + 1:b] + text[a] + text[b + 1:]
        else:
            toks = text.split(" ")
            k = i % len(toks)
            del toks[k]
            text = " ".join(toks)
    return text


def test_seeds_are_valid():
    for s in SEEDS:
        verify(parse_module(s))


@settings(max_examples=100, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS),
       ops=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000),
                              st.integers(0, 10_000)), min_size=1, max_size=4))
def test_mutations_raise_only_oxla_errors(seed, ops):
    text = _mutate(seed, ops)
    try:
        m = parse_module(text, "fuzz.mlir")
        verify(m)
        print_module(m)
        print_module(m, generic=True)
    except (ParseError, VerifyError):
        pass
