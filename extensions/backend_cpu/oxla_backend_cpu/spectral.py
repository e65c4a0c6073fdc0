"""Loop-kernel emitters for ``fft``, ``triangular_solve`` and ``cholesky``.

All three compute in f64 (complex<f64> for complex operands) in a ``malloc``'d scratch
buffer and round once into the result, as the interpreter's f64 algorithms
(``oxla.interpreter.rules.linalg``) do:

* ``fft``: pocketfft's plans replayed in the operand's precision
  (:mod:`oxla_backend_cpu.fft_pocket`), bit for bit XLA's and scipy's FFT, at every
  line length (short lines straight-line, longer ones in loop form); shapes whose
  trailing dims differ from ``fft_length`` raise ``NotSupportedError``.
* ``triangular_solve``: forward/back substitution per batch on the effective matrix
  (triangle, unit diagonal, transpose/adjoint applied on the fly), left or right side.
* ``cholesky``: Cholesky-Banachiewicz; the opposite triangle of the result is zero; a
  matrix that is not positive definite gives NaN where the interpreter's does.

Signature of every emitter: ``emit(s, k, buffers, outs)`` (see
:mod:`oxla_backend_cpu.opkernels`).
"""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, loop_nest, shape_of
from oxla_codegen_llvm.complex import CREG, cdiv, cmul, make, parts
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range
from oxla_codegen_llvm.scalar import convert

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.lowering import OpKernel
from oxla_backend_cpu.fft_pocket import emit_fft_pocket, pocket_plan_ok
from oxla_backend_cpu.misc_ops import libc
from oxla_backend_cpu.opkernels import op_emitter

I64, F64, PTR = ir.IntType(64), ir.DoubleType(), ir.PointerType()
C128 = T.ComplexType(T.FloatType("f64"))
WF64 = T.FloatType("f64")


def _i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _d(x: float) -> ir.Constant:
    return ir.Constant(F64, x)


class _Wide:
    """f64 or complex<f64> arithmetic on registers, and a scratch array of them."""

    def __init__(self, s: Scalar, cplx: bool):
        self.s, self.b, self.cplx = s, s.b, cplx
        self.ty = CREG if cplx else F64
        self.et = C128 if cplx else WF64
        self.size = 16 if cplx else 8

    def zero(self) -> ir.Value:
        return make(self.b, _d(0.0), _d(0.0)) if self.cplx else _d(0.0)

    def one(self) -> ir.Value:
        return make(self.b, _d(1.0), _d(0.0)) if self.cplx else _d(1.0)

    def at(self, ptr: ir.Value, i: ir.Value) -> ir.Value:
        return self.b.gep(ptr, [i], source_etype=self.ty)

    def load(self, ptr: ir.Value, i: ir.Value) -> ir.Value:
        return self.b.load(self.at(ptr, i), typ=self.ty)

    def store(self, ptr: ir.Value, i: ir.Value, v: ir.Value) -> None:
        self.b.store(v, self.at(ptr, i))

    def add(self, x, y):
        b = self.b
        if not self.cplx:
            return b.fadd(x, y)
        (a, c), (d, e) = parts(b, x), parts(b, y)
        return make(b, b.fadd(a, d), b.fadd(c, e))

    def sub(self, x, y):
        b = self.b
        if not self.cplx:
            return b.fsub(x, y)
        (a, c), (d, e) = parts(b, x), parts(b, y)
        return make(b, b.fsub(a, d), b.fsub(c, e))

    def mul(self, x, y):
        return cmul(self.b, x, y) if self.cplx else self.b.fmul(x, y)

    def div(self, x, y):
        return cdiv(self.s, x, y) if self.cplx else self.b.fdiv(x, y)

    def conj(self, x):
        if not self.cplx:
            return x
        re, im = parts(self.b, x)
        return make(self.b, re, self.b.fneg(im))

    def from_elem(self, v: ir.Value, et: T.ElementType) -> ir.Value:
        return convert(self.s, v, et, self.et)

    def to_elem(self, v: ir.Value, et: T.ElementType) -> ir.Value:
        return convert(self.s, v, self.et, et)


def _scratch(s: Scalar, nbytes: int) -> tuple[ir.Value, ir.Function]:
    malloc = libc(s.module, "malloc", PTR, [I64])
    free = libc(s.module, "free", ir.VoidType(), [PTR])
    return s.b.call(malloc, [_i64(max(nbytes, 16))]), free


def _check_float(op, *ets: T.ElementType) -> None:
    for et in ets:
        inner = et.element_type if isinstance(et, T.ComplexType) else et
        if not isinstance(inner, T.FloatType):
            raise NotSupportedError(f"'{op.name}' on {et} is not supported by the cpu "
                                    "backend", op.loc)


# -- triangular_solve ----------------------------------------------------------------


def _attr(op, name: str, default):
    a = op.attr(name)
    if a is None:
        return default
    v = A.to_python(a)
    return default if v is None else v


@op_emitter("stablehlo.triangular_solve")
def emit_triangular_solve(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``triangular_solve`` (see the module doc)."""
    b, op = s.b, k.op
    a, rhs = op.operands
    et = op.results[0].type.element_type
    _check_float(op, a.type.element_type, et)
    left = bool(_attr(op, "left_side", False))
    lower = bool(_attr(op, "lower", False))
    unit = bool(_attr(op, "unit_diagonal", False))
    trans = str(_attr(op, "transpose_a", "NO_TRANSPOSE"))
    trans = trans.rsplit(".", 1)[-1].strip("<>#").upper()
    transposed = trans in ("TRANSPOSE", "ADJOINT")
    ash, bsh = shape_of(a), shape_of(rhs)
    n = ash[-1]
    batch = list(bsh[:-2])
    rows, cols = bsh[-2], bsh[-1]
    if 0 in bsh:
        return
    w = _Wide(s, isinstance(a.type.element_type, T.ComplexType) or
              isinstance(et, T.ComplexType))
    tri_lower = lower != transposed  # of the effective matrix m
    forward = tri_lower if left else not tri_lower  # substitution order over i
    other = cols if left else rows
    f = FusedEmitter(s, buffers)
    x, free = _scratch(s, rows * cols * w.size)

    def m_at(bidx: list, p: ir.Value, q: ir.Value) -> ir.Value:
        """The effective matrix's element (p, q), never on the unit diagonal."""
        i, j = (q, p) if transposed else (p, q)
        f.reset()
        v = w.from_elem(f.value_at(a, bidx + [i, j]), a.type.element_type)
        return w.conj(v) if trans == "ADJOINT" else v

    with loop_nest(b, batch, "tb") as bidx:
        with for_range(b, n, "ts") as t:
            i = t if forward else b.sub(_i64(n - 1), t)
            lo, hi = (_i64(0), i) if forward else (b.add(i, _i64(1)), _i64(n))
            diag = w.one() if unit else m_at(list(bidx), i, i)
            with for_range(b, other, "tj") as j:
                xi = b.add(b.mul(i, _i64(cols)), j) if left else b.add(b.mul(j, _i64(cols)), i)
                f.reset()
                rv = f.value_at(rhs, list(bidx) + ([i, j] if left else [j, i]))
                w.store(x, xi, w.from_elem(rv, rhs.type.element_type))
                with for_range(b, hi, "tk", start=lo) as kk:
                    coef = m_at(list(bidx), i, kk) if left else m_at(list(bidx), kk, i)
                    xk = b.add(b.mul(kk, _i64(cols)), j) if left else \
                        b.add(b.mul(j, _i64(cols)), kk)
                    w.store(x, xi, w.sub(w.load(x, xi), w.mul(coef, w.load(x, xk))))
                w.store(x, xi, w.div(w.load(x, xi), diag))
        base = linearize(b, list(bidx) + [_i64(0), _i64(0)], bsh)
        with for_range(b, rows * cols, "tc") as e:
            store_elem(s, outs[0], et, b.add(base, e), w.to_elem(w.load(x, e), et))
    b.call(free, [x])


# -- cholesky ------------------------------------------------------------------------


@op_emitter("stablehlo.cholesky")
def emit_cholesky(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``cholesky`` (see the module doc)."""
    b, op = s.b, k.op
    (a,) = op.operands
    et = op.results[0].type.element_type
    _check_float(op, et)
    lower = bool(_attr(op, "lower", False))
    sh = shape_of(a)
    n = sh[-1]
    if 0 in sh:
        return
    w = _Wide(s, isinstance(et, T.ComplexType))
    f = FusedEmitter(s, buffers)
    low, free = _scratch(s, n * n * w.size)
    sqrt = s.target.math_function(s.module, "sqrt", F64)

    def m_at(bidx: list, p: ir.Value, q: ir.Value) -> ir.Value:
        f.reset()
        if lower:
            return w.from_elem(f.value_at(a, bidx + [p, q]), et)
        return w.conj(w.from_elem(f.value_at(a, bidx + [q, p]), et))

    def lat(p: ir.Value, q: ir.Value) -> ir.Value:
        return b.add(b.mul(p, _i64(n)), q)

    with loop_nest(b, list(sh[:-2]), "cb") as bidx:
        with for_range(b, n * n, "cz") as e:
            w.store(low, e, w.zero())
        with for_range(b, n, "cj") as j:
            w.store(low, lat(j, j), m_at(list(bidx), j, j))
            with for_range(b, j, "ck") as kk:
                v = w.load(low, lat(j, kk))
                w.store(low, lat(j, j), w.sub(w.load(low, lat(j, j)), w.mul(v, w.conj(v))))
            sv = w.load(low, lat(j, j))
            if w.cplx:
                d = make(b, b.call(sqrt, [parts(b, sv)[0]]), _d(0.0))
            else:
                d = b.call(sqrt, [sv])
            w.store(low, lat(j, j), d)
            with for_range(b, n, "ci", start=b.add(j, _i64(1))) as i:
                w.store(low, lat(i, j), m_at(list(bidx), i, j))
                with for_range(b, j, "ck2") as kk:
                    t = w.mul(w.load(low, lat(i, kk)), w.conj(w.load(low, lat(j, kk))))
                    w.store(low, lat(i, j), w.sub(w.load(low, lat(i, j)), t))
                w.store(low, lat(i, j), w.div(w.load(low, lat(i, j)), d))
        base = linearize(b, list(bidx) + [_i64(0), _i64(0)], sh)
        with for_range(b, n, "cp") as p, for_range(b, n, "cq") as q:
            v = w.load(low, lat(p, q)) if lower else w.conj(w.load(low, lat(q, p)))
            store_elem(s, outs[0], et, b.add(base, lat(p, q)), w.to_elem(v, et))
    b.call(free, [low])


# -- fft -----------------------------------------------------------------------------


@op_emitter("stablehlo.fft")
def emit_fft(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``fft`` (see the module doc)."""
    b, op = s.b, k.op
    (x,) = op.operands
    xet, et = x.type.element_type, op.results[0].type.element_type
    _check_float(op, xet, et)
    kind = str(_attr(op, "fft_type", "FFT")).rsplit(".", 1)[-1].strip("<>#").upper()
    length = [int(v) for v in _attr(op, "fft_length", ())]
    xs, ys = list(shape_of(x)), list(shape_of(op.results[0]))
    w = _Wide(s, True)
    f = FusedEmitter(s, buffers)
    if 0 in ys:
        return
    if 0 in xs or 0 in length:  # zeros (the interpreter's answer)
        with loop_nest(b, ys, "fz") as idx:
            store_elem(s, outs[0], et, linearize(b, idx, ys), w.to_elem(w.zero(), et))
        return
    if kind not in ("FFT", "IFFT", "RFFT", "IRFFT"):
        raise NotSupportedError(f"'stablehlo.fft' type {kind} is not supported", op.loc)
    if not pocket_plan_ok(kind, length, xs, ys):
        raise NotSupportedError(
            f"'stablehlo.fft' {kind} with fft_length {length} on {xs} -> {ys}: the cpu "
            "backend needs the trailing dims to equal fft_length (RFFT's result and "
            "IRFFT's operand n//2+1), as XLA requires", op.loc)
    emit_fft_pocket(s, f, x, kind, length, xs, ys, outs[0], et)
