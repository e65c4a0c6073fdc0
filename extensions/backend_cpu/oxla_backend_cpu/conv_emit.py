"""LLVM IR for :class:`~oxla_backend_cpu.conv.ConvKernel`: input addressing, the fused
epilogue and the direct (depthwise) kernel (the GEMM mode is
:mod:`oxla_backend_cpu.conv_gemm`), each a task run by oxla's parallel-for.

Row trick (im2col and direct): along the innermost index ``j`` of a row, the input
element read is affine (``base + j * step``) and, when ``j`` moves along a spatial
dimension without input dilation, the in-bounds ``j`` form one interval ``[ja, jb)``
computed once per row; the row is then plain loops (zeros, copy or multiply-add, zeros)
that LLVM vectorizes. Other rows (input dilation or window reversal on the innermost
index) test every element.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from oxla_codegen_llvm import FusedEmitter, Scalar, for_range, load, loop_nest, store
from oxla_codegen_llvm.loops import delinearize, loop_hint

from oxla_backend_cpu.parallel import call_parallel, grain_for, worth_parallel

PTR = ir.PointerType()
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()


def i64c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _floor_div(b: ir.IRBuilder, y: ir.Value, d: int) -> ir.Value:
    """``floor(y / d)`` for signed ``y`` (|y| < 2**40) and a constant ``d > 0``."""
    m = -(-(1 << 40) // d)
    return b.sub(b.sdiv(b.add(y, i64c(m * d)), i64c(d)), i64c(m))


def float_type(g) -> ir.Type:
    return ir.FloatType() if g.dtype == "f32" else ir.DoubleType()


def task_function(module: ir.Module, name: str, n_ptrs: int, noalias: tuple[int, ...] = ()
          ) -> tuple[ir.Function, ir.IRBuilder]:
    """``void name(ptr x n_ptrs, i64 start, i64 end)``; ``noalias`` marks parameters no
    other parameter overlaps."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * n_ptrs + [I64, I64]), name)
    fn.linkage = "internal"
    for i in noalias:
        fn.args[i].add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def control_only(fn: ir.Function) -> None:
    """Marks ``fn`` ``optnone`` (and ``noinline``, which ``optnone`` needs): it is scalar
    control code (the chunk loop, the loop over GEMM blocks and their library calls)
    that runs a few times per chunk or block, so LLVM's -O3 and instruction selection
    would buy nothing at run time, and they took about half of a small convolution's
    compile time."""
    for a in ("noinline", "optnone"):
        if a not in fn.attributes:
            fn.attributes.add(a)


def run_task(b: ir.IRBuilder, module: ir.Module, fn: ir.Function, ptrs: list, n: int,
             per_item: int) -> None:
    """Runs task ``fn`` over ``[0, n)``: on oxla's threads when worth it (``per_item``:
    elements of work per item), else on the calling thread."""
    if worth_parallel(n, per_item):
        call_parallel(b, module, fn, ptrs, n, grain_for(n, per_item))
    else:
        b.call(fn, list(ptrs) + [i64c(0), i64c(n)])


# --- input addressing ------------------------------------------------------------------

def lhs_at(b: ir.IRBuilder, g, idx: dict[str, ir.Value]):
    """(element offset in the input, per spatial dimension ``(q, in_bounds)``) for the
    index variables ``idx`` (roles ``b g ci o<i> k<i>``; ``q`` is the position in the
    padded, dilated input)."""
    lst = g.lst
    batch = idx["b"]
    if g.bgc > 1:
        batch = b.add(batch, b.mul(idx["g"], i64c(g.nb)))
    feat = idx["ci"]
    if g.fgc > 1:
        feat = b.add(feat, b.mul(idx["g"], i64c(g.cg)))
    off = b.add(b.mul(batch, i64c(lst[g.ib])), b.mul(feat, i64c(lst[g.if_])))
    dims = []
    for i in range(g.ns):
        kw = idx[f"k{i}"]
        if g.rev[i]:
            kw = b.sub(i64c(g.ks[g.ksd[i]] - 1), kw)
        q = b.sub(b.add(b.mul(idx[f"o{i}"], i64c(g.strides[i])), b.mul(kw, i64c(g.rdil[i]))),
                  i64c(g.lo[i]))
        size = g.ls[g.isd[i]]
        ok = b.and_(b.icmp_signed(">=", q, i64c(0)),
                    b.icmp_signed("<", q, i64c((size - 1) * g.ldil[i] + 1)))
        qq = q
        if g.ldil[i] != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(q, i64c(g.ldil[i])), i64c(0)))
            qq = b.sdiv(q, i64c(g.ldil[i]))
        off = b.add(off, b.mul(qq, i64c(lst[g.isd[i]])))
        dims.append((q, ok))
    return off, dims


def _affine(g, last: str) -> tuple[int, int, int] | None:
    """For an innermost index of role ``last``: ``(input step, spatial dim or -1, q
    step)``, or None when a row must test every element."""
    lst = g.lst
    if last == "b":
        return lst[g.ib], -1, 0
    if last == "ci":
        return lst[g.if_], -1, 0
    if last == "g":
        return (g.nb * lst[g.ib] if g.bgc > 1 else 0) + \
            (g.cg * lst[g.if_] if g.fgc > 1 else 0), -1, 0
    i = int(last[1:])
    if g.ldil[i] != 1:
        return None
    if last[0] == "o":
        return g.strides[i] * lst[g.isd[i]], i, g.strides[i]
    if g.rev[i]:
        return None
    return g.rdil[i] * lst[g.isd[i]], i, g.rdil[i]


def _rows(b: ir.IRBuilder, g, idx: dict[str, ir.Value], roles: list[tuple[str, int]]):
    """``(base, [(step, ja, jb), ...])``: a block of indices ``j_1..j_m`` of roles
    ``roles`` (``(role, extent)``, the others fixed by ``idx``) reads input
    ``base + sum(j_i * step_i)`` where every ``j_i`` is in ``[ja_i, jb_i)``, zeros
    elsewhere (all ranges empty when a fixed index is out of bounds); None when a role
    is not affine (:func:`_affine`)."""
    affs = [_affine(g, r) for r, _ in roles]
    if any(a is None for a in affs):
        return None
    off, dims = lhs_at(b, g, {**idx, **{r: i64c(0) for r, _ in roles}})
    own = {a[1] for a in affs}
    flag = ir.Constant(I1, 1)
    for i, (_, ok) in enumerate(dims):
        if i not in own:
            flag = b.and_(flag, ok)
    out = []
    for (_, n), (step, dim, qstep) in zip(roles, affs):
        ja, jb = i64c(0), i64c(n)
        if dim >= 0:
            q0 = dims[dim][0]
            size = g.ls[g.isd[dim]]
            ja = smin(b, smax(b, b.sub(i64c(0), _floor_div(b, q0, qstep)), i64c(0)), i64c(n))
            jb = smin(b, b.add(_floor_div(b, b.sub(i64c(size - 1), q0), qstep), i64c(1)),
                       i64c(n))
            jb = smax(b, jb, ja)
        out.append((step, b.select(flag, ja, i64c(0)), b.select(flag, jb, i64c(0))))
    return off, out


def input_row(b: ir.IRBuilder, g, idx: dict[str, ir.Value], last: str, n: int):
    """``(base, step, ja, jb)``: :func:`_rows` for one role."""
    got = _rows(b, g, idx, [(last, n)])
    if got is None:
        return None
    off, [(step, ja, jb)] = got
    return off, step, ja, jb


def whole_row(b: ir.IRBuilder, g, idx: dict[str, ir.Value], last: str):
    """``(base, step, ok)`` when the index of role ``last`` moves along no spatial
    dimension of the input (channels, a group, the batch): its whole row reads
    ``base + j * step`` when ``ok``, and is zero padding otherwise (what
    :func:`input_row` says as ``ja = 0`` and ``jb = ok ? n : 0``); None for a row along
    a spatial dimension."""
    aff = _affine(g, last)
    if aff is None or aff[1] >= 0:
        return None
    off, dims = lhs_at(b, g, {**idx, last: i64c(0)})
    ok = ir.Constant(I1, 1)
    for _, d_ok in dims:
        ok = b.and_(ok, d_ok)
    return off, aff[0], ok


def elem_gep(b: ir.IRBuilder, ty: ir.Type, p: ir.Value, off: ir.Value) -> ir.Value:
    return b.gep(p, [off], source_etype=ty, inbounds=True)


def fill_zero(b: ir.IRBuilder, ty: ir.Type, p: ir.Value, row: ir.Value, lo, hi) -> None:
    with for_range(b, hi, "z", lo) as j:
        b.store(ir.Constant(ty, 0.0), elem_gep(b, ty, p, b.add(row, j)))


MAX_SHUFFLE_STEP = 4
"""Largest input step of an im2col row copied by wide loads and a lane shuffle
(:func:`strided_blocks`); LLVM vectorized such rows with gathers, which made the
im2col of a stride-2 NCHW convolution 2-3x the cost of its GEMM."""


def masked_intrinsic(module: ir.Module, kind: str, vec: ir.VectorType) -> ir.Function:
    """``llvm.masked.load``/``llvm.masked.store`` for ``vec`` (opaque pointers)."""
    elt = "f32" if isinstance(vec.element, ir.FloatType) else "f64"
    name = f"llvm.masked.{kind}.v{vec.count}{elt}.p0"
    mvec = ir.VectorType(I1, vec.count)
    fty = ir.FunctionType(vec, [PTR, I32, mvec, vec]) if kind == "load" else \
        ir.FunctionType(VOID, [vec, PTR, I32, mvec])
    return module.globals.get(name) or ir.Function(module, fty, name)


def strided_blocks(b: ir.IRBuilder, ty: ir.Type, src: ir.Value, dst: ir.Value,
                    off: ir.Value, step: int, ja: ir.Value, jb: ir.Value,
                    row0: ir.Value) -> None:
    """``dst[row0 + j] = src[off + j * step]`` for ``j`` in ``[ja, jb)``, in blocks of
    one 64-byte vector of ``j``: each block is a masked load of ``step`` vectors and a
    shuffle picking every ``step``-th lane, then a masked store. The load's mask stops
    at the block's last valid element, so nothing past the row's valid range is read
    (no fault at the end of the input) and the store writes only ``[ja, jb)``."""
    size = 4 if isinstance(ty, ir.FloatType) else 8
    vl = 64 // size
    module = b.module
    wide, vec = ir.VectorType(ty, vl * step), ir.VectorType(ty, vl)
    lanes_w = ir.Constant(ir.VectorType(I32, vl * step), list(range(vl * step)))
    lanes = ir.Constant(ir.VectorType(I32, vl), list(range(vl)))
    mask = ir.Constant(ir.VectorType(I32, vl), [i * step for i in range(vl)])
    load, store = masked_intrinsic(module, "load", wide), masked_intrinsic(module, "store", vec)
    align = ir.Constant(I32, size)
    undef = ir.Constant(wide, ir.Undefined)

    def splat(x: ir.Value, n: int) -> ir.Value:
        v = b.insert_element(ir.Constant(ir.VectorType(I32, n), ir.Undefined), x,
                             ir.Constant(I32, 0))
        return b.shuffle_vector(v, ir.Constant(ir.VectorType(I32, n), ir.Undefined),
                                ir.Constant(ir.VectorType(I32, n), [0] * n))

    nblk = b.sdiv(b.add(b.sub(jb, ja), i64c(vl - 1)), i64c(vl))
    with for_range(b, nblk, "sv") as v:
        j = b.add(ja, b.mul(v, i64c(vl)))
        cnt = b.trunc(smin(b, i64c(vl), b.sub(jb, j)), I32)
        lim = b.add(b.mul(b.sub(cnt, ir.Constant(I32, 1)), ir.Constant(I32, step)),
                    ir.Constant(I32, 1))
        mw = b.icmp_unsigned("<", lanes_w, splat(lim, vl * step))
        x = b.call(load, [elem_gep(b, ty, src, b.add(off, b.mul(j, i64c(step)))), align, mw,
                          undef])
        y = b.shuffle_vector(x, undef, mask)
        b.call(store, [y, elem_gep(b, ty, dst, b.add(row0, j)), align,
                       b.icmp_unsigned("<", lanes, splat(cnt, vl))])


# --- epilogue ---------------------------------------------------------------------------

def emit_epilogue(s: Scalar, k, out: ir.Value, extras: list[ir.Value], prefix,
              base: ir.Value, n: int | ir.Value) -> None:
    """Applies the fused loop kernel to one output row: index ``prefix + [j]``, element
    ``base + j``, for ``j < n``, reading the convolution's value there and overwriting
    it (the innermost loop is plain, so LLVM vectorizes it; a constant ``n`` shorter
    than one 64-byte vector is one masked iteration). ``prefix`` may instead be a
    function of ``j`` giving the whole index (a run of a flattened output)."""
    ep = k.epilogue
    if ep is None:
        return
    b = s.b
    f = FusedEmitter(s, dict(zip(k.extra, extras)))
    et = ep.root.type.element_type
    conv = k.op.results[0]
    pre = b.block
    head, body, end = (b.append_basic_block(f"e.{x}") for x in ("head", "body", "end"))
    b.branch(head)
    b.position_at_end(head)
    j = b.phi(I64, name="e")
    j.add_incoming(i64c(0), pre)
    b.cbranch(b.icmp_signed("<", j, i64c(n) if isinstance(n, int) else n), body, end)
    b.position_at_end(body)
    f.reset()
    # the epilogue reads the convolution only at its own index (fuse_conv_epilogues): the
    # value is loaded at the store's address, so LLVM sees an in-place update, not a
    # possible overlap that would keep the loop scalar
    at = b.add(base, j)
    f.scalars[conv] = load(s, out, conv.type.element_type, at)
    index = prefix(j) if callable(prefix) else list(prefix) + [j]
    store(s, out, et, at, f.value_at(ep.root, index))
    j.add_incoming(b.add(j, i64c(1), flags=["nsw"]), b.block)
    latch = b.branch(head)
    count = n if isinstance(n, int) else getattr(n, "constant", None)
    if isinstance(count, int) and 1 < count < 64 // max(1, et.bitwidth // 8):
        # shorter than a vector: one masked iteration, not a scalar remainder loop
        loop_hint(b, latch, "llvm.loop.interleave.count", ir.Constant(ir.IntType(32), 1),
                  *_TAIL_MASKED)
    else:
        _no_interleave(b, latch)
    b.position_at_end(end)
    f.reset()


def _no_interleave(b: ir.IRBuilder, latch: ir.Instruction) -> None:
    """``llvm.loop.interleave.count = 1`` on the loop of back edge ``latch``: one vector
    per iteration, so a row of 96 floats is 6 AVX-512 vectors, not one 64-float
    iteration and 32 scalar ones."""
    loop_hint(b, latch, "llvm.loop.interleave.count", ir.Constant(ir.IntType(32), 1))


# --- direct -----------------------------------------------------------------------------

PLANE_BYTES = 64 << 10
"""Most bytes of the padded input plane :func:`emit_direct_plane` keeps on a thread's
stack (the same bound as the batched GEMM's stack panels)."""

PLANE_WINDOW = 64
"""Most window elements :func:`emit_direct_plane` unrolls (8x8)."""


def _direct_task(s: Scalar, name: str, extras: list):
    """A direct-kernel task ``name(src, w, dst, extras..., start, end)`` (``dst``
    noalias): ``(fn, builder, scalar emitter, (src, w, dst, extras, start, end))``."""
    n_ptr = 3 + len(extras)
    fn, b = task_function(s.module, name, n_ptr, (2,))
    a = fn.args
    return fn, b, Scalar(b, s.module, s.target, s.fast_math), \
        (a[0], a[1], a[2], list(a[3:n_ptr]), a[n_ptr], a[n_ptr + 1])


def plane_geometry(g) -> tuple[int, int] | None:
    """``(i_row, i_col)``, the spatial indices of the output's two innermost dimensions,
    when :func:`emit_direct_plane` handles ``g``: two spatial dimensions, one input
    feature per group, one batch group, no input dilation or window reversal, the
    input's two innermost dimensions the same spatial dimensions in the same order (a
    contiguous plane per batch and feature), a window of at most :data:`PLANE_WINDOW`
    elements and a padded, phase-split plane of at most :data:`PLANE_BYTES`."""
    if g.ns != 2 or g.cg != 1 or g.bgc != 1 or any(d != 1 for d in g.ldil) or any(g.rev):
        return None
    roles = [g.out_role(d) for d in range(len(g.os))]
    if roles[-2][0] != "o" or roles[-1][0] != "o":
        return None
    ia, ij = int(roles[-2][1:]), int(roles[-1][1:])
    nd = len(g.ls)
    if (g.isd[ia], g.isd[ij]) != (nd - 2, nd - 1):
        return None
    if g.ks[g.ksd[0]] * g.ks[g.ksd[1]] > PLANE_WINDOW:
        return None
    rows, cols = plane_extent(g, ia), plane_extent(g, ij)
    if g.strides[ij] * rows * -(-cols // g.strides[ij]) * g.itemsize > PLANE_BYTES:
        return None
    return ia, ij


_TAIL_MASKED = (("llvm.loop.vectorize.enable", ir.Constant(I1, 1)),
                ("llvm.loop.vectorize.predicate.enable", ir.Constant(I1, 1)))
"""Loop hints for output rows shorter than one 64-byte vector: one masked vector
iteration (a row of 12 floats), not scalar code. Longer rows keep LLVM's own choice:
masking every iteration ran 2x24 and 4x56 rows 1.2-1.4x slower than a full vector loop
and its remainder."""


def plane_extent(g, i: int) -> int:
    """Positions of the padded input that spatial dimension ``i``'s output reads."""
    return (g.os[g.osd[i]] - 1) * g.strides[i] + (g.ks[g.ksd[i]] - 1) * g.rdil[i] + 1


def emit_direct_plane(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                      extras: list[ir.Value], ia: int, ij: int) -> None:
    """Depthwise convolution one output plane (two innermost output dimensions, every
    other index fixed) at a time, for :func:`plane_geometry`'s shapes (NCHW/OIHW
    MobileNet blocks).

    The plane's input is copied into a zero-padded buffer on the thread's stack, its
    columns split by phase (column ``p`` at ``[p % stride][row][p // stride]``), so every
    window element reads a contiguous run; the padding is zeroed once per task and never
    written again. Each output element is then ``sum(x * w)`` over the window,
    unrolled in the window's order with the weights in registers, summed from zero in
    one register and stored once; the innermost loop has a constant trip count and
    vectorizes (padding elements contribute ``0 * w`` as in the spec's padded input,
    section "convolution"). The epilogue runs once over each output plane (rows of a
    6x6 plane are shorter than a vector: per row, its loop was all scalar remainder).
    Planes run in parallel."""
    g = k.geom
    ty = float_type(g)
    nd = len(g.os)
    out_roles = [g.out_role(d) for d in range(nd)]
    ho, wo = g.os[-2], g.os[-1]
    sh, sw = g.strides[ia], g.strides[ij]
    dh, dw = g.rdil[ia], g.rdil[ij]
    kh_n, kw_n = g.ks[g.ksd[ia]], g.ks[g.ksd[ij]]
    lo_h, lo_w = g.lo[ia], g.lo[ij]
    in_h, in_w = g.ls[-2], g.ls[-1]
    ph_rows = plane_extent(g, ia)
    wq = -(-plane_extent(g, ij) // sw)
    phase = ph_rows * wq
    lanes = 64 // g.itemsize
    nouter = math.prod(g.os[:-2])
    lst, kst = g.lst, g.kst
    fn, b, ts, (src, wp, dst, ex_p, start, end) = _direct_task(s, f"{k.name}.plane", extras)
    flags = ts.flags
    scr = b.alloca(ty, sw * phase, name="plane")
    scr.align = 64
    fill_zero(b, ty, scr, i64c(0), i64c(0), i64c(sw * phase))
    r0, r1 = max(0, lo_h), min(ph_rows, lo_h + in_h)  # plane rows with input
    with for_range(b, end, "r", start) as r:
        prefix = delinearize(b, r, g.os[:-2])
        fixed = dict(zip(out_roles[:-2], prefix))
        feat = fixed["f"]
        grp = b.udiv(feat, i64c(g.og)) if g.og > 1 else feat
        base = b.add(b.mul(fixed["b"], i64c(lst[g.ib])), b.mul(grp, i64c(lst[g.if_])))
        if r0 < r1:
            with for_range(b, r1, "pr", r0) as row:
                xrow = b.add(base, b.mul(b.sub(row, i64c(lo_h)), i64c(in_w)))
                prow = b.mul(row, i64c(wq))
                copy_phases(b, ty, src, xrow, scr, prow, phase, sw, wq, lo_w, in_w)
        wbase = b.mul(feat, i64c(kst[g.kof]))
        taps = []  # (weight, plane offset of the tap at output (0, 0))
        for a in range(kh_n):
            for c in range(kw_n):
                wo_ = b.add(wbase, i64c(a * kst[g.ksd[ia]] + c * kst[g.ksd[ij]]))
                q = c * dw
                taps.append((b.load(elem_gep(b, ty, wp, wo_), typ=ty),
                             (q % sw) * phase + a * dh * wq + q // sw))
        blk0 = b.mul(r, i64c(ho * wo))
        with for_range(b, ho, "a") as a:
            arow = b.mul(a, i64c(sh * wq))
            orow = b.add(blk0, b.mul(a, i64c(wo)))
            with for_range(b, wo, "j", hints=_TAIL_MASKED if wo < lanes else ()) as j:
                acc = ir.Constant(ty, 0.0)
                for wv, off in taps:
                    x = b.load(elem_gep(b, ty, scr, b.add(arow, b.add(j, i64c(off)))), typ=ty)
                    acc = b.fadd(acc, b.fmul(x, wv, flags=flags), flags=flags)
                b.store(acc, elem_gep(b, ty, dst, b.add(orow, j)))
        if k.epilogue is not None:  # once over the plane (contiguous): not per short row
            emit_epilogue(ts, k, dst, ex_p,
                          lambda j, prefix=prefix: prefix + delinearize(b, j, (ho, wo)),
                          blk0, ho * wo)
    b.ret_void()
    run_task(s.b, s.module, fn, [lhs, w, out] + list(extras), nouter,
             ho * wo * len(taps))


def copy_phases(b: ir.IRBuilder, ty: ir.Type, src, xrow, scr, prow, phase: int, sw: int,
                 wq: int, lo_w: int, in_w: int) -> None:
    """Copies one input row (``src[xrow + x]``, ``x < in_w``) into the phase-split plane
    row ``prow``: padded column ``p = x + lo_w`` goes to ``scr[ph*phase + prow + c]``
    with ``p = c*sw + ph``, for ``c < wq``. A stride up to :data:`MAX_SHUFFLE_STEP` is
    wide loads and a lane shuffle per phase (:func:`strided_blocks`; LLVM made gathers
    of it, which cost more than the convolution), a unit stride a plain loop."""
    for ph in range(sw):  # c with input: lo_w <= c*sw + ph < lo_w + in_w
        c0, c1 = max(0, -(-(lo_w - ph) // sw)), min(wq, -(-(lo_w + in_w - ph) // sw))
        if c0 >= c1:
            continue
        off = b.add(xrow, i64c(ph - lo_w))
        row0 = b.add(prow, i64c(ph * phase))
        if 2 <= sw <= MAX_SHUFFLE_STEP:
            strided_blocks(b, ty, src, scr, off, sw, i64c(c0), i64c(c1), row0)
            continue
        with for_range(b, c1, "pc", c0) as c:
            x = b.load(elem_gep(b, ty, src, b.add(off, b.mul(c, i64c(sw)))), typ=ty)
            b.store(x, elem_gep(b, ty, scr, b.add(row0, c)))


def emit_direct(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                extras: list[ir.Value]) -> None:
    """Depthwise-like convolution by output blocks: a block spans the two innermost
    output dimensions (one when the second is not affine, :func:`_rows`), every other
    index fixed. The block is zeroed, then for each window element ``(ci, k...)``
    ``input[base + a*sa + j*sj] * kernel[wbase + a*wa + j*wj]`` is added over the
    valid ``a``/``j`` ranges (separate multiply and add; the innermost loop is
    contiguous in the output and vectorizes), then the epilogue runs on the block.
    Blocks run in parallel. Planes of :func:`plane_geometry` go to
    :func:`emit_direct_plane`."""
    g = k.geom
    plane = plane_geometry(g)
    if plane is not None:
        emit_direct_plane(s, k, lhs, w, out, extras, *plane)
        return
    ty = float_type(g)
    out_roles = [g.out_role(d) for d in range(len(g.os))]
    kst = g.kst

    def lrole(r: str) -> str:  # og == 1: the group index is the output feature
        return "g" if r == "f" else r

    nblk = 2 if len(g.os) > 2 and (out_roles[-2] != "f" or g.og == 1) and \
        _affine(g, lrole(out_roles[-2])) is not None else 1
    broles = out_roles[-nblk:]
    bext = list(g.os[-nblk:])
    bsize = math.prod(bext)
    nouter = math.prod(g.os[:-nblk])
    win_roles = ["ci"] + [f"k{i}" for i in range(g.ns)]
    win_ext = [g.extent(r) for r in win_roles]
    fn, b, ts, (src, wp, dst, ex_p, start, end) = _direct_task(s, f"{k.name}.direct",
                                                                extras)
    flags = ts.flags
    wsteps = [kst[g.kof] if r == "f" else 0 for r in broles]
    with for_range(b, end, "r", start) as r:
        prefix = delinearize(b, r, g.os[:-nblk])
        fixed = dict(zip(out_roles[:-nblk], prefix))
        blk0 = b.mul(r, i64c(bsize))
        fill_zero(b, ty, dst, blk0, i64c(0), i64c(bsize))
        feat = fixed.get("f", i64c(0))
        with loop_nest(b, win_ext, "w") as widx:
            idx = dict(fixed)
            idx.update(zip(win_roles, widx))
            idx["g"] = b.udiv(feat, i64c(g.og)) if "f" in fixed else i64c(0)
            off, ranges = _rows(b, g, idx, [(lrole(x), n) for x, n in zip(broles, bext)])
            woff = b.mul(widx[0], i64c(kst[g.kif]))
            for i in range(g.ns):
                woff = b.add(woff, b.mul(widx[1 + i], i64c(kst[g.ksd[i]])))
            if "f" in fixed:
                woff = b.add(woff, b.mul(feat, i64c(kst[g.kof])))
            (sj, ja, jb) = ranges[-1]
            if nblk == 2:
                (sa, aa, ab) = ranges[0]
                ctx = for_range(b, ab, "a", aa)
                a = ctx.__enter__()
                xo = b.add(off, b.mul(a, i64c(sa)))
                wo = b.add(woff, b.mul(a, i64c(wsteps[0])))
                oo = b.add(blk0, b.mul(a, i64c(bext[-1])))
            else:
                xo, wo, oo = off, woff, blk0
            with for_range(b, jb, "j", ja) as j:
                x = b.load(elem_gep(b, ty, src, b.add(xo, b.mul(j, i64c(sj)))), typ=ty)
                y = b.load(elem_gep(b, ty, wp, b.add(wo, b.mul(j, i64c(wsteps[-1])))), typ=ty)
                pa = elem_gep(b, ty, dst, b.add(oo, j))
                b.store(b.fadd(b.load(pa, typ=ty), b.fmul(x, y, flags=flags), flags=flags), pa)
            if nblk == 2:
                ctx.__exit__(None, None, None)
        if k.epilogue is not None:
            with for_range(b, bext[0] if nblk == 2 else 1, "ea") as a:
                pre = prefix + [a] if nblk == 2 else prefix
                emit_epilogue(ts, k, dst, ex_p, pre, b.add(blk0, b.mul(a, i64c(bext[-1]))),
                          bext[-1])
    b.ret_void()
    run_task(s.b, s.module, fn, [lhs, w, out] + list(extras), nouter,
             bsize * math.prod(win_ext))
