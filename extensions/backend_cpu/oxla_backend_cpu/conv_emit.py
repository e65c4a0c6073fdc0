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
from oxla_codegen_llvm.loops import delinearize

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


# --- epilogue ---------------------------------------------------------------------------

def emit_epilogue(s: Scalar, k, out: ir.Value, extras: list[ir.Value], prefix: list,
              base: ir.Value, n: int) -> None:
    """Applies the fused loop kernel to one output row: index ``prefix + [j]``, element
    ``base + j``, for ``j < n``, reading the convolution's value there and overwriting
    it (the innermost loop is plain, so LLVM vectorizes it)."""
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
    b.cbranch(b.icmp_signed("<", j, i64c(n)), body, end)
    b.position_at_end(body)
    f.reset()
    # the epilogue reads the convolution only at its own index (fuse_conv_epilogues): the
    # value is loaded at the store's address, so LLVM sees an in-place update, not a
    # possible overlap that would keep the loop scalar
    at = b.add(base, j)
    f.scalars[conv] = load(s, out, conv.type.element_type, at)
    store(s, out, et, at, f.value_at(ep.root, list(prefix) + [j]))
    j.add_incoming(b.add(j, i64c(1), flags=["nsw"]), b.block)
    _no_interleave(b, b.branch(head))
    b.position_at_end(end)
    f.reset()


def _no_interleave(b: ir.IRBuilder, latch: ir.Instruction) -> None:
    """``llvm.loop.interleave.count = 1`` on the loop of back edge ``latch``: one vector
    per iteration, so a row of 96 floats is 6 AVX-512 vectors, not one 64-float
    iteration and 32 scalar ones."""
    from oxla_codegen_llvm.loops import loop_hint

    loop_hint(b, latch, "llvm.loop.interleave.count", ir.Constant(ir.IntType(32), 1))


# --- direct -----------------------------------------------------------------------------

def emit_direct(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                extras: list[ir.Value]) -> None:
    """Depthwise-like convolution by output blocks: a block spans the two innermost
    output dimensions (one when the second is not affine, :func:`_rows`), every other
    index fixed. The block is zeroed, then for each window element ``(ci, k...)``
    ``input[base + a*sa + j*sj] * kernel[wbase + a*wa + j*wj]`` is added over the
    valid ``a``/``j`` ranges (separate multiply and add; the innermost loop is
    contiguous in the output and vectorizes), then the epilogue runs on the block.
    Blocks run in parallel."""
    g = k.geom
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
    n_ptr = 3 + len(extras)
    fn, b = task_function(s.module, f"{k.name}.direct", n_ptr, (2,))
    ts = Scalar(b, s.module, s.target, s.fast_math)
    src, wp, dst = fn.args[:3]
    ex_p = list(fn.args[3:n_ptr])
    start, end = fn.args[n_ptr], fn.args[n_ptr + 1]
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
