"""NCHW convolutions as an implicit GEMM: the register-tiled kernel reads shifted windows
of one zero-padded input copy instead of an im2col buffer.

An NCHW-layout GEMM-mode convolution (:mod:`oxla_backend_cpu.conv_gemm`) packs ``K``
(input features times window) rows of every output column into ``col`` and multiplies
``W[og, K] @ col[K, cols]``: ``K`` copies of the input for one read of each by the
GEMM. With few output features (a UNet's 16-32) that copy costs about as much as the
arithmetic: one thread ran 1x32x64x64 -> 16, 3x3, at 34 GMAC/s against a peak near 48.

Here the input of one image is copied once into a zero-padded buffer, each plane's
columns split by phase for a stride along the row (column ``p`` at ``[p % s][row][p //
s]``, as :func:`oxla_backend_cpu.conv_emit.emit_direct_plane` does for depthwise
convolutions), so every contraction element ``kk = (ci, dy, dx)`` of an output row ``y``
is one contiguous run ``pad[off[kk] + y * sh * wq + x]``: ``off`` is a constant table of
``K`` offsets. :func:`oxla_backend_cpu.conv_smallk.emit` then computes each output row
with that table in place of ``col``'s row stride: ``8 x 2`` vector tiles of
accumulators over ``kk``, the fused epilogue on each tile in L1 (the summation order is
``kk`` ascending with FMA contraction, as the GEMM path's; spec section "convolution":
padding elements are zeros, so ``0 * w`` terms are exact). Without padding and with a
unit column stride the input is copied all the same: read in place, planes of a
power-of-two size (32x32 floats, 4 KiB) put a tile's ``K`` rows in the same L1 sets
(2x16x32x32 -> 32, 3x3 unpadded: 82 GMAC/s against im2col's 91 on one Zen 5 thread).

Work: per image, one parallel loop copies the planes, a second computes items ``(group,
output row)``, each over all output features of the group (one row of ``pad`` is reused
from L1 by every block of 8 features). Rows of at most one vector (16x16 planes) go two
to an item, stacked in one register tile, so that each broadcast weight feeds two FMAs:
one thread, 1x64x16x16 -> 64, 3x3, ran at 96 GMAC/s one row at a time.
"""

from __future__ import annotations

import itertools

import llvmlite.ir as ir
from oxla_codegen_llvm import Scalar, for_range

from oxla_backend_cpu import conv_smallk
from oxla_backend_cpu.conv_emit import (
    I64,
    control_only,
    copy_phases,
    elem_gep,
    emit_epilogue,
    fill_zero,
    float_type,
    i64c,
    plane_extent,
    smin,
    task_function,
)
from oxla_backend_cpu.parallel import MIN_ELEMENTS_PER_CHUNK, call_parallel, num_threads, runtime

COL_BLOCK = 256
"""Output columns per work item when a row is longer than two of these (1-D signals:
a 2x64x3199 -> 1599 convolution would be one item per image), a multiple of the
register tile's width."""

MIN_LANE_USE = 0.75
"""Least share of vector lanes an output row fills (``Wo / (ceil(Wo / lanes) * lanes)``):
rows of 8 columns in 16-lane vectors (ResNet's 8x8 planes) keep the im2col GEMM, whose
columns run across rows; 12-16 take one masked vector."""


def geometry(g) -> tuple[int | None, int] | None:
    """``(ia, ij)``, the spatial indices of the output's rows and columns (``ia`` None
    for one spatial dimension: one row), when :class:`~oxla_backend_cpu.conv.ConvGeom`
    ``g`` runs here: one or two spatial dimensions, input and output ``[batch, feature,
    rows, cols]`` or ``[batch, feature, cols]`` (the same spatial order), any
    kernel layout (:func:`~oxla_backend_cpu.conv.conv_kernels` copies one whose output
    feature is neither first nor last to ``[O, rest]``), feature groups but no batch
    groups, no input dilation, several input features per group or one group,
    ``K`` at most
    :data:`conv_smallk.MAX_K`, output rows whose vectors are filled to
    :data:`MIN_LANE_USE`, and FMA vectors on the host."""
    if g.ns not in (1, 2) or g.bgc != 1 or any(d != 1 for d in g.ldil) or \
            (g.cg < 2 and g.G > 1):
        return None
    if g.ib != 0 or g.if_ != 1 or g.ob != 0 or g.of != 1:
        return None
    if g.ns == 1:
        ia, ij = None, 0
    else:
        ia, ij = g.osd.index(2), g.osd.index(3)
        if g.isd[ia] != 2:
            return None
    if g.isd[ij] != g.ns + 1 or g.k_size > conv_smallk.MAX_K:
        return None
    lanes = conv_smallk.lanes_for(g.dtype)
    wo = g.os[-1]
    if not lanes or wo / (-(-wo // lanes) * lanes) < MIN_LANE_USE:
        return None
    return ia, ij


def _rows(g, ia: int | None) -> int:
    """Rows of the padded plane (1 for one spatial dimension)."""
    return 1 if ia is None else plane_extent(g, ia)


def layout(g, ia: int | None, ij: int) -> tuple[int, int, int, int]:
    """``(plane, phase, wq, sw)``: the element strides of the padded copy the GEMM
    reads (per input feature, per phase, per row) and the column stride."""
    sw = g.strides[ij]
    rows, cols = _rows(g, ia), plane_extent(g, ij)
    wq = -(-cols // sw)
    return sw * rows * wq, rows * wq, wq, sw


def pad_elements(g) -> int:
    """Elements of the padded copy of one image."""
    ia, ij = geometry(g)
    return g.ls[1] * layout(g, ia, ij)[0]


def offsets(g, ia: int | None, ij: int) -> list[int]:
    """The element offset of contraction element ``kk`` (the kernel's order without its
    output feature, :attr:`ConvGeom.k_roles`) in the buffer, for output ``(0, 0)`` of
    group 0: ``ci * plane + (q % sw) * phase + dy * dh * wq + q // sw`` with ``q = dx *
    dw`` (reversed window positions counted from the far end)."""
    plane, phase, wq, sw = layout(g, ia, ij)
    roles = g.k_roles
    out = []
    for idx in itertools.product(*(range(g.extent(r)) for r in roles)):
        off = 0
        for r, v in zip(roles, idx):
            if r == "ci":
                off += v * plane
                continue
            i = int(r[1:])
            q = ((g.extent(r) - 1 - v) if g.rev[i] else v) * g.rdil[i]
            off += q * wq if i == ia else (q % sw) * phase + q // sw
        out.append(off)
    return out


def column_block(g, wo: int, row_items: int, stack: int, threads: int | None = None) -> int:
    """Output columns per work item: whole rows, or blocks of :data:`COL_BLOCK` for rows
    longer than two of them; fewer, whole register tiles, when the image has fewer than
    4 items per thread otherwise (``row_items``: items of whole rows; ``threads``:
    :func:`~oxla_backend_cpu.parallel.num_threads` at compile time, only the split
    depends on it). A 1-D 2x128x799 -> 399 convolution was one item per image: two
    threads ran it in 350 us against one thread's 329."""
    cbw = wo if wo <= 2 * COL_BLOCK else COL_BLOCK
    t = num_threads() if threads is None else threads
    tile = conv_smallk.NV * conv_smallk.lanes_for(g.dtype)
    if stack == 1 and t > 1 and tile and row_items * -(-wo // cbw) < 4 * t:
        blocks = min(-(-4 * t // row_items), max(1, wo // (2 * tile)))
        per = -(-wo // blocks)
        cbw = min(cbw, -(-per // tile) * tile)
    return cbw


def emit_implicit(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                  pad: ir.Value, extras: list[ir.Value]) -> None:
    """The body of an ``implicit``-mode :class:`~oxla_backend_cpu.conv.ConvKernel`
    (module doc): per image, the parallel copy into ``pad`` and the parallel row GEMMs
    with the fused epilogue."""
    g = k.geom
    ia, ij = geometry(g)
    plane, phase, wq, sw = layout(g, ia, ij)
    ty = float_type(g)
    module, b = s.module, s.b
    control_only(b.function)
    runtime(module)
    c_in, wd, wo = g.ls[1], g.ls[-1], g.os[-1]
    h, ho = (1, 1) if ia is None else (g.ls[2], g.os[2])
    kk, og, o_tot, n_groups = g.k_size, g.og, g.o_tot, g.G
    table = offsets(g, ia, ij)
    tty = ir.ArrayType(I64, len(table))
    tab = ir.GlobalVariable(module, tty, f"{k.name}.offsets")
    tab.linkage, tab.global_constant = "internal", True
    tab.initializer = ir.Constant(tty, [i64c(x) for x in table])
    with b.goto_entry_block():
        prm = b.alloca(I64, 2, name=f"{k.name}.image")

    # the copy: items are input planes of image prm[0]; prm[1] = 1: zero the plane first
    copy_fn, cb = task_function(module, f"{k.name}.pad", 3, (1,))
    src, dst, cp = copy_fn.args[:3]
    start, end = copy_fn.args[3], copy_fn.args[4]
    bi = cb.load(cp, typ=I64)
    zero = cb.load(cb.gep(cp, [i64c(1)], source_etype=I64), typ=I64)
    lo_h, lo_w = (0 if ia is None else g.lo[ia]), g.lo[ij]
    rows = _rows(g, ia)
    r0, r1 = max(0, lo_h), min(rows, lo_h + h)
    with for_range(cb, end, "c", start) as c:
        base = cb.mul(c, i64c(plane))
        with cb.if_then(cb.icmp_signed("!=", zero, i64c(0))):
            fill_zero(cb, ty, dst, base, i64c(0), i64c(plane))
        if r0 < r1:
            xbase = cb.mul(cb.add(cb.mul(bi, i64c(c_in)), c), i64c(h * wd))
            with for_range(cb, i64c(r1), "pr", i64c(r0)) as row:
                xrow = cb.add(xbase, cb.mul(cb.sub(row, i64c(lo_h)), i64c(wd)))
                prow = cb.add(base, cb.mul(row, i64c(wq)))
                copy_phases(cb, ty, src, xrow, dst, prow, phase, sw, wq, lo_w, wd)
    cb.ret_void()

    # the GEMMs: items (group, run of output rows) of image prm[0]
    n_extra = len(extras)
    gemm_fn, gb = task_function(module, f"{k.name}.rows", 4 + n_extra, (2,))
    xs, wp, dst, gp = gemm_fn.args[:4]
    ex_p = list(gemm_fn.args[4:4 + n_extra])
    start, end = gemm_fn.args[4 + n_extra], gemm_fn.args[5 + n_extra]
    ts = Scalar(gb, module, s.target, s.fast_math)
    bi = gb.load(gp, typ=I64)
    sh = 1 if ia is None else g.strides[ia]
    xoff = gb.gep(tab, [i64c(0), i64c(0)], source_etype=tty)
    stack = 2 if wo <= conv_smallk.lanes_for(g.dtype) and ho >= 2 else 1
    per_group = -(-ho // stack)  # runs of `stack` output rows per group
    cbw = column_block(g, wo, n_groups * per_group, stack)
    ncb = -(-wo // cbw)  # column blocks per run
    with for_range(gb, end, "it", start) as it:
        gi = gb.udiv(it, i64c(per_group * ncb))
        rest = gb.urem(it, i64c(per_group * ncb))
        y = gb.mul(gb.udiv(rest, i64c(ncb)), i64c(stack))
        xc = gb.mul(gb.urem(rest, i64c(ncb)), i64c(cbw))  # the block's first column
        ncols = i64c(wo) if ncb == 1 else smin(gb, i64c(cbw), gb.sub(i64c(wo), xc))
        x0 = gb.add(gb.mul(gi, i64c(g.cg * plane)), gb.mul(y, i64c(sh * wq)))
        xrow = elem_gep(gb, ty, xs, gb.add(x0, xc))
        if k.w_major:  # W stored [O, K]
            wg, ldw = elem_gep(gb, ty, wp, gb.mul(gi, i64c(og * kk))), kk
        else:  # stored [K, O]
            wg, ldw = elem_gep(gb, ty, wp, gb.mul(gi, i64c(og))), o_tot
        fi0 = gb.mul(gi, i64c(og))
        c0 = gb.add(gb.mul(gb.add(gb.mul(bi, i64c(o_tot)), fi0), i64c(ho * wo)),
                    gb.add(gb.mul(y, i64c(wo)), xc))
        crow = elem_gep(gb, ty, dst, c0)

        def epilogue(orow, yy, j0, n, fi0=fi0, bi=bi, xc=xc):
            fi = gb.add(fi0, orow)
            x = gb.add(xc, j0)
            base = gb.add(gb.add(gb.mul(gb.add(gb.mul(bi, i64c(o_tot)), fi),
                                        i64c(ho * wo)), gb.mul(yy, i64c(wo))), x)
            pre = [bi, fi] if ia is None else [bi, fi, yy]
            emit_epilogue(ts, k, dst, ex_p, lambda j: pre + [gb.add(x, j)], base, n)

        def rows(nv: int, y=y, epilogue=epilogue, wg=wg, ldw=ldw, xrow=xrow, crow=crow,
                 ncols=ncols):
            """One output row (``nv`` None) or ``nv`` stacked rows from ``y``."""
            after = None
            if k.epilogue is not None and nv is None:
                def after(orow, j0, n):
                    epilogue(orow, y, j0, n)
            elif k.epilogue is not None:
                def after(orow, v, n):
                    epilogue(orow, gb.add(y, i64c(v)), i64c(0), n)
            conv_smallk.emit(gb, g.dtype, og, kk, k.w_major, ldw, wg, xrow, crow,
                             ncols, None, i64c(ho * wo), after, xoff,
                             None if nv is None else (nv, i64c(sh * wq), i64c(wo)))

        if stack == 1:
            rows(None)
        else:  # two rows, or the last one alone
            with gb.if_else(gb.icmp_signed("<", gb.add(y, i64c(1)), i64c(ho))) as (two, one):
                with two:
                    rows(2)
                with one:
                    rows(1)
    gb.ret_void()

    # per image: copy (the first image zeroes the padding), then the rows
    items = n_groups * per_group * ncb
    copy_grain = max(1, -(-MIN_ELEMENTS_PER_CHUNK // plane))
    with for_range(b, g.nb, "img") as bi:
        b.store(bi, prm)
        b.store(b.select(b.icmp_signed("==", bi, i64c(0)), i64c(1), i64c(0)),
                b.gep(prm, [i64c(1)], source_etype=I64))
        _run(b, module, copy_fn, [lhs, pad, prm], c_in, copy_grain)
        _run(b, module, gemm_fn, [pad, w, out, prm] + list(extras), items, 1)


def _run(b: ir.IRBuilder, module: ir.Module, fn: ir.Function, ptrs: list, n: int,
         grain: int) -> None:
    """``fn`` over ``[0, n)``: on the pool when ``n`` has two grains, else inline."""
    if n >= 2 * grain:
        call_parallel(b, module, fn, ptrs, n, grain)
    else:
        b.call(fn, list(ptrs) + [i64c(0), i64c(n)])

