"""Convolutions with few output pixels per image as an explicit im2col and one GEMM over
the batch (:mod:`oxla_backend_cpu.im2col_conv`): the cpu backend agrees with the
interpreter, the rewritten program is valid StableHLO equal to the convolution, and the
forms that must stay convolutions do."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both
from tests.backend_cpu.test_conv_gemm import conv_case
from tests.backend_cpu.test_patch_conv import _const_kernel

ic = pytest.importorskip("oxla_backend_cpu.im2col_conv")


def _case(**kw):
    text, args = conv_case(**kw)
    return _const_kernel(text, args[1]), args[:1]


def _count(text: str) -> int:
    from oxla.ir import parse_module

    return ic.rewrite_im2col_convs(parse_module(text, "t.mlir"))


CASES = {
    "resnet-last-stage": dict(n=4, c=24, o=16, sp=(4, 4), k=(3, 3), pad=((1, 1), (1, 1))),
    "strided": dict(n=4, c=8, o=12, sp=(8, 8), k=(3, 3), stride=(2, 2), pad=((1, 1),) * 2),
    "dilated": dict(n=2, c=6, o=5, sp=(7, 6), k=(3, 2), rd=(2, 2)),
    "lhs-dilated": dict(n=4, c=4, o=6, sp=(2, 2), k=(2, 2), ld=(2, 2)),
    "asym-pad": dict(n=3, c=5, o=4, sp=(3, 4), k=(2, 3), pad=((0, 1), (2, 0))),
    "1x1": dict(n=8, c=32, o=8, sp=(2, 2), k=(1, 1)),
    "1d": dict(n=2, c=6, o=7, sp=(10,), k=(3,), lhs="NCW", rhs="OIW", out="NCW"),
    "3d": dict(n=2, c=3, o=4, sp=(3, 3, 3), k=(2, 2, 2), lhs="NCDHW", rhs="OIDHW",
               out="NCDHW"),
    "chwn-out": dict(n=4, c=6, o=5, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2, out="CHWN"),
    "f64": dict(n=4, c=6, o=5, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2, t="f64"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_few_pixel_conv_matches_interpreter(name):
    text, args = _case(**CASES[name])
    assert _count(text) == 1
    tol = 1e-11 if CASES[name].get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["resnet-last-stage", "strided", "lhs-dilated", "3d"])
def test_rewritten_program_equals_the_convolution_on_the_interpreter(name):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text, args = _case(**CASES[name])
    module = parse_module(text, "t.mlir")
    assert ic.rewrite_im2col_convs(module) == 1
    assert "stablehlo.convolution" not in str(module)
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)[0])
    got = np.asarray(InterpreterBackend().compile(module)(*args)[0])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_batch_rows_reach_the_packed_gemm():
    """ResNet-18's last stage shape (4 images of 4x4 pixels, 3x3, constant weights) is one
    GEMM with 64 rows (all images), the weights packed at compile time."""
    from oxla_backend_cpu.packed_gemm import host_lanes

    text, args = _case(n=4, c=64, o=32, sp=(4, 4), k=(3, 3), pad=((1, 1), (1, 1)),
                       relu=True)
    labels = compile_cpu(text, extra={"profile": True}, cache=False).stats["profile_labels"]
    assert not any("conv" in lab for lab in labels), labels
    dots = [lab for lab in labels if lab.split()[1] == "dot"]
    assert len(dots) == 1 and "m64 n32 k576" in dots[0], labels
    if host_lanes():
        assert dots[0].endswith("P"), labels
    run_both(text, args, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("kw,const", [
    (dict(n=4, sp=(8, 8), k=(3, 3), pad=((1, 1),) * 2), True),            # 64 pixels
    (dict(n=4, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2), False),           # kernel an argument
    (dict(n=1, sp=(3, 3), k=(1, 1)), True),                               # 9 rows in all
    (dict(n=4, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2, fgc=2), True),     # groups
    (dict(n=4, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2, rev=(1, 0)), True),  # reversal
    (dict(n=4, sp=(4, 4), k=(3, 3), pad=((1, 1),) * 2, lhs="NHWC", rhs="HWIO",
          out="NHWC"), True),                                            # features innermost
], ids=["64px", "arg-kernel", "few-rows", "groups", "reversal", "nhwc-out"])
def test_other_convolutions_are_left(kw, const):
    text, args = conv_case(**kw)
    if const:
        text = _const_kernel(text, args[1])
    assert _count(text) == 0
