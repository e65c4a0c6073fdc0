"""GPU kernels of loop fusions (:class:`oxla.lowering.LoopKernel`): one thread per
output element in a grid-stride loop; the element's value comes from the shared index
and element rules (:class:`oxla_codegen_llvm.FusedEmitter`), so every op and element
type the cpu backend fuses (elementwise, broadcast, transpose, reshape, slice, pad,
concatenate, iota, convert, gather...) is fused the same way here."""

from __future__ import annotations

import math

from oxla.lowering import LoopKernel, PackKernel, Plan
from oxla_codegen_llvm.fused import FusedEmitter, load, shape_of, store
from oxla_codegen_llvm.loops import delinearize, linearize
from oxla_codegen_llvm.simt.model import Kernel, KernelBuilder, Param, grid_stride

BLOCK = 256
MAX_BLOCKS = 65535 * 4
"""Grid-stride loops cap the grid: 256 x 262140 threads cover 67M elements in one pass."""


def launch_1d(n: int, block: int = BLOCK) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(grid, block) covering ``n`` threads with a grid-stride loop."""
    blocks = max(1, min(-(-n // block), MAX_BLOCKS))
    return (blocks, 1, 1), (block, 1, 1)


def loop_kernel(k: LoopKernel, plan: Plan) -> list[Kernel]:
    """The kernel of a loop fusion: ``out[i] = root(i)``.

    Params: one buffer per input (``k.inputs``, in order), then the output.
    """
    shape = shape_of(k.root)
    n = math.prod(shape)
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
