"""Transposed convolutions (input dilation) split into dense phase convolutions
(``oxla_backend_cpu.conv_phases``) against the interpreter: layouts, 1-D/2-D, dilation
2 and 3, padding on either side (also wider than the kernel), groups, f64, a fused
epilogue, and the forms left as they are."""

from __future__ import annotations

import pytest

from tests.backend_cpu.test_conv_gemm import check, conv_case

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu.conv_phases import split_transposed_convs  # noqa: E402

from oxla.ir import parse_module  # noqa: E402


@pytest.fixture(autouse=True)
def _gemm_at_every_size(monkeypatch, tmp_path):
    """Small cases: keep the phases (and the unsplit form) on the GEMM path."""
    from oxla_backend_cpu import linalg, wide_conv

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 0)
    monkeypatch.setattr(wide_conv, "WIDE_CONV_MACS", 0)
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))


def _splits(**kw) -> int:
    text, _ = conv_case(**kw)
    return split_transposed_convs(parse_module(text, "t.mlir"))


CASES = {
    "nchw-2x2": dict(sp=(7, 6), ld=(2, 2), pad=((2, 1), (2, 1))),
    "nhwc-2x2": dict(lhs="NHWC", rhs="HWIO", out="NHWC", sp=(7, 6), ld=(2, 2),
                     pad=((2, 1), (2, 1))),
    "nhwc-ohwi-mixed": dict(lhs="NHWC", rhs="OHWI", out="NCHW", sp=(5, 6), ld=(3, 1),
                            pad=((1, 0), (1, 1))),
    "pad-wide": dict(sp=(4, 5), k=(2, 3), ld=(2, 2), pad=((3, 3), (4, 3))),
    "pad-low-only": dict(sp=(5, 5), k=(4, 3), ld=(2, 2), pad=((3, 1), (0, 1))),
    "groups": dict(c=4, o=6, fgc=2, sp=(6, 5), ld=(2, 2), pad=((1, 2), (2, 1))),
    "rhs-dilate-other-dim": dict(sp=(6, 7), ld=(2, 1), rd=(1, 2), pad=((1, 2), (1, 1))),
    "uneven-rows": dict(sp=(7, 6), ld=(2, 2), pad=((2, 2), (2, 1))),  # 15 rows
    "uneven-3": dict(lhs="NHWC", rhs="HWIO", out="NHWC", sp=(5, 4), k=(4, 3), ld=(3, 2),
                     pad=((2, 1), (1, 1))),
    "f64": dict(t="f64", sp=(6, 6), ld=(2, 2), pad=((1, 2), (1, 2))),
    "epilogue": dict(lhs="NHWC", rhs="HWIO", out="NHWC", sp=(6, 6), ld=(2, 2),
                     pad=((1, 2), (1, 2)), bias=True, relu=True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_phases_match_the_interpreter(case):
    kw = CASES[case]
    assert _splits(**kw) == 1
    check(**kw)


def test_1d():
    kw = dict(lhs="NCW", rhs="OIW", out="NCW", sp=(9,), k=(5,), ld=(3,), pad=((3, 3),))
    assert _splits(**kw) == 1
    check(**kw)


@pytest.mark.parametrize("kw", [
    dict(sp=(7, 6), ld=(2, 2), pad=((2, 1), (2, 1)), rev=(1, 0)),  # reversal
    dict(sp=(7, 6), ld=(2, 2), stride=(2, 1), pad=((2, 1), (2, 1))),  # window stride
    dict(sp=(7, 6), k=(1, 3), ld=(2, 2), pad=((1, 0), (2, 1))),  # a phase with no tap
    dict(sp=(7, 6), pad=((1, 1), (1, 1))),  # no input dilation
], ids=["reverse", "strided", "no-tap", "plain"])
def test_forms_left_unsplit(kw):
    assert _splits(**kw) == 0
    check(**kw)


def test_small_convolutions_stay_whole(monkeypatch):
    """A phase under ``SMALL_CONV_MACS`` would take the f64 loop kernel: not split."""
    from oxla_backend_cpu import linalg

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 1 << 17)
    assert _splits(sp=(7, 6), ld=(2, 2), pad=((2, 1), (2, 1))) == 0
