"""GPU kernel of ``convolution``: a direct convolution, one thread per result element
(the fallback where no library call is made: every layout, padding, stride, lhs/rhs
dilation, window reversal, feature and batch group count of the spec).

Result element ``(n, o, s...)`` (batch, output feature, spatial position) sums, over
the kernel's spatial positions ``k...`` and its input features ``c``,
``lhs[n', g * C + c, p...] * rhs[k'..., c, o]`` where ``p = (s * stride + k * rhs_dil -
pad_lo) / lhs_dil`` when that position is in the dilated, padded input (else 0), ``k'``
is ``k`` reversed where ``window_reversal`` says, ``g = o // (O / feature_groups)`` and
``n' = (o // (O / batch_groups)) * N' + n``. Floats accumulate in f64, integers in
i64 (:func:`~oxla_codegen_llvm.simt.ops.acc_type`), then round (wrap) once.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.elements import mac
from oxla_codegen_llvm.fused import FusedEmitter, shape_of
from oxla_codegen_llvm.loops import loop_nest
from oxla_codegen_llvm.simt.model import I1, I64, Region
from oxla_codegen_llvm.simt.ops import acc_type, cvt, per_element, zero_of


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _ints(op, name: str, n: int, default: int = 1) -> tuple[int, ...]:
    a = op.attr(name)
    v = A.to_python(a) if a is not None else None
    return tuple(int(x) for x in v) if v else (default,) * n


def conv_kernel(k: OpKernel, plan: Plan) -> list:
    """The direct convolution kernel (module doc)."""
    op = k.op
    if op.name != "stablehlo.convolution":
        raise NotSupportedError(f"'{op.name}' has no GPU kernel yet", op.loc)
    lhs, rhs = op.operands[:2]
    dn = op.attributes["dimension_numbers"]
    ls, rs = shape_of(lhs), shape_of(rhs)
    ns = len(ls) - 2
    strides = _ints(op, "window_strides", ns)
    lhs_dil = _ints(op, "lhs_dilation", ns)
    rhs_dil = _ints(op, "rhs_dilation", ns)
    rev_attr = op.attr("window_reversal")
    reversal = tuple(bool(x) for x in A.to_python(rev_attr)) if rev_attr is not None and \
        A.to_python(rev_attr) else (False,) * ns
    pad = op.attr("padding")
    arr = pad.array if isinstance(pad, A.DenseElementsAttr) else np.asarray(
        A.to_python(pad) if pad is not None else [], np.int64)
    lo = tuple(int(x) for x in np.asarray(arr, np.int64).reshape(ns, 2)[:, 0]) \
        if np.size(arr) else (0,) * ns
    fgc = int(A.to_python(op.attr("feature_group_count")) or 1) \
        if op.attr("feature_group_count") is not None else 1
    bgc = int(A.to_python(op.attr("batch_group_count")) or 1) \
        if op.attr("batch_group_count") is not None else 1
    et = op.results[0].type.element_type
    acc_et = acc_type(op, et)
    if isinstance(acc_et, T.FloatType):  # the interpreter's (conformance: 44 vs 41 of 74)
        acc_et = T.FloatType("f64")
    aty = zero_of(acc_et).type
    out_feat = shape_of(op.results[0])[dn.output_feature_dimension]
    cin = rs[dn.kernel_input_feature_dimension]
    nb_out = shape_of(op.results[0])[dn.output_batch_dimension]
    ksp = [rs[d] for d in dn.kernel_spatial_dimensions]
    insp = [ls[d] for d in dn.input_spatial_dimensions]
    per_fg = max(out_feat // fgc, 1)
    per_bg = max(out_feat // bgc, 1)

    def compute(r: Region, f: FusedEmitter, oidx: list) -> list[ir.Value]:
        b = r.b
        with b.goto_entry_block():
            acc = b.alloca(aty)
        b.store(zero_of(acc_et), acc)
        n = oidx[dn.output_batch_dimension]
        o = oidx[dn.output_feature_dimension]
        sp = [oidx[d] for d in dn.output_spatial_dimensions]
        g = b.udiv(o, _c(per_fg))
        nin = b.add(b.mul(b.udiv(o, _c(per_bg)), _c(nb_out)), n) if bgc > 1 else n
        if 0 not in ksp and cin and math.prod(insp):
            with loop_nest(b, ksp + [cin], "kc") as kc:
                kidx, c = kc[:ns], kc[ns]
                inside = ir.Constant(I1, 1)
                pos = []
                for d in range(ns):
                    p = b.sub(b.add(b.mul(sp[d], _c(strides[d])),
                                    b.mul(kidx[d], _c(rhs_dil[d]))), _c(lo[d]))
                    q = b.sdiv(p, _c(lhs_dil[d])) if lhs_dil[d] != 1 else p
                    ok = b.and_(b.icmp_signed(">=", p, _c(0)),
                                b.icmp_signed("<", q, _c(insp[d])))
                    if lhs_dil[d] != 1:
                        ok = b.and_(ok, b.icmp_signed("==", b.srem(p, _c(lhs_dil[d])), _c(0)))
                    inside = b.and_(inside, ok)
                    pos.append(b.select(ok, q, _c(0)))
                with b.if_then(inside):
                    f.reset()
                    li: list = [None] * len(ls)
                    li[dn.input_batch_dimension] = nin
                    li[dn.input_feature_dimension] = b.add(b.mul(g, _c(cin)), c) \
                        if fgc > 1 else c
                    for d, p in zip(dn.input_spatial_dimensions, pos):
                        li[d] = p
                    ri: list = [None] * len(rs)
                    ri[dn.kernel_input_feature_dimension] = c
                    ri[dn.kernel_output_feature_dimension] = o
                    for d, (kd, kx) in enumerate(zip(dn.kernel_spatial_dimensions, kidx)):
                        ri[kd] = b.sub(_c(ksp[d] - 1), kx) if reversal[d] else kx
                    x = cvt(r, op, f.value_at(lhs, li), lhs.type.element_type, acc_et)
                    y = cvt(r, op, f.value_at(rhs, ri), rhs.type.element_type, acc_et)
                    b.store(mac(r.s, acc_et, b.load(acc, typ=aty), x, y), acc)
                    f.reset()
        return [cvt(r, op, b.load(acc, typ=aty), acc_et, et)]

    return per_element(k, plan, compute)

