"""rng_bit_generator on the GPU kernels: THREE_FRY and PHILOX bits equal the
interpreter's for 8-64-bit outputs, odd and even shapes, 2- and 3-word states."""

from __future__ import annotations

import numpy as np
import pytest

from tests.simt.conftest import check_ptxas, check_twin

CASES = [("THREE_FRY", 2, "ui32", (5, 3)), ("THREE_FRY", 2, "ui64", (7,)),
         ("THREE_FRY", 2, "ui8", (4, 6)), ("PHILOX", 3, "ui32", (9,)),
         ("PHILOX", 2, "ui64", (3, 5)), ("DEFAULT", 3, "ui16", (11,))]


@pytest.mark.parametrize("alg,words,et,shape", CASES)
def test_rng_bits_match_interpreter(alg, words, et, shape):
    s = "x".join(map(str, shape))
    text = f"""
func.func @main(%s: tensor<{words}xui64>) -> (tensor<{words}xui64>, tensor<{s}x{et}>) {{
  %ns, %bits = stablehlo.rng_bit_generator %s, algorithm = {alg}
      : (tensor<{words}xui64>) -> (tensor<{words}xui64>, tensor<{s}x{et}>)
  return %ns, %bits : tensor<{words}xui64>, tensor<{s}x{et}>
}}
"""
    state = np.array([0x1234567890ABCDEF, 0xFFFFFFFFFFFFFFF0, 7][:words], np.uint64)
    kernels = check_twin(text, [state])
    if alg == "PHILOX":
        check_ptxas(kernels)
