"""Core ATen ops with no tensor lowering: size queries answered from the trace, and the
documented refusals (:data:`REFUSED`), each a ``NotSupportedError`` saying why and what
to do instead (tested in ``tests/frontend_torch/test_core_aten_coverage.py``)."""

from __future__ import annotations

from typing import Any

import torch

from oxla.errors import NotSupportedError
from oxla_frontend_torch.registry import LoweringContext, lowering

aten = torch.ops.aten

REFUSED: dict[Any, tuple[str, str]] = {
    aten.nonzero.default: (
        "its result shape depends on the input's values",
        "use torch.where(mask, x, 0) or a fixed-size mask instead of nonzero / boolean "
        "indexing"),
    aten._local_scalar_dense.default: (
        "it reads a tensor value into Python (.item(), int(t), a data-dependent branch)",
        "keep the value a tensor (torch.where instead of `if t:`)"),
    aten.rand.default: (
        "random numbers in the graph cannot reproduce torch's generator",
        "pass random tensors in as inputs"),
    aten.randn.default: (
        "random numbers in the graph cannot reproduce torch's generator",
        "pass random tensors in as inputs"),
    aten.randperm.default: (
        "random numbers in the graph cannot reproduce torch's generator",
        "pass the permutation in as an input"),
    aten._fft_r2c.default: (
        "its result is a complex tensor, which the torch frontend has no dtype for",
        "compute the FFT outside the compiled program"),
    aten._fft_c2r.default: (
        "its input is a complex tensor, which the torch frontend has no dtype for",
        "compute the FFT outside the compiled program"),
    aten._embedding_bag.default: (
        "EmbeddingBag's per-bag offsets have no lowering yet",
        "use nn.Embedding followed by a sum/mean over each bag (fixed-size bags)"),
    aten.atan2.out: (
        "out= overloads do not occur in functional (exported) graphs",
        "call torch.atan2 without out="),
    aten.resize_.default: (
        "in-place resizing does not occur in functional (exported) graphs",
        "build a new tensor of the wanted shape (torch.zeros, x.new_empty)"),
}
"""ATen overload -> (why it is refused, what to do instead)."""


def _refuse(why: str, instead: str):
    def rule(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Any:
        raise NotSupportedError(f"'{ctx.node.target}' is not supported: {why}",
                                loc=ctx.b.loc, notes=[instead])

    return rule


for _op, (_why, _instead) in REFUSED.items():
    lowering(_op)(_refuse(_why, _instead))


@lowering(aten.sym_stride.int, aten.sym_storage_offset.default,
          aten.sym_is_contiguous.default)
def _size_query(ctx: LoweringContext, *args: Any, **kwargs: Any) -> int:
    """A stride, storage offset or contiguity, as the trace recorded it (a Python int)."""
    return ctx.dim(ctx.node.meta["val"])
