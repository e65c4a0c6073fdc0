"""The GEMM of an NCHW-layout (feature not innermost) convolution with few contraction
elements, on oxla's own register-tiled kernel instead of BLAS.

A GEMM-mode :class:`~oxla_backend_cpu.conv.ConvKernel` whose output feature dimension
is not innermost computes, per group and block of output columns,
``C[o, j] = sum_k W[o, k] * X[k, j]`` (``W``: ``og x K``, ``X``: the im2col block or the
input itself for a 1x1 convolution, ``K x cnt``; :mod:`oxla_backend_cpu.conv_gemm`).
MobileNet's pointwise convolutions have ``K`` = 16-144 input features and thousands of
columns: OpenBLAS ran them at 20-45 GMAC/s on two Zen 4 cores (2x16x48x48 -> 96
features: 206 us), its packing and edge handling costing as much as the arithmetic.

:func:`emit` emits, inside the GEMM task, for each block of
:data:`MR` rows of ``C``, tiles of :data:`NV` vectors of columns (then single vectors,
all masked) keep ``MR x NV`` accumulators in registers over a loop on ``k``
(one ``X`` vector load per column vector, one broadcast weight per row, fused
multiply-adds: the summation order is ``k`` ascending, FMA contracted, as a GEMM is
free to), store each element of ``C`` once and run the fused epilogue (batch norm,
ReLU6) on the tile while it is in L1: with BLAS the epilogue re-read each block from
L2. Nothing is packed: ``X``'s rows are contiguous along the columns.
"""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range
from oxla_codegen_llvm.loops import loop_hint

from oxla_backend_cpu import packed_gemm as pg
from oxla_backend_cpu.conv_emit import I32, I64, elem_gep, i64c, masked_intrinsic, smin

MR = 8
"""Rows of ``C`` per register tile with AVX-512's 32 vector registers (4 with AVX2's
16)."""
NV = 2
"""Column vectors per register tile (``MR * NV`` accumulators: 16 of AVX-512's 32
registers)."""
MAX_K = 4608
"""Most contraction elements (input features times window) sent here: a 3x3 window
over 512 features. One Zen 4 thread, kernel time, with a ReLU epilogue, against
OpenBLAS in the same run: ResNet's 3x3 convolutions 4x64x32x32 -> 64 3.85 against
4.07 ms, 4x256x8x8 -> 256 3.26 against 3.88, 4x128x16x16 -> 128 3.68 against 3.61
(both near this core's peak of 16 f32 FMAs per cycle); pointwise 2x144x24x24 -> 24
77 against 101 us, 1x32x12x12 -> 192 19 against 43."""
MIN_COLS = 16
"""Fewest output columns per GEMM call (narrower ones, mostly masked vectors: BLAS).
Small planes are worth the kernel: OpenBLAS packs both operands on every call. Two Zen
5 threads, kernel time, against 64 (BLAS below it) in the same process: 3x3 convs
4x256x7x7 -> 256 1377 -> 912 us, 1x512x7x7 -> 512 1990 -> 958, 1x32x5x5 -> 64 14.2 ->
10.1; pointwise 2x576x6x6 -> 96 39 -> 24, 2x384x6x6 -> 64 21 -> 13; 2x96x6x6 -> 576
and 2x64x12x12 -> 128 equal."""


def lanes_for(dtype: str) -> int:
    """Vector lanes of ``dtype`` (``f32``/``f64``) on the host, 0 without AVX2+FMA."""
    f32 = pg.host_lanes()
    return f32 if dtype == "f32" else f32 // 2


def applies(g, cols: int) -> bool:
    """True when the GEMMs of :class:`~oxla_backend_cpu.conv.ConvGeom` ``g``
    (feature not innermost) run on this kernel: ``K`` at most :data:`MAX_K`, at least
    :data:`MIN_COLS` columns per call (``cols``), a host with FMA vectors."""
    return (not g.feature_last and g.k_size <= MAX_K and cols >= MIN_COLS
            and lanes_for(g.dtype) > 0)


def _fma(module: ir.Module, vec: ir.VectorType) -> ir.Function:
    elt = "f32" if isinstance(vec.element, ir.FloatType) else "f64"
    name = f"llvm.fma.v{vec.count}{elt}"
    return module.globals.get(name) or ir.Function(
        module, ir.FunctionType(vec, [vec, vec, vec]), name)


def emit(b: ir.IRBuilder, dtype: str, rows: int, k: int, w_major: bool, ldw: int,
         w: ir.Value, x: ir.Value, c: ir.Value, ncols: ir.Value, ldx: ir.Value | None,
         ldc: ir.Value, after_tile=None, xoff: ir.Value | None = None,
         stacked: tuple[int, ir.Value, ir.Value] | None = None) -> None:
    """Emits at ``b``: ``c[o*ldc + j] = sum_kk W(o, kk) * x[kk*ldx + j]`` for
    ``o < rows``, ``j < ncols``, ``kk < k``, with ``W(o, kk) = w[o*k + kk]``
    (``w_major``) or ``w[kk*ldw + o]``. With ``xoff`` (a pointer to ``k`` i64
    element offsets) row ``kk`` of ``X`` is ``x[xoff[kk] + j]`` instead (``ldx``
    unused): the implicit GEMM of :mod:`oxla_backend_cpu.conv_implicit`, whose rows are
    shifted windows of one padded input. Reads no element of ``x`` or ``c`` past column
    ``ncols`` (masked last vector). ``after_tile(o, j0, n)``, when given, is emitted
    after each register tile is stored, for each of its rows ``o`` (columns
    ``[j0, j0 + n)``, still in L1): the fused epilogue.

    ``stacked = (nv, xstep, cstep)``, for ``ncols`` at most one vector: each tile's
    ``nv`` vectors are ``nv`` such column runs stacked, vector ``v`` at ``x + v*xstep``
    and ``c + v*cstep`` (``nv`` output rows of an implicit GEMM, so that each broadcast
    weight feeds ``nv`` FMAs, not one); ``after_tile(o, v, n)`` then names the run
    ``v`` (a Python int)."""
    module = b.module
    ty = ir.FloatType() if dtype == "f32" else ir.DoubleType()
    vl = lanes_for(dtype)
    mr_full = MR if pg.host_lanes() == 16 else MR // 2
    vec = ir.VectorType(ty, vl)
    fma = _fma(module, vec)
    mload, mstore = masked_intrinsic(module, "load", vec), masked_intrinsic(module, "store", vec)
    align = ir.Constant(I32, 4 if dtype == "f32" else 8)
    zero = ir.Constant(vec, [0.0] * vl)
    lanes = ir.Constant(ir.VectorType(I64, vl), list(range(vl)))
    def splat(v: ir.Value, t: ir.Type, n: int) -> ir.Value:
        u = b.insert_element(ir.Constant(ir.VectorType(t, n), ir.Undefined), v,
                             ir.Constant(I32, 0))
        return b.shuffle_vector(u, ir.Constant(ir.VectorType(t, n), ir.Undefined),
                                ir.Constant(ir.VectorType(I32, n), [0] * n))

    def wgt(o: ir.Value, kk: ir.Value) -> ir.Value:
        off = b.add(b.mul(o, i64c(k)), kk) if w_major else b.add(b.mul(kk, i64c(ldw)), o)
        return b.load(elem_gep(b, ty, w, off), typ=ty)

    def loop(n: ir.Value, start: ir.Value, nm: str, carried: list[ir.Value], body):
        """``for i in [start, n)`` carrying ``carried`` (phis): ``body(i, vals)``
        returns the next values; returns the values after the loop."""
        pre = b.block
        head, blk, end = (b.append_basic_block(f"{nm}.{t}") for t in ("h", "b", "e"))
        b.branch(head)
        b.position_at_end(head)
        i = b.phi(I64)
        i.add_incoming(start, pre)
        phis = []
        for v in carried:
            p = b.phi(v.type)
            p.add_incoming(v, pre)
            phis.append(p)
        b.cbranch(b.icmp_signed("<", i, n), blk, end)
        b.position_at_end(blk)
        nxt = body(i, phis)
        i.add_incoming(b.add(i, i64c(1), flags=["nsw"]), b.block)
        for p, v in zip(phis, nxt):
            p.add_incoming(v, b.block)
        # not unrolled: a constant K of 27-576 was unrolled whole, in every tile
        # variant, which tripled a small CNN's compile time (0.10 -> 0.33 s)
        loop_hint(b, b.branch(head), "llvm.loop.unroll.disable", None)
        b.position_at_end(end)
        return phis

    def xat(v: int) -> ir.Value:  # the column offset of a tile's vector v
        return i64c(v * vl) if stacked is None else b.mul(i64c(v), stacked[1])

    def cat(v: int) -> ir.Value:
        return i64c(v * vl) if stacked is None else b.mul(i64c(v), stacked[2])

    def tile(o0: ir.Value, mr: int, j0: ir.Value, nv: int, mask: ir.Value | None,
             width: ir.Value | None = None) -> None:
        """``C[o0:o0+mr, j0:j0+nv*vl]`` (``mask``: each vector masked to ``width``)."""
        def step(kk, accs):
            xrow = b.mul(kk, ldx) if xoff is None else \
                b.load(b.gep(xoff, [kk], source_etype=I64), typ=I64)
            xs = []
            for v in range(nv):
                p = elem_gep(b, ty, x, b.add(xrow, b.add(j0, xat(v))))
                xs.append(b.load(p, typ=vec, align=align.constant) if mask is None else
                          b.call(mload, [p, align, mask, zero]))
            out = []
            for r in range(mr):
                wv = splat(wgt(b.add(o0, i64c(r)), kk), ty, vl)
                for v in range(nv):
                    out.append(b.call(fma, [wv, xs[v], accs[r * nv + v]]))
            return out

        accs = loop(i64c(k), i64c(0), "k", [zero] * (mr * nv), step)
        for r in range(mr):
            crow = b.mul(b.add(o0, i64c(r)), ldc)
            for v in range(nv):
                p = elem_gep(b, ty, c, b.add(crow, b.add(j0, cat(v))))
                if mask is None:
                    b.store(accs[r * nv + v], p, align=align.constant)
                else:
                    b.call(mstore, [accs[r * nv + v], p, align, mask])
        if after_tile is not None and stacked is not None:
            with for_range(b, i64c(mr), "er") as r:
                for v in range(nv):
                    after_tile(b.add(o0, r), v, width)
        elif after_tile is not None:  # one loop over the rows: one copy of the epilogue
            n = i64c(nv * vl) if width is None else width
            with for_range(b, i64c(mr), "er") as r:
                after_tile(b.add(o0, r), j0, n)

    def row_block(o0: ir.Value, mr: int) -> None:
        if stacked is not None:  # one tile of stacked runs, each masked to ncols
            tile(o0, mr, i64c(0), stacked[0],
                 b.icmp_signed("<", lanes, splat(ncols, I64, vl)), ncols)
            return
        wide = NV * vl
        n_tiles = b.sdiv(ncols, i64c(wide))
        loop(n_tiles, i64c(0), "jt", [],
             lambda t, _: (tile(o0, mr, b.mul(t, i64c(wide)), NV, None), [])[1])
        done = b.mul(n_tiles, i64c(wide))
        n_vec = b.sdiv(b.add(b.sub(ncols, done), i64c(vl - 1)), i64c(vl))

        def last(t, _):  # the rest, one masked vector at a time
            j0 = b.add(done, b.mul(t, i64c(vl)))
            rest = smin(b, i64c(vl), b.sub(ncols, j0))
            tile(o0, mr, j0, 1, b.icmp_signed("<", lanes, splat(rest, I64, vl)), rest)
            return []
        loop(n_vec, i64c(0), "jv", [], last)

    full = rows // mr_full
    if full:
        loop(i64c(full), i64c(0), "ob",
             [], lambda ob, _: (row_block(b.mul(ob, i64c(mr_full)), mr_full), [])[1])
    if rows % mr_full:
        row_block(i64c(full * mr_full), rows % mr_full)
