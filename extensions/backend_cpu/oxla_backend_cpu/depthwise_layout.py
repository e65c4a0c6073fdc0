"""Depthwise convolutions on small NCHW planes computed feature-innermost, rewritten
before fusion.

The direct convolution kernel (:func:`oxla_backend_cpu.conv_emit.emit_direct`) runs a
depthwise convolution (one input feature per group) by blocks of the two innermost
output dimensions; in an NCHW layout those are the image plane, and on the small planes
of a MobileNet's last stages (6x6 or 12x12 pixels, 384-960 channels) its innermost
loops are 6-12 elements long: 2x576x6x6 (3x3) took 468 us on one Zen 4 thread. With
the features innermost the block is a row of pixels times all channels, contiguous and
vectorized: 39 us, 99 us with the two transposes. So a ``convolution`` (spec section
"convolution") with ``feature_group_count`` equal to its input features, one input
feature per group, an output whose feature dimension is not innermost and at most
:data:`MAX_PLANE` pixels per image in its input and its output becomes::

    y = transpose(convolution(transpose(x, [batch, spatial..., feature]),
                              transpose(w, [spatial..., in, out])), output layout)

with the same window, strides, padding, dilations and groups (a constant kernel is
transposed at compile time). Each output element is the same sum in the same order.
Larger planes stay (24x24: 209 us NCHW against 327 with the transposes; the input's
transpose is what a stride-2 conv from 24x24 to 12x12 would pay: 309 us against the
conv's 63, in a MobileNetV2).

Two-dimensional NCHW planes the direct kernel computes plane by plane, from a padded
copy on the stack (:func:`oxla_backend_cpu.conv_emit.plane_geometry`), stay too: one
Zen 4 thread, kernel time, this rewrite against the plane kernel: 2x576x6x6 101 against
96 us, 2x192x12x12 94 against 73, 8x256x8x8 277 against 81. The rewrite remains for
the others (1-D and 3-D windows, input dilation, window reversal).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from oxla.ir import Builder, Module, Operation
from oxla.ir import types as T
from oxla.passes.util import constant_array
from oxla_backend_cpu.conv import geometry
from oxla_backend_cpu.conv_emit import plane_geometry
from oxla_backend_cpu.linalg import ConvDims, conv_params, static_float_conv, to_output_layout

MAX_PLANE = 144
"""Pixels per image (input and output planes) up to which the rewrite applies (12x12)."""


def _applies(op: Operation) -> bool:
    if not static_float_conv(op):
        return False
    x, w = op.operands
    y = op.results[0]
    ns = x.type.rank - 2
    if ns < 1:
        return False
    *_, fgc, bgc = conv_params(op, ns)
    dn = op.attr("dimension_numbers")
    c = x.type.shape[int(dn.input_feature_dimension)]
    if bgc != 1 or fgc != c or c < 2 or w.type.shape[int(dn.kernel_input_feature_dimension)] != 1:
        return False
    if int(dn.output_feature_dimension) == ns + 1:
        return False
    planes = [math.prod(v.type.shape[int(d)] for d in dims) for v, dims in
              ((y, dn.output_spatial_dimensions), (x, dn.input_spatial_dimensions))]
    if not all(0 < p <= MAX_PLANE for p in planes):
        return False
    return not _plane_kernel(op)


def _plane_kernel(op: Operation) -> bool:
    """True when the direct kernel computes ``op`` plane by plane
    (:func:`oxla_backend_cpu.conv_emit.plane_geometry`), which is as fast as the
    rewrite or faster without its transposes."""
    try:
        return plane_geometry(geometry(op)) is not None
    except Exception:  # noqa: BLE001 - not a shape the direct kernel reads: rewrite it
        return False


def _rewrite(op: Operation) -> None:
    x, w = op.operands
    dn = op.attr("dimension_numbers")
    ns = x.type.rank - 2
    cd = ConvDims.of_op(op)
    b = Builder.before(op, op.loc)
    xt = b.transpose(x, [cd.ib, *cd.isd, cd.if_])
    wperm = [*cd.ksd, cd.kif, cd.kof]
    wc = constant_array(w)
    if wc is not None and wc.size == math.prod(w.type.shape):
        wt = np.ascontiguousarray(np.transpose(wc, wperm))
        wv = b.constant(wt, T.TensorType(wt.shape, w.type.element_type))
    else:
        wv = b.transpose(w, wperm)
    sp = tuple(range(1, ns + 1))
    ndn = dataclasses.replace(
        dn, input_batch_dimension=0, input_feature_dimension=ns + 1,
        input_spatial_dimensions=sp, kernel_input_feature_dimension=ns,
        kernel_output_feature_dimension=ns + 1, kernel_spatial_dimensions=tuple(range(ns)),
        output_batch_dimension=0, output_feature_dimension=ns + 1,
        output_spatial_dimensions=sp)
    ys = op.results[0].type.shape
    shape = (ys[cd.ob], *(ys[d] for d in cd.osd), ys[cd.of])
    attrs = dict(op.attributes)
    attrs["dimension_numbers"] = ndn
    new = b.create("stablehlo.convolution", [xt, wv], attrs,
                   [T.TensorType(shape, op.results[0].type.element_type)]).results[0]
    op.results[0].replace_all_uses_with(to_output_layout(b, new, cd))
    op.erase()
    if w.owner_op is not None and not w.has_uses:
        w.owner_op.erase()


def rewrite_small_depthwise(module: Module) -> int:
    """Rewrites the depthwise convolutions of ``module`` described in the module doc;
    returns how many."""
    ops = [o for o in module.walk() if _applies(o)]
    for op in ops:
        _rewrite(op)
    return len(ops)
