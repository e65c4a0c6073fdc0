"""Lowering rules, one module per op family; importing this package fills ``LOWERINGS``
and marks the rules checked on ``?`` dimensions (``DYNAMIC_SAFE``)."""

from __future__ import annotations

import operator

import torch

from oxla_frontend_torch.registry import dynamic_safe
from oxla_frontend_torch.rules import (  # noqa: F401
    decomposed,
    elementwise,
    math,
    nn,
    reduce,
    resample,
    scatter,
    shape,
    sorting,
    special,
)

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

dynamic_safe(
    # elementwise: operands broadcast to the output (scalars with its run-time sizes)
    _aten.abs.default, _aten.ceil.default, _aten.floor.default, _aten.round.default,
    _aten.sign.default, _aten.sin.default, _aten.cos.default, _aten.log.default,
    _aten.log1p.default, _aten.expm1.default, _aten.reciprocal.default, _aten.isnan.default,
    _aten.silu.default, _aten.atan2.default, _aten.maximum.default, _aten.minimum.default,
    _aten.rsub.Scalar, _aten.rsub.Tensor, _aten.div.Tensor_mode, _aten.div.Scalar_mode,
    _aten.remainder.Tensor, _aten.remainder.Scalar, _aten.fmod.Tensor, _aten.fmod.Scalar,
    _aten.pow.Scalar, _aten.pow.Tensor_Tensor, _aten.clamp.default, _aten.clamp.Tensor,
    _aten.clamp_min.default, _aten.clamp_min.Tensor, _aten.clamp_max.default,
    _aten.clamp_max.Tensor, _aten.where.Scalar, _aten.where.ScalarSelf,
    _aten.where.ScalarOther, _aten.masked_fill.Scalar, _aten.masked_fill.Tensor,
    _aten.logical_and.default, _aten.logical_or.default, _aten.logical_xor.default,
    _aten.logical_not.default, _aten.bitwise_not.default, _aten.bitwise_and.Scalar,
    _aten.bitwise_or.Scalar, _aten.bitwise_xor.Scalar, _aten.bitwise_xor.Tensor,
    _aten.to.dtype, _aten.to.dtype_layout, _aten.detach.default, _aten.lift_fresh_copy.default,
    _aten.contiguous.default, _aten.copy.default, _aten._assert_scalar.default,
    _aten.sym_constrain_range.default, _aten.sym_constrain_range_for_size.default,
    # the same rules as marked view/slice/split/cat/softmax/arange overloads
    _aten.view_copy.default, _aten.squeeze.default, _aten.unflatten.int,
    _aten.permute_copy.default, _aten.expand_copy.default, _aten.broadcast_to.default,
    _aten.concat.default, _aten.select_copy.int, _aten.slice_copy.Tensor,
    _aten.split.Tensor, _aten.split_with_sizes_copy.default, _aten.unbind.int,
    _aten.softmax.int, _aten.log_softmax.int, _aten.arange.default, _aten.arange.start,
    _aten.baddbmm.default, _aten.sym_size.int, _aten.sym_numel.default,
    # shape-agnostic (reverse, pad by static amounts) or sized from the operand
    # (dynamic_iota, dynamic_broadcast_in_dim with get_dimension_size parts)
    _aten.flip.default, _aten.constant_pad_nd.default, _aten.tril.default, _aten.triu.default,
    _aten.repeat.default, _aten.index_select.default,
    # creation: broadcasts to the output's symbolic sizes
    _aten.full.default, _aten.full_like.default, _aten.new_full.default, _aten.zeros.default,
    _aten.zeros_like.default, _aten.new_zeros.default, _aten.ones.default,
    _aten.ones_like.default, _aten.new_ones.default, _aten.empty.memory_format,
    _aten.empty_like.default, _aten.new_empty.default, _aten.empty_strided.default,
    _aten.empty_permuted.default, _aten.scalar_tensor.default,
    # reductions: element counts from get_dimension_size, arg-reductions with dynamic_iota
    _aten.sum.default, _aten.mean.default, _aten.prod.default, _aten.prod.dim_int,
    _aten.amin.default, _aten.max.default, _aten.min.default, _aten.any.default,
    _aten.any.dim, _aten.any.dims, _aten.all.default, _aten.all.dim, _aten.all.dims,
    _aten.var.correction, _aten.var.dim, _aten.argmax.default, _aten.argmin.default,
    # nn: per-channel broadcasts sized from the input; pooling refuses ? spatial dims
    _aten.convolution.default, _aten._native_batch_norm_legit_no_training.default,
    _aten._native_batch_norm_legit.default, _aten._native_batch_norm_legit.no_stats,
    _aten._native_batch_norm_legit_functional.default, _aten.native_batch_norm.default,
    _aten.max_pool1d_with_indices.default, _aten.max_pool2d_with_indices.default,
    _aten.max_pool3d_with_indices.default, _aten.avg_pool1d.default, _aten.avg_pool2d.default,
    _aten.avg_pool3d.default, _aten._adaptive_avg_pool2d.default,
    _aten.adaptive_avg_pool2d.default, _aten.adaptive_avg_pool1d.default,
    # scatter along a dim: coordinates from dynamic_iota, src cut with real_dynamic_slice
    _aten.scatter.value, _aten.scatter.src, _aten.scatter.reduce, _aten.scatter.value_reduce,
    _aten.scatter_add.default,
    # elementwise chlo.erf_inv; transposed convolution (the convolution.default rule):
    # per-channel bias sized from the output (tests/frontend_torch/test_ops_resample_sort)
    _aten.erfinv.default,
    # upsampling: constant-index gathers keep ? batch/channel dims whole (dynamic_gather);
    # ? spatial dims are refused by name
    _aten.upsample_nearest2d.vec, _aten.upsample_nearest2d.default,
    _aten.upsample_bilinear2d.vec, _aten.upsample_bilinear2d.default,
    # index_put: updates broadcast to the indexed shape from x's and the indices' sizes
    _aten.index_put.default, _aten.index_put_.default, _aten._unsafe_index_put.default,
)
