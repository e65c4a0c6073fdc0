"""Splat constants: ``attributes.splat`` shares equal ones, ``is_splat`` is computed once
and stays bit-exact (NaN, -0.0), and CHLO expansions do not copy big coefficients."""

from __future__ import annotations

import numpy as np

from oxla.ir import parse_module
from oxla.ir import types as T
from oxla.ir.attributes import dense, splat
from oxla.passes.chlo_legalize import ChloLegalizeToStablehlo


def test_splat_shares_equal_requests_and_knows_it_is_a_splat():
    t = T.TensorType((64, 32), T.f32)
    a, b = splat(0.5, t), splat(0.5, t)
    assert a is b and a.is_splat
    assert a.array.dtype == np.float32 and (a.array == np.float32(0.5)).all()
    assert splat(-0.0, t) is not splat(0.0, t)  # bit patterns differ
    assert splat(-0.0, t).array.view(np.uint32)[0, 0] == 0x80000000


def test_is_splat_bit_exact():
    assert not dense(np.array([0.0, -0.0], np.float32)).is_splat
    assert dense(np.array([np.nan, np.nan], np.float32)).is_splat
    x = dense(np.ones((4, 4), np.float32))
    assert x.is_splat and x.is_splat  # cached answer, same result
    y = np.ones((4, 4), np.float32)
    y[3, 3] = 2.0
    assert not dense(y).is_splat


def test_erf_expansion_shares_its_coefficients():
    m = parse_module("""func.func @main(%x: tensor<8x128x64xf32>, %y: tensor<8x128x64xf32>)
    -> (tensor<8x128x64xf32>, tensor<8x128x64xf32>) {
  %0 = chlo.erf %x : tensor<8x128x64xf32> -> tensor<8x128x64xf32>
  %1 = chlo.erf %y : tensor<8x128x64xf32> -> tensor<8x128x64xf32>
  return %0, %1 : tensor<8x128x64xf32>, tensor<8x128x64xf32>
}""")
    ChloLegalizeToStablehlo(strict=True).run(m)
    consts = [op.attributes["value"] for op in m.walk() if op.name == "stablehlo.constant"
              and op.results[0].type.shape == (8, 128, 64)]
    assert len(consts) >= 10  # two expansions, several coefficients each
    distinct = {id(a.array) for a in consts}
    values = {a.array.reshape(-1)[0].tobytes() for a in consts}
    assert len(distinct) == len(values)  # one array per coefficient value
