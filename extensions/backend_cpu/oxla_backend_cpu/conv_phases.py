"""Transposed convolutions (input dilation) split into dense phase convolutions, before
fusion.

A ``convolution`` with ``lhs_dilation`` ``d > 1`` (``lax.conv_transpose``, the input
gradient of a strided convolution) multiplies the kernel with an input that is zero at
all but every ``d``-th position: the im2col + GEMM kernel then spent ``prod(d)`` times
the needed multiply-adds on zeros (a 3x3 stride-2 transposed conv of 4x32x32x32 ran at
2.2x XLA's time, its GEMM 85% of it). The gradient identity of the strided convolution
gives the dense form instead: output position ``o = d*i + r`` (phase ``r`` in
``[0, d)``, per spatial dimension) sees only the taps ``k = k0 + d*t`` with
``k0 = (lo - r) mod d`` (``lo``: the low padding), reading input ``i + c + t`` with
``c = (r + k0 - lo) / d``. So each phase is an ordinary stride-1 convolution with the
kernel sliced by ``k0::d``, padding ``(-c, Hq - L + c + K' - 1)`` (``L`` input size,
``K'`` taps of the phase, ``Hq = ceil(H / d)`` output rows of every phase), and the
phases are interleaved into the output (a size-1 axis after each spatial dimension,
concatenated along it, reshaped, and sliced to ``H`` rows when ``d`` does not divide
``H``: one pass over the output).

Each output element is then the sum of the same nonzero products as before (the zero
products dropped are exact zeros), so results differ only by summation order, as any
f32 GEMM's. Applied to f32/f64 convolutions with static shapes, unit window strides, no
batch groups, no window reversal or kernel dilation on the dilated dimensions, at
least one tap per phase and at most
:data:`MAX_PHASES` phases; others are left as they are.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from oxla.ir import Builder, Module, Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla_backend_cpu import linalg
from oxla_backend_cpu.linalg import conv_params

MAX_PHASES = 16


def _phase_dims(op: Operation) -> list[tuple[int, int, int, int, int, int]] | None:
    """Per spatial dimension ``(d, lo, K, L, H, i)`` (dilation, low padding, kernel,
    input and output sizes, index), or None when the rewrite does not apply."""
    lhs, rhs = op.operands[:2]
    res = op.results[0].type
    ets = {lhs.type.element_type, rhs.type.element_type, res.element_type}
    if len(ets) != 1 or not isinstance(res.element_type, T.FloatType) or \
            res.element_type.name not in ("f32", "f64"):
        return None
    if not all(v.type.is_static for v in (lhs, rhs, op.results[0])):
        return None
    if op.attr("padding") is None:
        return None
    dn = op.attr("dimension_numbers")
    ns = len(lhs.type.shape) - 2
    strides, lo, ldil, rdil, rev, _, bgc = conv_params(op, ns)
    if bgc != 1 or any(s != 1 for s in strides) or all(d == 1 for d in ldil):
        return None
    if math.prod(ldil) > MAX_PHASES:
        return None
    out = []
    for i in range(ns):
        d = ldil[i]
        k = rhs.type.shape[int(dn.kernel_spatial_dimensions[i])]
        size = lhs.type.shape[int(dn.input_spatial_dimensions[i])]
        h = res.shape[int(dn.output_spatial_dimensions[i])]
        if d > 1 and (rev[i] or rdil[i] != 1 or k < d):
            return None
        out.append((d, lo[i], k, size, h, i))
    # every phase must stay a GEMM: one below linalg.SMALL_CONV_MACS would take the f64
    # loop kernel, slower than the zero-filled GEMM it replaces
    cg = rhs.type.shape[int(dn.kernel_input_feature_dimension)]
    per_phase = math.prod(res.shape) // math.prod(ldil) * cg  # MACs per tap, about
    fewest = min(math.prod(-(-(x[2] - (x[1] - r) % x[0]) // x[0]) for x, r in zip(out, rs))
                 for rs in itertools.product(*(range(x[0]) for x in out)))
    if res.element_type.name == "f32" and per_phase * fewest <= linalg.SMALL_CONV_MACS:
        return None
    return out


def _phase(b: Builder, op: Operation, dims, r: tuple[int, ...]) -> Value:
    """The stride-1 convolution giving output phase ``r``."""
    lhs, rhs = op.operands[:2]
    dn = op.attr("dimension_numbers")
    res = op.results[0].type
    w = rhs
    start, limit, step = [0] * rhs.type.rank, list(rhs.type.shape), [1] * rhs.type.rank
    pads = np.asarray(op.attr("padding").array, np.int64).reshape(-1, 2).copy()
    oshape = list(res.shape)
    for (d, lo, k, size, h, i), ri in zip(dims, r):
        if d == 1:
            continue
        k0 = (lo - ri) % d
        taps = -(-(k - k0) // d)
        c = (ri + k0 - lo) // d
        hq = -(-h // d)
        kd = int(dn.kernel_spatial_dimensions[i])
        start[kd], step[kd] = k0, d
        pads[i] = (-c, hq - size + c + taps - 1)
        oshape[int(dn.output_spatial_dimensions[i])] = hq
    if any(s != 0 for s in start) or any(s != 1 for s in step):
        w = b.slice(rhs, start, limit, step)
    attrs = dict(op.attributes)
    attrs["padding"] = A.DenseElementsAttr(op.attr("padding").type, pads)
    attrs["lhs_dilation"] = dataclasses.replace(op.attr("lhs_dilation"),
                                                values=(1,) * len(dims))
    return b.create(op.name, [lhs, w], attrs, [res.with_shape(tuple(oshape))]).results[0]


def split_transposed_convs(module: Module) -> int:
    """Rewrites the convolutions of ``module`` described in the module doc; returns how
    many."""
    count = 0
    for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
        dims = _phase_dims(op)
        if dims is None:
            continue
        dn = op.attr("dimension_numbers")
        res = op.results[0].type
        b = Builder.before(op, op.loc)
        osd = [int(x) for x in dn.output_spatial_dimensions]
        phases = {r: _phase(b, op, dims, r)
                  for r in itertools.product(*(range(d) for d, *_ in dims))}
        # a size-1 axis after each dilated spatial dim of the output, phases joined
        # along it from the last spatial dimension to the first, then merged
        grown, pos = [], {}
        for ax, n in enumerate(phases[next(iter(phases))].type.shape):
            grown.append(n)
            if ax in osd and dims[osd.index(ax)][0] > 1:
                pos[osd.index(ax)] = len(grown)
                grown.append(1)
        vals = {r: b.reshape(v, grown) for r, v in phases.items()}
        for i in reversed(range(len(dims))):
            if dims[i][0] == 1:
                continue
            joined = {}
            for r in {key[:i] + key[i + 1:] for key in vals}:
                parts = [vals[r[:i] + (ri,) + r[i:]] for ri in range(dims[i][0])]
                joined[r[:i] + (0,) + r[i:]] = b.concatenate(parts, pos[i])
            vals = joined
        (v,) = vals.values()
        full = [n * dims[osd.index(ax)][0] if ax in osd else n
                for ax, n in enumerate(phases[next(iter(phases))].type.shape)]
        out = b.reshape(v, full)
        if full != list(res.shape):  # phases of ceil(H / d) rows: drop the extra ones
            out = b.slice(out, [0] * len(full), list(res.shape))
        op.results[0].replace_all_uses_with(out)
        op.erase()
        count += 1
    return count
