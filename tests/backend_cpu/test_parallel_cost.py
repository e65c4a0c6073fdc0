"""Loop kernels are split across threads by their work, not their element count: fused
transcendental ops weigh :data:`oxla_backend_cpu.parallel.ELEMENT_COST` each, so a small
``tanh`` fusion (a ``fori_loop`` body) runs on every thread while a plain ``add`` of the
same size stays serial."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

pytest.importorskip("oxla_backend_cpu")

from oxla_backend_cpu.parallel import (  # noqa: E402
    ELEMENT_COST,
    MIN_ELEMENTS_PER_CHUNK,
    grain_for,
    loop_work,
    worth_parallel,
)


class _Op:
    def __init__(self, name: str):
        self.name = name


def test_loop_work_weighs_transcendentals():
    assert loop_work(100, []) == 100
    assert loop_work(100, [_Op("stablehlo.add"), _Op("stablehlo.multiply")]) == 100
    w = loop_work(100, [_Op("stablehlo.tanh"), _Op("stablehlo.divide")])
    assert w == 100 * (1 + ELEMENT_COST["stablehlo.tanh"] + ELEMENT_COST["stablehlo.divide"])
    # 128 rows of 256: one chunk's worth of adds (serial), many chunks' worth of tanh
    assert not worth_parallel(128, loop_work(256, [_Op("stablehlo.add")]))
    assert worth_parallel(128, loop_work(256, [_Op("stablehlo.tanh")]))
    per_row = loop_work(256, [_Op("stablehlo.tanh")])
    assert grain_for(128, per_row) * per_row >= MIN_ELEMENTS_PER_CHUNK


def _is_parallel(exe) -> bool:
    return re.search(r"call void @oxla_parallel_for\(ptr nonnull @\S+\.task", exe.llvm_ir) \
        is not None


@pytest.mark.parametrize("op,shape,parallel", [
    ("tanh", (128, 256), True),
    ("exponential", (128, 128), True),
    ("sine", (16, 256), True),    # a libm call per element
    ("logistic", (40, 300), True),
    ("add", (128, 256), False),   # 32768 plain elements: one chunk
    ("tanh", (1, 32768), False),  # one outer iteration: nothing to split
    ("tanh", (8, 64), False),     # 512 elements: too little work even for tanh
])
def test_transcendental_loops_split_by_work(op, shape, parallel):
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    body = (f"%0 = stablehlo.add %a, %a : {t}" if op == "add" else
            f"%0 = stablehlo.{op} %a : {t}")
    text = f"""func.func @main(%a: {t}) -> {t} {{
  {body}
  return %0 : {t}
}}"""
    exe = compile_cpu(text, cache=False)
    assert _is_parallel(exe) == parallel
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x64 = x.astype(np.float64)
    want = {"tanh": np.tanh, "exponential": np.exp, "add": lambda v: v + v,
            "logistic": lambda v: 1 / (1 + np.exp(-v)), "sine": np.sin}[op](x64)
    np.testing.assert_allclose(exe(x)[0], want, rtol=1e-6, atol=1e-7)
