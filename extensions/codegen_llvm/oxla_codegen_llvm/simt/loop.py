"""GPU kernels of loop fusions (:class:`oxla.lowering.LoopKernel`): one thread per
output element in a grid-stride loop; the element's value comes from the shared index
and element rules (:class:`oxla_codegen_llvm.FusedEmitter`), so every op and element
type the cpu backend fuses (elementwise, broadcast, transpose, reshape, slice, pad,
concatenate, iota, convert, gather...) is fused the same way here."""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.ir import types as T
from oxla.lowering import LoopKernel, PackKernel, Plan
from oxla_codegen_llvm.fused import FusedEmitter, load, shape_of, store
from oxla_codegen_llvm.loops import delinearize, linearize
from oxla_codegen_llvm.scalar import llvm_type
from oxla_codegen_llvm.simt.model import (
    I64,
    Kernel,
    KernelBuilder,
    Param,
    grid_stride,
    strided_loop,
)

BLOCK = 256
MAX_BLOCKS = 65535 * 4
"""Grid-stride loops cap the grid: 256 x 262140 threads cover 67M elements in one pass."""


def launch_1d(n: int, block: int = BLOCK) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) covering ``n`` threads with a grid-stride loop."""
    blocks = max(1, min(-(-n // block), MAX_BLOCKS))
    return (blocks, 1, 1), (block, 1, 1)


def loop_kernel(k: LoopKernel, plan: Plan) -> list[Kernel]:
    """The kernel of a loop fusion: ``out[i] = root(i)``.

    Params: one buffer per input (``k.inputs``, in order), then the output. A root
    ``transpose`` that moves the innermost dim goes through shared-memory tiles
    (:func:`tiled_transpose`).
    """
    shape = shape_of(k.root)
    n = math.prod(shape)
    axes = transpose_axes(k) if n else None
    if axes is not None:
        return tiled_transpose(k, plan, axes)
    params = [Param("buf", plan.vbuf[v]) for v in k.inputs] + [Param("buf", k.out)]
    grid, block = launch_1d(n)
    kb = KernelBuilder(k.name, params, grid, block)
    with kb.region() as r:
        if n:
            et = k.root.type.element_type
            out = r.params[-1]
            f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:-1])))
            with grid_stride(r, n) as i:
                f.reset()
                idx = delinearize(r.b, i, shape)
                store(r.s, out, et, i, f.value_at(k.root, idx))
    return [kb.build()]


def pack_kernel(k: PackKernel, plan: Plan) -> list[Kernel]:
    """A layout copy: ``out`` dimension i = ``src`` dimension ``perm[i]``.

    Params: the source buffer, then the output.
    """
    src_shape = shape_of(k.src)
    shape = [src_shape[p] for p in k.perm]
    n = math.prod(shape)
    et = k.src.type.element_type
    grid, block = launch_1d(n)
    kb = KernelBuilder(k.name, [Param("buf", k.src_buf), Param("buf", k.out)], grid, block)
    with kb.region() as r:
        if n:
            with grid_stride(r, n) as i:
                idx = delinearize(r.b, i, shape)
                sidx: list = [None] * len(shape)
                for d, p in enumerate(k.perm):
                    sidx[p] = idx[d]
                x = load(r.s, r.params[0], et, linearize(r.b, sidx, src_shape))
                store(r.s, r.params[1], et, i, x)
    return [kb.build()]


TILE, TILE_ROWS = 32, 8


def transpose_axes(k: LoopKernel) -> tuple[int, int] | None:
    """``(q, last)``: the result dims a shared-memory tile spans when ``k``'s root is a
    ``transpose`` that moves the operand's innermost dim (result dim ``q``) away from the
    innermost position (non-complex elements), else None."""
    op = k.root.owner_op
    if op is None or op.name != "stablehlo.transpose":
        return None
    perm = list(op.attr("permutation").values)
    r = len(perm)
    if r < 2 or perm[-1] == r - 1 or isinstance(k.root.type.element_type, T.ComplexType):
        return None
    shape = shape_of(k.root)
    q = perm.index(r - 1)
    if shape[q] < TILE // 2 or shape[-1] < TILE // 2:
        return None
    return q, r - 1


def _reg_bytes(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return 8 if ty == ir.DoubleType() else 4


def tiled_transpose(k: LoopKernel, plan: Plan, axes: tuple[int, int]) -> list[Kernel]:
    """A transpose through 32 x 32 shared-memory tiles: a 32 x 8 block reads the tile
    along the operand's innermost dim (coalesced), then writes it along the result's
    (coalesced); the operand's value (with any fused producers) comes from the fused
    emitter at the operand's index."""
    q, last = axes
    shape = shape_of(k.root)
    src = k.root.owner_op.operands[0]
    perm = list(k.root.owner_op.attr("permutation").values)
    et = k.root.type.element_type
    ty = llvm_type(et)
    nq, nl = -(-shape[q] // TILE), -(-shape[last] // TILE)
    rest = [d for d in range(len(shape)) if d not in (q, last)]
    nrest = math.prod(shape[d] for d in rest)
    params = [Param("buf", plan.vbuf[v]) for v in k.inputs] + [Param("buf", k.out)]
    pitch = TILE + 1  # no bank conflicts on the column reads
    kb = KernelBuilder(k.name, params, (nq * nl * nrest, 1, 1), (TILE, TILE_ROWS, 1),
                       _reg_bytes(ty) * TILE * pitch)

    def c(n: int) -> ir.Constant:
        return ir.Constant(I64, n)

    def tile(r):
        b = r.b
        t = r.ctaid()
        tl, t = b.urem(t, c(nl)), b.udiv(t, c(nl))
        tq, t = b.urem(t, c(nq)), b.udiv(t, c(nq))
        ridx = delinearize(b, t, [shape[d] for d in rest])
        return b.mul(tq, c(TILE)), b.mul(tl, c(TILE)), ridx

    def index(ridx, iq, il) -> list:
        idx: list = [None] * len(shape)
        for d, i in zip(rest, ridx):
            idx[d] = i
        idx[q], idx[last] = iq, il
        return idx

    def sh(r, row, col):
        at = r.b.add(r.b.mul(row, c(pitch)), col)
        return r.b.gep(r.shared(), [at], source_etype=ty)

    with kb.region() as r:  # read: tx runs along the operand's innermost dim (result q)
        b = r.b
        f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:-1])))
        q0, l0, ridx = tile(r)
        iq = b.add(q0, r.tid("x"))
        with strided_loop(b, r.tid("y"), TILE, TILE_ROWS, "ty") as ty_:
            il = b.add(l0, ty_)
            ok = b.and_(b.icmp_unsigned("<", iq, c(shape[q])),
                        b.icmp_unsigned("<", il, c(shape[last])))
            with b.if_then(ok):
                f.reset()
                oidx = index(ridx, iq, il)
                sidx: list = [None] * len(perm)
                for i, p in enumerate(perm):
                    sidx[p] = oidx[i]
                b.store(f.value_at(src, sidx), sh(r, ty_, r.tid("x")))
                f.reset()
    with kb.region() as r:  # write: tx runs along the result's innermost dim
        b = r.b
        q0, l0, ridx = tile(r)
        il = b.add(l0, r.tid("x"))
        with strided_loop(b, r.tid("y"), TILE, TILE_ROWS, "ty") as ty_:
            iq = b.add(q0, ty_)
            ok = b.and_(b.icmp_unsigned("<", iq, c(shape[q])),
                        b.icmp_unsigned("<", il, c(shape[last])))
            with b.if_then(ok):
                v = b.load(sh(r, r.tid("x"), ty_), typ=ty)
                store(r.s, r.params[-1], et, linearize(b, index(ridx, iq, il), shape), v)
    return [kb.build()]
