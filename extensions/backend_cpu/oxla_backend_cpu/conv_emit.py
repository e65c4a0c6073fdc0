"""LLVM IR for :class:`~oxla_backend_cpu.conv.ConvKernel`: im2col packing, per-group
BLAS GEMMs and the direct (depthwise) kernel, each a task run by oxla's parallel-for,
with the fused elementwise epilogue applied to every block of output just written.

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
from oxla_codegen_llvm import FusedEmitter, Scalar, for_range, loop_nest, store
from oxla_codegen_llvm.loops import delinearize
from oxla_codegen_llvm.parallel import call_parallel, grain_for, worth_parallel

from oxla_backend_cpu.blas import _set_one_thread, restore_threads, set_gemm_threads

PTR = ir.PointerType()
I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
ITEM_FLOPS = 1 << 22  # GEMM work per parallel item (~0.1 ms of one core)


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _floor_div(b: ir.IRBuilder, y: ir.Value, d: int) -> ir.Value:
    """``floor(y / d)`` for signed ``y`` (|y| < 2**40) and a constant ``d > 0``."""
    m = -(-(1 << 40) // d)
    return b.sub(b.sdiv(b.add(y, _c(m * d)), _c(d)), _c(m))


def _ftype(g) -> ir.Type:
    return ir.FloatType() if g.dtype == "f32" else ir.DoubleType()


def _task(module: ir.Module, name: str, n_ptrs: int, noalias: tuple[int, ...] = ()
          ) -> tuple[ir.Function, ir.IRBuilder]:
    """``void name(ptr x n_ptrs, i64 start, i64 end)``; ``noalias`` marks parameters no
    other parameter overlaps."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * n_ptrs + [I64, I64]), name)
    fn.linkage = "internal"
    for i in noalias:
        fn.args[i].add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _run(b: ir.IRBuilder, module: ir.Module, fn: ir.Function, ptrs: list, n: int,
         per_item: int) -> None:
    """Runs task ``fn`` over ``[0, n)``: on oxla's threads when worth it (``per_item``:
    elements of work per item), else on the calling thread."""
    if worth_parallel(n, per_item):
        call_parallel(b, module, fn, ptrs, n, grain_for(n, per_item))
    else:
        b.call(fn, list(ptrs) + [_c(0), _c(n)])


# --- input addressing ------------------------------------------------------------------

def _lhs_at(b: ir.IRBuilder, g, idx: dict[str, ir.Value]):
    """(element offset in the input, per spatial dimension ``(q, in_bounds)``) for the
    index variables ``idx`` (roles ``b g ci o<i> k<i>``; ``q`` is the position in the
    padded, dilated input)."""
    lst = g.lst
    batch = idx["b"]
    if g.bgc > 1:
        batch = b.add(batch, b.mul(idx["g"], _c(g.nb)))
    feat = idx["ci"]
    if g.fgc > 1:
        feat = b.add(feat, b.mul(idx["g"], _c(g.cg)))
    off = b.add(b.mul(batch, _c(lst[g.ib])), b.mul(feat, _c(lst[g.if_])))
    dims = []
    for i in range(g.ns):
        kw = idx[f"k{i}"]
        if g.rev[i]:
            kw = b.sub(_c(g.ks[g.ksd[i]] - 1), kw)
        q = b.sub(b.add(b.mul(idx[f"o{i}"], _c(g.strides[i])), b.mul(kw, _c(g.rdil[i]))),
                  _c(g.lo[i]))
        size = g.ls[g.isd[i]]
        ok = b.and_(b.icmp_signed(">=", q, _c(0)),
                    b.icmp_signed("<", q, _c((size - 1) * g.ldil[i] + 1)))
        qq = q
        if g.ldil[i] != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(q, _c(g.ldil[i])), _c(0)))
            qq = b.sdiv(q, _c(g.ldil[i]))
        off = b.add(off, b.mul(qq, _c(lst[g.isd[i]])))
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


def _row(b: ir.IRBuilder, g, idx: dict[str, ir.Value], last: str, n: int):
    """``(base, step, ja, jb)``: the row reads input ``base + j * step`` for ``j`` in
    ``[ja, jb)`` and zeros elsewhere (``idx[last]`` is ignored); None when the row's
    index is not affine (:func:`_affine`)."""
    aff = _affine(g, last)
    if aff is None:
        return None
    step, dim, qstep = aff
    off, dims = _lhs_at(b, g, {**idx, last: _c(0)})
    flag = ir.Constant(I1, 1)
    for i, (_, ok) in enumerate(dims):
        if i != dim:
            flag = b.and_(flag, ok)
    ja, jb = _c(0), _c(n)
    if dim >= 0:
        q0 = dims[dim][0]
        size = g.ls[g.isd[dim]]
        ja = _smin(b, _smax(b, b.sub(_c(0), _floor_div(b, q0, qstep)), _c(0)), _c(n))
        jb = _smin(b, b.add(_floor_div(b, b.sub(_c(size - 1), q0), qstep), _c(1)), _c(n))
        jb = _smax(b, jb, ja)
    ja = b.select(flag, ja, _c(0))
    jb = b.select(flag, jb, _c(0))
    return off, step, ja, jb


def _gep(b: ir.IRBuilder, ty: ir.Type, p: ir.Value, off: ir.Value) -> ir.Value:
    return b.gep(p, [off], source_etype=ty, inbounds=True)


def _fill_zero(b: ir.IRBuilder, ty: ir.Type, p: ir.Value, row: ir.Value, lo, hi) -> None:
    with for_range(b, hi, "z", lo) as j:
        b.store(ir.Constant(ty, 0.0), _gep(b, ty, p, b.add(row, j)))


# --- im2col -----------------------------------------------------------------------------

def emit_im2col(s: Scalar, k, lhs: ir.Value, col: ir.Value) -> None:
    """Fills ``col`` (layout :meth:`ConvGeom.col_roles`) from the input, zeros for
    padding and holes, in parallel over its rows (all dimensions but the innermost)."""
    g = k.geom
    roles = g.col_roles()
    ext = [g.extent(r) for r in roles]
    n, rows = ext[-1], math.prod(ext[:-1])
    ty = _ftype(g)
    fn, b = _task(s.module, f"{k.name}.im2col", 2, (0, 1))
    start, end = fn.args[2], fn.args[3]
    src, dst = fn.args[0], fn.args[1]
    with for_range(b, end, "r", start) as r:
        idx = dict(zip(roles[:-1], delinearize(b, r, ext[:-1])))
        base_row = b.mul(r, _c(n))
        row = _row(b, g, idx, roles[-1], n)
        if row is not None:
            off, step, ja, jb = row
            _fill_zero(b, ty, dst, base_row, _c(0), ja)
            with for_range(b, jb, "j", ja) as j:
                x = b.load(_gep(b, ty, src, b.add(off, b.mul(j, _c(step)))), typ=ty)
                b.store(x, _gep(b, ty, dst, b.add(base_row, j)))
            _fill_zero(b, ty, dst, base_row, jb, _c(n))
        else:
            with for_range(b, n, "j") as j:
                off, dims = _lhs_at(b, g, {**idx, roles[-1]: j})
                ok = ir.Constant(I1, 1)
                for _, d_ok in dims:
                    ok = b.and_(ok, d_ok)
                x = b.load(_gep(b, ty, src, b.select(ok, off, _c(0))), typ=ty)
                b.store(b.select(ok, x, ir.Constant(ty, 0.0)),
                        _gep(b, ty, dst, b.add(base_row, j)))
    b.ret_void()
    _run(s.b, s.module, fn, [lhs, col], rows, n)


# --- epilogue ---------------------------------------------------------------------------

def _epilogue(s: Scalar, k, out: ir.Value, extras: list[ir.Value], prefix: list,
              base: ir.Value, n: int) -> None:
    """Applies the fused loop kernel to one output row: index ``prefix + [j]``, element
    ``base + j``, for ``j < n``, reading the convolution's value there and overwriting
    it (the innermost loop is plain, so LLVM vectorizes it)."""
    ep = k.epilogue
    if ep is None:
        return
    b = s.b
    f = FusedEmitter(s, {k.op.results[0]: out, **dict(zip(k.extra, extras))})
    et = ep.root.type.element_type
    with for_range(b, n, "e") as j:
        f.reset()
        store(s, out, et, b.add(base, j), f.value_at(ep.root, list(prefix) + [j]))
    f.reset()


# --- GEMM -------------------------------------------------------------------------------

def _blocks(items_outer: int, extent: int, flops: float) -> tuple[int, int]:
    """(blocks, size): split ``extent`` so that ``items_outer * blocks`` items hold
    about :data:`ITEM_FLOPS` each, blocks no thinner than 16, at most 64."""
    want = max(1, int(flops // ITEM_FLOPS))
    if items_outer >= want:
        return 1, extent
    blocks = max(1, min(-(-want // items_outer), extent // 16, 64))
    size = -(-extent // blocks)
    return -(-extent // size), size


def emit_conv_gemms(s: Scalar, k, src: ir.Value, w: ir.Value, out: ir.Value,
                    extras: list[ir.Value]) -> None:
    """One GEMM per group and work item (see :mod:`oxla_backend_cpu.conv`'s layouts)
    through single-threaded BLAS calls on oxla's threads, then the epilogue on the
    item's output."""
    g = k.geom
    module = s.module
    ty = _ftype(g)
    kk, og, o_tot, G = g.k_size, g.og, g.o_tot, g.G
    flops = 2.0 * math.prod(g.os) * kk
    if g.feature_last:
        p = math.prod(g.os[:-1])
        nblk, size = _blocks(1, p, flops)
        items, outer_n, inner = nblk, 1, 1
    else:
        outer_n, inner = math.prod(g.os[:g.of]), math.prod(g.os[g.of + 1:])
        n_last = g.os[-1]
        nblk, size = _blocks(outer_n, inner, flops)
        size = -(-size // n_last) * n_last
        nblk = -(-inner // size)
        items = outer_n * nblk
    n_ptr = 3 + len(extras)
    fn, b = _task(module, f"{k.name}.gemm", n_ptr, (2,))
    ts = Scalar(b, module, s.target, s.fast_math)
    a_p, w_p, c_p = fn.args[:3]
    ex_p = list(fn.args[3:n_ptr])
    start, end = fn.args[n_ptr], fn.args[n_ptr + 1]
    _set_one_thread(b, module)
    name = "oxla_sgemm" if g.dtype == "f32" else "oxla_dgemm"
    gemm = module.globals.get(name) or ir.Function(
        module, ir.FunctionType(VOID, [PTR] * 13), name)
    with b.goto_entry_block():
        slots = {nm: b.alloca(t, name=nm) for nm, t in (
            ("ta", I8), ("tb", I8), ("m", I32), ("n", I32), ("k", I32), ("lda", I32),
            ("ldb", I32), ("ldc", I32), ("alpha", ty), ("beta", ty))}
    b.store(ir.Constant(ty, 1.0), slots["alpha"])
    b.store(ir.Constant(ty, 0.0), slots["beta"])
    b.store(ir.Constant(I32, kk), slots["k"])

    def call(m, n, a, ta: bool, lda: int, bm, tb: bool, ldb: int, cm, ldc: int) -> None:
        """Row-major ``C[m,n] = op(A) op(B)`` as Fortran ``C^T = op(B)^T op(A)^T``."""
        b.store(ir.Constant(I8, ord("T" if tb else "N")), slots["ta"])
        b.store(ir.Constant(I8, ord("T" if ta else "N")), slots["tb"])
        b.store(b.trunc(n, I32), slots["m"])
        b.store(b.trunc(m, I32), slots["n"])
        b.store(ir.Constant(I32, max(1, ldb)), slots["lda"])
        b.store(ir.Constant(I32, max(1, lda)), slots["ldb"])
        b.store(ir.Constant(I32, max(1, ldc)), slots["ldc"])
        b.call(gemm, [slots["ta"], slots["tb"], slots["m"], slots["n"], slots["k"],
                      slots["alpha"], bm, slots["lda"], a, slots["ldb"], slots["beta"], cm,
                      slots["ldc"]])

    with for_range(b, end, "it", start) as it:
        if g.feature_last:
            r0 = b.mul(it, _c(size))
            cnt = b.sub(_smin(b, b.add(r0, _c(size)), _c(p)), r0)
            with for_range(b, G, "grp") as gi:
                a = _gep(b, ty, a_p, b.add(b.mul(r0, _c(G * kk)), b.mul(gi, _c(kk))))
                if k.w_major:  # stored [og, K]
                    wm = _gep(b, ty, w_p, b.mul(gi, _c(og * kk)))
                    wt, ldw = True, kk
                else:  # stored [K, O]
                    wm = _gep(b, ty, w_p, b.mul(gi, _c(og)))
                    wt, ldw = False, o_tot
                cm = _gep(b, ty, c_p, b.add(b.mul(r0, _c(o_tot)), b.mul(gi, _c(og))))
                call(cnt, _c(og), a, False, G * kk, wm, wt, ldw, cm, o_tot)
            if k.epilogue is not None:
                with for_range(b, b.add(r0, cnt), "ep", r0) as pi:
                    _epilogue(ts, k, c_p, ex_p, delinearize(b, pi, g.os[:-1]),
                              b.mul(pi, _c(o_tot)), o_tot)
        else:
            o = b.udiv(it, _c(nblk))
            c0 = b.mul(b.urem(it, _c(nblk)), _c(size))
            cnt = b.sub(_smin(b, b.add(c0, _c(size)), _c(inner)), c0)
            with for_range(b, G, "grp") as gi:
                if k.w_major:  # A = W_g [og, K]
                    wm = _gep(b, ty, w_p, b.mul(gi, _c(og * kk)))
                    wt, ldw = False, kk
                else:  # stored [K, O]: A = W_g^T
                    wm = _gep(b, ty, w_p, b.mul(gi, _c(og)))
                    wt, ldw = True, o_tot
                bm = _gep(b, ty, a_p, b.add(b.mul(b.add(b.mul(o, _c(G)), gi),
                                                  _c(kk * inner)), c0))
                cm = _gep(b, ty, c_p, b.add(b.add(b.mul(o, _c(o_tot * inner)),
                                                  b.mul(gi, _c(og * inner))), c0))
                call(_c(og), cnt, wm, wt, ldw, bm, False, inner, cm, inner)
            if k.epilogue is not None:  # blocks hold whole rows of the innermost dim
                oidx = delinearize(b, o, g.os[:g.of])
                with for_range(b, o_tot, "ef") as fi, \
                        for_range(b, b.udiv(b.add(c0, cnt), _c(n_last)), "er",
                                  b.udiv(c0, _c(n_last))) as ri:
                    base = b.add(b.add(b.mul(o, _c(o_tot * inner)), b.mul(fi, _c(inner))),
                                 b.mul(ri, _c(n_last)))
                    _epilogue(ts, k, c_p, ex_p,
                              oidx + [fi] + delinearize(b, ri, g.os[g.of + 1:-1]), base,
                              n_last)
    b.ret_void()
    old = set_gemm_threads(s.b, module, 1.0)
    ptrs = [src, w, out] + list(extras)
    if items >= 2 and flops >= 2 * ITEM_FLOPS:
        call_parallel(s.b, module, fn, ptrs, items, 1)
    else:
        s.b.call(fn, ptrs + [_c(0), _c(items)])
    restore_threads(s.b, module, old)


# --- direct -----------------------------------------------------------------------------

def emit_direct(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                extras: list[ir.Value]) -> None:
    """Depthwise-like convolution: for each output row (every output dimension but the
    innermost), zero it, then for each window element ``(ci, k...)`` add
    ``input[base + j*step] * kernel[wbase + j*wstep]`` over the row's valid ``j``
    (separate multiply and add), then apply the epilogue to the row. Rows run in
    parallel."""
    g = k.geom
    ty = _ftype(g)
    out_roles = [g.out_role(d) for d in range(len(g.os))]
    n, rows = g.os[-1], math.prod(g.os[:-1])
    last = out_roles[-1]
    win_roles = ["ci"] + [f"k{i}" for i in range(g.ns)]
    win_ext = [g.extent(r) for r in win_roles]
    kst = g.kst
    n_ptr = 3 + len(extras)
    fn, b = _task(s.module, f"{k.name}.direct", n_ptr, (2,))
    ts = Scalar(b, s.module, s.target, s.fast_math)
    src, wp, dst = fn.args[:3]
    ex_p = list(fn.args[3:n_ptr])
    start, end = fn.args[n_ptr], fn.args[n_ptr + 1]
    flags = ts.flags
    lrole = "g" if last == "f" else last  # og == 1: the group is the output feature
    wstep = kst[g.kof] if last == "f" else 0
    with for_range(b, end, "r", start) as r:
        prefix = delinearize(b, r, g.os[:-1])
        fixed = dict(zip(out_roles[:-1], prefix))
        row0 = b.mul(r, _c(n))
        _fill_zero(b, ty, dst, row0, _c(0), _c(n))
        feat = fixed.get("f", _c(0))
        grp = b.udiv(feat, _c(g.og)) if last != "f" else _c(0)
        with loop_nest(b, win_ext, "w") as widx:
            idx = dict(fixed)
            idx.update(zip(win_roles, widx))
            idx["g"] = grp
            off, step, ja, jb = _row(b, g, idx, lrole, n)
            woff = b.mul(widx[0], _c(kst[g.kif]))
            for i in range(g.ns):
                woff = b.add(woff, b.mul(widx[1 + i], _c(kst[g.ksd[i]])))
            if last != "f":
                woff = b.add(woff, b.mul(feat, _c(kst[g.kof])))
            with for_range(b, jb, "j", ja) as j:
                x = b.load(_gep(b, ty, src, b.add(off, b.mul(j, _c(step)))), typ=ty)
                y = b.load(_gep(b, ty, wp, b.add(woff, b.mul(j, _c(wstep)))), typ=ty)
                pa = _gep(b, ty, dst, b.add(row0, j))
                b.store(b.fadd(b.load(pa, typ=ty), b.fmul(x, y, flags=flags), flags=flags), pa)
        if k.epilogue is not None:
            _epilogue(ts, k, dst, ex_p, prefix, row0, n)
    b.ret_void()
    _run(s.b, s.module, fn, [lhs, w, out] + list(extras), rows,
         n * math.prod(win_ext))


def emit_conv_kernel(s: Scalar, k, ins: list[ir.Value], outs: list[ir.Value]) -> None:
    """The body of a :class:`~oxla_backend_cpu.conv.ConvKernel` function (parameters:
    input, kernel, epilogue inputs, then output and the im2col buffer)."""
    lhs, w, extras = ins[0], ins[1], list(ins[2:])
    out = outs[0]
    if k.mode == "direct":
        emit_direct(s, k, lhs, w, out, extras)
        return
    src = lhs
    if k.col is not None:
        emit_im2col(s, k, lhs, outs[1])
        src = outs[1]
    emit_conv_gemms(s, k, src, w, out, extras)
