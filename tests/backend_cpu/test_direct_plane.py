"""Depthwise convolutions computed one NCHW plane at a time from a padded, phase-split
copy on the stack (:func:`oxla_backend_cpu.conv_emit.plane_geometry`,
:func:`~oxla_backend_cpu.conv_emit.emit_direct_plane`): which shapes take it, and the
cpu backend against the interpreter over strides (unit, shuffled, scalar), padding
(asymmetric, negative), dilation, channel multipliers, windows, row widths shorter and
longer than a vector, f64 and fused epilogues."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both
from tests.backend_cpu.test_conv_gemm import conv_case

ce = pytest.importorskip("oxla_backend_cpu.conv_emit")


@pytest.fixture(autouse=True)
def _no_f64_loop(monkeypatch, tmp_path):
    """Small cases must reach the direct kernel, not the exact f64 loop
    (``linalg.SMALL_CONV_MACS``), with a compile cache of their own."""
    from oxla_backend_cpu import linalg, wide_conv

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 0)
    monkeypatch.setattr(wide_conv, "WIDE_CONV_MACS", 0)
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))


def _dw(c=6, **kw):
    return dict(n=2, c=c, o=c, fgc=c, sp=(9, 9), k=(3, 3), pad=((1, 1), (1, 1))) | kw


PLANE = {
    "mobilenet-s1": _dw(relu=True, bias=True),
    "s2-odd": _dw(sp=(11, 13), stride=(2, 2), relu=True),
    "s3": _dw(sp=(14, 17), stride=(3, 3)),
    "s5-scalar-copy": _dw(sp=(21, 23), k=(5, 5), stride=(5, 5), pad=((2, 2), (2, 2))),
    "mixed-strides": _dw(sp=(12, 20), stride=(1, 2)),
    "asym-pad": _dw(sp=(8, 10), pad=((0, 2), (3, 1))),
    "negative-pad": _dw(sp=(10, 12), pad=((-1, 1), (2, -2))),
    "no-pad": _dw(sp=(7, 7), pad=((0, 0), (0, 0))),
    "rhs-dilated": _dw(sp=(12, 12), rd=(2, 3), pad=((2, 2), (3, 3))),
    "multiplier-2": _dw(o=12, bias=True),
    "wide-rows": _dw(c=3, sp=(5, 37), k=(3, 3)),
    "7x7": _dw(c=4, sp=(16, 16), k=(7, 7), pad=((3, 3), (3, 3))),
    "1x8-window": _dw(c=4, sp=(6, 30), k=(1, 8), pad=((0, 0), (4, 3))),
    "f64": _dw(t="f64", stride=(2, 2), sp=(10, 10)),
    "batch-3": _dw(n=3, c=5, sp=(24, 24), stride=(2, 2), relu=True, bias=True),
}

NOT_PLANE = {
    "nhwc": _dw(lhs="NHWC", rhs="HWIO", out="NHWC"),
    "chwn": _dw(lhs="CHWN", rhs="HWOI", out="HCWN"),
    "input-transposed": _dw(lhs="NCWH", rhs="OIHW", out="NCHW"),
    "lhs-dilated": _dw(ld=(2, 2)),
    "reversed": _dw(rev=(1, 0)),
    "1d": _dw(sp=(10,), k=(3,), pad=((1, 1),), lhs="NCW", rhs="OIW", out="NCW"),
    "window-81": _dw(c=2, sp=(12, 12), k=(9, 9), pad=((4, 4), (4, 4))),
    "plane-too-big": _dw(c=2, n=1, sp=(160, 160)),
    "grouped": _dw(c=8, o=8, fgc=4),
}


def _geometry(text: str):
    from oxla_backend_cpu.conv import geometry

    from oxla.ir import parse_module

    op = next(o for o in parse_module(text, "t.mlir").walk()
              if o.name == "stablehlo.convolution")
    return geometry(op)


@pytest.mark.parametrize("name", list(PLANE))
def test_plane_kernel_matches_interpreter(name):
    kw = PLANE[name]
    text, args = conv_case(**kw)
    assert ce.plane_geometry(_geometry(text)) is not None
    tol = 1e-12 if kw.get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(NOT_PLANE))
def test_other_shapes_keep_the_block_kernel(name):
    text, args = conv_case(**NOT_PLANE[name])
    assert ce.plane_geometry(_geometry(text)) is None
    run_both(text, args, rtol=1e-5, atol=1e-5)


def test_plane_kernel_sums_like_the_block_kernel():
    """Same window order, from zero, separate multiply and add: the plane kernel's f32
    result is bitwise the block kernel's on a padded stride-2 MobileNet shape."""
    from tests.backend_cpu.conftest import compile_cpu

    text, args = conv_case(**_dw(c=8, sp=(24, 24), stride=(2, 2)))
    got = np.asarray(compile_cpu(text, cache=False)(*args)[0])
    orig = ce.plane_geometry
    try:
        ce.plane_geometry = lambda g: None
        want = np.asarray(compile_cpu(text, cache=False)(*args)[0])
    finally:
        ce.plane_geometry = orig
    assert np.array_equal(got, want)


def test_small_planes_are_not_transposed_to_nhwc():
    """The NHWC rewrite of small depthwise planes leaves what the plane kernel computes
    (:mod:`oxla_backend_cpu.depthwise_layout`)."""
    from oxla_backend_cpu.depthwise_layout import rewrite_small_depthwise

    from oxla.ir import parse_module

    for kw, want in ((_dw(sp=(6, 6)), 0), (_dw(sp=(10,), k=(3,), pad=((1, 1),), lhs="NCW",
                                                rhs="OIW", out="NCW"), 1)):
        text, _ = conv_case(**kw)
        assert rewrite_small_depthwise(parse_module(text, "t.mlir")) == want


@pytest.mark.parametrize("hw", [6, 9])
def test_plane_epilogue_reads_a_whole_tensor_at_each_element(hw):
    """``relu6(dwconv(x) + r)`` with ``r`` a whole NCHW tensor: the epilogue runs once
    over each contiguous output plane, so each flattened position must map back to
    its (batch, feature, row, column)."""
    rng = np.random.default_rng(hw)
    c = 5
    x = rng.standard_normal((2, c, hw, hw)).astype(np.float32)
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float32)
    r = rng.standard_normal((2, c, hw, hw)).astype(np.float32)
    ty = f"tensor<2x{c}x{hw}x{hw}xf32>"
    text = f"""
func.func @main(%x: {ty}, %w: tensor<{c}x1x3x3xf32>, %r: {ty}) -> {ty} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {{stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1],
                rhs_dilate = [1, 1], reverse = [false, false]}}
      {{batch_group_count = 1 : i64, feature_group_count = {c} : i64}}
      : ({ty}, tensor<{c}x1x3x3xf32>) -> {ty}
  %1 = stablehlo.add %0, %r : {ty}
  %z = stablehlo.constant dense<0.0> : {ty}
  %s = stablehlo.constant dense<6.0> : {ty}
  %2 = stablehlo.clamp %z, %1, %s : {ty}
  return %2 : {ty}
}}"""
    from tests.backend_cpu.conftest import compile_cpu

    labels = compile_cpu(text, cache=False, extra={"profile": True}).stats["profile_labels"]
    assert any("conv-direct" in lab and "+" in lab for lab in labels), labels
    run_both(text, [x, w, r], rtol=1e-5, atol=1e-5)
