"""NCHW-layout convolution GEMMs on oxla's register-tiled kernel
(:mod:`oxla_backend_cpu.conv_smallk`) with the fused epilogue run per tile: the cpu
backend against the interpreter over 1x1 and im2col convolutions, weight layouts,
groups, row and column remainders, f64, and epilogues that read a whole tensor at the
output's index (the flattened-column index must map back to every dimension)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both
from tests.backend_cpu.test_conv_gemm import conv_case

sk = pytest.importorskip("oxla_backend_cpu.conv_smallk")

needs_fma = pytest.mark.skipif(not sk.lanes_for("f32"), reason="host without FMA vectors")


@pytest.fixture(autouse=True)
def _own_cache(monkeypatch, tmp_path):
    from oxla_backend_cpu import linalg, wide_conv

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 0)
    monkeypatch.setattr(wide_conv, "WIDE_CONV_MACS", 0)
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))


CASES = {
    "pointwise-bn-relu": dict(n=2, c=16, o=24, sp=(12, 12), k=(1, 1), relu=True, bias=True),
    "pointwise-rows-13": dict(n=1, c=8, o=13, sp=(9, 11), k=(1, 1), bias=True),
    "pointwise-5-rows": dict(n=2, c=7, o=5, sp=(10, 10), k=(1, 1)),
    "3x3-im2col": dict(n=2, c=6, o=16, sp=(14, 13), k=(3, 3), pad=((1, 1), (1, 1)),
                       relu=True),
    "3x3-stride2": dict(n=2, c=3, o=9, sp=(31, 29), k=(3, 3), stride=(2, 2),
                        pad=((1, 1), (1, 1)), bias=True),
    "hwio-weights": dict(n=2, c=8, o=12, sp=(10, 10), k=(3, 3), rhs="HWIO",
                         pad=((1, 1), (1, 1)), relu=True),
    "grouped": dict(n=2, c=8, o=12, fgc=2, sp=(11, 11), k=(3, 3), pad=((1, 1), (1, 1))),
    "f64": dict(n=1, c=5, o=11, sp=(12, 12), k=(1, 1), t="f64", bias=True),
    "3d": dict(n=1, c=4, o=9, sp=(4, 6, 7), k=(1, 3, 3), lhs="NCDHW", rhs="OIDHW",
               out="NCDHW", pad=((0, 0), (1, 1), (1, 1)), relu=True),
}


def _geom(text: str):
    from oxla_backend_cpu.conv import geometry

    from oxla.ir import parse_module

    return geometry(next(o for o in parse_module(text, "t.mlir").walk()
                         if o.name == "stablehlo.convolution"))


@needs_fma
@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_interpreter(name):
    kw = CASES[name]
    text, args = conv_case(**kw)
    g = _geom(text)
    assert sk.applies(g, 64)
    exe = compile_cpu(text, cache=False)
    assert "llvm.fma.v" in exe.llvm_ir  # the kernel, not (only) BLAS
    tol = 1e-11 if kw.get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)


@needs_fma
def test_residual_epilogue_reads_the_right_element():
    """``relu(conv(x) + r)`` with ``r`` a whole NCHW tensor: the epilogue's index of a
    tile column (a flattened pixel) must be (batch, feature, row, column)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 9, 13)).astype(np.float32)
    w = rng.standard_normal((10, 8, 1, 1)).astype(np.float32)
    r = rng.standard_normal((2, 10, 9, 13)).astype(np.float32)
    ty = "tensor<2x10x9x13xf32>"
    text = f"""
func.func @main(%x: tensor<2x8x9x13xf32>, %w: tensor<10x8x1x1xf32>, %r: {ty}) -> {ty} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {{stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1],
                rhs_dilate = [1, 1], reverse = [false, false]}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : (tensor<2x8x9x13xf32>, tensor<10x8x1x1xf32>) -> {ty}
  %1 = stablehlo.add %0, %r : {ty}
  %z = stablehlo.constant dense<0.0> : {ty}
  %2 = stablehlo.maximum %1, %z : {ty}
  return %2 : {ty}
}}"""
    labels = compile_cpu(text, cache=False, extra={"profile": True}).stats["profile_labels"]
    assert any("conv-gemm" in lab and "+add,maximum" in lab for lab in labels), labels
    run_both(text, [x, w, r], rtol=1e-5, atol=1e-5)


@needs_fma
def test_agrees_with_blas(monkeypatch):
    """The same program through BLAS (the kernel switched off) gives the same result
    up to summation order (im2col GEMMs: the implicit GEMM off as well)."""
    from oxla_backend_cpu import conv_implicit

    monkeypatch.setattr(conv_implicit, "geometry", lambda g: None)
    text, args = conv_case(n=2, c=32, o=40, sp=(16, 16), k=(3, 3), pad=((1, 1), (1, 1)),
                           relu=True, bias=True)
    got = np.asarray(compile_cpu(text, cache=False)(*args)[0])
    orig = sk.applies
    try:
        sk.applies = lambda g, cols: False
        exe = compile_cpu(text, cache=False)
        assert "llvm.fma.v" not in exe.llvm_ir
        want = np.asarray(exe(*args)[0])
    finally:
        sk.applies = orig
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_narrow_or_feature_last_stay_on_blas():
    narrow, _ = conv_case(n=1, c=4, o=6, sp=(3, 3), k=(1, 1))   # 9 columns
    nhwc, _ = conv_case(n=2, c=8, o=12, sp=(10, 10), k=(1, 1), lhs="NHWC", rhs="HWIO",
                        out="NHWC")
    assert not sk.applies(_geom(narrow), 9)
    assert sk.applies(_geom(narrow), sk.MIN_COLS)
    assert not sk.applies(_geom(nhwc), 200)


@needs_fma
@pytest.mark.parametrize("name", ["pointwise-bn-relu", "3x3-stride2", "f64"])
def test_avx2_tiles_match_interpreter(name, monkeypatch):
    """With 8 f32 lanes (an AVX2 host: 16 registers, 4-row tiles), emitted here on a
    wider host, which runs the narrower vectors too."""
    from oxla_backend_cpu import packed_gemm

    monkeypatch.setattr(packed_gemm, "host_lanes", lambda: 8)
    kw = CASES[name]
    text, args = conv_case(**kw)
    exe = compile_cpu(text, cache=False)
    assert ("llvm.fma.v4f64" if kw.get("t") == "f64" else "llvm.fma.v8f32") in exe.llvm_ir
    tol = 1e-11 if kw.get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)
