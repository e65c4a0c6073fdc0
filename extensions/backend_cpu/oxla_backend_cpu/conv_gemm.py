"""LLVM IR for a GEMM-mode :class:`~oxla_backend_cpu.conv.ConvKernel`, in chunks.

The output is computed chunk by chunk (:func:`oxla_backend_cpu.conv.chunks`; last to
first when the output overlaps the input,
:func:`~oxla_backend_cpu.conv.output_over_input`): for each chunk, a parallel im2col
task packs the chunk's columns into the ``col`` temporary, then a parallel GEMM task
runs single-threaded BLAS calls (one per group and block of output rows or columns)
and applies the fused epilogue to each block it wrote. The ``col``
buffer holds one chunk (:func:`~oxla_backend_cpu.conv.chunk_budget`: what the threads
work on at once, at most :data:`~oxla_backend_cpu.conv.CHUNK_BYTES`), so the temporary
stays small and the packed block is still in cache when BLAS reads it. A row whose
input step is 2-4 (a strided NCHW convolution) is copied by masked wide loads and a lane
shuffle (:func:`oxla_backend_cpu.conv_emit.strided_blocks`), not LLVM's gathers. A feature-innermost output
without input dilation packs through the runtime's precompiled im2col instead
(:mod:`oxla_backend_cpu.conv_runtime`): its im2col task is one call with a constant
descriptor, so the program has no packing loop of its own to optimize.

On several threads, a chunking with :attr:`~oxla_backend_cpu.conv.Chunks.slots`
(:func:`~oxla_backend_cpu.conv.plan_chunks`) replaces the two parallel loops per chunk
by one parallel loop over slots: each slot packs and multiplies its own run of small
chunks on its thread, in its own slice of ``col`` (:func:`_slot_task`). When the output
overlaps the dead input (chunks last to first), the slots run one
:func:`~oxla_backend_cpu.conv.slot_groups` group of whole batches at a time instead, last
group first: one parallel loop per group.

Chunk parameters travel to the tasks through a 5-word array: feature-innermost output
(layout A) ``[p0, cp, 0, 0, bs]`` (rows ``[p0, p0 + cp)`` of ``P``); otherwise (layout B)
``[o0, co, r0, nr, bs]`` (outer indices ``[o0, o0 + co)``, rows of the innermost
dimension ``[r0, r0 + nr)``; ``col`` is then ``[co][G][K][CR * L]``). ``bs`` is the
GEMM block (rows or columns per work item), set at run time for about
:data:`BLOCKS_PER_THREAD` items per thread of ``oxla_num_threads`` (every block re-packs
the weights inside BLAS, so thin blocks cost), never below :func:`_block`.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from oxla_codegen_llvm import Scalar, for_range, linearize, loop_nest
from oxla_codegen_llvm.loops import delinearize

from oxla_backend_cpu import batched_gemm as bg
from oxla_backend_cpu import conv_runtime as cr
from oxla_backend_cpu import conv_smallk
from oxla_backend_cpu import packed_gemm as pg
from oxla_backend_cpu.blas import restore_threads, set_gemm_threads, set_one_thread
from oxla_backend_cpu.conv import BLOCKS_PER_THREAD, ITEM_FLOPS, chunks, slot_groups
from oxla_backend_cpu.conv_emit import (
    I1,
    I8,
    I32,
    I64,
    MAX_SHUFFLE_STEP,
    PTR,
    VOID,
    control_only,
    elem_gep,
    emit_direct,
    emit_epilogue,
    fill_zero,
    float_type,
    i64c,
    input_row,
    lhs_at,
    smax,
    smin,
    strided_blocks,
    task_function,
    whole_row,
)
from oxla_backend_cpu.conv_implicit import emit_implicit
from oxla_backend_cpu.parallel import MIN_ELEMENTS_PER_CHUNK, runtime, task_wrapper


def _ceil_div(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.sdiv(b.add(x, b.sub(y, i64c(1))), y)


def _pfor(b: ir.IRBuilder, module: ir.Module, fn: ir.Function, ptrs: list, n: ir.Value,
          grain: int) -> None:
    """``oxla_parallel_for`` over a run-time count ``n`` (it runs on the calling thread
    when ``n < 2 * grain``)."""
    pfor = runtime(module)
    task = task_wrapper(module, fn, len(ptrs))
    with b.goto_entry_block():
        ctx = b.alloca(PTR, len(ptrs), name=f"{fn.name}.ctx")
    for i, p in enumerate(ptrs):
        b.store(p, b.gep(ctx, [i64c(i)], source_etype=PTR))
    b.call(pfor, [task, ctx, n, i64c(grain)])


N_PARAMS = 5  # chunk parameters (4) and the GEMM block size


def _params(b: ir.IRBuilder, p: ir.Value) -> list[ir.Value]:
    return [b.load(b.gep(p, [i64c(i)], source_etype=I64), typ=I64) for i in range(N_PARAMS)]


def _pack_row(b: ir.IRBuilder, g, ty: ir.Type, src: ir.Value, dst: ir.Value,
              idx: dict, last: str, n: int, row0: ir.Value) -> None:
    """Writes one im2col row ``dst[row0 : row0 + n]`` (index variables ``idx``, the
    row's own index of role ``last``): zeros, a copy, zeros; or, when the row is not
    affine, an element-by-element test. A contiguous row along no spatial dimension
    (channels: all in the input or all padding) is one branch to a copy or a zero fill
    of constant length, not three loops of run-time bounds (LLVM made those constant
    anyway, after ~10 ms of -O3 and code generation per im2col function)."""
    whole = whole_row(b, g, idx, last)
    if whole is not None and whole[1] == 1:  # contiguous, all in or all padding
        off, _, ok = whole
        fill, copy, done = (b.append_basic_block(f"row.{x}") for x in ("zero", "copy", "done"))
        b.cbranch(ok, copy, fill)
        b.position_at_end(copy)
        with for_range(b, n, "j") as j:
            x = b.load(elem_gep(b, ty, src, b.add(off, j)), typ=ty)
            b.store(x, elem_gep(b, ty, dst, b.add(row0, j)))
        b.branch(done)
        b.position_at_end(fill)
        fill_zero(b, ty, dst, row0, i64c(0), i64c(n))
        b.branch(done)
        b.position_at_end(done)
        return
    row = input_row(b, g, idx, last, n)
    if row is not None:
        off, step, ja, jb = row
        fill_zero(b, ty, dst, row0, i64c(0), ja)
        if 2 <= step <= MAX_SHUFFLE_STEP:
            strided_blocks(b, ty, src, dst, off, step, ja, jb, row0)
        else:
            with for_range(b, jb, "j", ja) as j:
                x = b.load(elem_gep(b, ty, src, b.add(off, b.mul(j, i64c(step)))), typ=ty)
                b.store(x, elem_gep(b, ty, dst, b.add(row0, j)))
        fill_zero(b, ty, dst, row0, jb, i64c(n))
        return
    with for_range(b, n, "j") as j:
        off, dims = lhs_at(b, g, {**idx, last: j})
        ok = ir.Constant(I1, 1)
        for _, d_ok in dims:
            ok = b.and_(ok, d_ok)
        x = b.load(elem_gep(b, ty, src, b.select(ok, off, i64c(0))), typ=ty)
        b.store(b.select(ok, x, ir.Constant(ty, 0.0)), elem_gep(b, ty, dst, b.add(row0, j)))


def _out_roles(g, dims: range | list) -> list[str]:
    return [g.out_role(d) for d in dims]


def _im2col_task(s: Scalar, k, ch) -> ir.Function:
    """``task(lhs, col, params, start, end)``: im2col items ``[start, end)`` of one
    chunk (output pixels, or rows of ``K``), each a nest of rows without divisions."""
    g = k.geom
    if cr.supported(g):
        return _runtime_im2col_task(s, k)
    ty = float_type(g)
    kroles = g.k_roles
    kext = [g.extent(r) for r in kroles]
    fn, b = task_function(s.module, f"{k.name}.im2col", 3, (0, 1))
    src, dst, prm = fn.args[:3]
    start, end = fn.args[3], fn.args[4]
    p0, _, r0, nr, _ = _params(b, prm)
    if g.feature_last:  # items: output pixels p; rows (g, k[:-1]) of the last window role
        n = kext[-1]
        inner = [g.G] + kext[:-1]
        per = math.prod(inner)
        with for_range(b, end, "t", start) as t:
            p = b.add(p0, t)
            out_idx = dict(zip(_out_roles(g, range(len(g.os) - 1)),
                               delinearize(b, p, g.os[:-1])))
            with loop_nest(b, inner, "gk") as gk:
                idx = {**out_idx, **dict(zip(["g"] + kroles[:-1], gk))}
                row = b.add(b.mul(t, i64c(per)), linearize(b, gk, inner))
                _pack_row(b, g, ty, src, dst, idx, kroles[-1], n, b.mul(row, i64c(n)))
    else:  # items: (oo, g, k); rows rr of the innermost output dimension
        n = g.os[-1]
        gk = [g.G] + kext
        per = math.prod(gk)
        with for_range(b, end, "t", start) as t:
            idx = dict(zip(["g"] + kroles, delinearize(b, b.urem(t, i64c(per)), gk)))
            o = b.add(p0, b.udiv(t, i64c(per)))
            idx.update(zip(_out_roles(g, range(g.of)), delinearize(b, o, g.os[:g.of])))
            with for_range(b, nr, "rr") as rr:
                idx.update(zip(_out_roles(g, range(g.of + 1, len(g.os) - 1)),
                               delinearize(b, b.add(r0, rr), g.os[g.of + 1:-1])))
                row0 = b.mul(b.add(b.mul(t, i64c(ch.rows)), rr), i64c(n))
                _pack_row(b, g, ty, src, dst, idx, g.out_role(len(g.os) - 1), n, row0)
    b.ret_void()
    return fn


def _runtime_im2col_task(s: Scalar, k) -> ir.Function:
    """The :func:`_im2col_task` of a feature-innermost convolution as one call of the
    runtime's precompiled im2col (:mod:`oxla_backend_cpu.conv_runtime`) with a constant
    descriptor: the program keeps no packing loop for LLVM to optimize."""
    g = k.geom
    module = s.module
    words = cr.descriptor(g)
    dty = ir.ArrayType(I64, len(words))
    desc = ir.GlobalVariable(module, dty, f"{k.name}.im2col.desc")
    desc.linkage, desc.global_constant = "internal", True
    desc.initializer = ir.Constant(dty, [i64c(x) for x in words])
    name = cr.driver_name(g.dtype)
    drv = module.globals.get(name) or ir.Function(module, cr.DRIVER_TYPE, name)
    fn, b = task_function(module, f"{k.name}.im2col", 3, (0, 1))
    control_only(fn)
    src, dst, prm = fn.args[:3]
    start, end = fn.args[3], fn.args[4]
    p0 = b.load(b.gep(prm, [i64c(0)], source_etype=I64), typ=I64)
    first = elem_gep(b, float_type(g), dst, b.mul(start, i64c(cr.row_elems(words))))
    b.call(drv, [desc, src, first, b.add(p0, start), b.sub(end, start)])
    b.ret_void()
    return fn


class _Blas:
    """The BLAS call of a task: Fortran-convention argument slots in its entry block."""

    def __init__(self, b: ir.IRBuilder, module: ir.Module, g):
        self.b = b
        ty = float_type(g)
        name = "oxla_sgemm" if g.dtype == "f32" else "oxla_dgemm"
        self.fn = module.globals.get(name) or ir.Function(
            module, ir.FunctionType(VOID, [PTR] * 13), name)
        with b.goto_entry_block():
            self.slots = {nm: b.alloca(t, name=nm) for nm, t in (
                ("ta", I8), ("tb", I8), ("m", I32), ("n", I32), ("k", I32), ("lda", I32),
                ("ldb", I32), ("ldc", I32), ("alpha", ty), ("beta", ty))}
        b.store(ir.Constant(ty, 1.0), self.slots["alpha"])
        b.store(ir.Constant(ty, 0.0), self.slots["beta"])
        b.store(ir.Constant(I32, g.k_size), self.slots["k"])

    def __call__(self, m, n, a, ta: bool, lda: int, bm, tb: bool, ldb: int, cm,
                 ldc: int) -> None:
        """Row-major ``C[m,n] = op(A) op(B)`` as Fortran ``C^T = op(B)^T op(A)^T``."""
        b, sl = self.b, self.slots
        b.store(ir.Constant(I8, ord("T" if tb else "N")), sl["ta"])
        b.store(ir.Constant(I8, ord("T" if ta else "N")), sl["tb"])
        b.store(b.trunc(n, I32), sl["m"])
        b.store(b.trunc(m, I32), sl["n"])
        b.store(ir.Constant(I32, max(1, ldb)), sl["lda"])
        b.store(ir.Constant(I32, max(1, lda)), sl["ldb"])
        b.store(ir.Constant(I32, max(1, ldc)), sl["ldc"])
        b.call(self.fn, [sl["ta"], sl["tb"], sl["m"], sl["n"], sl["k"], sl["alpha"], bm,
                         sl["lda"], a, sl["ldb"], sl["beta"], cm, sl["ldc"]])


def _block(g, ch) -> int:
    """The smallest GEMM work item: rows (layout A) or columns (layout B, a multiple of
    the innermost dimension) of output holding about :data:`ITEM_FLOPS` of work."""
    per = max(1, ITEM_FLOPS // (2 * g.o_tot * g.k_size))
    if g.feature_last:
        return max(1, min(ch.rows, max(16, per)))
    n = g.os[-1]
    return min(ch.rows, max(1, -(-per // n))) * n


EPILOGUE_BYTES = 1 << 17
"""Output per GEMM call when an epilogue follows it: the block is still in L2 when the
epilogue reads it back (one call per whole work item left it in memory: a 1x1 conv with
a batch-norm + relu6 epilogue ran 10% slower than with a separate loop)."""


def _epilogue_block(g) -> int:
    """Rows (layout A) or columns (layout B, whole innermost rows) per GEMM call when an
    epilogue follows."""
    per = max(1, EPILOGUE_BYTES // (g.itemsize * g.o_tot))
    if g.feature_last:
        return max(16, per)
    n = g.os[-1]
    return max(1, per // n) * n


def own_kernel(g) -> bool:
    """True when a feature-innermost convolution's GEMMs ``col[P, K] @ W[K, O]`` run on
    oxla's microkernel (:mod:`oxla_backend_cpu.batched_gemm`, ``W`` packed per call)
    instead of BLAS: f32, one group, and ``O`` a :func:`~oxla_backend_cpu.batched_gemm.
    narrow` width whose ``W`` fits the kernel's panels (BLAS is slow on such thin ``C``:
    a 3x3 NHWC convolution with 32 features ran at 0.6x of XLA's speed)."""
    lanes = pg.host_lanes()
    if g.dtype != "f32" or g.G != 1 or not g.feature_last or not lanes:
        return False
    nr = bg.tile_shape(lanes)[1]
    return bg.narrow(g.og, nr) and bg.fits(pg.MIN_ROWS, g.og, g.k_size, nr)


class _Micro:
    """The microkernel call of a task (:func:`own_kernel`): ``C[m, O] = A[m, K] W``,
    one GEMM of the batched driver on the calling thread, descriptor in the entry block."""

    def __init__(self, b: ir.IRBuilder, module: ir.Module, g, w_major: bool):
        self.b = b
        self.fn = module.globals.get(bg.DRIVER) or ir.Function(module, bg.DRIVER_TYPE,
                                                               bg.DRIVER)
        kk, og = g.k_size, g.og
        sb_k, sb_n = (1, kk) if w_major else (g.o_tot, 1)  # W stored [O, K] or [K, O]
        words = dict(batch=1, m=0, n=og, k=kk, sa_m=kk, sa_k=1, sb_k=sb_k, sb_n=sb_n,
                     parallel=0, row_blocks=1)
        with b.goto_entry_block():
            self.desc = b.alloca(I64, len(bg.DESC_FIELDS), name="micro.desc")
        for i, f in enumerate(bg.DESC_FIELDS):
            b.store(i64c(words[f]), b.gep(self.desc, [i64c(i)], source_etype=I64))

    def __call__(self, m: ir.Value, a: ir.Value, w: ir.Value, c: ir.Value) -> None:
        b = self.b
        b.store(m, b.gep(self.desc, [i64c(bg.DESC_FIELDS.index("m"))], source_etype=I64))
        b.call(self.fn, [self.desc, a, w, c])


def _gemm_task(s: Scalar, k, ch, n_extra: int) -> ir.Function:
    """``task(src, w, out, params, extras..., start, end)``: GEMM items ``[start, end)``
    of one chunk, each followed by the epilogue on the output it wrote."""
    g = k.geom
    module = s.module
    ty = float_type(g)
    kk, og, o_tot, G = g.k_size, g.og, g.o_tot, g.G
    fn, b = task_function(module, f"{k.name}.gemm", 4 + n_extra, (2,))
    n_last = g.os[-1]
    sub = _epilogue_block(g) if k.epilogue is not None else 0
    smallk = conv_smallk.applies(g, min(ch.rows * n_last, sub or ch.rows * n_last))
    if k.epilogue is None and not smallk:  # (vector loops stay optimized)
        control_only(fn)
    ts = Scalar(b, module, s.target, s.fast_math)
    a_p, w_p, c_p, prm = fn.args[:4]
    ex_p = list(fn.args[4:4 + n_extra])
    start, end = fn.args[4 + n_extra], fn.args[5 + n_extra]
    set_one_thread(b, module)
    blas = _Blas(b, module, g)
    micro = _Micro(b, module, g, k.w_major) if own_kernel(g) else None
    p0, cp, r0, nr, bs = _params(b, prm)

    def weights(gi: ir.Value, a_side: bool) -> tuple[ir.Value, bool, int]:
        """W_g as the GEMM's B (layout A) or A = W_g^T (layout B): pointer, transposed,
        leading dimension."""
        if k.w_major:  # stored [O, K]
            return elem_gep(b, ty, w_p, b.mul(gi, i64c(og * kk))), not a_side, kk
        return elem_gep(b, ty, w_p, b.mul(gi, i64c(og))), a_side, o_tot  # stored [K, O]

    with for_range(b, end, "it", start) as it:
        if g.feature_last:
            r_item = b.mul(it, bs)
            cnt_item = smin(b, bs, b.sub(cp, r_item))
        else:
            inner = math.prod(g.os[g.of + 1:])
            width = b.mul(nr, i64c(n_last))
            nbl = b.udiv(b.add(width, b.sub(bs, i64c(1))), bs)
            oo = b.udiv(it, nbl)
            c_item = b.mul(b.urem(it, nbl), bs)
            cnt_item = smin(b, bs, b.sub(width, c_item))
            o = b.add(p0, oo)
        # with an epilogue: sub-blocks whose output is still in cache when it runs
        step = i64c(sub) if sub else cnt_item
        with for_range(b, _ceil_div(b, cnt_item, step), "sub") as si:
            s0 = b.mul(si, step)
            cnt = smin(b, step, b.sub(cnt_item, s0))
            if g.feature_last:
                r = b.add(r_item, s0)
                with for_range(b, G, "grp") as gi:
                    wm, wt, ldw = weights(gi, False)
                    a = elem_gep(b, ty, a_p, b.add(b.mul(r, i64c(G * kk)), b.mul(gi, i64c(kk))))
                    cm = elem_gep(b, ty, c_p, b.add(b.mul(b.add(p0, r), i64c(o_tot)),
                                                b.mul(gi, i64c(og))))
                    if micro is not None:
                        micro(cnt, a, wm, cm)
                    else:
                        blas(cnt, i64c(og), a, False, G * kk, wm, wt, ldw, cm, o_tot)
                if k.epilogue is not None:
                    first = b.add(p0, r)
                    with for_range(b, b.add(first, cnt), "ep", first) as pi:
                        emit_epilogue(ts, k, c_p, ex_p, delinearize(b, pi, g.os[:-1]),
                                  b.mul(pi, i64c(o_tot)), o_tot)
            else:
                c0 = b.add(c_item, s0)
                col0 = b.add(b.mul(r0, i64c(n_last)), c0)  # first output column in ``inner``
                oidx = delinearize(b, o, g.os[:g.of]) if k.epilogue is not None else None
                with for_range(b, G, "grp") as gi:
                    wm, wt, ldw = weights(gi, True)
                    bm = elem_gep(b, ty, a_p, b.add(b.mul(b.add(b.mul(oo, i64c(G)), gi),
                                                      i64c(kk * ch.rows * n_last)), c0))
                    cm = elem_gep(b, ty, c_p, b.add(b.add(b.mul(o, i64c(o_tot * inner)),
                                                      b.mul(gi, i64c(og * inner))), col0))
                    if smallk:
                        after = None
                        if k.epilogue is not None:
                            def after(orow, j0, n, gi=gi, col0=col0, o=o, oidx=oidx):
                                fi = b.add(b.mul(gi, i64c(og)), orow)
                                first = b.add(col0, j0)
                                base = b.add(b.add(b.mul(o, i64c(o_tot * inner)),
                                                   b.mul(fi, i64c(inner))), first)
                                emit_epilogue(ts, k, c_p, ex_p, lambda j: oidx + [fi] + delinearize(
                                    b, b.add(first, j), g.os[g.of + 1:]), base, n)
                        conv_smallk.emit(b, g.dtype, og, kk, k.w_major, o_tot, wm, bm, cm,
                                         cnt, i64c(ch.rows * n_last), i64c(inner), after)
                    else:
                        blas(i64c(og), cnt, wm, wt, ldw, bm, False, ch.rows * n_last, cm,
                             inner)
                if k.epilogue is not None and not smallk:  # whole rows of the innermost dim
                    oidx = delinearize(b, o, g.os[:g.of])
                    with for_range(b, o_tot, "ef") as fi, \
                            for_range(b, b.udiv(b.add(col0, cnt), i64c(n_last)), "er",
                                      b.udiv(col0, i64c(n_last))) as ri:
                        base = b.add(b.add(b.mul(o, i64c(o_tot * inner)), b.mul(fi, i64c(inner))),
                                     b.mul(ri, i64c(n_last)))
                        emit_epilogue(ts, k, c_p, ex_p,
                                  oidx + [fi] + delinearize(b, ri, g.os[g.of + 1:-1]), base,
                                  n_last)
    b.ret_void()
    return fn


def _chunk(b: ir.IRBuilder, g, ch, c: ir.Value, prm: ir.Value, want: ir.Value,
           min_bs: int) -> tuple[ir.Value, int, ir.Value]:
    """Stores chunk ``c``'s parameters (GEMM block for about ``want`` items) in ``prm``;
    returns (im2col items, elements per im2col item, GEMM items)."""
    if g.feature_last:
        p_all = math.prod(g.os[:-1])
        p0 = b.mul(c, i64c(ch.rows))
        cnt = smin(b, i64c(ch.rows), b.sub(i64c(p_all), p0))
        vals = [p0, cnt, i64c(0), i64c(0), None]
        rows = cnt  # im2col items: output pixels of G*K elements
        per_item = g.G * g.k_size
        bs = smax(b, i64c(min_bs), _ceil_div(b, cnt, want))
        items = _ceil_div(b, cnt, bs)
    else:
        outer_n = math.prod(g.os[:g.of])
        r_all = math.prod(g.os[g.of + 1:-1])
        per_outer = -(-r_all // ch.rows)
        o0 = b.mul(b.udiv(c, i64c(per_outer)), i64c(ch.outer))
        r0 = b.mul(b.urem(c, i64c(per_outer)), i64c(ch.rows))
        co = smin(b, i64c(ch.outer), b.sub(i64c(outer_n), o0))
        nr = smin(b, i64c(ch.rows), b.sub(i64c(r_all), r0))
        vals = [o0, co, r0, nr, None]
        rows = b.mul(co, i64c(g.G * g.k_size))  # im2col items: nr rows each
        per_item = ch.rows * g.os[-1]
        width = b.mul(nr, i64c(g.os[-1]))
        n_last = g.os[-1]
        bs = _ceil_div(b, width, _ceil_div(b, want, co))
        bs = smax(b, i64c(min_bs), b.mul(_ceil_div(b, bs, i64c(n_last)), i64c(n_last)))
        items = b.mul(co, _ceil_div(b, width, bs))
    vals[-1] = bs
    for i, v in enumerate(vals):
        b.store(v, b.gep(prm, [i64c(i)], source_etype=I64))
    return rows, per_item, items


def _slot_task(s: Scalar, k, ch, pack: ir.Function, gemm: ir.Function,
               n_extra: int) -> ir.Function:
    """``task(lhs, w, out, col, span, extras..., start, end)``: slots ``[start, end)``
    of a :attr:`~oxla_backend_cpu.conv.Chunks.slots` chunking over the chunks
    ``[lo, hi)`` of ``span`` (two i64: all chunks, or one
    :func:`~oxla_backend_cpu.conv.slot_groups` group); slot ``i`` packs and multiplies
    chunks ``[lo + i*n/S, lo + (i+1)*n/S)`` (``n = hi - lo``) one by one on the calling
    thread, in slice ``i`` of ``col``. Slots never share a slice, so any thread count
    is right."""
    g = k.geom
    ty = float_type(g)
    fn, b = task_function(s.module, f"{k.name}.slots", 5 + n_extra, (2, 3))
    control_only(fn)
    lhs, w, out, col, span = fn.args[:5]
    extras = list(fn.args[5:5 + n_extra])
    start, end = fn.args[5 + n_extra], fn.args[6 + n_extra]
    with b.goto_entry_block():
        prm = b.alloca(I64, N_PARAMS, name=f"{k.name}.slot")
    per_slot, S = ch.col_elems // ch.slots, ch.slots
    min_bs = _block(g, ch)
    lo = b.load(span, typ=I64)
    cnt = b.sub(b.load(b.gep(span, [i64c(1)], source_etype=I64), typ=I64), lo)
    with for_range(b, end, "slot", start) as i:
        col_i = elem_gep(b, ty, col, b.mul(i, i64c(per_slot)))
        c0 = b.add(lo, b.sdiv(b.mul(i, cnt), i64c(S)))
        c1 = b.add(lo, b.sdiv(b.mul(b.add(i, i64c(1)), cnt), i64c(S)))
        with for_range(b, c1, "chunk", c0) as c:
            rows, _, items = _chunk(b, g, ch, c, prm, i64c(1), min_bs)
            b.call(pack, [lhs, col_i, prm, i64c(0), rows])
            b.call(gemm, [col_i, w, out, prm] + extras + [i64c(0), items])
    b.ret_void()
    return fn


def emit_gemm_mode(s: Scalar, k, lhs: ir.Value, w: ir.Value, out: ir.Value,
                   col: ir.Value | None, extras: list[ir.Value]) -> None:
    """The chunk loop: per chunk, parameters, parallel im2col (unless the GEMM reads the
    input in place), parallel GEMMs; or, for a chunking with
    :attr:`~oxla_backend_cpu.conv.Chunks.slots` and chunks in any order, one parallel
    loop over the slots (:func:`_slot_task`). Chunks that must run last to first
    (``k.reverse``) take the chunk loop, on the same chunks."""
    g = k.geom
    ch = k.chunking or chunks(g)
    b, module = s.b, s.module
    control_only(b.function)
    pack = _im2col_task(s, k, ch) if col is not None else None
    gemm = _gemm_task(s, k, ch, len(extras))
    min_bs = _block(g, ch)
    runtime(module)
    old = set_gemm_threads(b, module, 1.0)  # the calling thread's items: one BLAS thread
    groups = slot_groups(g, ch) if k.reverse else [(0, ch.n, 0, 0)]
    if ch.slots > 1 and pack is not None and groups:
        slot = _slot_task(s, k, ch, pack, gemm, len(extras))
        with b.goto_entry_block():
            span = b.alloca(I64, 2, name=f"{k.name}.span")
        step = groups[0][1] - groups[0][0]  # chunks per group (the first may be short)
        with for_range(b, len(groups), "group") as j:  # last to first: one join each
            hi = b.sub(i64c(ch.n), b.mul(j, i64c(step)))
            b.store(smax(b, i64c(0), b.sub(hi, i64c(step))), span)
            b.store(hi, b.gep(span, [i64c(1)], source_etype=I64))
            _pfor(b, module, slot, [lhs, w, out, col, span] + extras, i64c(ch.slots), 1)
        restore_threads(b, module, old)
        return
    flops = 2.0 * g.o_tot * g.k_size * math.prod(g.os) / ch.n  # per chunk
    gemm_grain = 1 if flops >= 2 * ITEM_FLOPS else 1 << 40
    with b.goto_entry_block():
        prm = b.alloca(I64, N_PARAMS, name=f"{k.name}.chunk")
    nt = b.load(module.globals["oxla_num_threads"], typ=I64)
    # about BLOCKS_PER_THREAD items per thread (each block re-packs the weights in BLAS)
    want = b.select(b.icmp_signed("<=", nt, i64c(1)), i64c(1), b.mul(nt, i64c(BLOCKS_PER_THREAD)))
    with for_range(b, ch.n, "chunk") as c:
        if k.reverse:  # the output overlaps the input's dead slabs (conv.output_over_input)
            c = b.sub(i64c(ch.n - 1), c)
        rows, per_item, items = _chunk(b, g, ch, c, prm, want, min_bs)
        if pack is not None:
            _pfor(b, module, pack, [lhs, col, prm], rows,
                  max(1, -(-MIN_ELEMENTS_PER_CHUNK // per_item)))
        _pfor(b, module, gemm, [col if col is not None else lhs, w, out, prm] + extras,
              items, gemm_grain)
    restore_threads(b, module, old)


def emit_conv_kernel(s: Scalar, k, ins: list[ir.Value], outs: list[ir.Value]) -> None:
    """The body of a :class:`~oxla_backend_cpu.conv.ConvKernel` function (parameters:
    input, kernel, epilogue inputs, then output and the im2col buffer)."""
    lhs, w, extras = ins[0], ins[1], list(ins[2:])
    out = outs[0]
    if k.mode == "direct":
        emit_direct(s, k, lhs, w, out, extras)
        return
    if k.mode == "implicit":
        emit_implicit(s, k, lhs, w, out, outs[1], extras)
        return
    emit_gemm_mode(s, k, lhs, w, out, outs[1] if k.col is not None else None, extras)
