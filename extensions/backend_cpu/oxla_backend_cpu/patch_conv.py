"""Patch convolutions as one GEMM, rewritten before fusion.

A ``convolution`` (spec section "convolution") whose window equals its stride in every
spatial dimension, with no padding, dilation or window reversal and one feature and
batch group, reads each input element at most once: its windows tile the input. The
vision transformers' patch embedding (ViT, DeiT: 16x16 stride 16), the ConvNeXt and
Swin stems (4x4 stride 4) and space-to-depth downsampling (2x2 stride 2) have this form.
For input spatial sizes ``H_i``, window ``p_i`` and ``Q_i = H_i // p_i`` outputs (the
last ``H_i - Q_i * p_i`` elements fall in no window and are sliced off)::

    x'   = reshape(x, each spatial H_i split into [Q_i, p_i])
    cols = reshape(transpose(x', [batch, Q..., the feature and p dims in x's order]),
                   [N * prod(Q), C * prod(p)])
    w2   = reshape(transpose(w, [input feature and spatial dims in x's order, O]),
                   [C * prod(p), O])
    out  = transpose(reshape(dot_general(cols, w2), [N, Q..., O]), output layout)

so the im2col of the general GEMM-mode convolution becomes one transpose (fused into
a loop kernel), a constant ``w`` is folded into ``w2`` at compile time and reaches the
packed-weight GEMM (:mod:`oxla_backend_cpu.packed_gemm`), and a feature-innermost
output needs no final transpose. Each output element sums the same ``C * prod(p)``
products as the convolution; only their order differs (a dot's accumulation order is
implementation-defined, spec section "dot_general").

Left as they are: windows of one element (a 1x1 stride-1 convolution is already a
GEMM), integer element types (:mod:`oxla_backend_cpu.int8_conv` takes the 8-bit
ones), mixed element types, and dynamic shapes.
"""

from __future__ import annotations

import math

import numpy as np

from oxla.ir import Builder, Module, Operation
from oxla.ir import types as T
from oxla.passes.util import constant_array
from oxla_backend_cpu.linalg import (
    ConvDims,
    conv_padding,
    conv_params,
    static_float_conv,
    to_output_layout,
)


def _is_patch_conv(op: Operation) -> bool:
    if not static_float_conv(op):
        return False
    x, w = op.operands
    ns = x.type.rank - 2
    strides, _, ldil, rdil, rev, fgc, bgc = conv_params(op, ns)
    dn = op.attr("dimension_numbers")
    window = tuple(w.type.shape[int(d)] for d in dn.kernel_spatial_dimensions)
    if ns < 1 or fgc != 1 or bgc != 1 or any(rev) or math.prod(window) < 2:
        return False
    if any(d != 1 for d in (*ldil, *rdil)) or np.any(conv_padding(op, ns)):
        return False
    return window == strides and all(
        x.type.shape[int(d)] >= p for d, p in zip(dn.input_spatial_dimensions, window))


def _rewrite(op: Operation) -> None:
    x, w = op.operands
    cd = ConvDims.of_op(op)
    ib, if_, isd, kif, kof, ksd = cd.ib, cd.if_, cd.isd, cd.kif, cd.kof, cd.ksd
    ns = len(isd)
    xs, ws = x.type.shape, w.type.shape
    win = [ws[d] for d in ksd]
    q = [xs[d] // p for d, p in zip(isd, win)]
    n, c, o = xs[ib], xs[if_], ws[kof]
    b = Builder.before(op, op.loc)
    if any(xs[d] != qi * p for d, qi, p in zip(isd, q, win)):
        limit = list(xs)
        for d, qi, p in zip(isd, q, win):
            limit[d] = qi * p
        x = b.slice(x, [0] * len(xs), limit)
    # x' dims: x's dims in order, a spatial one split into (Q_i, p_i)
    split, pos = [], {}
    for d in range(len(xs)):
        if d in isd:
            i = isd.index(d)
            pos[("q", i)], pos[("p", i)] = len(split), len(split) + 1
            split += [q[i], win[i]]
        else:
            pos[d] = len(split)
            split.append(xs[d])
    xr = b.reshape(x, split)
    # contracting dims in x's order: the feature dim and the window offsets
    kx = sorted([pos[if_]] + [pos[("p", i)] for i in range(ns)])
    cols = b.transpose(xr, [pos[ib]] + [pos[("q", i)] for i in range(ns)] + kx)
    kdim = c * math.prod(win)
    cols = b.reshape(cols, [n * math.prod(q), kdim])
    # the kernel's matching dims: feature dim <-> kif, p_i <-> ksd[i]
    to_kernel = {pos[if_]: kif, **{pos[("p", i)]: ksd[i] for i in range(ns)}}
    wperm = [to_kernel[d] for d in kx] + [kof]
    wc = constant_array(w)
    if wc is not None:
        w2 = b.constant(np.ascontiguousarray(np.transpose(wc, wperm)).reshape(kdim, o),
                        T.TensorType((kdim, o), w.type.element_type))
    else:
        w2 = b.reshape(b.transpose(w, wperm), [kdim, o])
    y = to_output_layout(b, b.reshape(b.dot_general(cols, w2), [n, *q, o]), cd)
    op.results[0].replace_all_uses_with(y)
    op.erase()
    if w.owner_op is not None and w.owner_op.name == "stablehlo.constant" \
            and not w.has_uses:
        w.owner_op.erase()


def rewrite_patch_convs(module: Module) -> int:
    """Rewrites the patch convolutions of ``module`` (see the module doc) into a
    transpose and a ``dot_general``; returns how many."""
    count = 0
    for op in [o for o in module.walk() if _is_patch_conv(o)]:
        _rewrite(op)
        count += 1
    return count
