"""GEMM-mode convolutions whose output overlaps their dead input (buffer assignment's
``over its dead input`` placement, :func:`oxla_backend_cpu.conv.output_over_input`):
results against the interpreter over layouts, windows, groups, epilogues, chunk sizes
and thread counts; the arena bytes saved; the cases that must not overlap."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu
from tests.backend_cpu.test_conv_gemm import CNN, cnn_args, conv_case


@pytest.fixture(autouse=True)
def _gemm_at_every_size(monkeypatch, tmp_path):
    """Small cases on the GEMM kernel (not the exact f64 loop), own compile cache."""
    from oxla_backend_cpu import linalg, wide_conv

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 0)
    monkeypatch.setattr(wide_conv, "WIDE_CONV_MACS", 0)
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))


def _interpret(text: str, args: list):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    return InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)


def _placed_plan(text: str):
    """The plan after fusion, scheduling and buffer assignment (as the backend runs
    them on an already-lowered module)."""
    from oxla_backend_cpu.policy import CPUPolicy

    from oxla.ir import parse_module
    from oxla.lowering import assign_best, fuse, schedule

    plan = fuse(parse_module(text, "test.mlir"), CPUPolicy())
    order = list(plan.kernels)
    return assign_best(schedule(plan), order)


def _convs(plan):
    from oxla_backend_cpu.conv import ConvKernel

    return [k for k in plan.kernels if isinstance(k, ConvKernel)]


def _through_tanh(text: str, tanh: bool = True) -> str:
    """``conv(x)`` -> ``reverse(conv(tanh(x)))``: the input becomes a temporary that dies
    at the convolution (with ``tanh``), the output a temporary (reversed into the
    result: read at another index, so not a fused epilogue)."""
    head, rest = text.split("{", 1)
    ty = head.split("%x: ", 1)[1].split(", %w", 1)[0]
    if tanh:
        rest = rest.replace("stablehlo.convolution(%x, %w)", "stablehlo.convolution(%t, %w)")
        rest = f"\n  %t = stablehlo.tanh %x : {ty}{rest}"
    body, ret = rest.rsplit("return ", 1)
    last, oty = ret.split(" : ", 1)
    oty = oty.split("\n", 1)[0]
    return (f"{head}{{{body}%rv = stablehlo.reverse {last}, dims = [0] : {oty}\n"
            f"  return %rv : {oty}\n}}")


def _check(text: str, args: list, tol: float = 1e-4):
    exe = compile_cpu(text, cache=False)
    got = exe(*args)[0]
    np.testing.assert_allclose(got, _interpret(text, args)[0], rtol=tol, atol=tol)
    return exe


def test_small_cnn_arena_below_xla(monkeypatch):
    """bench/cpu_vs_xla.py's cnn on the im2col GEMMs (the implicit GEMM off; its own
    placement: test_conv_implicit): the second conv's output overlaps the first conv's
    (dead) output, so the arena is the first output, ``S`` output images past it and
    the im2col chunks. One thread (``S = 1``, one chunk): under XLA's 664,576 temp
    bytes (the two conv outputs and a 9 KiB weight transpose). Two threads: the second
    conv keeps its per-thread slots (``S = 2`` images at once, one chunk each,
    :func:`oxla_backend_cpu.conv.slot_groups`), 40 KB over XLA's figure, 92 KB under
    the two outputs and slots side by side. The result stays right."""
    args = cnn_args()
    from oxla_backend_cpu import conv_implicit

    monkeypatch.setattr(conv_implicit, "geometry", lambda g: None)
    for threads in ("1", "2"):
        monkeypatch.setenv("OXLA_NUM_THREADS", threads)
        plan = _placed_plan(CNN)
        k1, k2 = _convs(plan)
        assert (k1.reverse, k2.reverse) == (False, True)
        in1, out2 = k2.lhs, k2.out
        slots = k2.chunking.slots
        assert slots == int(threads)  # over the input, the slots stay
        past = slots * out2.nbytes // 8  # output images written while their input is read
        assert out2.offset == in1.offset + in1.nbytes + past - out2.nbytes
        assert plan.temp_bytes <= in1.nbytes + past + k2.col.nbytes + 64
        exe = _check(CNN, args)
        assert exe.stats["temp_bytes"] == plan.temp_bytes
        assert plan.temp_bytes < (664_576 if threads == "1" else in1.nbytes + out2.nbytes
                                  + k2.col.nbytes)


LAYOUTS = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OHWI", "NHWC"),
           ("NCHW", "HWIO", "NHWC"), ("NHWC", "IOHW", "NCHW"), ("NHWC", "HWIO", "NHCW")]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: "-".join(x))
@pytest.mark.parametrize("case", [
    dict(),
    dict(stride=(2, 2), pad=((1, 1), (0, 1)), relu=True, bias=True),
    dict(o=2, rd=(2, 1), ld=(1, 2), rev=(1, 0), pad=((2, 1), (1, 2))),
    dict(c=6, o=4, fgc=2, relu=True, small=True),
    dict(o=3, stride=(2, 3), small=True),
], ids=["plain", "stride-epilogue", "dilations-reversal", "groups-small-chunks",
        "strides-small-chunks"])
@pytest.mark.parametrize("threads", ["1", "2"])
def test_output_over_dead_input_matches_interpreter(monkeypatch, layout, case, threads):
    """conv(tanh(x)) with 3 images: the output overlaps tanh's buffer (chunks last to
    first), across chunk boundaries inside and across images."""
    import oxla_backend_cpu.conv as conv

    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    case = dict(case)
    if case.pop("small", False):
        monkeypatch.setattr(conv, "CHUNK_BYTES", 600)
    lhs, rhs, out = layout
    text, args = conv_case(lhs=lhs, rhs=rhs, out=out, n=3, **{"c": 4, "o": 6, "sp": (9, 8),
                                                             **case})
    text = _through_tanh(text)
    (k,) = _convs(_placed_plan(text))
    assert k.mode == "gemm" and k.reverse
    assert k.lhs.offset < k.out.offset < k.lhs.offset + k.lhs.nbytes
    _check(text, args)


@pytest.mark.parametrize("what", ["residual", "read-later", "batch-groups", "argument",
                                  "batch-not-outer"])
def test_no_overlap_where_the_input_is_still_needed(what):
    """The placement is skipped when the kernel or a later one reads the input, with
    batch groups, for an argument, and when the batch is not outermost."""
    kw = dict(n=4, c=4, o=4, sp=(6, 6), pad=((1, 1), (1, 1)))
    if what == "batch-groups":
        kw.update(bgc=2, o=4)
    if what == "batch-not-outer":
        kw.update(lhs="CHWN", rhs="HWIO", out="HWNC")
    text, args = conv_case(**kw)
    ty = text.split("-> ", 1)[1].split(" {", 1)[0]
    if what == "residual":  # conv(t) + t: the epilogue reads the input
        text = text.replace("return %0", f"%r = stablehlo.add %0, %t : {ty}\n  return %r")
    if what == "read-later":  # t read after the conv, at another index
        text = text.replace(
            "return %0",
            f"%rt = stablehlo.reverse %t, dims = [3] : {ty}\n"
            f"  %r = stablehlo.add %0, %rt : {ty}\n  return %r")
    text = _through_tanh(text, tanh=what != "argument")
    (k,) = _convs(_placed_plan(text))
    assert not k.reverse
    from oxla.lowering import distinct_locations

    assert distinct_locations([k.lhs, k.out])
    _check(text, args)


def test_distinct_locations_sees_overlaps():
    """Buffers that overlap without sharing a start lose ``noalias`` too."""
    from oxla.lowering import Buf, distinct_locations

    a, b, c = Buf("a", 256, "temp", offset=0), Buf("b", 128, "temp", offset=192), \
        Buf("c", 64, "temp", offset=256)
    assert not distinct_locations([a, b])
    assert distinct_locations([a, c])
    assert not distinct_locations([b, c])
    assert distinct_locations([Buf("r", 64, "result", 0), Buf("t", 64, "temp", offset=0)])


@pytest.mark.parametrize("case", [
    dict(n=5, chunk=600),
    dict(n=7, chunk=600, stride=(2, 1), pad=((1, 1), (2, 0)), relu=True, bias=True),
    dict(n=5, chunk=400, c=6, o=4, fgc=2, sp=(7, 9)),
    dict(n=13, chunk=2 * 4 * 9 * 6 * 7 * 4, sp=(9, 8)),  # blocks of 2 whole images
], ids=["rows", "stride-pad-epilogue", "groups-odd", "images-per-chunk"])
@pytest.mark.parametrize("threads", ["2", "3"])
def test_slots_over_dead_input_match_interpreter(monkeypatch, case, threads):
    """An NCHW conv(tanh(x)) on 2 and 3 threads whose output overlaps tanh's buffer
    keeps its per-thread slots (:func:`oxla_backend_cpu.conv.slot_groups`: groups of
    whole images, last first, the first group short when the images do not divide);
    the output starts where no group overwrites input it still reads, and the result
    matches the interpreter."""
    import oxla_backend_cpu.conv as conv

    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    case = dict(case)
    monkeypatch.setattr(conv, "CHUNK_BYTES", case.pop("chunk"))
    text, args = conv_case(**{"c": 4, "o": 6, "sp": (9, 8), **case})
    text = _through_tanh(text)
    (k,) = _convs(_placed_plan(text))
    assert k.mode == "gemm" and k.reverse and k.chunking.slots == int(threads)
    groups = conv.slot_groups(k.geom, k.chunking)
    assert groups and groups[0][1] == k.chunking.n and groups[-1][0] == 0
    assert all(a[0] == b[1] for a, b in zip(groups, groups[1:]))  # contiguous, last first
    n = k.geom.nb
    ib, ob = k.lhs.nbytes // n, k.out.nbytes // n
    dist = k.out.offset - k.lhs.offset
    for _, _, b0, b1 in groups:  # a group's output starts past its input
        assert dist + b0 * ob >= b1 * ib
    assert k.lhs.offset < k.out.offset < k.lhs.offset + k.lhs.nbytes
    _check(text, args)


def test_slot_groups_only_for_batch_outer_layouts():
    """Feature-innermost outputs and one-slot chunkings have no slot groups (their
    overlap runs chunk by chunk on the split chunking)."""
    import oxla_backend_cpu.conv as conv

    for lhs, rhs, out in (("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW")):
        text, _ = conv_case(lhs=lhs, rhs=rhs, out=out, n=4)
        (k,) = _convs(_placed_plan(text))
        g = k.geom
        assert conv.slot_groups(g, conv.plan_chunks(g, 1)) is None
        if out == "NHWC":
            assert conv.slot_groups(g, conv.Chunks(8, 1, 1, 64, 2)) is None
