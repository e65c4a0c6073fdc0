"""NCHW convolutions as an implicit GEMM over a zero-padded input copy
(:mod:`oxla_backend_cpu.conv_implicit`): the cpu backend against the interpreter over
one and two spatial dimensions, padding (none, asymmetric, negative), strides (rows and
columns, phase-split copies), rows split into column blocks,
dilation, window reversal, weight layouts, feature groups, batches (the padding is
zeroed by the first image only), output-feature remainders, f64 and fused epilogues;
and the shapes it leaves to the im2col GEMM."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both
from tests.backend_cpu.test_conv_gemm import conv_case

# the kernel's FMA gate, and its tests' fixture: small cases on the kernels (not the
# exact f64 loop), a compile cache of their own
from tests.backend_cpu.test_conv_smallk import _own_cache, needs_fma, sk  # noqa: F401

ci = pytest.importorskip("oxla_backend_cpu.conv_implicit")


P1 = ((1, 1), (1, 1))
CASES = {
    "3x3-bn-relu": dict(n=1, c=8, o=16, sp=(12, 32), k=(3, 3), pad=P1, relu=True, bias=True),
    "batch-3": dict(n=3, c=5, o=9, sp=(7, 16), k=(3, 3), pad=P1, bias=True),
    "unpadded": dict(n=2, c=4, o=8, sp=(9, 34), k=(3, 3)),
    "asymmetric-pad": dict(n=1, c=3, o=7, sp=(8, 30), k=(3, 5), pad=((0, 2), (3, 1))),
    "negative-pad": dict(n=1, c=3, o=6, sp=(9, 40), k=(3, 3), pad=((-1, 1), (2, -3))),
    "stride-2": dict(n=2, c=6, o=10, sp=(21, 63), k=(3, 3), stride=(2, 2), pad=P1,
                     relu=True),
    "stride-3-cols": dict(n=1, c=4, o=5, sp=(10, 70), k=(5, 5), stride=(1, 3),
                          pad=((2, 2), (2, 2))),
    "dilated": dict(n=1, c=4, o=8, sp=(11, 36), k=(3, 3), rd=(2, 3), pad=((2, 2), (3, 3))),
    "reversed": dict(n=1, c=4, o=8, sp=(6, 32), k=(2, 3), rev=(1, 1), pad=((1, 0), (1, 1))),
    "hwio-weights": dict(n=2, c=8, o=12, sp=(10, 16), k=(3, 3), rhs="HWIO", pad=P1,
                         relu=True),
    "iohw-weights": dict(n=1, c=6, o=11, sp=(9, 16), k=(3, 3), rhs="IOHW", pad=P1),
    "grouped": dict(n=2, c=8, o=12, fgc=2, sp=(11, 24), k=(3, 3), pad=P1, bias=True),
    "f64": dict(n=1, c=5, o=11, sp=(6, 20), k=(3, 3), t="f64", pad=P1, bias=True),
    "width-12-stacked": dict(n=2, c=5, o=9, sp=(7, 12), k=(3, 3), pad=P1, relu=True),
    "1d-stride-2-column-blocks": dict(n=2, c=6, o=10, sp=(1203,), k=(3,), stride=(2,),
                                      lhs="NCW", rhs="OIW", out="NCW", relu=True,
                                      bias=True),
    "1d-one-input-feature": dict(n=2, c=1, o=16, sp=(530,), k=(10,), stride=(5,),
                                 lhs="NCW", rhs="OIW", out="NCW", bias=True),
    "1d-padded-dilated": dict(n=1, c=5, o=7, sp=(90,), k=(4,), rd=(3,), pad=((5, 2),),
                              lhs="NCW", rhs="OIW", out="NCW"),
    "2d-long-rows": dict(n=1, c=3, o=9, sp=(3, 1100), k=(3, 3), pad=P1, relu=True),
    "1xk": dict(n=1, c=16, o=16, sp=(1, 48), k=(1, 7), pad=((0, 0), (3, 3)), relu=True),
}


def _geom(text: str):
    from oxla_backend_cpu.conv import geometry

    from oxla.ir import parse_module

    return geometry(next(o for o in parse_module(text, "t.mlir").walk()
                         if o.name == "stablehlo.convolution"))


def _modes(exe) -> list[str]:
    return [lab.split()[1] for lab in exe.stats.get("profile_labels", []) if "conv" in lab]


@needs_fma
@pytest.mark.parametrize("name", list(CASES))
def test_implicit_matches_interpreter(name):
    kw = CASES[name]
    text, args = conv_case(**kw)
    assert ci.geometry(_geom(text)) is not None
    exe = compile_cpu(text, cache=False, extra={"profile": True})
    assert "conv-implicit" in _modes(exe)
    tol = 1e-11 if kw.get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)


@needs_fma
@pytest.mark.parametrize("wd", [28, 16, 13])
def test_residual_epilogue_reads_the_right_element(wd):
    """``relu(conv(x) + r)`` with ``r`` a whole NCHW tensor: each tile's epilogue must
    read ``r`` at (batch, feature, row, column) of the tile; rows of one vector or less
    (16, 13) are computed two to a tile, the odd last row alone."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 6, 9, wd)).astype(np.float32)
    w = rng.standard_normal((10, 6, 3, 3)).astype(np.float32)
    r = rng.standard_normal((2, 10, 9, wd)).astype(np.float32)
    ty = f"tensor<2x10x9x{wd}xf32>"
    xt = f"tensor<2x6x9x{wd}xf32>"
    text = f"""
func.func @main(%x: {xt}, %w: tensor<10x6x3x3xf32>, %r: {ty}) -> {ty} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {{stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1],
                rhs_dilate = [1, 1], reverse = [false, false]}}
      {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
      : ({xt}, tensor<10x6x3x3xf32>) -> {ty}
  %1 = stablehlo.add %0, %r : {ty}
  %z = stablehlo.constant dense<0.0> : {ty}
  %2 = stablehlo.maximum %1, %z : {ty}
  return %2 : {ty}
}}"""
    exe = compile_cpu(text, cache=False, extra={"profile": True})
    assert _modes(exe) == ["conv-implicit"]
    run_both(text, [x, w, r], rtol=1e-5, atol=1e-5)


@needs_fma
def test_offsets_follow_the_padded_phase_split_copy():
    """Offsets of a stride-2, dilated, reversed window: ``ci * plane + phase + row``."""
    text, _ = conv_case(n=1, c=2, o=4, sp=(9, 68), k=(2, 3), stride=(2, 2), rd=(1, 3),
                        rev=(0, 1), pad=((1, 1), (1, 1)))
    g = _geom(text)
    ia, ij = ci.geometry(g)
    plane, phase, wq, sw = ci.layout(g, ia, ij)
    assert sw == 2 and plane == 2 * phase
    offs = ci.offsets(g, ia, ij)
    assert len(offs) == g.k_size == 2 * 2 * 3
    # kernel order (ci, dy, dx); dx reversed: q = (2 - dx) * 3
    for n, (c, dy, dx) in enumerate((c, dy, dx) for c in range(2) for dy in range(2)
                                    for dx in range(3)):
        q = (2 - dx) * 3
        assert offs[n] == c * plane + (q % 2) * phase + dy * wq + q // 2


def test_other_shapes_keep_the_im2col_gemm():
    """Rows narrower than a vector (ResNet's 8x8 planes), depthwise groups, NHWC, batch
    groups, input dilation and three spatial dimensions are not implicit GEMMs."""
    lanes = sk.lanes_for("f32")
    if not lanes:
        pytest.skip("host without FMA vectors")
    for kw in (dict(n=1, c=8, o=8, sp=(8, 8), k=(3, 3), pad=P1),
               dict(n=1, c=8, o=8, fgc=8, sp=(8, 40), k=(3, 3), pad=P1),
               dict(n=1, c=4, o=4, sp=(4, 8, 40), k=(1, 3, 3), lhs="NCDHW", rhs="OIDHW",
                    out="NCDHW"),
               dict(n=1, c=8, o=8, sp=(8, 40), k=(3, 3), pad=P1, lhs="NHWC", out="NHWC"),
               dict(n=2, c=4, o=4, sp=(8, 40), k=(3, 3), pad=P1, bgc=2),
               dict(n=1, c=4, o=4, sp=(8, 20), k=(3, 3), ld=(2, 2), pad=P1)):
        assert ci.geometry(_geom(conv_case(**kw)[0])) is None, kw


@needs_fma
@pytest.mark.parametrize("threads", ["1", "2"])
def test_small_cnn_output_over_input_arena_below_xla(monkeypatch, threads):
    """bench/cpu_vs_xla.py's cnn, both convolutions implicit: the second one's output
    starts where its dead input (the first one's output) does, as each image is copied
    to the padded buffer before its output is written; the arena (first output plus
    the larger padded copy) stays under XLA's 664,576 temp bytes, and the result right."""
    from tests.backend_cpu.test_conv_gemm import CNN, cnn_args
    from tests.backend_cpu.test_conv_over_input import _check, _convs, _placed_plan

    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    args = cnn_args()
    plan = _placed_plan(CNN)
    k1, k2 = _convs(plan)
    assert (k1.mode, k2.mode) == ("implicit", "implicit")
    assert k2.out.offset == k2.lhs.offset
    assert plan.temp_bytes <= k2.lhs.nbytes + max(k1.col.nbytes, k2.col.nbytes) + 128
    assert plan.temp_bytes < 664_576
    exe = _check(CNN, args)
    assert exe.stats["temp_bytes"] == plan.temp_bytes


@needs_fma
def test_output_over_input_with_groups_and_stride():
    """A dying temporary input (``tanh(x)``) under a grouped stride-2 convolution whose
    output images are smaller: placed over the input, each image right."""
    from tests.backend_cpu.test_conv_over_input import (
        _check,
        _convs,
        _placed_plan,
        _through_tanh,
    )

    text, args = conv_case(n=3, c=8, o=8, fgc=2, sp=(12, 62), k=(3, 3), stride=(2, 2),
                           pad=P1)
    text = _through_tanh(text)
    plan = _placed_plan(text)
    (k,) = _convs(plan)
    assert k.mode == "implicit" and k.out.offset == k.lhs.offset
    _check(text, args)


def test_column_blocks_give_each_thread_items():
    """Whole rows when there are enough of them; blocks of whole register tiles when an
    image has fewer than 4 items per thread (1-D signals); COL_BLOCK for long rows."""
    text, _ = conv_case(n=2, c=4, o=4, sp=(799,), k=(3,), stride=(2,), lhs="NCW",
                        rhs="OIW", out="NCW")
    g = _geom(text)
    tile = sk.NV * sk.lanes_for("f32")
    if not tile:
        pytest.skip("host without FMA vectors")
    assert ci.column_block(g, 399, 1, 1, threads=1) == 399
    cbw = ci.column_block(g, 399, 1, 1, threads=2)
    assert cbw % tile == 0 and -(-399 // cbw) >= 4
    assert ci.column_block(g, 32, 16, 1, threads=2) == 32  # 16 rows: enough items
    assert ci.column_block(g, 16, 8, 2, threads=2) == 16  # stacked rows stay whole
    assert ci.column_block(g, 3000, 1, 1, threads=1) == ci.COL_BLOCK


@needs_fma
@pytest.mark.parametrize("threads", ["2", "3"])
def test_split_rows_match_interpreter(monkeypatch, threads):
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    kw = dict(n=2, c=6, o=10, sp=(799,), k=(3,), stride=(2,), lhs="NCW", rhs="OIW",
              out="NCW", relu=True, bias=True)
    text, args = conv_case(**kw)
    exe = compile_cpu(text, cache=False, extra={"profile": True})
    assert "conv-implicit" in _modes(exe)
    run_both(text, args, rtol=1e-5, atol=1e-5)
