"""Depthwise convolutions on small NCHW planes computed feature-innermost
(:mod:`oxla_backend_cpu.depthwise_layout`): the cpu backend agrees with the interpreter,
the rewritten program is valid StableHLO equal to the convolution, and the forms that
must stay as they are do."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both
from tests.backend_cpu.test_conv_gemm import conv_case
from tests.backend_cpu.test_patch_conv import _const_kernel

dl = pytest.importorskip("oxla_backend_cpu.depthwise_layout")


@pytest.fixture
def every_small_plane(monkeypatch):
    """The rewrite on every shape it can take: 2-D NCHW planes go to the direct plane
    kernel instead (test_direct_plane), but the rewrite must stay right for them."""
    monkeypatch.setattr(dl, "_plane_kernel", lambda op: False)


def _count(text: str) -> int:
    from oxla.ir import parse_module

    return dl.rewrite_small_depthwise(parse_module(text, "t.mlir"))


def _dw(c=12, **kw):
    return dict(n=2, c=c, o=c, fgc=c, sp=(6, 6), k=(3, 3), pad=((1, 1), (1, 1))) | kw


CASES = {
    "mobilenet-6x6": _dw(relu=True, bias=True),
    "strided": _dw(sp=(11, 11), stride=(2, 2)),
    "multiplier-2": _dw(o=24),
    "dilated": _dw(sp=(7, 7), rd=(2, 2), pad=((2, 2), (2, 2))),
    "1d": _dw(sp=(10,), k=(3,), pad=((1, 1),), lhs="NCW", rhs="OIW", out="NCW"),
    "f64": _dw(t="f64"),
    "chwn": _dw(lhs="CHWN", rhs="HWOI", out="HCWN"),
    "lhs-dilated": _dw(sp=(5, 5), ld=(2, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("const", [False, True], ids=["arg", "const"])
def test_small_depthwise_matches_interpreter(name, const, every_small_plane):
    text, args = conv_case(**CASES[name])
    if const:
        text, args = _const_kernel(text, args[1]), [args[0], *args[2:]]
    assert _count(text) == 1
    tol = 1e-11 if CASES[name].get("t") == "f64" else 1e-5
    run_both(text, args, rtol=tol, atol=tol)


def test_rewritten_program_equals_the_convolution_on_the_interpreter(every_small_plane):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text, args = conv_case(**_dw(o=24))
    module = parse_module(text, "t.mlir")
    assert dl.rewrite_small_depthwise(module) == 1
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)[0])
    got = np.asarray(InterpreterBackend().compile(module)(*args)[0])
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()


@pytest.mark.parametrize("kw", [
    _dw(sp=(24, 24)),                                           # 576 pixels: stays NCHW
    _dw(sp=(24, 24), stride=(2, 2)),                            # 12x12 out, 24x24 in
    _dw(fgc=4),                                                 # grouped, not depthwise
    _dw(lhs="NHWC", rhs="HWIO", out="NHWC"),                    # features innermost already
    dict(n=2, c=12, o=12, sp=(6, 6), k=(3, 3)),                 # no groups
], ids=["large-plane", "large-input", "grouped", "nhwc", "dense"])
def test_other_convolutions_are_left(kw):
    text, _ = conv_case(**kw)
    assert _count(text) == 0


def test_mobilenet_stride2_depthwise_takes_the_direct_kernel():
    """2x192x12x12 -> 6x6, 3x3 stride 2 (124K multiply-adds, under SMALL_CONV_MACS):
    through the direct kernel (one NCHW plane at a time), not the scalar f64 loop
    (:data:`oxla_backend_cpu.linalg.SMALL_DIRECT_MACS`)."""
    from tests.backend_cpu.conftest import compile_cpu

    text, args = conv_case(**_dw(c=192, sp=(12, 12), stride=(2, 2)))
    labels = compile_cpu(text, extra={"profile": True}, cache=False).stats["profile_labels"]
    assert any("conv-direct" in lab for lab in labels), labels
    run_both(text, args, rtol=1e-5, atol=1e-5)
