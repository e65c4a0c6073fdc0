"""GPU kernels of ``triangular_solve`` and ``cholesky``.

``triangular_solve``: one thread per right-hand side (a column of ``b``
for ``left_side``, else a row, per batch), substitution in f64 (complex<f64>) in the
thread's own array, in the order the cpu backend uses, so results agree bitwise with it.

The effective matrix is ``op(a)`` (``transpose_a``: none, transpose, adjoint); it is
lower triangular when ``lower != transposed``; a left solve runs forward over a lower
matrix and backward over an upper one, a right solve the other way round.
``unit_diagonal`` divides by 1.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.complex import CREG, cdiv, cmul, make, parts
from oxla_codegen_llvm.fused import FusedEmitter, shape_of, store
from oxla_codegen_llvm.loops import delinearize, for_range, linearize
from oxla_codegen_llvm.scalar import convert
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import I64, Kernel, KernelBuilder, grid_stride
from oxla_codegen_llvm.simt.ops import params_of

F64 = ir.DoubleType()
WIDE_REAL, WIDE_CPLX = T.FloatType("f64"), T.ComplexType(T.FloatType("f64"))
MAX_N = 4096
"""The largest matrix a thread solves in its own (local-memory) array."""


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _attr(op, name: str, default):
    a = op.attr(name)
    v = A.to_python(a) if a is not None else None
    return default if v is None else v


def triangular_solve_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """The triangular_solve kernel (module doc).

    Raises:
        NotSupportedError: non-float element types, or a matrix larger than
            :data:`MAX_N`.
    """
    op = k.op
    a, rhs = op.operands
    et = op.results[0].type.element_type
    for t in (a.type.element_type, et):
        inner = t.element_type if isinstance(t, T.ComplexType) else t
        if not isinstance(inner, T.FloatType):
            raise NotSupportedError(f"'{op.name}' on {t} has no GPU kernel", op.loc)
    cplx = isinstance(a.type.element_type, T.ComplexType) or isinstance(et, T.ComplexType)
    wet, ty = (WIDE_CPLX, CREG) if cplx else (WIDE_REAL, F64)
    left = bool(_attr(op, "left_side", False))
    lower = bool(_attr(op, "lower", False))
    unit = bool(_attr(op, "unit_diagonal", False))
    trans = str(_attr(op, "transpose_a", "NO_TRANSPOSE")).rsplit(".", 1)[-1].strip("<>#")
    trans = trans.upper()
    transposed = trans in ("TRANSPOSE", "ADJOINT")
    bsh = shape_of(rhs)
    n = shape_of(a)[-1]
    if n > MAX_N:
        raise NotSupportedError(f"'{op.name}' of {n}x{n} matrices (more than {MAX_N}) has "
                                "no GPU kernel yet", op.loc)
    batch = list(bsh[:-2])
    other = bsh[-1] if left else bsh[-2]
    count = math.prod(batch) * other if 0 not in bsh else 0
    forward = (lower != transposed) if left else not (lower != transposed)
    grid, block = launch_1d(max(count, 1))
    kb = KernelBuilder(k.name, params_of(k, plan), grid, block)
    with kb.region() as r:
        b = r.b
        if count:
            f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))
            with b.goto_entry_block():
                x = b.alloca(ty, size=_c(max(n, 1)))

            def wide(v: ir.Value, src) -> ir.Value:
                return convert(r.s, v, src, wet)

            def sub(p, q):
                if not cplx:
                    return b.fsub(p, q)
                (u, v), (w, z) = parts(b, p), parts(b, q)
                return make(b, b.fsub(u, w), b.fsub(v, z))

            def mul(p, q):
                return cmul(b, p, q) if cplx else b.fmul(p, q)

            def at(i: ir.Value) -> ir.Value:
                return b.gep(x, [i], source_etype=ty)

            def m_at(bidx: list, p: ir.Value, q: ir.Value) -> ir.Value:
                i, j = (q, p) if transposed else (p, q)
                f.reset()
                v = wide(f.value_at(a, bidx + [i, j]), a.type.element_type)
                if trans == "ADJOINT" and cplx:
                    re, im = parts(b, v)
                    v = make(b, re, b.fneg(im))
                return v

            one = make(b, ir.Constant(F64, 1.0), ir.Constant(F64, 0.0)) if cplx else \
                ir.Constant(F64, 1.0)
            with grid_stride(r, count) as g:
                idx = delinearize(b, g, batch + [other])
                bidx, j = list(idx[:-1]), idx[-1]
                with for_range(b, n, "ts") as t:
                    i = t if forward else b.sub(_c(n - 1), t)
                    lo, hi = (_c(0), i) if forward else (b.add(i, _c(1)), _c(n))
                    diag = one if unit else m_at(bidx, i, i)
                    f.reset()
                    rv = f.value_at(rhs, bidx + ([i, j] if left else [j, i]))
                    b.store(wide(rv, rhs.type.element_type), at(i))
                    with for_range(b, hi, "tk", start=lo) as kk:
                        coef = m_at(bidx, i, kk) if left else m_at(bidx, kk, i)
                        b.store(sub(b.load(at(i), typ=ty), mul(coef, b.load(at(kk), typ=ty))),
                                at(i))
                    q = b.load(at(i), typ=ty)
                    b.store(cdiv(r.s, q, diag) if cplx else b.fdiv(q, diag), at(i))
                with for_range(b, n, "to") as i:
                    flat = linearize(b, bidx + ([i, j] if left else [j, i]), bsh)
                    store(r.s, r.params[-1], et, flat,
                          convert(r.s, b.load(at(i), typ=ty), wet, et))
                f.reset()
    return [kb.build()]


def cholesky_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """Spec ``cholesky``: one thread per matrix of the batch, the factor computed in f64
    (complex<f64>) in the thread's own array, column by column in the cpu backend's
    order; ``lower`` reads and writes the lower triangle (``L``), else the upper
    (``L^H``); the other triangle is written too (zeros), as the cpu backend does.

    Raises:
        NotSupportedError: non-float element types, or a matrix larger than 256.
    """
    op = k.op
    (a,) = op.operands
    et = op.results[0].type.element_type
    inner = et.element_type if isinstance(et, T.ComplexType) else et
    if not isinstance(inner, T.FloatType):
        raise NotSupportedError(f"'{op.name}' on {et} has no GPU kernel", op.loc)
    cplx = isinstance(et, T.ComplexType)
    wet, ty = (WIDE_CPLX, CREG) if cplx else (WIDE_REAL, F64)
    lower = bool(_attr(op, "lower", False))
    sh = shape_of(a)
    n = sh[-1]
    if n > 256:
        raise NotSupportedError(f"'{op.name}' of {n}x{n} matrices (more than 256) has no "
                                "GPU kernel yet", op.loc)
    batch = list(sh[:-2])
    count = math.prod(batch) if 0 not in sh else 0
    grid, block = launch_1d(max(count, 1))
    kb = KernelBuilder(k.name, params_of(k, plan), grid, block)
    with kb.region() as r:
        b = r.b
        if count:
            f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))
            with b.goto_entry_block():
                low = b.alloca(ty, size=_c(n * n))
            zero = make(b, ir.Constant(F64, 0.0), ir.Constant(F64, 0.0)) if cplx else \
                ir.Constant(F64, 0.0)

            def conj(v):
                if not cplx:
                    return v
                re, im = parts(b, v)
                return make(b, re, b.fneg(im))

            def sub(p, q):
                if not cplx:
                    return b.fsub(p, q)
                (u, v), (w, z) = parts(b, p), parts(b, q)
                return make(b, b.fsub(u, w), b.fsub(v, z))

            def mul(p, q):
                return cmul(b, p, q) if cplx else b.fmul(p, q)

            def at(p, q):
                return b.gep(low, [b.add(b.mul(p, _c(n)), q)], source_etype=ty)

            def ld(p, q):
                return b.load(at(p, q), typ=ty)

            def m_at(bidx, p, q):
                f.reset()
                if lower:
                    return convert(r.s, f.value_at(a, bidx + [p, q]), et, wet)
                return conj(convert(r.s, f.value_at(a, bidx + [q, p]), et, wet))

            sqrt = r.s.target.math_function(r.s.module, "sqrt", F64)
            with grid_stride(r, count) as g:
                bidx = delinearize(b, g, batch)
                with for_range(b, n * n, "cz") as e:
                    b.store(zero, b.gep(low, [e], source_etype=ty))
                with for_range(b, n, "cj") as j:
                    b.store(m_at(bidx, j, j), at(j, j))
                    with for_range(b, j, "ck") as kk:
                        v = ld(j, kk)
                        b.store(sub(ld(j, j), mul(v, conj(v))), at(j, j))
                    sv = ld(j, j)
                    d = make(b, b.call(sqrt, [parts(b, sv)[0]]), ir.Constant(F64, 0.0)) \
                        if cplx else b.call(sqrt, [sv])
                    b.store(d, at(j, j))
                    with for_range(b, n, "ci", start=b.add(j, _c(1))) as i:
                        b.store(m_at(bidx, i, j), at(i, j))
                        with for_range(b, j, "ck2") as kk:
                            t = mul(ld(i, kk), conj(ld(j, kk)))
                            b.store(sub(ld(i, j), t), at(i, j))
                        q = ld(i, j)
                        b.store(cdiv(r.s, q, d) if cplx else b.fdiv(q, d), at(i, j))
                base = linearize(b, list(bidx) + [_c(0), _c(0)], sh)
                with for_range(b, n, "cp") as p, for_range(b, n, "cq") as q:
                    v = ld(p, q) if lower else conj(ld(q, p))
                    store(r.s, r.params[-1], et, b.add(base, b.add(b.mul(p, _c(n)), q)),
                          convert(r.s, v, wet, et))
                f.reset()
    return [kb.build()]
