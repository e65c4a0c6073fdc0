"""Integer convolutions of 8-bit values as 8-bit im2col + the integer GEMM
(:mod:`oxla_backend_cpu.int8_gemm`), rewritten before fusion (else they run through
the generic loop emitter, a cliff: issues #17 item 4 and #21).

A ``convolution`` (spec section "convolution") with an ``i32`` result whose operands
are 8-bit integers (``i8``/``ui8``) -- directly (JAX's ``preferred_element_type=int32``)
or widened to ``i32`` by a ``convert``, the input optionally minus a per-tensor
constant zero point ``xz`` (what the ONNX frontend emits for ``ConvInteger`` and
``QLinearConv``) -- becomes, per feature group ``g``::

    cols = concat_k slice_k(pad(x8, value=xz))     # [M, KW * Cg], 8-bit
    out[:, g] = dot_general(cols, W8[g]) - xz * colsum(W8[g])   # i32

An input whose signedness differs from the kernel's is moved by 128 into it (``x - 128``
as ``i8``, or ``x + 128`` as ``ui8``) with its zero point, so the dot's operands share
one element type (spec "dot_general" C13). The window copies move 8, 4 or 2 channels
per element (the bytes bitcast to a wider integer and back). ``pad`` pads with ``xz``
(edges and lhs dilation), so a padded position contributes
``(xz - xz) * w = 0`` as in the original; the subtracted correction removes the
``xz * w`` each window position adds. The kernel ``W8`` is the convolution's rhs as
8-bit values: an 8-bit value, a ``convert`` of one, or a constant expression (e.g.
``convert(w) - zero_point``, folded here) whose values all fit ``i8`` (or ``ui8``).
All arithmetic is ``i32`` with wrap-around, so the result equals the spec's integer
convolution bit for bit.

Left as they are: window reversal, ``batch_group_count > 1``, more than
:data:`MAX_GROUPS` feature groups (depthwise convolutions), dynamic shapes, kernels
whose values do not fit 8 bits, non-constant or per-channel input zero points, and
hosts without an integer GEMM kind (:func:`oxla_backend_cpu.int8_gemm.choose_isa`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from oxla.ir import Builder, Module, Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes.util import constant_array
from oxla_backend_cpu.int8_gemm import choose_isa
from oxla_backend_cpu.linalg import ConvDims, conv_padding, conv_params, to_output_layout

MAX_GROUPS = 16
"""Most feature groups rewritten (one GEMM each); more (depthwise) stay loops."""
I32 = T.IntegerType(32)
I8, U8 = T.IntegerType(8), T.IntegerType(8, unsigned=True)


def _is8(et) -> bool:
    return isinstance(et, T.IntegerType) and et.width == 8


def _const_int(v: Value, depth: int = 0) -> np.ndarray | None:
    """The int64 value of ``v`` when a small expression of constants (constant,
    convert, add/subtract, broadcast_in_dim, reshape) defines it, else None."""
    arr = constant_array(v)
    if arr is not None:
        arr = np.asarray(arr).reshape(v.type.shape)
        return arr.astype(np.int64) if arr.dtype.kind in "iub" else None
    op = v.owner_op
    if op is None or depth > 8 or not isinstance(v.type, T.TensorType) \
            or not v.type.is_static:
        return None
    if op.name in ("stablehlo.convert", "stablehlo.reshape"):
        et = op.operands[0].type.element_type
        if not isinstance(et, T.IntegerType):
            return None
        x = _const_int(op.operands[0], depth + 1)
        return None if x is None else x.reshape(v.type.shape)
    if op.name in ("stablehlo.subtract", "stablehlo.add"):
        a, b = (_const_int(o, depth + 1) for o in op.operands)
        if a is None or b is None:
            return None
        return a - b if op.name == "stablehlo.subtract" else a + b
    if op.name == "stablehlo.broadcast_in_dim":
        x = _const_int(op.operands[0], depth + 1)
        if x is None:
            return None
        dims = [int(d) for d in A.to_python(op.attr("broadcast_dimensions"))]
        shape = [1] * v.type.rank
        for i, d in enumerate(dims):
            shape[d] = x.shape[i]
        return np.broadcast_to(x.reshape(shape), v.type.shape)
    return None


def _input8(v: Value) -> tuple[Value, int] | None:
    """``(x8, xz)`` with ``v == convert(x8) - xz`` (``xz`` a per-tensor constant, 0 when
    absent), or ``(v, 0)`` for an 8-bit ``v``; None otherwise."""
    if _is8(v.type.element_type):
        return v, 0
    op = v.owner_op
    zp = 0
    if op is not None and op.name == "stablehlo.subtract":
        z = _const_int(op.operands[1])
        if z is None or z.size == 0 or not np.all(z == z.flat[0]):
            return None
        zp = int(z.flat[0])
        op = op.operands[0].owner_op
    if op is None or op.name != "stablehlo.convert" \
            or not _is8(op.operands[0].type.element_type):
        return None
    x8 = op.operands[0]
    lo, hi = (0, 255) if x8.type.element_type.unsigned else (-128, 127)
    if not lo <= zp <= hi:
        return None
    return x8, zp


def _kernel8(v: Value) -> Value | np.ndarray | None:
    """The kernel as 8-bit values: an 8-bit Value (an operand, or a ``convert``'s
    source), or a numpy int8/uint8 array of a constant kernel; None otherwise."""
    if _is8(v.type.element_type):
        return constant_array_8(v)
    op = v.owner_op
    if op is not None and op.name == "stablehlo.subtract":  # minus a zero point of 0
        z = _const_int(op.operands[1])
        if z is not None and not z.any():
            op = op.operands[0].owner_op
    if op is not None and op.name == "stablehlo.convert" \
            and _is8(op.operands[0].type.element_type):
        return constant_array_8(op.operands[0])
    w = _const_int(v)
    if w is None:
        return None
    if w.min(initial=0) >= -128 and w.max(initial=0) <= 127:
        return w.astype(np.int8)
    if w.min(initial=0) >= 0 and w.max(initial=0) <= 255:
        return w.astype(np.uint8)
    return None


def constant_array_8(v: Value) -> Value | np.ndarray:
    """An 8-bit ``v`` as a numpy array when it is a constant, else ``v``."""
    w = _const_int(v)
    if w is None:
        return v
    return w.astype(np.uint8 if v.type.element_type.unsigned else np.int8)


def _plan(op: Operation):
    """What :func:`rewrite_int8_convs` needs of ``op``, or None to leave it."""
    if op.name != "stablehlo.convolution" or len(op.operands) != 2:
        return None
    out = op.results[0].type
    if out.element_type != I32 or not all(
            v.type.is_static for v in (*op.operands, op.results[0])):
        return None
    ns = op.operands[0].type.rank - 2
    strides, lo, ldil, rdil, rev, fgc, bgc = conv_params(op, ns)
    if any(rev) or bgc != 1 or fgc > MAX_GROUPS:
        return None
    x = _input8(op.operands[0])
    w = _kernel8(op.operands[1])
    if x is None or w is None:
        return None
    w_et = (U8 if w.dtype == np.uint8 else I8) if isinstance(w, np.ndarray) \
        else w.type.element_type
    if choose_isa(x[0].type.element_type.is_signed, w_et.is_signed) is None:
        return None
    return x, w, w_et, (strides, conv_padding(op, ns), ldil, rdil, fgc)


def rewrite_int8_convs(module: Module) -> int:
    """Rewrites the integer convolutions of ``module`` described in the module doc;
    returns how many."""
    count = 0
    for op in [o for o in module.walk() if o.name == "stablehlo.convolution"]:
        plan = _plan(op)
        if plan is None:
            continue
        _rewrite(op, *plan)
        count += 1
    return count


def _dot(b: Builder, lhs: Value, rhs: Value, m: int, n: int, kdims: int = 1) -> Value:
    """``[M, K...] x [K..., N] -> [M, N]`` in i32 over ``kdims`` contracting dims."""
    attrs = {"dot_dimension_numbers": A.dot_dimension_numbers(
        (), (), tuple(range(1, 1 + kdims)), tuple(range(kdims)))}
    return b.create("stablehlo.dot_general", [lhs, rhs], attrs,
                    [T.TensorType((m, n), I32)]).results[0]


def _rewrite(op: Operation, x, w, w_et, params) -> None:
    (x8, xz), (strides, pad, ldil, rdil, G) = x, params
    cd = ConvDims.of_op(op)
    ib, if_, isd, kif, kof, ksd, osd = cd.ib, cd.if_, cd.isd, cd.kif, cd.kof, cd.ksd, cd.osd
    ls, os_ = x8.type.shape, op.results[0].type.shape
    ks = op.operands[1].type.shape
    nb, c, f = ls[ib], ls[if_], ks[kof]
    cg, fg = c // G, f // G
    kspat = [ks[d] for d in ksd]
    ospat = [os_[d] for d in osd]
    kw, m = math.prod(kspat), nb * math.prod(ospat)
    b = Builder.before(op, op.loc)
    x_et = x8.type.element_type
    if x_et != w_et:  # dot_general wants one element type (spec C13): the input moved
        # by 128 into the kernel's signedness, and its zero point with it (exact)
        shift = -128 if x_et.unsigned else 128
        x32 = b.convert(x8, I32)
        x32 = b.add(x32, b.broadcast_in_dim(
            b.constant(np.asarray(shift, np.int32), T.TensorType((), I32)),
            x8.type.shape, []))
        x8, xz, x_et = b.convert(x32, w_et), xz + shift, w_et

    # im2col: [M, KW, C] of 8-bit values, window positions row-major
    xt = b.transpose(x8, [ib, *isd, if_])
    if any(int(v) for v in pad.reshape(-1)) or any(d != 1 for d in ldil):
        pv = b.constant(np.asarray(xz, x_et.dtype), T.TensorType((), x_et))
        attrs = {"edge_padding_low": A.i64_array([0, *pad[:, 0].tolist(), 0]),
                 "edge_padding_high": A.i64_array([0, *pad[:, 1].tolist(), 0]),
                 "interior_padding": A.i64_array([0, *(d - 1 for d in ldil), 0])}
        xt = b.create("stablehlo.pad", [xt, pv], attrs).results[0]
    # the window copies move `lanes` channels per element (bytes bitcast to a wider
    # integer): the generic copy's cost is per element
    lanes = next(v for v in (8, 4, 2, 1) if cg % v == 0)
    ce = c // lanes
    split = lanes > 1 and kw > 1  # the columns as [M, KW * C / lanes, lanes]
    if split:
        wide = T.IntegerType(8 * lanes)
        xt = b.create("stablehlo.bitcast_convert", [b.reshape(xt, (*xt.type.shape[:-1], ce,
                                                                    lanes))],
                      None, [T.TensorType(xt.type.shape[:-1] + (ce,), wide)]).results[0]
    pieces = []
    for pos in itertools.product(*(range(k) for k in kspat)):
        start = [0, *(p * r for p, r in zip(pos, rdil)), 0]
        limit = [nb, *(s + (o - 1) * st + 1 for s, o, st in zip(start[1:], ospat, strides)),
                 xt.type.shape[-1]]
        sl = b.slice(xt, start, limit, [1, *strides, 1])
        pieces.append(b.reshape(sl, (m, 1, xt.type.shape[-1])))
    cols = pieces[0] if len(pieces) == 1 else b.concatenate(pieces, 1)
    if cols.type.element_type != x_et:  # back to bytes: [M, KW * C / lanes, lanes]
        cols = b.create("stablehlo.bitcast_convert", [b.reshape(cols, (m, kw * ce))], None,
                        [T.TensorType((m, kw * ce, lanes), x_et)]).results[0]

    # kernel as [KW, C_g, F] (window positions row-major, as the columns)
    if isinstance(w, np.ndarray):
        wk = np.ascontiguousarray(w.transpose([*ksd, kif, kof])).reshape(kw, cg, f)
    else:
        wk = b.reshape(b.transpose(w, [*ksd, kif, kof]), (kw, cg, f))
    parts = []
    for g in range(G):
        if split:  # one GEMM over both trailing dimensions: no copy back to [M, K]
            a = cols
            if G > 1:
                a = b.reshape(b.slice(b.reshape(cols, (m, kw, ce, lanes)),
                                      [0, 0, g * cg // lanes, 0],
                                      [m, kw, (g + 1) * cg // lanes, lanes]),
                              (m, kw * cg // lanes, lanes))
            rshape: tuple[int, ...] = (kw * cg // lanes, lanes, fg)
        else:
            a = cols if G == 1 else b.slice(cols, [0, 0, g * cg], [m, kw, (g + 1) * cg])
            a = b.reshape(a, (m, kw * cg))
            rshape = (kw * cg, fg)
        if isinstance(wk, np.ndarray):
            wg = np.ascontiguousarray(wk[:, :, g * fg:(g + 1) * fg]).reshape(rshape)
            wv = b.constant(wg, T.TensorType(wg.shape, w_et))
        else:
            wv = wk if G == 1 else b.slice(wk, [0, 0, g * fg], [kw, cg, (g + 1) * fg])
            wv = b.reshape(wv, rshape)
        parts.append(_dot(b, a, wv, m, fg, 2 if split else 1))
    acc = parts[0] if G == 1 else b.concatenate(parts, 1)
    if xz:
        if isinstance(wk, np.ndarray):
            cs = wk.astype(np.int64).sum(axis=(0, 1)) * xz
            corr = b.constant(cs.astype(np.uint64).astype(np.uint32).view(np.int32),
                              T.TensorType((f,), I32))
        else:
            w32 = b.convert(wk, I32)
            zero = b.constant(np.asarray(0, np.int32), T.TensorType((), I32))
            cs = b.reduce([w32], [zero], [0, 1])[0]
            zv = b.constant(np.asarray(xz, np.int32), T.TensorType((), I32))
            corr = b.multiply(cs, b.broadcast_in_dim(zv, (f,), []))
        acc = b.subtract(acc, b.broadcast_in_dim(corr, (m, f), [1]))
    op.results[0].replace_all_uses_with(to_output_layout(b, b.reshape(acc, (nb, *ospat, f)), cd))
    op.erase()
