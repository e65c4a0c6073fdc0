"""Patch convolutions (window = stride, no padding or dilation) rewritten into a
transpose and one GEMM (:mod:`oxla_backend_cpu.patch_conv`): the rewritten program
equals the convolution on the interpreter, the cpu backend agrees with the
interpreter, a constant kernel reaches the packed-weight GEMM, and the forms that
must stay convolutions do."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both
from tests.backend_cpu.test_conv_gemm import LAYOUTS, conv_case

pc = pytest.importorskip("oxla_backend_cpu.patch_conv")


def _const_kernel(text: str, w: np.ndarray) -> str:
    """``text`` with the parameter ``%w`` replaced by a constant holding ``w``."""
    ty = re.search(r"%w: (tensor<[^>]*>)", text).group(1)
    text = re.sub(r", %w: tensor<[^>]*>", "", text)
    dense = str(w.astype(np.float64).tolist())
    return text.replace("  %0 = stablehlo.convolution",
                        f"  %w = stablehlo.constant dense<{dense}> : {ty}\n"
                        "  %0 = stablehlo.convolution", 1)


def _rewrites(text: str) -> int:
    from oxla.ir import parse_module

    return pc.rewrite_patch_convs(parse_module(text, "t.mlir"))


CASES = [
    dict(sp=(8, 12), k=(4, 4)),               # divides the input: ViT/ConvNeXt stems
    dict(sp=(9, 14), k=(4, 4)),               # remainders sliced off
    dict(sp=(6, 8), k=(2, 2), c=5, o=7),      # space-to-depth downsampling
    dict(sp=(8, 9), k=(2, 3)),                # unequal window
    dict(sp=(12,), k=(3,)),                   # 1-D (audio frames)
    dict(sp=(4, 6, 4), k=(2, 3, 2)),          # 3-D (video tubelets)
]


def _layout(case: dict, layout: tuple[str, str, str]) -> dict:
    ns = len(case["sp"])
    keep = {1: "W", 2: "HW", 3: "DHW"}[ns]
    lhs, rhs, out = ("".join(ch for ch in s if ch not in "DHW" or ch in keep)
                     for s in layout)
    if ns == 3:  # the 2-D layouts' spatial letters grown to D, H, W
        lhs, rhs, out = (s.replace("H", "DH") for s in (lhs, rhs, out))
    return dict(lhs=lhs, rhs=rhs, out=out)


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: "-".join(x))
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"sp{c['sp']}-k{c['k']}")
@pytest.mark.parametrize("const", [False, True], ids=["arg", "const"])
def test_patch_conv_matches_interpreter(case, layout, const):
    text, args = conv_case(stride=case["k"], **_layout(case, layout),
                           **{k: v for k, v in case.items()})
    if const:
        text, args = _const_kernel(text, args[1]), args[:1]
    assert _rewrites(text) == 1
    run_both(text, args, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES[:2] + CASES[4:], ids=lambda c: f"sp{c['sp']}")
def test_rewritten_program_equals_the_convolution_on_the_interpreter(case):
    """The rewritten StableHLO (slice, reshape, transpose, dot_general) is valid and
    sums the same products: equal to the convolution on the interpreter within f32
    rounding of a different summation order."""
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text, args = conv_case(stride=case["k"], **_layout(case, LAYOUTS[0]), **case)
    module = parse_module(text, "t.mlir")
    assert pc.rewrite_patch_convs(module) == 1
    assert "stablehlo.convolution" not in str(module)
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)[0])
    got = np.asarray(InterpreterBackend().compile(module)(*args)[0])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_constant_kernel_reaches_the_packed_gemm():
    """A ViT patch embedding (3 channels, 16x16 stride 16) with constant weights
    becomes one dot whose rhs is packed at compile time, not a convolution kernel."""
    from oxla_backend_cpu.packed_gemm import host_lanes

    from tests.backend_cpu.conftest import compile_cpu

    text, args = conv_case(n=2, c=3, o=64, sp=(64, 64), k=(16, 16), stride=(16, 16))
    text, args = _const_kernel(text, args[1]), args[:1]
    exe = compile_cpu(text, extra={"profile": True}, cache=False)
    labels = exe.stats["profile_labels"]
    assert not any("conv" in lab for lab in labels), labels
    dots = [lab for lab in labels if lab.split()[1] == "dot"]
    assert len(dots) == 1 and "m32 n64 k768" in dots[0], labels
    if host_lanes():
        assert dots[0].endswith("P"), labels  # the packed-weight path
    run_both(text, args, rtol=1e-5, atol=2e-3)  # sums of 768 products, |y| up to ~60


@pytest.mark.parametrize("kw", [
    dict(k=(4, 4), stride=(2, 2)),                       # overlapping windows
    dict(k=(4, 4), stride=(4, 4), pad=((1, 1), (0, 0))),  # padding
    dict(k=(2, 2), stride=(2, 2), rd=(2, 1)),             # rhs dilation
    dict(k=(2, 2), stride=(2, 2), ld=(1, 2)),             # lhs dilation
    dict(k=(2, 2), stride=(2, 2), rev=(1, 0)),            # window reversal
    dict(k=(2, 2), stride=(2, 2), fgc=2),                 # feature groups
    dict(k=(1, 1), stride=(1, 1)),                        # already a GEMM
    dict(k=(2, 2), stride=(2, 2), t="f64", sp=(1, 4)),    # window past the input
], ids=["overlap", "pad", "rdil", "ldil", "rev", "groups", "1x1", "short"])
def test_other_convolutions_are_left(kw):
    kw = dict(sp=(8, 8)) | kw
    text, args = conv_case(**kw)
    assert _rewrites(text) == 0
