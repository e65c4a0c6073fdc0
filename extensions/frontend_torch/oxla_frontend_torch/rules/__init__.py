"""Lowering rules, one module per op family; importing this package fills ``LOWERINGS``
and marks the rules checked on ``?`` dimensions (``DYNAMIC_SAFE``)."""

from __future__ import annotations

import operator

import torch

from oxla_frontend_torch.registry import dynamic_safe
from oxla_frontend_torch.rules import elementwise, nn, reduce, scatter, shape  # noqa: F401

_aten = torch.ops.aten

dynamic_safe(
    # elementwise: operands broadcast to the node's own output shape
    _aten.add.Tensor, _aten.add.Scalar, _aten.sub.Tensor, _aten.sub.Scalar,
    _aten.mul.Tensor, _aten.mul.Scalar, _aten.div.Tensor, _aten.div.Scalar,
    _aten.neg.default, _aten.exp.default, _aten.tanh.default, _aten.relu.default,
    _aten.sigmoid.default, _aten.rsqrt.default, _aten.sqrt.default, _aten.erf.default,
    _aten.pow.Tensor_Scalar, _aten.where.self, _aten.gelu.default,
    _aten.clone.default, _aten.alias.default, _aten._to_copy.default,
    _aten._assert_tensor_metadata.default,
    # shapes: dynamic_reshape / dynamic_broadcast_in_dim to the output's symbolic sizes
    _aten.view.default, _aten._unsafe_view.default, _aten.reshape.default,
    _aten.unsqueeze.default, _aten.squeeze.dim, _aten.squeeze.dims,
    _aten.flatten.using_ints, _aten.expand.default, _aten.permute.default,
    _aten.transpose.int, _aten.t.default,
    # contractions and reductions: inferred result types
    _aten.mm.default, _aten.bmm.default, _aten.addmm.default,
    _aten.sum.dim_IntList, _aten.mean.dim, _aten.amax.default,
    # broadcasts and iotas sized from their operands (get_dimension_size + concatenate)
    _aten.native_layer_norm.default, _aten._softmax.default, _aten._log_softmax.default,
    _aten.scaled_dot_product_attention.default, _aten.arange.start_step,
    _aten.cumsum.default,
    # comparisons and bit ops (one rule per family): operands broadcast to the output
    _aten.eq.Tensor, _aten.eq.Scalar, _aten.ne.Tensor, _aten.ne.Scalar,
    _aten.le.Tensor, _aten.le.Scalar, _aten.lt.Tensor, _aten.lt.Scalar,
    _aten.ge.Tensor, _aten.ge.Scalar, _aten.gt.Tensor, _aten.gt.Scalar,
    _aten.bitwise_and.Tensor, _aten.bitwise_or.Tensor,
    # slices with run-time bounds (real_dynamic_slice), concatenation, gathers with `?`
    # batch dims
    _aten.slice.Tensor, _aten.select.int, _aten.split_with_sizes.default, _aten.cat.default,
    _aten.embedding.default, _aten.index.Tensor, _aten.gather.default,
    # picking one result of a multi-output op
    operator.getitem,
)
