"""Integer convolutions of 8-bit values as 8-bit im2col + the integer GEMM
(:mod:`oxla_backend_cpu.int8_conv`), bit for bit against the interpreter: the JAX form
(8-bit operands, i32 result) and the ONNX ConvInteger/QLinearConv form (operands
converted to i32, zero points subtracted), s8/u8, with and without zero points,
constant and argument kernels, layouts, stride/padding/dilation/groups, 1 and 2
threads, odd sizes, extreme values."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both
from tests.backend_cpu.test_conv_gemm import conv_case

ig = pytest.importorskip("oxla_backend_cpu.int8_gemm")
RNG = np.random.default_rng(17)
HAVE_GEMM = bool(ig.host_isas())


def _t(shape, et):
    return "tensor<" + "x".join(map(str, shape)) + f"x{et}>"


def _ints(shape, et, lo=None, hi=None):
    lo = (0 if et == "ui8" else -128) if lo is None else lo
    hi = (255 if et == "ui8" else 127) if hi is None else hi
    return RNG.integers(lo, hi + 1, shape).astype(np.uint8 if et == "ui8" else np.int8)


def qconv_case(xet="i8", wet="i8", form="jax", xz=0, wz=0, const_w=False, **kw):
    """(text, args): ``conv_case``'s convolution on 8-bit operands with an i32 result.
    ``form="jax"``: the 8-bit operands straight into the convolution; ``"onnx"``: both
    converted to i32, minus zero points ``xz``/``wz`` (constants), as the ONNX frontend
    emits. ``const_w``: the kernel a constant."""
    f32_text, f32_args = conv_case(**kw)
    xs, ws = f32_args[0].shape, f32_args[1].shape
    os_ = tuple(int(d) for d in re.search(r"-> tensor<([\dx]+)xf32> \{", f32_text)
                .group(1).split("x"))
    conv = re.search(r"dim_numbers = .*?feature_group_count = \d+ : i64\}", f32_text,
                     re.S).group(0)
    x, w = _ints(xs, xet), _ints(ws, wet)
    ops, params, args = [], [f"%x: {_t(xs, xet)}"], [x]
    if const_w:
        vals = ", ".join(str(int(v)) for v in w.reshape(-1))
        ops.append(f"%wf = stablehlo.constant dense<[{vals}]> : {_t((w.size,), wet)}")
        ops.append(f"%w = stablehlo.reshape %wf : ({_t((w.size,), wet)}) -> {_t(ws, wet)}")
    else:
        params.append(f"%w: {_t(ws, wet)}")
        args.append(w)
    lx, lw, tx, tw = "%x", "%w", _t(xs, xet), _t(ws, wet)
    if form == "onnx":
        for name, shape, et, zp in (("x", xs, xet, xz), ("w", ws, wet, wz)):
            ops.append(f"%{name}32 = stablehlo.convert %{name} : ({_t(shape, et)}) -> "
                       f"{_t(shape, 'i32')}")
            ops.append(f"%{name}z = stablehlo.constant dense<{zp}> : tensor<i32>")
            ops.append(f"%{name}zb = stablehlo.broadcast_in_dim %{name}z, dims = [] : "
                       f"(tensor<i32>) -> {_t(shape, 'i32')}")
            ops.append(f"%{name}s = stablehlo.subtract %{name}32, %{name}zb : "
                       f"{_t(shape, 'i32')}")
        lx, lw, tx, tw = "%xs", "%ws", _t(xs, "i32"), _t(ws, "i32")
    ot = _t(os_, "i32")
    ops.append(f"%0 = stablehlo.convolution({lx}, {lw}) {conv}\n      : ({tx}, {tw}) -> {ot}")
    body = "\n  ".join(ops)
    text = f"""func.func @main({", ".join(params)}) -> {ot} {{
  {body}
  return %0 : {ot}
}}"""
    return text, args


def _check(text, args, rewritten=True):
    exe = compile_cpu(text)
    has = "oxla_igemm_" in exe.llvm_ir
    if rewritten and HAVE_GEMM:
        assert has, "the integer convolution did not run as an integer GEMM"
    elif not rewritten:
        assert not has
    run_both(text, args)


@pytest.mark.parametrize("xet,wet", [("i8", "i8"), ("ui8", "i8"), ("ui8", "ui8"),
                                     ("i8", "ui8")])
@pytest.mark.parametrize("form", ["jax", "onnx"])
def test_signedness_and_forms(xet, wet, form):
    text, args = qconv_case(xet, wet, form, lhs="NCHW", rhs="OIHW", out="NCHW", n=2, c=5,
                            o=7, sp=(9, 8), k=(3, 3), pad=((1, 1), (1, 1)))
    _check(text, args)


@pytest.mark.parametrize("xet", ["i8", "ui8"])
@pytest.mark.parametrize("const_w", [False, True])
def test_zero_points_with_padding(xet, const_w):
    xz = 131 if xet == "ui8" else -7
    text, args = qconv_case(xet, "i8", "onnx", xz=xz, wz=0, const_w=const_w,
                            lhs="NCHW", rhs="OIHW", out="NCHW", n=1, c=6, o=5, sp=(7, 9),
                            k=(3, 3), pad=((1, 2), (2, 0)))
    _check(text, args)


def test_constant_kernel_zero_point_folded():
    """QLinearConv's ``convert(w) - wz`` of a constant kernel: folded, and the result
    fits i8 (wz = 3 on values in [-100, 100])."""
    text, _ = qconv_case("ui8", "i8", "onnx", xz=128, wz=3, const_w=True, lhs="NCHW",
                         rhs="OIHW", out="NCHW", n=1, c=3, o=4, sp=(6, 6), k=(3, 3),
                         pad=((1, 1), (1, 1)))
    # replace the kernel values by ones that stay within i8 after the zero point
    w = _ints((4, 3, 3, 3), "i8", -100, 100)
    vals = ", ".join(str(int(v)) for v in w.reshape(-1))
    text = re.sub(r"(%wf = stablehlo.constant dense<\[)[^\]]*", r"\g<1>" + vals, text)
    _check(text, [_ints((1, 3, 6, 6), "ui8")])


def test_kernel_outside_8_bits_stays_generic():
    """A constant kernel minus a zero point whose values leave 8 bits: not rewritten,
    still exact."""
    text, args = qconv_case("ui8", "ui8", "onnx", xz=3, wz=-100, const_w=True, n=1, c=2,
                            o=3, sp=(5, 5), k=(3, 3))
    _check(text, args, rewritten=False)


@pytest.mark.parametrize("case", [
    dict(lhs="NHWC", rhs="HWIO", out="NHWC", stride=(2, 2), pad=((1, 1), (1, 1))),
    dict(lhs="NCHW", rhs="OIHW", out="NHWC", rd=(2, 1), stride=(1, 3)),
    dict(lhs="NHWC", rhs="OHWI", out="NCHW", fgc=2, c=6, o=4, pad=((2, 0), (0, 1))),
    dict(lhs="NCHW", rhs="OIHW", out="NCHW", ld=(2, 1), pad=((1, 1), (0, 0))),
    dict(lhs="NCHW", rhs="OIHW", out="NCHW", fgc=3, c=9, o=6, rd=(2, 2),
         pad=((2, 2), (2, 2))),
    dict(lhs="NCW", rhs="OIW", out="NCW", sp=(13,), k=(4,), stride=(3,), pad=((2, 1),)),
    # channels moved 8 / 4 / 2 at a time by the window copies, with groups
    dict(lhs="NHWC", rhs="HWIO", out="NHWC", fgc=2, c=16, o=6, pad=((1, 1), (1, 1))),
    dict(lhs="NCHW", rhs="OIHW", out="NCHW", fgc=3, c=12, o=9, stride=(2, 1)),
    dict(lhs="NCHW", rhs="OIHW", out="NCHW", c=24, o=5, rd=(1, 2), pad=((0, 1), (2, 2))),
    dict(lhs="NCHW", rhs="OIHW", out="NCHW", c=16, o=5, k=(1, 1)),  # 1x1: no copies
    dict(lhs="NHWC", rhs="HWIO", out="NHWC", c=8, o=4, k=(1, 1), stride=(2, 2), fgc=2),
    dict(lhs="NCDHW", rhs="OIDHW", out="NCDHW", sp=(4, 5, 3), k=(2, 3, 2), n=1),
])
@pytest.mark.parametrize("form", ["jax", "onnx"])
def test_windows_layouts_groups(case, form):
    kw = dict(n=2, c=4, o=6, sp=(7, 6), k=(3, 3)) | case
    text, args = qconv_case("ui8" if form == "onnx" else "i8", "i8", form,
                            xz=37 if form == "onnx" else 0, **kw)
    _check(text, args)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_threads_odd_sizes_extreme_values(monkeypatch, threads):
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    text, args = qconv_case("ui8", "i8", "onnx", xz=255, lhs="NCHW", rhs="OIHW",
                            out="NCHW", n=3, c=67, o=29, sp=(11, 13), k=(3, 3),
                            pad=((1, 1), (1, 1)), const_w=False)
    args[0][0] = 255
    args[0][1] = 0
    args[1][0] = -128
    args[1][1] = 127
    _check(text, args)


def test_window_reversal_and_depthwise_stay_generic():
    text, args = qconv_case("i8", "i8", "jax", n=1, c=3, o=3, rev=(1, 0))
    _check(text, args, rewritten=False)
    text, args = qconv_case("i8", "i8", "jax", n=1, c=32, o=32, fgc=32, sp=(5, 5))
    _check(text, args, rewritten=False)


@pytest.mark.parametrize("case", [
    dict(xet="ui8", form="onnx", xz=200, c=16, o=6, fgc=2, pad=((1, 1), (1, 1))),
    dict(xet="i8", form="jax", c=12, o=5, stride=(2, 1), rd=(1, 2), ld=(2, 1)),
    dict(xet="i8", form="onnx", xz=-9, c=8, o=3, k=(1, 1), const_w=True),
])
def test_rewritten_program_is_valid_and_exact_on_the_interpreter(case):
    """The rewritten StableHLO itself (spec ops only: pad, slice, concatenate,
    bitcast_convert, dot_general, ...) runs on the interpreter and equals the
    original convolution there, bit for bit."""
    from oxla_backend_cpu.int8_conv import rewrite_int8_convs

    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    kw = dict(n=2, sp=(7, 6), k=(3, 3), lhs="NCHW", rhs="OIHW", out="NCHW") | case
    xet, form = kw.pop("xet"), kw.pop("form")
    text, args = qconv_case(xet, "i8", form, **kw)
    module = parse_module(text, "t.mlir")
    assert rewrite_int8_convs(module) == 1
    assert "stablehlo.convolution" not in str(module)
    want = InterpreterBackend().compile(parse_module(text, "t.mlir"))(*args)[0]
    got = InterpreterBackend().compile(module)(*args)[0]
    assert np.array_equal(np.asarray(got), np.asarray(want))
