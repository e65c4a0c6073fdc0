"""Transposes feeding dots read through BLAS flags (oxla.passes.dot_layout), and the
opt-in per-kernel profile (oxla_backend_cpu.profile), against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(11)


def _t(shape, et="f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{et}>"


def _program(x, w, perm, dims, out, et="f32", extra_use=False) -> str:
    """``dot_general(%x, transpose(%w, perm))`` (optionally the transpose returned too)."""
    wt = [w[p] for p in perm]
    ret = f"%1, %0 : {_t(out, et)}, {_t(wt, et)}" if extra_use else f"%1 : {_t(out, et)}"
    rtypes = f"{_t(out, et)}, {_t(wt, et)}" if extra_use else _t(out, et)
    return f"""func.func @main(%x: {_t(x, et)}, %w: {_t(w, et)}) -> ({rtypes}) {{
  %0 = stablehlo.transpose %w, dims = {list(perm)} : ({_t(w, et)}) -> {_t(wt, et)}
  %1 = stablehlo.dot_general %x, %0, {dims} : ({_t(x, et)}, {_t(wt, et)}) -> {_t(out, et)}
  return {ret}
}}"""


CASES = [
    # nn.Linear: x[M,K] . transpose(W[N,K]) -> rhs read as [N,K] (trans flag)
    ((64, 48), (32, 48), (1, 0), "contracting_dims = [1] x [0]", (64, 32)),
    # batched: x[B,M,K] . transpose(w[B,N,K], [0,2,1])
    ((3, 16, 8), (3, 12, 8), (0, 2, 1), "batching_dims = [0] x [0], "
     "contracting_dims = [2] x [1]", (3, 16, 12)),
    # batch dim moved by the transpose: w[N,B,K] -> [B,K,N]; w needs a pack (kept)
    ((3, 16, 8), (12, 3, 8), (1, 2, 0), "batching_dims = [0] x [0], "
     "contracting_dims = [2] x [1]", (3, 16, 12)),
    # two free dims whose order the transpose swaps: must stay a transpose
    ((5, 8), (8, 3, 4), (0, 2, 1), "contracting_dims = [1] x [0]", (5, 4, 3)),
]


@pytest.mark.parametrize("x,w,perm,dims,out", CASES)
def test_transposed_rhs_matches_interpreter(x, w, perm, dims, out):
    a = RNG.standard_normal(x).astype(np.float32)
    b = RNG.standard_normal(w).astype(np.float32)
    run_both(_program(x, w, perm, dims, out), [a, b], rtol=1e-5, atol=1e-5)


def test_linear_weight_transpose_is_absorbed():
    from oxla.passes import absorb_transposes

    text = _program((64, 48), (32, 48), (1, 0), "contracting_dims = [1] x [0]", (64, 32))
    module = parse_module(text)
    assert absorb_transposes(module) == 1
    names = [op.name for op in module.walk()]
    assert "stablehlo.transpose" not in names
    exe = compile_cpu(text, cache=False)
    assert exe.stats["kernel_count"] == 1  # the GEMM alone, no copy of the weight
    # swapped free dims: the rewrite would change the result's layout
    text = _program((5, 8), (8, 3, 4), (0, 2, 1), "contracting_dims = [1] x [0]", (5, 4, 3))
    assert absorb_transposes(parse_module(text)) == 0


def test_transpose_with_other_users_and_lhs_and_f64():
    x, w = (6, 10), (7, 6)
    text = f"""func.func @main(%a: {_t((10, 6), 'f64')}, %b: {_t(w, 'f64')}) -> ({_t((6, 6), 'f64')}, {_t((6, 10), 'f64')}) {{
  %0 = stablehlo.transpose %a, dims = [1, 0] : ({_t((10, 6), 'f64')}) -> {_t((6, 10), 'f64')}
  %1 = stablehlo.transpose %b, dims = [1, 0] : ({_t(w, 'f64')}) -> {_t((6, 7), 'f64')}
  %2 = stablehlo.dot %0, %a : ({_t((6, 10), 'f64')}, {_t((10, 6), 'f64')}) -> {_t((6, 6), 'f64')}
  return %2, %0 : {_t((6, 6), 'f64')}, {_t((6, 10), 'f64')}
}}"""
    del x
    from oxla.passes import absorb_transposes

    module = parse_module(text)
    assert absorb_transposes(module) == 1  # lhs of a plain dot; %0 stays (returned)
    assert [op.name for op in module.walk()].count("stablehlo.dot_general") == 1
    a = RNG.standard_normal((10, 6))
    b = RNG.standard_normal(w)
    run_both(text, [a, b], rtol=1e-12, atol=1e-12)


def test_integer_dot_is_left_alone():
    from oxla.passes import absorb_transposes

    text = _program((4, 3), (5, 3), (1, 0), "contracting_dims = [1] x [0]", (4, 5), et="i32")
    assert absorb_transposes(parse_module(text)) == 0


def test_profile_counts_every_kernel_call():
    from oxla_backend_cpu.profile import read_profile, reset_profile

    text = _program((64, 48), (32, 48), (1, 0), "contracting_dims = [1] x [0]", (64, 32),
                    extra_use=True)
    exe = compile_cpu(text, cache=False, extra={"profile": True})
    plain = compile_cpu(text, cache=False)
    a = RNG.standard_normal((64, 48)).astype(np.float32)
    b = RNG.standard_normal((32, 48)).astype(np.float32)
    reset_profile(exe)
    for _ in range(3):
        got = exe(a, b)
    for g, w in zip(got, plain(a, b)):
        np.testing.assert_array_equal(g, w)
    prof = read_profile(exe)
    assert len(prof) == exe.stats["kernel_count"] == 2
    assert {lab.split()[1] for lab, _, _ in prof} == {"dot", "loop"}
    assert all(calls == 3 and ns > 0 for _, ns, calls in prof)
    assert read_profile(plain) == []


def test_profile_survives_the_compile_cache(monkeypatch, tmp_path):
    from oxla_backend_cpu.profile import read_profile

    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    text = _program((8, 6), (4, 6), (1, 0), "contracting_dims = [1] x [0]", (8, 4))
    first = compile_cpu(text, extra={"profile": True})
    hit = compile_cpu(text, extra={"profile": True})
    plain = compile_cpu(text)
    assert (first.stats["cache"], hit.stats["cache"], plain.stats["cache"]) == \
        ("miss", "hit", "miss")  # profiled and plain code are different entries
    hit(np.ones((8, 6), np.float32), np.ones((4, 6), np.float32))
    assert [calls for _, _, calls in read_profile(hit)] == [1]
