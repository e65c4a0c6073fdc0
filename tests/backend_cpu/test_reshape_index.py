"""Fused reshapes map indices group by group (oxla_codegen_llvm.fused.reshape_groups):
results against the interpreter for unit dims added or dropped, splits, merges and
mixed groups."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(5)


def _t(shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>" if shape else "tensor<f32>"


@pytest.mark.parametrize("src,out", [
    ((1, 12, 40), (12, 40)),          # drop a unit dim
    ((12, 40), (1, 12, 1, 40)),       # add unit dims
    ((2, 12, 8), (2, 3, 4, 8)),       # split
    ((2, 3, 4, 8), (6, 32)),          # merges
    ((4, 6, 5), (3, 8, 5)),           # a group of two dims each side
    ((1, 6, 1, 5, 1), (30,)),         # unit dims inside a merge
    ((7,), (1, 7, 1)),
    ((3, 0, 4), (0, 12)),             # empty: the flat fallback
])
def test_fused_reshape_matches_interpreter(src, out):
    text = f"""func.func @main(%x: {_t(src)}, %y: {_t(out)}) -> {_t(out)} {{
  %0 = stablehlo.add %x, %x : {_t(src)}
  %1 = stablehlo.reshape %0 : ({_t(src)}) -> {_t(out)}
  %2 = stablehlo.multiply %1, %y : {_t(out)}
  return %2 : {_t(out)}
}}"""
    x = RNG.standard_normal(src).astype(np.float32)
    y = RNG.standard_normal(out).astype(np.float32)
    _, got = run_both(text, [x, y])
    np.testing.assert_array_equal(got[0], (x + x).reshape(out) * y)


def test_reshape_groups():
    from oxla_codegen_llvm.fused import reshape_groups

    assert reshape_groups((1, 128, 3072), (128, 3072)) == [([0], [1]), ([1], [2])]
    assert reshape_groups((128, 768), (1, 128, 12, 64)) == [([1], [0]), ([2, 3], [1])]
    assert reshape_groups((4, 6), (3, 8)) == [([0, 1], [0, 1])]
    assert reshape_groups((2, 0), (0,)) is None
