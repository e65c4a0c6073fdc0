"""Top-k as a K-element selection per row (:mod:`oxla_backend_cpu.topk`), checked
against the interpreter's full stable sort: ``chlo.top_k`` (ties, NaNs of both signs,
+-0, infinities, already sorted rows), a ``sort`` read through several slices (strided,
offset, along dimension 0), integer keys, and a sort with a non-slice user (full sort)."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(21)


def _top_k(shape, k, et="f32"):
    t = f"tensor<{'x'.join(map(str, shape))}x{et}>"
    o = shape[:-1] + (k,)
    ot = f"tensor<{'x'.join(map(str, o))}x{et}>"
    it = f"tensor<{'x'.join(map(str, o))}xi32>"
    return f"""func.func @main(%x: {t}) -> ({ot}, {it}) {{
  %v, %i = chlo.top_k(%x, k = {k}) : {t} -> ({ot}, {it})
  return %v, %i : {ot}, {it}
}}
"""


def _topk_of(text):
    from oxla_backend_cpu.topk import topk_rows

    from oxla.passes import run_pipeline

    m = run_pipeline(parse_module(text), "chlo-legalize-to-stablehlo")
    op = next(o for o in m.walk() if o.name == "stablehlo.sort")
    return topk_rows(op)


@pytest.mark.parametrize("k", [1, 8, 16])
def test_top_k_floats_with_ties_nans_and_zeros(k):
    x = RNG.integers(-3, 4, (5, 64)).astype(np.float32)  # many ties
    x[0, 3] = np.nan
    x[0, 7] = -np.nan
    x[1, :] = 0.0
    x[1, ::3] = -0.0
    x[2, 10] = np.inf
    x[2, 11] = -np.inf
    x[3] = np.arange(64, dtype=np.float32)  # ascending: every element enters the list
    x[4] = np.arange(64, 0, -1, dtype=np.float32)
    text = _top_k((5, 64), k)
    assert _topk_of(text) == k
    _, got = run_both(text, [x], rtol=0.0)
    # +-0 and NaN signs: the total order must match bit for bit, not just by value
    from oxla.interpreter import InterpreterBackend

    ref = InterpreterBackend().compile(parse_module(text))(x)
    np.testing.assert_array_equal(np.asarray(got[0]).view(np.int32),
                                  np.asarray(ref[0]).view(np.int32))


def test_top_k_integers_3d():
    x = RNG.integers(-5, 5, (2, 3, 40)).astype(np.int32)
    text = _top_k((2, 3, 40), 10, "i32")
    assert _topk_of(text) == 10
    run_both(text, [x])


def _sort_slices(n_rows, n, dim, slices, descending=True):
    shape = (n_rows, n) if dim == 1 else (n, n_rows)
    t = f"tensor<{shape[0]}x{shape[1]}xf32>"
    cmp = "GT" if descending else "LT"
    outs, types, body = [], [], []
    for j, (start, limit, stride) in enumerate(slices):
        st, lim, sd = [0, 0], list(shape), [1, 1]
        st[dim], lim[dim], sd[dim] = start, limit, stride
        size = list(shape)
        size[dim] = len(range(start, limit, stride))
        ot = f"tensor<{size[0]}x{size[1]}xf32>"
        body.append(f"  %s{j} = stablehlo.slice %srt#0 [{st[0]}:{lim[0]}:{sd[0]}, "
                    f"{st[1]}:{lim[1]}:{sd[1]}] : ({t}) -> {ot}")
        outs.append(f"%s{j}")
        types.append(ot)
    it = f"tensor<{shape[0]}x{shape[1]}xi32>"
    return f"""func.func @main(%x: {t}) -> ({', '.join(types)}) {{
  %iota = stablehlo.iota dim = {dim} : {it}
  %srt:2 = "stablehlo.sort"(%x, %iota) <{{dimension = {dim} : i64, is_stable = true}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
    %p = stablehlo.compare {cmp}, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }}) : ({t}, {it}) -> ({t}, {it})
{chr(10).join(body)}
  return {', '.join(outs)} : {', '.join(types)}
}}
"""


@pytest.mark.parametrize("dim", [0, 1])
def test_sort_read_through_several_slices(dim):
    x = RNG.integers(-4, 4, (48, 6) if dim == 0 else (6, 48)).astype(np.float32)
    text = _sort_slices(6, 48, dim, [(0, 5, 1), (2, 12, 3), (0, 1, 1)], descending=False)
    assert _topk_of(text) == 12
    run_both(text, [x], rtol=0.0)


def test_large_k_or_other_users_keep_the_full_sort():
    x = RNG.standard_normal((3, 32)).astype(np.float32)
    text = _sort_slices(3, 32, 1, [(0, 9, 1)])  # 9 > 32 / 4
    assert _topk_of(text) is None
    run_both(text, [x], rtol=0.0)
    full = _top_k((3, 32), 32)
    assert _topk_of(full) is None
    run_both(full, [x], rtol=0.0)
