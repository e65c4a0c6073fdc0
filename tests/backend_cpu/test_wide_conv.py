"""Small f32 convolutions computed in f64 on the convolution kernels
(:mod:`oxla_backend_cpu.wide_conv`): which ones are rewritten, the rewritten program
equals the interpreter's result where terms cancel, and they no longer take the scalar
f64 loop kernel."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, ulps
from tests.backend_cpu.test_conv_gemm import conv_case

wc = pytest.importorskip("oxla_backend_cpu.wide_conv")


def _count(text: str) -> int:
    from oxla.ir import parse_module

    return wc.rewrite_wide_convs(parse_module(text, "t.mlir"))


@pytest.mark.parametrize("kw,want", [
    (dict(n=1, c=16, o=2, sp=(64, 64), k=(1, 1)), 1),             # 131K: UNet's last conv
    (dict(n=2, c=8, o=8, sp=(8, 8), k=(3, 3), lhs="NHWC", rhs="HWIO", out="NHWC",
          pad=((1, 1), (1, 1))), 1),                              # 74K, NHWC
    (dict(n=1, c=4, o=4, sp=(4, 4), k=(3, 3)), 0),                # 576: the loop kernel
    (dict(n=2, c=32, o=32, sp=(32, 32), k=(3, 3)), 0),            # 16M: f32 kernels
    (dict(n=2, c=64, o=64, fgc=64, sp=(24, 24), k=(3, 3)), 0),    # depthwise: direct
    (dict(n=1, c=16, o=16, sp=(64, 64), k=(1, 1), t="f64"), 0),   # already f64
], ids=["unet-head", "nhwc", "tiny", "large", "depthwise", "f64"])
def test_which_convolutions_are_widened(kw, want):
    text, _ = conv_case(**kw)
    assert _count(text) == want


def test_cancelling_sums_match_the_interpreter():
    """Terms of alternating sign that cancel: the f32 kernels' blocked order lands
    several f32 units away; f64 accumulation rounds once, as the interpreter does."""
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text, _ = conv_case(n=1, c=8, o=4, sp=(12, 12), k=(3, 3), pad=((1, 1), (1, 1)),
                        relu=True)
    assert _count(text) == 1
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((1, 8, 12, 12)) * 1e3).astype(np.float32)
    w = rng.standard_normal((4, 8, 3, 3)).astype(np.float32)
    w[:, 1::2] = -w[:, ::2]  # feature pairs cancel up to x's differences
    exe = compile_cpu(text, cache=False, extra={"profile": True})
    assert not any("[convolution]" in lab for lab in exe.stats["profile_labels"])
    got = np.asarray(exe(x, w)[0])
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t"))(x, w)[0],
                      np.float64)
    assert ulps(got, want).max() <= 1


def test_unet_head_runs_on_the_gemm_kernel():
    text, args = conv_case(n=1, c=16, o=2, sp=(64, 64), k=(1, 1), bias=True)
    labels = compile_cpu(text, cache=False, extra={"profile": True}).stats["profile_labels"]
    assert any("conv-gemm" in lab for lab in labels), labels
    from tests.backend_cpu.conftest import run_both

    run_both(text, args, rtol=1e-6, atol=1e-6)
