"""Ops that once crashed or were missing on cpu, against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both


@pytest.mark.parametrize("t,dt", [("i8", np.int8), ("i32", np.int32), ("i64", np.int64),
                                  ("ui64", np.uint64)])
def test_count_leading_zeros_every_width(t, dt):
    # i64 used to segfault LLVM's IR parser (llvm.ctlz declared with one parameter)
    text = f"""
func.func @main(%a: tensor<5x{t}>) -> tensor<5x{t}> {{
  %r = stablehlo.count_leading_zeros %a : tensor<5x{t}>
  return %r : tensor<5x{t}>
}}"""
    x = np.array([0, 1, 2, 100, -1 if dt != np.uint64 else 7], dtype=dt)
    _, got = run_both(text, [x])
    assert got[0][0] == 8 * x.dtype.itemsize
