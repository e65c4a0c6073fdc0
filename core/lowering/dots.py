"""Target-free pieces of a dot's lowering that every backend shares (spec section
``dot_general``): its dimension numbers, a library GEMM's operand layouts, and the
operand indices of a loop-nest dot.

* :func:`dot_dims` — ``(lhs batch, rhs batch, lhs contracting, rhs contracting)``;
* :func:`gemm_dims` — those plus the free dimensions and the ``batch, m, n, k`` of the
  row-major GEMM ``out[B,M,N] = lhs[B,M,K] rhs[B,K,N]``;
* :func:`blas_operand` — an operand a BLAS library reads in place (laid out batch
  first, then free/contracting in either order), else a
  :class:`~oxla.lowering.PackKernel` copying it into that layout;
* :func:`dot_operand_indices` — the lhs and rhs indices of one product term of a
  loop-nest dot whose result is indexed ``batch..., lhs free..., rhs free...``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oxla.ir import Operation, Value
from oxla.lowering.plan import Buf, Kernel, PackKernel
from oxla.lowering.shapes import nbytes

Dims = tuple[int, ...]


def dot_dims(op: Operation) -> tuple[Dims, Dims, Dims, Dims]:
    """(lhs batch, rhs batch, lhs contracting, rhs contracting) dimensions of a
    ``stablehlo.dot`` or ``stablehlo.dot_general``."""
    if op.name == "stablehlo.dot":
        return (), (), (op.operands[0].type.rank - 1,), (0,)
    d = op.attr("dot_dimension_numbers")
    lb, rb, lc, rc = (tuple(int(x) for x in d.get(k, ())) for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions",
        "lhs_contracting_dimensions", "rhs_contracting_dimensions"))
    return lb, rb, lc, rc


@dataclass(frozen=True)
class GemmDims:
    """A dot's dimensions and its row-major GEMM sizes (module doc)."""

    lb: Dims
    rb: Dims
    lc: Dims
    rc: Dims
    lf: Dims
    rf: Dims
    batch: int
    m: int
    n: int
    k: int


def gemm_dims(op: Operation) -> GemmDims:
    """:class:`GemmDims` of a dot (static shapes)."""
    lhs, rhs = op.operands
    lb, rb, lc, rc = dot_dims(op)
    lf = tuple(d for d in range(lhs.type.rank) if d not in lb + lc)
    rf = tuple(d for d in range(rhs.type.rank) if d not in rb + rc)
    ls, rs = lhs.type.shape, rhs.type.shape
    return GemmDims(lb, rb, lc, rc, lf, rf, math.prod(ls[d] for d in lb),
                    math.prod(ls[d] for d in lf), math.prod(rs[d] for d in rf),
                    math.prod(ls[d] for d in lc))


def blas_operand(x: Value, vbuf: dict[Value, Buf], batch: Dims, free: Dims, contr: Dims,
                 free_first: bool, kernels: list[Kernel], n: int, counter: Any
                 ) -> tuple[Buf, bool]:
    """The buffer a GEMM reads operand ``x`` from and whether it is transposed.

    ``free_first``: the layout the GEMM takes untransposed is ``batch, free, contr``
    (the lhs) rather than ``batch, contr, free`` (the rhs). ``x`` laid out either way
    is read in place; any other layout is copied by a new ``PackKernel`` (appended to
    ``kernels``, named ``pack{n + len(kernels)}``, into a temp buffer named from
    ``counter``), read untransposed.
    """
    order = tuple(range(x.type.rank))
    if order == batch + free + contr:
        return vbuf[x], not free_first
    if order == batch + contr + free:
        return vbuf[x], free_first
    perm = batch + free + contr if free_first else batch + contr + free
    out = Buf(f"pack{next(counter)}", nbytes(x), "temp")
    kernels.append(PackKernel(f"pack{n + len(kernels)}", x, vbuf[x], perm, out))
    return out, False


def dot_operand_indices(dims: tuple[Dims, Dims, Dims, Dims], lhs_rank: int, rhs_rank: int,
                        out_index: Sequence[Any], k_index: Sequence[Any]
                        ) -> tuple[list[Any], list[Any]]:
    """The lhs and rhs indices of the product term at result index ``out_index``
    (``batch..., lhs free..., rhs free...``) and contracting index ``k_index``; the
    index values are whatever the caller's emitter uses (LLVM values, ints)."""
    lb, rb, lc, rc = dims
    lf = [d for d in range(lhs_rank) if d not in lb + lc]
    rf = [d for d in range(rhs_rank) if d not in rb + rc]
    li: list[Any] = [None] * lhs_rank
    ri: list[Any] = [None] * rhs_rank
    for i, (dl, dr) in enumerate(zip(lb, rb)):
        li[dl] = ri[dr] = out_index[i]
    for i, d in enumerate(lf):
        li[d] = out_index[len(lb) + i]
    for i, d in enumerate(rf):
        ri[d] = out_index[len(lb) + len(lf) + i]
    for i, dl, dr in zip(k_index, lc, rc):
        li[dl] = ri[dr] = i
    return li, ri
