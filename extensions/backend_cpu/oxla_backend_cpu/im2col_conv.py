"""Convolutions with few output pixels per image as an explicit im2col and one GEMM over
the whole batch, rewritten before fusion.

The GEMM-mode convolution kernel (:mod:`oxla_backend_cpu.conv_gemm`) multiplies, for an
output whose feature dimension is not innermost (NCHW), the weights ``[O, K]`` by each
image's columns ``[K, P]``: with few output pixels ``P`` per image (the last stages of a
ResNet at small batch: 4x4 or 8x8 pixels, ``K`` up to 4608) that GEMM is a thin strip,
re-packs the weights per image, and ran at 57 GFLOP/s (4x512x4x4, 3x3, 2 threads of a
Zen 4) where the packed-weight GEMM reaches ~200. Here a ``convolution`` (spec section
"convolution") whose kernel is a constant becomes::

    xp   = pad(transpose(x, [batch, spatial..., feature]), 0, lo, hi,
               interior = lhs_dilation - 1)
    cols = concatenate over window positions k (row-major) of
           slice(xp, k * rhs_dilation, strides = window_strides)      # [M, KW, C]
    out  = dot_general(reshape(cols, [M, KW * C]), W2)               # [M, O]

with ``M`` = batch x output pixels and ``W2`` the kernel transposed to ``[KW * C, O]`` at
compile time, so the GEMM takes the packed-weight path (:mod:`oxla_backend_cpu.packed_gemm`)
with all images' rows at once; the result is reshaped and transposed to the output
layout (fused with the epilogue that follows). Each output element sums the same
products; only their order differs (implementation-defined, spec "dot_general").

Left as they are: outputs with the feature dimension innermost (the kernel's rows are
already all pixels), more than :data:`MAX_PIXELS` output pixels per image (the chunked
im2col of the conv kernel is cheaper there than the materialized columns), fewer than
:data:`MIN_ROWS` rows in all, feature or batch groups, window reversal, non-float or
mixed element types, kernels that are not constants, and dynamic shapes.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from oxla.ir import Builder, Module, Operation
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes.util import constant_array
from oxla_backend_cpu.linalg import (
    ConvDims,
    conv_padding,
    conv_params,
    static_float_conv,
    to_output_layout,
)

MAX_PIXELS = 16
"""Output pixels per image up to which the rewrite applies (4x4). One thread of a Zen 4,
kernel time (``bench``-style, one process), 3x3 NCHW convolutions at batch 4: 4x4 pixels
with 512 channels 6.3 -> 3.6-4.0 ms (and the conv kernel did not scale to two threads
there: 5.3 ms); 8x8 with 256 channels 3.8 -> 4.4-4.5 ms (the materialized columns cost
more than the thin GEMM loses); 16x16 and up equal."""
MIN_ROWS = 16
"""Rows (batch x pixels) from which the packed-weight GEMM takes the product."""


def _plan(op: Operation):
    if not static_float_conv(op):
        return None
    x, w = op.operands
    y = op.results[0]
    wc = constant_array(w)
    if wc is None or wc.size != math.prod(w.type.shape):
        return None
    ns = x.type.rank - 2
    strides, _, ldil, rdil, rev, fgc, bgc = conv_params(op, ns)
    if ns < 1 or fgc != 1 or bgc != 1 or any(rev):
        return None
    dn = op.attr("dimension_numbers")
    of = int(dn.output_feature_dimension)
    if of == ns + 1:
        return None
    ys = y.type.shape
    pixels = math.prod(ys[int(d)] for d in dn.output_spatial_dimensions)
    if not 0 < pixels <= MAX_PIXELS or pixels * ys[int(dn.output_batch_dimension)] < MIN_ROWS:
        return None
    return wc, (strides, conv_padding(op, ns), ldil, rdil)


def _rewrite(op: Operation, wc: np.ndarray, params) -> None:
    strides, pad, ldil, rdil = params
    x, w = op.operands
    cd = ConvDims.of_op(op)
    ib, if_, isd, kif, kof, ksd, osd = cd.ib, cd.if_, cd.isd, cd.kif, cd.kof, cd.ksd, cd.osd
    et = x.type.element_type
    ys, ws = op.results[0].type.shape, w.type.shape
    nb, c, o = x.type.shape[ib], x.type.shape[if_], ws[kof]
    kspat, ospat = [ws[d] for d in ksd], [ys[d] for d in osd]
    kw, m = math.prod(kspat), nb * math.prod(ospat)
    b = Builder.before(op, op.loc)
    xt = b.transpose(x, [ib, *isd, if_])
    if np.any(pad) or any(d != 1 for d in ldil):
        zero = b.constant(np.zeros((), et.dtype), T.TensorType((), et))
        attrs = {"edge_padding_low": A.i64_array([0, *pad[:, 0].tolist(), 0]),
                 "edge_padding_high": A.i64_array([0, *pad[:, 1].tolist(), 0]),
                 "interior_padding": A.i64_array([0, *(d - 1 for d in ldil), 0])}
        xt = b.create("stablehlo.pad", [xt, zero], attrs).results[0]
    pieces = []
    for pos in itertools.product(*(range(k) for k in kspat)):
        start = [0, *(p * r for p, r in zip(pos, rdil)), 0]
        limit = [nb, *(s + (q - 1) * st + 1 for s, q, st in zip(start[1:], ospat, strides)), c]
        pieces.append(b.reshape(b.slice(xt, start, limit, [1, *strides, 1]), (m, 1, c)))
    cols = pieces[0] if len(pieces) == 1 else b.concatenate(pieces, 1)
    w2 = np.ascontiguousarray(np.transpose(wc, [*ksd, kif, kof])).reshape(kw * c, o)
    acc = b.dot_general(b.reshape(cols, (m, kw * c)),
                        b.constant(w2, T.TensorType((kw * c, o), et)))
    op.results[0].replace_all_uses_with(to_output_layout(b, b.reshape(acc, (nb, *ospat, o)), cd))
    op.erase()
    if w.owner_op is not None and not w.has_uses:
        w.owner_op.erase()


def rewrite_im2col_convs(module: Module) -> int:
    """Rewrites the convolutions of ``module`` described in the module doc; returns how
    many."""
    count = 0
    for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
        plan = _plan(op)
        if plan is None:
            continue
        _rewrite(op, *plan)
        count += 1
    return count
