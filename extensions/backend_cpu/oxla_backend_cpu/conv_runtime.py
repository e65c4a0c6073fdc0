"""The im2col packing of GEMM-mode convolutions as one precompiled, descriptor-driven
routine in the parallel runtime, instead of a vectorized loop nest emitted (and run
through LLVM's ``-O3`` and code generation) in every program.

A feature-innermost GEMM-mode :class:`~oxla_backend_cpu.conv.ConvKernel` (layout A of
:mod:`oxla_backend_cpu.conv`: ``col[P][G][K]``) without input dilation packs its
columns with ``oxla_conv_im2col_<dtype>(desc, src, dst, p_first, count)``: output
pixels ``[p_first, p_first + count)`` (rows of ``P``) into ``dst`` (``count`` rows of
``G*K`` elements). ``desc`` is a constant ``i64`` array (:func:`descriptor`,
:data:`FIXED_WORDS`) describing the input addressing as a linear map (StableHLO
``convolution``, spec section "convolution", with unit ``lhs_dilation``:
``q = o * stride + k * rhs_dilation - low_padding`` in each spatial dimension, reversed
window dimensions counting ``k`` from the end; an element outside ``0 <= q < size`` is
padding, zero): each pixel index adds ``index * co`` to the input offset and
``index * cq[i]`` to ``q[i]``; each of the pixel's ``R`` rows (group and kernel roles
but the innermost) has its offsets in two tables (``T_off``, ``T_q``); a row is ``nb``
blocks of ``n_in`` elements (the kernel's innermost non-output role, merged with the
one before it when they are one contiguous run of the input: an NHWC input with an
HWIO kernel copies a window row's columns and channels as one run).

Per pixel, the window's q span decides whether every row is in the input (interior:
plain copies) or not (border: each row's in-bounds blocks are one interval, computed
without division unless the row moves by more than one position per block). Rows of
one of :data:`FIXED_WIDTHS` elements are one vector each (on the border, a masked load for
the :data:`MASKED_WIDTHS`); others are loops of 32-byte vectors and a tail.

Measured (load 6-10 on 2 cores, so rough; CPU time): the program's LLVM ``-O3`` + code
generation for the suite's small 1x32x32x16 3x3 NHWC convolution went from 26.7 ms to
11.1 ms. The routine is built once per process with the runtime
(:meth:`oxla_backend_cpu.parallel.HostRuntime.subset`): about 60 ms more when the
compile cache is off. Its run time (one thread, with the GEMM) is 1.05-1.35x that of
the emitted, constant-folded im2col on the suite's 2-D and 1-D convolutions and
1.6-1.85x on its 3-D one (8 channels, most pixels on the border); f64 keeps the
emitted im2col.
"""

from __future__ import annotations

import itertools
import math

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range as _for_range

from oxla_backend_cpu.conv import ConvGeom
from oxla_backend_cpu.parallel import register_runtime_extension

I1, I64 = ir.IntType(1), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

PIX_DIMS = 4
"""Output pixel dimensions the routine walks (batch and up to 3 spatial)."""
SPATIAL = 3
"""Most spatial dimensions."""
MAX_ROWS = 4096
"""Most rows per output pixel (the descriptor holds a table of them)."""

# descriptor layout (i64 words): fixed part, then the row tables
_PE, _PCO, _PCQ = 0, PIX_DIMS, 2 * PIX_DIMS  # pixel extents, offset and q coefficients
_R = _PCQ + PIX_DIMS * SPATIAL  # rows per pixel
_NB = _R + 1  # blocks per row
_NIN = _NB + 1  # elements per block
_CO = _NIN + 1  # input step per element
_RCQ = _CO + 1  # q step per block, per spatial dimension
_OFF0 = _RCQ + SPATIAL
_Q0 = _OFF0 + 1
_LIM = _Q0 + SPATIAL
_SLO = _LIM + SPATIAL  # least and greatest q offset over a pixel's window
_SHI = _SLO + SPATIAL
FIXED_WORDS = _SHI + SPATIAL
"""Words before the tables: per pixel dimension (extent, co, cq[3]); rows per pixel
``R``; the row as ``nb`` blocks of ``n_in`` elements (input step ``co`` per element,
``rcq[3]`` per block); off0, q0[3], lim[3]; the window's q span lo[3], hi[3]. Then
``T_off[R]`` (input offset of each row) and ``T_q[R][3]`` (its q offsets)."""

VEC_BYTES = 32
"""Bytes per vector of the row copy and zero fill (AVX2 width; split by the code
generator on narrower targets)."""


def for_range(b: ir.IRBuilder, n, name: str = "i", start=0):
    """:func:`oxla_codegen_llvm.for_range` with LLVM's vectorizer and unroller off: the
    routine's vectors are explicit, and their tails are short (vectorized and unrolled
    copies of every tail made the runtime extension cost ~0.4 s of -O3 and code
    generation per process)."""
    return _for_range(b, n, name, start, hints=[
        ("llvm.loop.vectorize.enable", ir.Constant(I1, 0)), ("llvm.loop.unroll.disable", None)])


def driver_name(dtype: str) -> str:
    """The runtime symbol of the im2col routine for ``dtype`` (``"f32"``/``"f64"``)."""
    return f"oxla_conv_im2col_{dtype}"


DRIVER_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64])  # desc, src, dst, p, count


def _coeffs(g: ConvGeom, role: str) -> tuple[int, list[int]]:
    """(input offset, q[i] offsets) per unit of index ``role``."""
    lst = g.lst
    cq = [0] * SPATIAL
    if role == "b":
        return lst[g.ib], cq
    if role == "g":
        return ((g.cg * lst[g.if_] if g.fgc > 1 else 0)
                + (g.nb * lst[g.ib] if g.bgc > 1 else 0)), cq
    if role == "ci":
        return lst[g.if_], cq
    i = int(role[1:])
    if role[0] == "o":
        cq[i] = g.strides[i]
    else:
        cq[i] = -g.rdil[i] if g.rev[i] else g.rdil[i]
    return cq[i] * lst[g.isd[i]], cq


def _row_plan(g: ConvGeom):
    """(outer roles, block role or None, nb, n_in, co, rcq) of ``g``'s rows: the
    kernel's innermost non-output role, merged with the role before it when the two
    are contiguous in the input and the innermost one stays in one input position."""
    kroles = ["g"] + g.k_roles
    row = kroles[-1]
    n = g.extent(row)
    co, cq = _coeffs(g, row)
    if not any(cq) and len(kroles) >= 2 and co != 0:
        co_b, cq_b = _coeffs(g, kroles[-2])
        if co_b == n * co:
            return kroles[:-2], kroles[-2], g.extent(kroles[-2]), n, co, cq_b
    if any(cq):
        return kroles[:-1], row, n, 1, co, cq
    return kroles[:-1], None, 1, n, co, cq


def supported(g: ConvGeom) -> bool:
    """True when :func:`descriptor` describes ``g``'s im2col: f32, feature-innermost
    output, no input dilation, at most :data:`SPATIAL` spatial dimensions and
    :data:`MAX_ROWS` rows per output pixel."""
    if not (g.dtype == "f32" and g.feature_last and g.ns <= SPATIAL
            and all(d == 1 for d in g.ldil) and len(g.os) - 1 <= PIX_DIMS):
        return False
    outer = _row_plan(g)[0]
    return math.prod(g.extent(r) for r in outer) <= MAX_ROWS


def descriptor(g: ConvGeom) -> list[int]:
    """The descriptor of ``g``'s layout-A im2col (module doc, :data:`FIXED_WORDS`).

    Rows of ``col`` follow :func:`oxla_backend_cpu.conv_gemm._im2col_task`: per output
    pixel (output dimensions but the feature, in memory order), the group, then the
    kernel's non-output roles in its memory order.

    Raises:
        ValueError: ``g`` is not :func:`supported`.
    """
    if not supported(g):
        raise ValueError("im2col descriptor: convolution layout not supported")
    lst = g.lst
    words = [0] * FIXED_WORDS
    pix = [g.out_role(d) for d in range(len(g.os)) if d != g.of]
    for j in range(PIX_DIMS):
        if j >= len(pix):
            words[_PE + j] = 1
            continue
        co, cq = _coeffs(g, pix[j])
        words[_PE + j], words[_PCO + j] = g.extent(pix[j]), co
        words[_PCQ + j * SPATIAL:_PCQ + (j + 1) * SPATIAL] = cq
    outer, _, nb, n_in, co, rcq = _row_plan(g)
    ext = [g.extent(r) for r in outer]
    cos = [_coeffs(g, r) for r in outer]
    t_off, t_q = [], []
    for idx in itertools.product(*(range(e) for e in ext)):
        t_off.append(sum(i * c[0] for i, c in zip(idx, cos)))
        t_q.append([sum(i * c[1][s] for i, c in zip(idx, cos)) for s in range(SPATIAL)])
    words[_R], words[_NB], words[_NIN], words[_CO] = len(t_off), nb, n_in, co
    words[_RCQ:_RCQ + SPATIAL] = rcq
    off0 = 0
    for i in range(SPATIAL):
        span = [q[i] for q in t_q]
        words[_SLO + i] = min(span) + min(0, rcq[i] * (nb - 1))
        words[_SHI + i] = max(span) + max(0, rcq[i] * (nb - 1))
        if i >= g.ns:
            words[_LIM + i] = 1  # q stays 0: always in bounds
            continue
        q0 = -g.lo[i]
        if g.rev[i]:  # k counts from the window's end: q = ... + rdil * (K - 1 - k)
            q0 += g.rdil[i] * (g.ks[g.ksd[i]] - 1)
        words[_Q0 + i] = q0
        words[_LIM + i] = g.ls[g.isd[i]]
        off0 += q0 * lst[g.isd[i]]
    words[_OFF0] = off0
    return words + t_off + [x for q in t_q for x in q]


def row_elems(words: list[int]) -> int:
    """Elements of ``col`` per output pixel for descriptor ``words``."""
    return words[_R] * words[_NB] * words[_NIN]


def define_conv_runtime(module: ir.Module) -> None:
    """Defines the f32 im2col routine in the runtime ``module`` (f64 convolutions keep
    the emitted im2col: each routine costs tens of ms to build per process; a runtime
    extension, :func:`oxla_backend_cpu.parallel.register_runtime_extension`)."""
    _define(module, ir.FloatType(), "f32")


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _min(b: ir.IRBuilder, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _max(b: ir.IRBuilder, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)


def _floor_div(b: ir.IRBuilder, x, c):
    """``floor(x / c)`` for ``c > 0``."""
    q = b.sdiv(x, c)
    fix = b.and_(b.icmp_signed("!=", b.srem(x, c), _c(0)), b.icmp_signed("<", x, _c(0)))
    return b.sub(q, b.zext(fix, I64))


def _define(module: ir.Module, ty: ir.Type, dt: str) -> None:
    fn = ir.Function(module, DRIVER_TYPE, driver_name(dt))
    # its loops are explicit; optsize keeps -O3 from copying the pixel loop once per
    # loop-invariant branch (unswitching), which made this extension cost ~0.15 s to build
    fn.attributes.add("optsize")
    desc, src, dst, p_first, count = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    w = [b.load(b.gep(desc, [_c(i)], source_etype=I64), typ=I64) for i in range(FIXED_WORDS)]
    t_off = b.gep(desc, [_c(FIXED_WORDS)], source_etype=I64)
    t_q = b.gep(t_off, [w[_R]], source_etype=I64)
    ja_p, jb_p = b.alloca(I64, name="ja"), b.alloca(I64, name="jb")
    nb, n_in, co = w[_NB], w[_NIN], w[_CO]
    row_len = b.mul(nb, n_in)
    per_pixel = b.mul(w[_R], row_len)
    unit = b.icmp_signed("==", co, _c(1))

    def elem(p, off):
        return b.gep(p, [off], source_etype=ty, inbounds=True)

    rowcopy = _define_rowcopy(module, ty, f"{fn.name}.row")
    bound = _define_bound(module)

    def copy_row(row, o, lo, hi):
        b.call(rowcopy, [src, o, co, row, lo, hi, row_len])

    # the pixel's indices: divided out once, then counted up (no division per pixel)
    idx_p = b.alloca(I64, PIX_DIMS, name="pix")
    p = p_first
    for d in reversed(range(PIX_DIMS)):
        b.store(b.urem(p, w[_PE + d]), b.gep(idx_p, [_c(d)], source_etype=I64))
        p = b.udiv(p, w[_PE + d])
    with for_range(b, count, "t") as t:
        ids = [b.load(b.gep(idx_p, [_c(d)], source_etype=I64), typ=I64) for d in range(PIX_DIMS)]
        off, q = w[_OFF0], [w[_Q0 + i] for i in range(SPATIAL)]
        for d in range(PIX_DIMS):
            off = b.add(off, b.mul(ids[d], w[_PCO + d]))
            q = [b.add(q[i], b.mul(ids[d], w[_PCQ + d * SPATIAL + i])) for i in range(SPATIAL)]
        carry = ir.Constant(I1, 1)
        for d in reversed(range(PIX_DIMS)):
            nxt = b.add(ids[d], b.zext(carry, I64))
            carry = b.icmp_signed("==", nxt, w[_PE + d])
            b.store(b.select(carry, _c(0), nxt), b.gep(idx_p, [_c(d)], source_etype=I64))
        base = elem(dst, b.mul(t, per_pixel))
        inside = ir.Constant(I1, 1)
        for i in range(SPATIAL):
            inside = b.and_(inside, b.and_(
                b.icmp_signed(">=", b.add(q[i], w[_SLO + i]), _c(0)),
                b.icmp_signed("<", b.add(q[i], w[_SHI + i]), w[_LIM + i])))
        with b.if_else(inside) as (interior, border):
            with interior:  # every row wholly in the input: copies only
                with b.if_else(unit) as (contiguous, strided):
                    with contiguous:
                        _fixed_width_rows(b, ty, w[_R], row_len, t_off, src, off, base,
                                          lambda row, o, lo, hi: copy_row(row, o, lo, hi))
                    with strided, for_range(b, w[_R], "ri") as r:
                        o = b.add(off, b.load(b.gep(t_off, [r], source_etype=I64), typ=I64))
                        copy_row(elem(base, b.mul(r, row_len)), o, _c(0), row_len)
            with border:
                with for_range(b, w[_R], "rb") as r:
                    o = b.add(off, b.load(b.gep(t_off, [r], source_etype=I64), typ=I64))
                    b.store(_c(0), ja_p)
                    b.store(nb, jb_p)
                    for i in range(SPATIAL):
                        tq = b.load(b.gep(t_q, [b.add(b.mul(r, _c(SPATIAL)), _c(i))],
                                          source_etype=I64), typ=I64)
                        b.call(bound, [b.add(q[i], tq), w[_RCQ + i], w[_LIM + i], ja_p, jb_p])
                    ja = _min(b, _max(b, b.load(ja_p, typ=I64), _c(0)), nb)
                    jb = _max(b, _min(b, b.load(jb_p, typ=I64), nb), ja)
                    ea, eb = b.mul(ja, n_in), b.mul(jb, n_in)
                    row = elem(base, b.mul(r, row_len))
                    fixed = _masked_row(b, ty, row_len, unit, src, o, row, ea, eb)
                    with b.if_then(b.not_(fixed)):
                        copy_row(row, o, ea, eb)
    b.ret_void()


FIXED_WIDTHS = (4, 8, 16, 24, 32, 48)
"""f32 row lengths (elements) whose interior rows are copied as one vector of that
length (f64 rows take the loops), picked once per pixel: a row of a grouped convolution holds only its group's input
features (4 in the suite's grouped conv), where a loop of vectors and a tail cost
more than the copy."""


MASKED_WIDTHS = (4, 8, 16)
"""The :data:`FIXED_WIDTHS` whose border rows are one masked load (wider masked loads
cost more to build than they save)."""


def _fixed_width_rows(b: ir.IRBuilder, ty: ir.Type, rows, row_len, t_off, src, off, base,
                      generic) -> None:
    """Copies ``rows`` contiguous rows of ``row_len`` elements (input offsets
    ``off + t_off[r]``) to ``base``: one vector per row for the
    :data:`FIXED_WIDTHS`, else ``generic(row, o, 0, row_len)``."""
    size = 4 if isinstance(ty, ir.FloatType) else 8
    fn = b.function
    done = fn.append_basic_block("fw.done")
    other = fn.append_basic_block("fw.other")
    sw = b.switch(row_len, other)
    for width in FIXED_WIDTHS if size == 4 else ():
        blk = fn.append_basic_block(f"fw.{width}")
        sw.add_case(_c(width), blk)
        b.position_at_end(blk)
        vt = ir.VectorType(ty, width)
        with for_range(b, rows, f"fw{width}") as r:
            o = b.add(off, b.load(b.gep(t_off, [r], source_etype=I64), typ=I64))
            x = b.load(b.gep(src, [o], source_etype=ty, inbounds=True), typ=vt, align=size)
            b.store(x, b.gep(base, [b.mul(r, _c(width))], source_etype=ty, inbounds=True),
                    align=size)
        b.branch(done)
    b.position_at_end(other)
    with for_range(b, rows, "ri") as r:
        o = b.add(off, b.load(b.gep(t_off, [r], source_etype=I64), typ=I64))
        generic(b.gep(base, [b.mul(r, row_len)], source_etype=ty, inbounds=True), o, _c(0),
                row_len)
    b.branch(done)
    b.position_at_end(done)


def _masked_row(b: ir.IRBuilder, ty: ir.Type, row_len, unit, src, o, row, ea, eb):
    """A contiguous border row of one of the :data:`FIXED_WIDTHS`: one masked load of
    lanes ``[ea, eb)`` (the others read nothing and load zero) and one store of the
    whole row. Returns the i1 "done here" (False: the caller writes the row)."""
    size = 4 if isinstance(ty, ir.FloatType) else 8
    fn, module = b.function, b.module
    done = fn.append_basic_block("mr.done")
    other = fn.append_basic_block("mr.other")
    pre = b.block
    b.cbranch(unit, fn.append_basic_block("mr.unit"), other)
    b.position_at_end(fn.blocks[-1])
    sw = b.switch(row_len, other)
    ends = []
    i32 = ir.IntType(32)
    for width in MASKED_WIDTHS if size == 4 else ():
        blk = fn.append_basic_block(f"mr.{width}")
        sw.add_case(_c(width), blk)
        b.position_at_end(blk)
        vt = ir.VectorType(ty, width)
        mt = ir.VectorType(I1, width)
        elt = "f32" if size == 4 else "f64"
        name = f"llvm.masked.load.v{width}{elt}.p0"
        load = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(vt, [PTR, i32, mt, vt]), name)
        it = ir.VectorType(I64, width)
        lanes = ir.Constant(it, list(range(width)))

        def splat(x, it=it, width=width):
            v = b.insert_element(ir.Constant(it, ir.Undefined), x, ir.Constant(i32, 0))
            return b.shuffle_vector(v, ir.Constant(it, ir.Undefined),
                                    ir.Constant(ir.VectorType(i32, width), [0] * width))

        mask = b.and_(b.icmp_signed(">=", lanes, splat(ea)), b.icmp_signed("<", lanes, splat(eb)))
        x = b.call(load, [b.gep(src, [o], source_etype=ty), ir.Constant(i32, size), mask,
                          ir.Constant(vt, [0.0] * width)])
        b.store(x, row, align=size)
        ends.append(b.block)
        b.branch(done)
    b.position_at_end(other)
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(I1)
    for e in ends:
        phi.add_incoming(ir.Constant(I1, 1), e)
    phi.add_incoming(ir.Constant(I1, 0), other)
    del pre
    return phi


def _define_rowcopy(module: ir.Module, ty: ir.Type, name: str) -> ir.Function:
    """``row(src, o, co, dst, ea, eb, n)``: ``dst[j] = src[o + j*co]`` for ``j`` in
    ``[ea, eb)``, zero for the rest of ``[0, n)``; 32-byte vectors when ``co == 1``."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64, PTR, I64, I64, I64]), name)
    fn.linkage = "internal"
    fn.attributes.add("optsize")
    src, o, co, row, ea, eb, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    size = 4 if isinstance(ty, ir.FloatType) else 8
    vl = VEC_BYTES // size

    def elem(p, off):
        return b.gep(p, [off], source_etype=ty, inbounds=True)

    def blocks(lo, hi, body, nm):
        x = lo
        for width in (vl, 4):
            nv = b.sdiv(b.sub(hi, x), _c(width))
            with for_range(b, nv, f"{nm}{width}") as v:
                body(b.add(x, b.mul(v, _c(width))), width)
            x = b.add(x, b.mul(nv, _c(width)))
        with for_range(b, hi, f"{nm}1", x) as j:
            body(j, 1)

    def fill(lo, hi):
        def body(j, width):
            zero = ir.Constant(ty, 0.0) if width == 1 else \
                ir.Constant(ir.VectorType(ty, width), [0.0] * width)
            b.store(zero, elem(row, j), align=size)
        blocks(lo, hi, body, "z")

    fill(_c(0), ea)
    with b.if_else(b.icmp_signed("==", co, _c(1))) as (contiguous, strided):
        with contiguous:
            def body(j, width):
                t = ty if width == 1 else ir.VectorType(ty, width)
                b.store(b.load(elem(src, b.add(o, j)), typ=t, align=size), elem(row, j),
                        align=size)
            blocks(ea, eb, body, "c")
        with strided:
            with for_range(b, eb, "cg", ea) as j:
                b.store(b.load(elem(src, b.add(o, b.mul(j, co))), typ=ty), elem(row, j))
    fill(eb, n)
    b.ret_void()
    return fn


def _define_bound(module: ir.Module) -> ir.Function:
    """``oxla_conv_bound(q, c, lim, ja, jb)``: :func:`_bound` as one shared function."""
    name = "oxla_conv.bound"
    if name in module.globals:
        return module.globals[name]
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, I64, I64, PTR, PTR]), name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    _bound(b, *fn.args)
    b.ret_void()
    return fn


def _bound(b: ir.IRBuilder, q, c, lim, ja_p, jb_p) -> None:
    """Narrows ``[*ja_p, *jb_p)`` to the blocks ``j`` with ``0 <= q + c*j < lim``."""
    with b.if_else(b.icmp_signed("==", c, _c(0))) as (fixed, moving):
        with fixed:  # the whole row is in or out
            ok = b.and_(b.icmp_signed(">=", q, _c(0)), b.icmp_signed("<", q, lim))
            with b.if_then(b.not_(ok)):
                b.store(_c(0), jb_p)
        with moving:
            with b.if_else(b.icmp_signed("==", c, _c(1))) as (one, other):
                with one:  # 0 <= q + j < lim
                    b.store(_max(b, b.load(ja_p, typ=I64), b.sub(_c(0), q)), ja_p)
                    b.store(_min(b, b.load(jb_p, typ=I64), b.sub(lim, q)), jb_p)
                with other:
                    pos = b.icmp_signed(">", c, _c(0))
                    a = b.select(pos, c, b.sub(_c(0), c))
                    # c > 0: ceil(-q / c) <= j < ceil((lim - q) / c)
                    lo_p = b.sub(_c(0), _floor_div(b, q, a))
                    hi_p = b.sub(_c(0), _floor_div(b, b.sub(q, lim), a))
                    # c < 0: floor((q - lim) / |c|) + 1 <= j < floor(q / |c|) + 1
                    lo_n = b.add(_floor_div(b, b.sub(q, lim), a), _c(1))
                    hi_n = b.add(_floor_div(b, q, a), _c(1))
                    b.store(_max(b, b.load(ja_p, typ=I64), b.select(pos, lo_p, lo_n)), ja_p)
                    b.store(_min(b, b.load(jb_p, typ=I64), b.select(pos, hi_p, hi_n)), jb_p)


def _register() -> None:
    register_runtime_extension("cpu-conv", define_conv_runtime, [driver_name("f32")])


_register()
