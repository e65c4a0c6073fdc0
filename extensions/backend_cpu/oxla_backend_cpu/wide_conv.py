"""Small f32 convolutions computed in f64 on the convolution kernels, rewritten before
fusion.

The interpreter accumulates a real convolution in f64 (spec section "convolution"
leaves the order of the sums to the implementation); the cpu backend's f32 kernels
sum in f32 in their own order (BLAS's blocks, the register tiles of
:mod:`oxla_backend_cpu.conv_smallk`), which where terms cancel lands a few f32 units
away (StableHLO's ``conv_general_dilated_1d_*_dynamic`` conformance files). Small
convolutions therefore keep f64 accumulation: up to
:data:`~oxla_backend_cpu.linalg.SMALL_CONV_MACS` in the scalar loop kernel, and up to
:data:`WIDE_CONV_MACS` as::

    y = convert(convolution(convert(x, f64), convert(w, f64)), f32)

with the same window, padding, dilations and groups, on the f64 GEMM and direct
kernels (a constant ``w`` is converted at compile time; the result's ``convert`` is
a loop kernel of its own with the elementwise ops after it). The scalar loop, one latency-bound f64 sum per output element,
took 1.4-2.9 ns per multiply-add: a UNet's last 1x1 convolution (1x16x64x64 -> 2,
131K multiply-adds) 375 us on one Zen 4 thread, 9 us on the f32 kernels.

Left: depthwise-like convolutions (one input feature per group, several groups: the
direct kernel sums each window in order, :data:`~oxla_backend_cpu.linalg.
SMALL_DIRECT_MACS`), other element types, dynamic shapes.
"""

from __future__ import annotations

import math

from oxla.errors import NotSupportedError
from oxla.ir import Builder, Module, Operation
from oxla.ir import types as T
from oxla.passes.util import constant_array
from oxla_backend_cpu import linalg
from oxla_backend_cpu.linalg import conv_params

WIDE_CONV_MACS = 1 << 17
"""Most multiply-adds of an f32 convolution computed in f64 (the bound the scalar f64
loop had before it was lowered to :data:`~oxla_backend_cpu.linalg.SMALL_CONV_MACS`)."""

F32, F64 = T.FloatType("f32"), T.FloatType("f64")


def _applies(op: Operation) -> bool:
    if op.name not in ("stablehlo.convolution", "stablehlo.dynamic_conv"):
        return False
    x, w = op.operands[:2]
    y = op.results[0]
    if not all(v.type.is_static and v.type.element_type == F32 for v in (x, w, y)):
        return False
    dn = op.attr("dimension_numbers")
    cg = w.type.shape[int(dn.kernel_input_feature_dimension)]
    try:
        *_, fgc, bgc = conv_params(op, x.type.rank - 2)
    except NotSupportedError:
        return False  # reported by the kernels
    if cg == 1 and fgc * bgc > 1:
        return False  # depthwise-like: the direct kernel
    window = math.prod(w.type.shape[int(d)] for d in dn.kernel_spatial_dimensions)
    macs = math.prod(y.type.shape) * cg * window
    return linalg.SMALL_CONV_MACS < macs <= WIDE_CONV_MACS


def _widen(b: Builder, v):
    c = constant_array(v)
    if c is not None and c.size == math.prod(v.type.shape):
        return b.constant(c.astype("float64"), T.TensorType(v.type.shape, F64))
    return b.convert(v, F64)


def rewrite_wide_convs(module: Module) -> int:
    """Rewrites the small f32 convolutions of ``module`` described in the module doc;
    returns how many."""
    ops = [o for o in module.walk() if _applies(o)]
    for op in ops:
        b = Builder.before(op, op.loc)
        x, w = op.operands[:2]
        y = op.results[0]
        new = b.create(op.name, [_widen(b, x), _widen(b, w), *op.operands[2:]],
                       dict(op.attributes), [T.TensorType(y.type.shape, F64)]).results[0]
        y.replace_all_uses_with(b.convert(new, F32))
        op.erase()
        if w.owner_op is not None and not w.has_uses:
            w.owner_op.erase()
    return len(ops)
