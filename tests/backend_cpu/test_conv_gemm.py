"""f32/f64 convolutions on cpu (im2col + GEMM, 1x1 GEMM, direct depthwise kernel,
fused epilogues) against the interpreter, over layouts, windows and groups."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(11)
SPATIAL = "DHW"


@pytest.fixture(autouse=True)
def _gemm_at_every_size(monkeypatch, tmp_path):
    """These small cases test the GEMM/direct kernels: keep tiny f32 convolutions off
    the exact f64 loop (``linalg.SMALL_CONV_MACS``, covered in test_small_products),
    with a compile cache of their own (the threshold is not part of its key)."""
    from oxla_backend_cpu import linalg, wide_conv

    monkeypatch.setattr(linalg, "SMALL_CONV_MACS", 0)
    monkeypatch.setattr(wide_conv, "WIDE_CONV_MACS", 0)
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))


def _dn(layout: str, batch: str, feat: str, sp: list[str]) -> str:
    """Dimension numbers of one operand; ``sp``: spatial letters in spatial-index order."""
    names = {batch: "b" if batch == "N" else "o", feat: "f" if feat == "C" else "i"}
    return "[" + ", ".join(names.get(c, str(sp.index(c)) if c in sp else c)
                           for c in layout) + "]"


def _out_size(size, k, s, p, ld, rd):
    size = (size - 1) * ld + 1 + p[0] + p[1]
    span = (k - 1) * rd + 1
    return max(0, (size - span) // s + 1)


def conv_case(lhs="NCHW", rhs="OIHW", out="NCHW", n=2, c=4, o=6, sp=(7, 6), k=(3, 3),
              stride=None, pad=None, ld=None, rd=None, rev=None, fgc=1, bgc=1, t="f32",
              relu=False, bias=False):
    """(text, args) of one convolution; ``sp``/``k`` in the layouts' spatial order
    (D, H, W subset). ``relu``/``bias`` append a fusible epilogue."""
    ns = len(sp)
    stride = stride or (1,) * ns
    pad = pad or ((0, 0),) * ns
    ld, rd, rev = ld or (1,) * ns, rd or (1,) * ns, rev or (0,) * ns
    osp = tuple(_out_size(sp[i], k[i], stride[i], pad[i], ld[i], rd[i]) for i in range(ns))
    letters = [ch for ch in lhs if ch in SPATIAL]
    dims_l = {"N": n, "C": c, **dict(zip(letters, sp))}
    dims_k = {"O": o, "I": c // fgc, **dict(zip(letters, k))}
    dims_o = {"N": n // bgc, "C": o, **dict(zip(letters, osp))}
    xs = tuple(dims_l[ch] for ch in lhs)
    ws = tuple(dims_k[ch] for ch in rhs)
    os_ = tuple(dims_o[ch] for ch in out)

    def ty(shape):
        return "tensor<" + "x".join(map(str, shape)) + f"x{t}>"

    dn = (f"{_dn(lhs, 'N', 'C', letters)}x{_dn(rhs, 'O', 'I', letters)}->"
          f"{_dn(out, 'N', 'C', letters)}")
    padtxt = "[" + ", ".join(f"[{a}, {b}]" for a, b in pad) + "]"
    revtxt = str([bool(r) for r in rev]).lower()
    ops = [f"""%0 = stablehlo.convolution(%x, %w) dim_numbers = {dn},
      window = {{stride = {list(stride)}, pad = {padtxt}, lhs_dilate = {list(ld)},
                rhs_dilate = {list(rd)}, reverse = {revtxt}}}
      {{batch_group_count = {bgc} : i64, feature_group_count = {fgc} : i64}}
      : ({ty(xs)}, {ty(ws)}) -> {ty(os_)}"""]
    params = [f"%x: {ty(xs)}", f"%w: {ty(ws)}"]
    dt = np.float32 if t == "f32" else np.float64
    args = [RNG.standard_normal(xs).astype(dt), RNG.standard_normal(ws).astype(dt)]
    last = "%0"
    if bias:
        params.append(f"%bias: {ty((o,))}")
        args.append(RNG.standard_normal(o).astype(dt))
        ops.append(f"%1 = stablehlo.broadcast_in_dim %bias, dims = [{out.index('C')}] : "
                   f"({ty((o,))}) -> {ty(os_)}")
        ops.append(f"%2 = stablehlo.add %0, %1 : {ty(os_)}")
        last = "%2"
    if relu:
        ops.append(f"%z = stablehlo.constant dense<0.0> : {ty(os_)}")
        ops.append(f"%3 = stablehlo.maximum {last}, %z : {ty(os_)}")
        last = "%3"
    body = "\n  ".join(ops)
    text = f"""
func.func @main({", ".join(params)}) -> {ty(os_)} {{
  {body}
  return {last} : {ty(os_)}
}}"""
    return text, args


def check(**kw):
    text, args = conv_case(**kw)
    tol = 1e-4 if kw.get("t", "f32") == "f32" else 1e-11
    return run_both(text, args, rtol=tol, atol=tol)


def plan_of(text: str):
    from oxla_backend_cpu.policy import CPUPolicy

    from oxla.ir import parse_module
    from oxla.lowering import fuse

    return fuse(parse_module(text, "test.mlir"), CPUPolicy())


def conv_kernels_of(text: str):
    from oxla_backend_cpu.conv import ConvKernel

    return [k for k in plan_of(text).kernels if isinstance(k, ConvKernel)]


LAYOUTS = [("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC"), ("NHWC", "OHWI", "NHWC"),
           ("NCHW", "HWIO", "NHWC"), ("NHWC", "IOHW", "NCHW"), ("CHWN", "HWOI", "HCWN")]


@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda x: "-".join(x))
@pytest.mark.parametrize("window", [
    dict(),
    dict(stride=(2, 1), pad=((1, 2), (0, 1))),
    dict(stride=(2, 2), pad=((1, 1), (1, 1)), rd=(2, 1)),
    dict(pad=((2, 0), (1, 1)), ld=(2, 1), rev=(1, 0)),
    dict(ld=(1, 3), rev=(0, 1), pad=((0, 1), (2, 2))),
    dict(pad=((-1, 1), (0, -1))),
], ids=["plain", "stride-pad", "rhs-dilate", "lhs-dilate-rev", "lhs-dilate-inner", "neg-pad"])
def test_layouts_and_windows(layout, window):
    lhs, rhs, out = layout
    text, _ = conv_case(lhs, rhs, out, **window)
    assert [k.mode for k in conv_kernels_of(text)] == ["gemm"]
    check(lhs=lhs, rhs=rhs, out=out, **window)


RUNTIME_LAYOUTS = [("NHWC", "OIHW", "NHWC"), ("NCHW", "IOHW", "NHWC"), ("NHWC", "HWIO", "NHWC")]


@pytest.mark.parametrize("layout", RUNTIME_LAYOUTS, ids=lambda x: "-".join(x))
@pytest.mark.parametrize("window", [
    dict(),
    dict(rev=(1, 1)),
    dict(rev=(0, 1), rd=(1, 2), pad=((2, 2), (3, 1))),
    dict(stride=(2, 3), pad=((1, 0), (4, 4)), rd=(2, 3)),
    dict(rev=(1, 1), rd=(2, 2), pad=((-1, 2), (2, -1))),
    dict(pad=((9, 9), (0, 8))),
    dict(t="f64", rev=(1, 0), rd=(1, 3), pad=((1, 1), (5, 0))),
], ids=["plain", "rev", "rev-rdil", "stride-rdil", "rev-neg-pad", "all-pad-rows", "f64"])
def test_runtime_im2col_windows(layout, window):
    """Feature-innermost outputs pack through the runtime's descriptor-driven im2col
    (:mod:`oxla_backend_cpu.conv_runtime`); the first two layouts' rows run along the
    kernel's W (unit, dilated and reversed steps, rows partly or wholly in the padding),
    the last along its input features."""
    from oxla_backend_cpu import conv_runtime

    lhs, rhs, out = layout
    text, _ = conv_case(lhs, rhs, out, **window)
    (k,) = conv_kernels_of(text)
    assert k.mode == "gemm" and k.col is not None
    assert conv_runtime.supported(k.geom) == (window.get("t", "f32") == "f32")  # f64: emitted
    check(lhs=lhs, rhs=rhs, out=out, **window)


@pytest.mark.parametrize("case", [
    dict(lhs="NDHWC", rhs="OIDHW", out="NDHWC", sp=(4, 5, 6), k=(2, 3, 2), rev=(1, 0, 1),
         rd=(1, 2, 1), stride=(1, 2, 1), pad=((1, 0), (2, 1), (0, 1))),
    dict(lhs="NWC", rhs="OIW", out="NWC", sp=(9,), k=(4,), rev=(1,), rd=(2,), pad=((3, 2),)),
    dict(lhs="NHWC", rhs="HWIO", out="NHWC", bgc=2, rev=(1, 0), stride=(2, 1)),
    dict(lhs="NHWC", rhs="OIHW", out="NHWC", fgc=2, rev=(0, 1), pad=((1, 1), (2, 2))),
], ids=["3d", "1d", "batch-groups", "groups"])
def test_runtime_im2col_ranks_and_groups(case):
    """The runtime im2col on 1-D and 3-D windows and with feature and batch groups."""
    from oxla_backend_cpu import conv_runtime

    text, _ = conv_case(**case)
    (k,) = conv_kernels_of(text)
    assert k.mode == "gemm" and conv_runtime.supported(k.geom)
    check(**case)


@pytest.mark.parametrize("case", [
    dict(c=5, o=3, pad=((1, 1), (1, 1))),  # merged rows of 15: the generic copy loops
    dict(c=7, o=2, stride=(2, 1), pad=((2, 0), (1, 2)), rd=(1, 2)),
    dict(lhs="NCHW", rhs="HWIO", c=5, pad=((1, 1), (0, 2))),  # input step != 1
], ids=["generic-width", "generic-width-rdil", "strided-input"])
def test_runtime_im2col_row_widths(case):
    """Rows whose length is not one of the fixed vector widths take the loop copies."""
    from oxla_backend_cpu import conv_runtime

    case = {"lhs": "NHWC", "rhs": "HWIO", "out": "NHWC", **case}
    text, _ = conv_case(**case)
    (k,) = conv_kernels_of(text)
    if case.get("t", "f32") == "f32":
        words = conv_runtime.descriptor(k.geom)
        assert conv_runtime.row_elems(words) == k.geom.G * k.geom.k_size
    check(**case)


def test_runtime_im2col_merges_window_and_channels():
    """NHWC input with an HWIO kernel: one row per (group, kernel row), the window's
    columns and the channels copied as one contiguous run."""
    from oxla_backend_cpu import conv_runtime as cr

    text, _ = conv_case("NHWC", "HWIO", "NHWC", c=16, o=8, pad=((1, 1), (1, 1)))
    (k,) = conv_kernels_of(text)
    words = cr.descriptor(k.geom)
    assert (words[cr._R], words[cr._NB], words[cr._NIN], words[cr._CO]) == (3, 3, 16, 1)


def test_runtime_im2col_descriptor_rejects_input_dilation():
    """Input dilation is not a linear map of the indices: the emitted im2col keeps it."""
    from oxla_backend_cpu import conv_runtime

    text, _ = conv_case("NHWC", "HWIO", "NHWC", ld=(1, 2))
    (k,) = conv_kernels_of(text)
    assert not conv_runtime.supported(k.geom)
    with pytest.raises(ValueError, match="not supported"):
        conv_runtime.descriptor(k.geom)


@pytest.mark.parametrize("layout", LAYOUTS[:2], ids=lambda x: "-".join(x))
@pytest.mark.parametrize("groups", [dict(fgc=2), dict(bgc=2), dict(fgc=3, c=6, o=9),
                                    dict(bgc=3, n=6, o=6)])
def test_groups(layout, groups):
    lhs, rhs, out = layout
    check(lhs=lhs, rhs=rhs, out=out, stride=(1, 2), pad=((1, 1), (0, 1)), **groups)


@pytest.mark.parametrize("layout", LAYOUTS[:3] + [("NHWC", "HWOI", "NCHW")],
                         ids=lambda x: "-".join(x))
@pytest.mark.parametrize("extra", [dict(), dict(stride=(2, 2), pad=((1, 1), (1, 1))),
                                   dict(o=16, pad=((1, 1), (1, 1)), rd=(2, 2)),
                                   dict(n=1, sp=(5, 40))],
                         ids=["plain", "stride", "multiplier-dilate", "wide"])
def test_depthwise(layout, extra):
    lhs, rhs, out = layout
    kw = dict(c=8, o=8, fgc=8, pad=((1, 1), (1, 1)))
    kw.update(extra)
    text, _ = conv_case(lhs, rhs, out, **kw)
    modes = [k.mode for k in conv_kernels_of(text)]
    # one output feature per group, or a non-feature innermost output: direct kernel
    assert modes == ["direct"] if (kw["o"] == kw["c"] or out[-1] != "C") else ["gemm"]
    check(lhs=lhs, rhs=rhs, out=out, **kw)


@pytest.mark.parametrize("layout", LAYOUTS[:2] + [("NHWC", "OIHW", "NCHW")],
                         ids=lambda x: "-".join(x))
def test_pointwise_reads_the_input_in_place(layout):
    lhs, rhs, out = layout
    kw = dict(lhs=lhs, rhs=rhs, out=out, k=(1, 1), c=16, o=8, sp=(5, 7))
    text, _ = conv_case(**kw)
    (k,) = conv_kernels_of(text)
    assert (k.col is None) == (lhs == out)  # no im2col copy when layouts agree
    exe, _ = check(**kw)
    if lhs == out:  # nor a weight copy: OIHW and HWIO are [O, K] and [K, O]
        assert exe.stats["temp_bytes"] == 0


@pytest.mark.parametrize("spatial", [
    dict(lhs="NCW", rhs="OIW", out="NCW", sp=(17,), k=(4,), stride=(3,), pad=((2, 1),)),
    dict(lhs="NWC", rhs="WIO", out="NWC", sp=(9,), k=(3,), rd=(2,), pad=((2, 2),), fgc=2),
    dict(lhs="NCDHW", rhs="OIDHW", out="NCDHW", sp=(4, 5, 6), k=(2, 3, 2),
         stride=(1, 2, 1), pad=((1, 0), (1, 1), (0, 1))),
    dict(lhs="NDHWC", rhs="DHWIO", out="NDHWC", sp=(3, 4, 5), k=(2, 2, 3), ld=(2, 1, 1),
         pad=((1, 1), (0, 0), (1, 1))),
    dict(lhs="NDHWC", rhs="DHWIO", out="NDHWC", sp=(3, 4, 5), k=(3, 3, 3), c=5, o=5, fgc=5,
         pad=((1, 1), (1, 1), (1, 1))),
], ids=["1d-ncw", "1d-nwc-groups", "3d-ncdhw", "3d-ndhwc-lhs-dilate", "3d-depthwise"])
def test_1d_and_3d(spatial):
    check(**spatial)


@pytest.mark.parametrize("layout", LAYOUTS[:2] + [("NHWC", "HWIO", "NCHW")],
                         ids=lambda x: "-".join(x))
@pytest.mark.parametrize("mode", [dict(), dict(c=8, o=8, fgc=8)], ids=["gemm", "depthwise"])
def test_bias_relu_epilogue_is_fused(layout, mode):
    from oxla.lowering import LoopKernel

    lhs, rhs, out = layout
    kw = dict(lhs=lhs, rhs=rhs, out=out, bias=True, relu=True, stride=(2, 1),
              pad=((1, 1), (1, 1)), **mode)
    text, _ = conv_case(**kw)
    plan = plan_of(text)
    (k,) = [k for k in plan.kernels if hasattr(k, "epilogue")]
    assert k.epilogue is not None and k.out is plan.results[0]
    assert not any(isinstance(x, LoopKernel) for x in plan.kernels)
    _, (got,) = check(**kw)
    assert (got >= 0).all() and (got == 0).any()


def test_f64_and_large_parallel_gemm():
    check(t="f64", c=5, o=7, stride=(2, 1), pad=((1, 1), (2, 0)), fgc=1)
    # enough work for several parallel GEMM items and im2col rows
    check(lhs="NHWC", rhs="HWIO", out="NHWC", n=4, c=32, o=48, sp=(24, 24),
          pad=((1, 1), (1, 1)), relu=True)
    check(n=1, c=32, o=40, sp=(40, 36), pad=((1, 1), (1, 1)), bias=True)
    check(t="f64", lhs="NHWC", rhs="HWIO", out="NHWC", n=1, c=24, o=24, fgc=24,
          sp=(64, 48), pad=((1, 1), (1, 1)))


def test_epilogue_not_fused_when_read_at_another_index():
    text, args = conv_case(relu=True)
    t = "tensor<2x6x5x4xf32>"
    text = text.replace(f"return %3 : {t}",
                        f"%4 = stablehlo.reverse %0, dims = [3] : {t}\n"
                        f"  %5 = stablehlo.add %3, %4 : {t}\n  return %5 : {t}")
    assert "%5" in text
    (k,) = conv_kernels_of(text)
    assert k.epilogue is None
    run_both(text, args, rtol=1e-4, atol=1e-4)


def test_non_float_convolution_keeps_the_generic_kernel():
    text, _ = conv_case(t="f32")
    text = text.replace("f32", "i32")
    assert conv_kernels_of(text) == []
    x = RNG.integers(-5, 5, (2, 4, 7, 6)).astype(np.int32)
    w = RNG.integers(-5, 5, (6, 4, 3, 3)).astype(np.int32)
    run_both(text, [x, w])


def test_im2col_buffer_is_a_counted_temporary():
    text, args = conv_case(lhs="NHWC", rhs="HWIO", out="NHWC", c=4, o=6, sp=(7, 6))
    (k,) = conv_kernels_of(text)
    assert k.col is not None and k.col.nbytes == 2 * 5 * 4 * 4 * 9 * 4  # P x K floats
    exe = compile_cpu(text)
    assert exe.stats["temp_bytes"] >= k.col.nbytes
    np.testing.assert_allclose(exe(*args)[0], run_both(text, args, 1e-4, 1e-4)[1][0])


@pytest.mark.parametrize("case", [
    dict(),  # NCHW: chunks of rows of one image
    dict(n=3, sp=(5, 4), k=(2, 2)),  # NCHW: chunks of whole images
    dict(lhs="NHWC", rhs="HWIO", out="NHWC"),  # chunks of output pixels
    dict(lhs="NHWC", rhs="OIHW", out="NHWC", fgc=2, relu=True, bias=True),
    dict(c=6, o=4, fgc=2, relu=True, bias=True, stride=(2, 1), pad=((1, 1), (2, 1))),
    dict(lhs="NCHW", rhs="OIHW", out="NHWC", bgc=2, ld=(2, 1)),
], ids=["nchw-rows", "nchw-images", "nhwc", "nhwc-groups-epilogue", "nchw-groups-epilogue",
        "batch-groups"])
@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_small_chunks(monkeypatch, case, threads):
    """A tiny chunk budget: many chunks, partial last chunks, every layout's offsets; on
    2-3 threads each thread packs and multiplies its own run of chunks in its own slice
    of ``col`` (plan_chunks' slots, uneven runs on 3). The implicit GEMM is off: it
    would take the 12-column rows."""
    import oxla_backend_cpu.conv as conv

    monkeypatch.setattr(conv.conv_implicit, "geometry", lambda g: None)
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    kw = dict(n=2, c=4, o=6, sp=(9, 11), pad=((1, 1), (1, 1)))
    kw.update(case)
    text, args = conv_case(**kw)
    monkeypatch.setattr(conv, "CHUNK_BYTES", 700)
    (k,) = conv_kernels_of(text)
    ch = conv.plan_chunks(k.geom)
    assert ch == k.chunking and ch.slots == int(threads)
    g = k.geom
    full = g.G * g.k_size * (np.prod(g.os) // g.o_tot)  # the whole im2col matrix
    assert ch.n >= 3 and k.col.nbytes == ch.col_elems * 4
    assert 3 * ch.col_elems // ch.slots <= full
    exe = compile_cpu(text, cache=False)
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    want = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)[0]
    np.testing.assert_allclose(exe(*args)[0], want, rtol=1e-4, atol=1e-4)


def test_conv_with_epilogue_in_a_while_body():
    """Conv kernels in a region's plan: im2col scratch inside the region's arena, the
    loop-carried image overwritten each iteration (3 iterations of conv + tanh)."""
    t = "tensor<1x4x6x6xf32>"
    text = f"""
func.func @main(%x: {t}, %w: tensor<4x4x3x3xf32>) -> {t} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<3> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, {t}
    cond {{
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }} do {{
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %c = stablehlo.convolution(%a, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
          window = {{pad = [[1, 1], [1, 1]]}}
          {{batch_group_count = 1 : i64, feature_group_count = 1 : i64}}
          : ({t}, tensor<4x4x3x3xf32>) -> {t}
      %h = stablehlo.tanh %c : {t}
      stablehlo.return %i1, %h : tensor<i32>, {t}
    }}
  return %r#1 : {t}
}}"""
    x = RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)
    w = (RNG.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
    run_both(text, [x, w], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("case", [
    dict(out="NHCW", o=16),  # feature second-innermost, 2 per group: rows of W only
    dict(out="NHCW", o=8),  # feature second-innermost, 1 per group: (C, W) blocks
    dict(out="CHNW", o=8),  # batch second-innermost: (N, W) blocks
    dict(out="NCWH", o=8, stride=(2, 3)),  # (W, H) blocks, strided
], ids=["nhcw-multiplier", "nhcw", "chnw", "ncwh-stride"])
def test_depthwise_block_shapes(case):
    kw = dict(lhs="NHWC", rhs="HWIO", c=8, fgc=8, n=2, sp=(7, 9), pad=((1, 1), (2, 0)))
    kw.update(case)
    text, _ = conv_case(**kw)
    assert [k.mode for k in conv_kernels_of(text)] == ["direct"]
    check(**kw, relu=True)


def _random_case(seed: int) -> dict:
    """A random 1-3D convolution: operand layouts (any dimension order), window,
    strides, padding (negative too), dilations, reversal, groups, epilogue."""
    rng = np.random.default_rng(seed)
    ns = int(rng.integers(1, 4))
    sp = "DHW"[3 - ns:]

    def perm(letters: str) -> str:
        return "".join(rng.permutation(list(letters)))

    c_per, o_per = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    fgc = int(rng.choice([1, 1, 2, 3]))
    bgc = int(rng.choice([1, 1, 1, 2])) if fgc == 1 else 1
    if rng.random() < 0.25:  # depthwise
        fgc, bgc, c_per = int(rng.integers(2, 6)), 1, 1
    k = tuple(int(rng.integers(1, 4)) for _ in range(ns))
    sizes = tuple(int(rng.integers(3, 8 if ns < 3 else 5)) for _ in range(ns))
    pad = tuple((int(rng.integers(-1, 3)), int(rng.integers(-1, 3))) for _ in range(ns))
    return dict(lhs=perm("NC" + sp), rhs=perm("OI" + sp), out=perm("NC" + sp),
                n=int(rng.integers(1, 3)) * bgc, c=c_per * fgc, o=o_per * fgc * bgc, sp=sizes,
                k=k, stride=tuple(int(rng.integers(1, 3)) for _ in range(ns)), pad=pad,
                ld=tuple(int(rng.choice([1, 1, 2])) for _ in range(ns)),
                rd=tuple(int(rng.choice([1, 1, 2])) for _ in range(ns)),
                rev=tuple(int(rng.random() < 0.2) for _ in range(ns)), fgc=fgc, bgc=bgc,
                relu=bool(rng.random() < 0.5), t="f32" if rng.random() < 0.8 else "f64")


@pytest.mark.parametrize("seed", range(40))
def test_random_convolutions(seed, monkeypatch):
    import oxla_backend_cpu.conv as conv

    case = _random_case(seed)
    if seed % 2:  # every other case in many small chunks
        monkeypatch.setattr(conv, "CHUNK_BYTES", 512)
    text, args = conv_case(**case)
    if 0 in args[0].shape or "x0x" in text or "<0x" in text:
        pytest.skip("empty output")
    tol = 1e-4 if case["t"] == "f32" else 1e-11
    exe = compile_cpu(text, cache=False)
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    want = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)[0]
    np.testing.assert_allclose(exe(*args)[0], want, rtol=tol, atol=tol)


CNN = """
func.func @main(%x: tensor<8x3x32x32xf32>, %k1: tensor<16x3x3x3xf32>,
                %k2: tensor<16x16x3x3xf32>, %w: tensor<4096x10xf32>) -> tensor<8x10xf32> {
  %c1 = stablehlo.convolution(%x, %k1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
  %z1 = stablehlo.constant dense<0.0> : tensor<8x16x32x32xf32>
  %r1 = stablehlo.maximum %c1, %z1 : tensor<8x16x32x32xf32>
  %c2 = stablehlo.convolution(%r1, %k2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1],
      window = {stride = [2, 2], pad = [[0, 1], [0, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<8x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<8x16x16x16xf32>
  %z2 = stablehlo.constant dense<0.0> : tensor<8x16x16x16xf32>
  %r2 = stablehlo.maximum %c2, %z2 : tensor<8x16x16x16xf32>
  %f = stablehlo.reshape %r2 : (tensor<8x16x16x16xf32>) -> tensor<8x4096xf32>
  %y = stablehlo.dot_general %f, %w, contracting_dims = [1] x [0]
      : (tensor<8x4096xf32>, tensor<4096x10xf32>) -> tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}"""


def cnn_args() -> list[np.ndarray]:
    """Inputs of :data:`CNN` (image, two kernels, dense weights), seed 5."""
    rng = np.random.default_rng(5)
    return [rng.standard_normal((8, 3, 32, 32)).astype(np.float32),
            (rng.standard_normal((16, 3, 3, 3)) * 0.2).astype(np.float32),
            (rng.standard_normal((16, 16, 3, 3)) * 0.1).astype(np.float32),
            (rng.standard_normal((4096, 10)) * 0.01).astype(np.float32)]


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_small_cnn_im2col_holds_min_gemm_cols(monkeypatch, threads):
    """bench/cpu_vs_xla.py's cnn: two convs of under 2 items of ITEM_FLOPS per thread, so
    each im2col chunk holds MIN_GEMM_COLS columns (whole output rows), not the whole
    im2col matrix (2 MiB budget: 1.8 MB of arena). The arena is then at most the two
    conv outputs live at the second conv plus its chunk (less: the second output
    overlaps the first, test_conv_over_input), and the result stays right."""
    import oxla_backend_cpu.conv as conv

    monkeypatch.setattr(conv.conv_implicit, "geometry", lambda g: None)  # the im2col path
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    args = cnn_args()
    rows = -(-conv.MIN_GEMM_COLS // 16)  # whole rows of the 16-wide output
    col2 = 16 * 9 * rows * 16 * 4  # K = 16 x 3 x 3 floats per column
    k1, k2 = conv_kernels_of(CNN)
    slots = k2.chunking.slots  # 2 threads: one chunk per thread at once (plan_chunks)
    assert slots == (2 if threads == "2" else 1)
    out1, out2 = 8 * 16 * 32 * 32 * 4, 8 * 16 * 16 * 16 * 4
    assert k2.col.nbytes == slots * col2
    assert k1.col.nbytes <= k1.chunking.slots * 27 * conv.MIN_GEMM_COLS * 4
    # the first conv's output with its col, or both outputs with the second's col
    bound = out1 + max(k1.col.nbytes, out2 + slots * col2)  # 729,088 bytes on 1 thread
    exe = compile_cpu(CNN, cache=False)
    assert exe.stats["temp_bytes"] <= bound
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    want = InterpreterBackend().compile(parse_module(CNN, "test.mlir"))(*args)[0]
    np.testing.assert_allclose(exe(*args)[0], want, rtol=1e-4, atol=1e-4)


def test_chunk_budget_scales_with_threads():
    """A large conv (ResNet 3x3, 64 -> 64 channels, 56x56, K = 576): one thread gets
    MIN_GEMM_COLS columns per chunk, two threads BLOCKS_PER_THREAD items each of at
    least MIN_GEMM_COLS columns, many threads the CHUNK_BYTES cap."""
    import oxla_backend_cpu.conv as conv

    text, _ = conv_case(n=1, c=64, o=64, sp=(56, 56), pad=((1, 1), (1, 1)))
    (k,) = conv_kernels_of(text)
    g = k.geom
    assert conv.chunk_budget(g, 1) == conv.MIN_GEMM_COLS * 576
    assert conv.chunk_budget(g, 2) == 2 * conv.BLOCKS_PER_THREAD * conv.MIN_GEMM_COLS * 576
    assert conv.chunk_budget(g, 16) == conv.CHUNK_BYTES // 4
    ch = conv.chunks(g, 1)  # whole rows of 56: 2 rows, 112 columns
    assert (ch.rows, ch.col_elems) == (2, 2 * 56 * 576) and ch.n == 28
    # 2 threads: a slot each, packing and multiplying its own 14 one-thread chunks
    assert conv.plan_chunks(g, 2) == conv.Chunks(28, 2, 1, 2 * ch.col_elems, 2)
    assert conv.plan_chunks(g, 1) == ch
    assert conv.plan_chunks(g, 15).slots == 1  # under 2 chunks per thread: split GEMMs


@pytest.mark.parametrize("t", ["f32", "f64"])
@pytest.mark.parametrize("stride,width", [(2, 65), (2, 32), (3, 97), (4, 23), (2, 3)])
def test_strided_rows_by_shuffle(t, stride, width, tmp_path):
    """NCHW stride 2-4 along W: im2col rows are copied by masked wide loads and a lane
    shuffle (``conv_gemm._strided_blocks``); output rows of 1 to 33 elements, with the
    padding on both sides, f32 (16 lanes) and f64 (8), against the interpreter."""
    kw = dict(n=2, c=3, o=5, sp=(5, width), k=(3, 3), stride=(1, stride),
              pad=((1, 1), (1, 2)), t=t)
    check(**kw)
    text, _ = conv_case(**kw)
    compile_cpu(text, dump_dir=str(tmp_path), cache=False)
    assert "llvm.masked.load" in (tmp_path / "5-codegen.ll").read_text()


@pytest.mark.parametrize("layout", [("NHWC", "HWIO", "NHWC"), ("NHWC", "OHWI", "NHWC")],
                         ids=lambda x: "-".join(x))
@pytest.mark.parametrize("o,epilogue", [(32, {}), (30, dict(bias=True, relu=True)),
                                        (64, dict(relu=True))])
def test_narrow_output_on_own_microkernel(layout, o, epilogue, monkeypatch):
    """NHWC convolutions with 30-64 output features run their GEMMs on oxla's
    microkernel (``W`` packed per call, either kernel layout, edge rows and columns),
    with the fused epilogue after them; with 3 threads the rows split unevenly."""
    from oxla_backend_cpu import packed_gemm as pg
    from oxla_backend_cpu.conv_gemm import own_kernel

    if not pg.host_lanes():
        pytest.skip("host has no AVX2+FMA")
    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    lhs, rhs, out = layout
    kw = dict(lhs=lhs, rhs=rhs, out=out, n=3, c=5, o=o, sp=(13, 11),
              pad=((1, 1), (1, 1)), rd=(1, 2), **epilogue)
    text, _ = conv_case(**kw)
    (k,) = conv_kernels_of(text)
    assert k.mode == "gemm" and own_kernel(k.geom)
    assert "oxla_bgemm_f32" in compile_cpu(text).llvm_ir
    check(**kw)


def _defines(tmp_path, text: str) -> dict[str, str]:
    """Function name -> its ``define`` line in the program's LLVM IR before -O3."""
    import re

    from tests.backend_cpu.conftest import compile_cpu

    compile_cpu(text, cache=False, dump_dir=str(tmp_path / "dump"))
    (ll,) = (tmp_path / "dump").glob("*5-codegen.ll")
    return {m.group(1): line for line in ll.read_text().splitlines()
            if (m := re.match(r'define .*@"([^"]+)"\(', line))}


@pytest.mark.parametrize("kw", [
    dict(), dict(lhs="NHWC", rhs="HWIO", out="NHWC", stride=(2, 1), pad=((1, 1), (0, 1))),
    dict(t="f64", fgc=2), dict(bias=True, relu=True)], ids=["nchw", "nhwc", "f64-groups",
                                                            "epilogue"])
def test_control_code_skips_the_optimizer(kw, tmp_path, monkeypatch):
    """The chunk loop and an epilogue-free BLAS GEMM task are ``optnone`` (compile
    time); a GEMM task with a fused epilogue stays optimized, and so does an emitted
    im2col task (one that only calls the runtime's im2col, for feature-innermost
    outputs, is ``optnone``); results still match the interpreter. (These small NCHW
    cases would take the register-tiled kernel, a vector loop that stays optimized:
    kept on BLAS here.)"""
    from oxla_backend_cpu import conv_runtime, conv_smallk

    monkeypatch.setattr(conv_smallk, "MIN_COLS", 1 << 30)

    text, _ = conv_case(**kw)
    defs = _defines(tmp_path, text)
    (k,) = conv_kernels_of(text)
    assert "optnone" in defs[k.name] and "noinline" in defs[k.name]
    runtime = conv_runtime.supported(k.geom)
    assert runtime == (kw.get("out", "NCHW") == "NHWC")
    assert ("optnone" in defs[f"{k.name}.im2col"]) == runtime
    # nothing left to optimize (runtime im2col, no epilogue): level-0 code generation
    import llvmlite.binding as llvm
    from oxla_codegen_llvm.jit import control_only

    (opt,) = (tmp_path / "dump").glob("*6-optimized.ll")
    assert control_only(llvm.parse_assembly(opt.read_text())) == (
        runtime and k.epilogue is None)
    assert ("optnone" in defs[f"{k.name}.gemm"]) == (k.epilogue is None)
    check(**kw)


@pytest.mark.parametrize("kw,mode", [
    (dict(n=8, c=1, o=32, sp=(28, 28), k=(3, 3), pad=((1, 1), (1, 1))), "implicit"),
    (dict(n=2, c=1, o=16, sp=(50,), k=(10,), stride=(5,), lhs="NCW", rhs="OIW", out="NCW"),
     "gemm"),
    (dict(n=2, c=8, o=8, fgc=8, sp=(28, 28), k=(3, 3), pad=((1, 1), (1, 1))), "direct"),
], ids=["grayscale-first-conv", "waveform-first-conv", "depthwise"])
def test_one_input_feature_is_a_gemm_unless_grouped(kw, mode):
    """One group of one input feature is one GEMM over all output features (im2col, or
    implicit for rows of 28; the direct kernel ran it 3-6x slower); depthwise
    convolutions keep the direct kernel."""
    text, args = conv_case(**kw)
    assert [k.mode for k in conv_kernels_of(text)] == [mode]
    check(**kw)
