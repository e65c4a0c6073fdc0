"""Rules that lower an op through a decomposition into ops that have rules.

The decomposition (one of torch's own, ``torch._decomp``, or one of oxla's in
:mod:`oxla_frontend_torch.decompositions`) is traced with ``make_fx`` on fake tensors of
the node's concrete shapes and dtypes, down to Core ATen, and the traced graph is lowered
in place (``LoweringContext.inline``) with the node's location. Traces are cached per op,
shapes, dtypes and non-tensor arguments, so a model with 30 ReLU6 traces one.

Ops taken from ``torch._decomp`` are those Core ATen keeps whole (``hardtanh``,
``native_group_norm``, the backward ops AOTAutograd emits, ...), listed in
:data:`TORCH_DECOMPOSED`; their semantics are torch's, checked against eager in
``tests/frontend_torch/test_ops_decomposed.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils import _pytree as pytree

from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import Value
from oxla_frontend_torch import decompositions as D
from oxla_frontend_torch.registry import LoweringContext, lowering, shape_of, torch_dtype

aten = torch.ops.aten

TORCH_DECOMPOSED: tuple[Any, ...] = (
    # activations and normalization Core ATen keeps whole
    aten.hardtanh.default, aten.leaky_relu.default, aten.elu.default,
    aten.native_group_norm.default, aten.linalg_vector_norm.default,
    # elementwise
    aten.isinf.default, aten.fill.Scalar,
    # views and scatters into views
    aten.diagonal.default, aten.slice_scatter.default, aten.select_scatter.default,
    # padding and resampling
    aten.reflection_pad1d.default, aten.reflection_pad2d.default,
    aten.reflection_pad3d.default, aten.replication_pad2d.default,
    aten.replication_pad3d.default, aten.col2im.default, aten.grid_sampler_2d.default,
    # backward ops AOTAutograd emits
    aten.native_group_norm_backward.default, aten.native_layer_norm_backward.default,
    aten.native_batch_norm_backward.default, aten.max_pool2d_with_indices_backward.default,
    aten.embedding_dense_backward.default, aten._softmax_backward_data.default,
    aten._log_softmax_backward_data.default, aten.threshold_backward.default,
    aten.gelu_backward.default, aten.silu_backward.default, aten.tanh_backward.default,
    aten.sigmoid_backward.default, aten.hardtanh_backward.default,
    aten.leaky_relu_backward.default, aten.elu_backward.default,
    aten.native_dropout_backward.default,
)

_CACHE: dict[Any, torch.fx.GraphModule] = {}
_CACHE_SIZE = 512
_TABLE: dict[Any, Any] = {}


def _core_table() -> dict[Any, Any]:
    """Core ATen decompositions for the traces (built once; ``sdpa`` kept whole, as the
    importer keeps it)."""
    if not _TABLE:
        _TABLE.update(torch.export.default_decompositions())
        _TABLE.pop(aten.scaled_dot_product_attention.default, None)
    return _TABLE


def _trace(fn: Callable[..., Any], key: Any, leaves: list[Any], spec: Any,
           examples: list[torch.Tensor]) -> torch.fx.GraphModule:
    gm = _CACHE.get(key)
    if gm is not None:
        return gm
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import make_fx

    def call(*tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        args, kwargs = pytree.tree_unflatten(
            [next(it) if isinstance(x, Value) else x for x in leaves], spec)
        out = fn(*args, **kwargs)
        if out is NotImplemented:
            raise NotSupportedError(f"'{key[0]}' with these arguments: its decomposition "
                                    "does not cover them")
        return tuple(out) if isinstance(out, tuple) else out  # named tuples: plain

    with unset_fake_temporarily():
        gm = make_fx(call, decomposition_table=_core_table(), tracing_mode="fake")(*examples)
    if len(_CACHE) >= _CACHE_SIZE:  # many shapes in a long-lived process: start over
        _CACHE.clear()
    _CACHE[key] = gm
    return gm


def decomposed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A rule lowering a node through the torch-level function ``fn`` (same signature as
    the op): traced at the node's shapes, then inlined."""

    def rule(ctx: LoweringContext, *args: Any, **kwargs: Any) -> Any:
        leaves, spec = pytree.tree_flatten((args, kwargs))
        leaves = [ctx.dim(x) if isinstance(x, torch.SymInt | torch.SymFloat | torch.SymBool)
                  else x for x in leaves]
        tensors = [x for x in leaves if isinstance(x, Value)]
        examples, sig = [], []
        for v in tensors:
            shape = shape_of(v)
            if None in shape:
                raise NotSupportedError(f"'{ctx.node.target}' on dynamic ('?') dimensions",
                                        loc=ctx.b.loc)
            dt = torch_dtype(v.type.element_type)
            examples.append(torch.empty(shape, dtype=dt))
            sig.append((shape, dt))
        consts = tuple(repr(x) for x in leaves if not isinstance(x, Value))
        key = (ctx.node.target, fn, tuple(sig), consts, str(spec))
        gm = _trace(fn, key, leaves, spec, examples)
        if ctx.inline is None:
            raise LoweringError(f"'{ctx.node.target}' is lowered through a decomposition, "
                                "which needs the importer's inliner", loc=ctx.b.loc)
        out = ctx.inline(gm, tensors)
        return list(out) if isinstance(out, tuple | list) else out

    return rule


def _register() -> None:
    from torch._decomp import decomposition_table

    for op in TORCH_DECOMPOSED:
        lowering(op)(decomposed(decomposition_table[op]))
    for op, fn in D.DECOMPOSITIONS.items():
        lowering(op)(decomposed(fn))


_register()
