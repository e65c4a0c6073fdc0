"""``stablehlo.fft`` as XLA's CPU FFT computes it: pocketfft's plans replayed in the
operand's precision (:mod:`oxla_backend_cpu.pocketfft`), emitted as straight-line
LLVM code per transformed line inside a loop over the lines.

Working precision ``T``: f64 for f64/complex128 operands, else f32 (f16/bf16 operands
are widened to f32 exactly, as the interpreter does). The scratch buffer holds the
complex intermediate in ``T`` (interleaved re/im), as pocketfft's does between axes:

* FFT/IFFT: complex transforms of the trailing axes in ascending order; IFFT's
  ``1/prod(fft_length)`` (rounded to ``T`` from long double) is applied on the first.
* RFFT: real transform of the last axis (halfcomplex result unpacked into the
  scratch), then forward complex transforms of the other axes.
* IRFFT: backward complex transforms of the leading fft axes, then the halfcomplex
  inverse of the last axis (imaginary parts of the DC and, for even lengths, the
  Nyquist term ignored) with the normalization, written straight to the result.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import Scalar, linearize, loop_nest
from oxla_codegen_llvm.complex import make, parts
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.scalar import convert

from oxla.ir import types as T
from oxla_backend_cpu import pocketfft as P
from oxla_backend_cpu.misc_ops import _libc
from oxla_backend_cpu.pocketfft_c import CFFT
from oxla_backend_cpu.pocketfft_r import RFFT

I64, F32, F64, PTR = ir.IntType(64), ir.FloatType(), ir.DoubleType(), ir.PointerType()
_C128 = T.ComplexType(T.FloatType("f64"))
_W64 = T.FloatType("f64")


class _IROps:
    """pocketfft's scalar ops as LLVM instructions (no fast-math flags: every
    rounding is kept, nothing is contracted into an FMA)."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type):
        self.b, self.ty = b, ty

    def const(self, x: float) -> ir.Constant:
        return ir.Constant(self.ty, x)

    def add(self, a, c):
        return self.b.fadd(a, c)

    def sub(self, a, c):
        return self.b.fsub(a, c)

    def mul(self, a, c):
        return self.b.fmul(a, c)

    def neg(self, a):
        return self.b.fneg(a)


def _is_wide(et: T.ElementType) -> bool:
    inner = et.element_type if isinstance(et, T.ComplexType) else et
    return inner.name == "f64"


def pocket_plan_ok(kind: str, length: list[int], xs: list[int], ys: list[int]) -> bool:
    """True when every axis has a replayable pocketfft plan and the shapes are the
    spec's (trailing operand dims = ``fft_length``, IRFFT's last = ``n//2+1``)."""
    k = len(length)
    if k == 0 or len(xs) != len(ys) or xs[:-k] != ys[:-k]:
        return False
    n = length[-1]
    if kind in ("FFT", "IFFT"):
        shapes_ok = xs[-k:] == length and ys[-k:] == length
    elif kind == "RFFT":
        shapes_ok = xs[-k:] == length and ys[-k:] == length[:-1] + [n // 2 + 1]
    else:
        shapes_ok = ys[-k:] == length and xs[-k:] == length[:-1] + [n // 2 + 1]
    if not shapes_ok:
        return False
    real_last = kind in ("RFFT", "IRFFT")
    return all(P.supported(m, real_last and i == k - 1) for i, m in enumerate(length))


class _Scratch:
    """A malloc'd array of ``T`` scalars."""

    def __init__(self, s: Scalar, ty: ir.Type, count: int):
        self.s, self.ty = s, ty
        malloc = _libc(s.module, "malloc", PTR, [I64])
        self.free_fn = _libc(s.module, "free", ir.VoidType(), [PTR])
        size = 4 if ty == F32 else 8
        self.ptr = s.b.call(malloc, [ir.Constant(I64, max(count * size, 16))])

    def at(self, i: ir.Value) -> ir.Value:
        return self.s.b.gep(self.ptr, [i], source_etype=self.ty, inbounds=True)

    def load(self, i: ir.Value) -> ir.Value:
        return self.s.b.load(self.at(i), typ=self.ty)

    def store(self, i: ir.Value, v: ir.Value) -> None:
        self.s.b.store(v, self.at(i))

    def free(self) -> None:
        self.s.b.call(self.free_fn, [self.ptr])


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _complex_axis(s: Scalar, buf: _Scratch, shape: list[int], axis: int, fwd: bool,
                  fct: float, dtype) -> None:
    """In-place complex transform of ``buf`` (``shape``, interleaved) along ``axis``."""
    b = s.b
    n = shape[axis]
    plan = CFFT(n, _IROps(b, buf.ty), dtype)
    stride = math.prod(shape[axis + 1:])
    outer = [d for i, d in enumerate(shape) if i != axis]
    with loop_nest(b, outer, f"pl{axis}") as oidx:
        idx = list(oidx)
        idx.insert(axis, _c(0))
        base = linearize(b, idx, shape)
        offs = [b.mul(b.add(base, _c(j * stride)), _c(2)) for j in range(n)]
        line = [(buf.load(o), buf.load(b.add(o, _c(1)))) for o in offs]
        for o, (re, im) in zip(offs, plan.exec(line, fct, fwd)):
            buf.store(o, re)
            buf.store(b.add(o, _c(1)), im)


def emit_fft_pocket(s: Scalar, f, x, kind: str, length: list[int], xs: list[int],
                    ys: list[int], out: ir.Value, et: T.ElementType) -> None:
    """Emits ``stablehlo.fft`` of operand ``x`` into ``out`` (see the module doc);
    ``f`` is the kernel's :class:`FusedEmitter`. Call only when
    :func:`pocket_plan_ok` holds."""
    b = s.b
    xet = x.type.element_type
    wide = _is_wide(xet)
    ty, dtype = (F64, np.float64) if wide else (F32, np.float32)
    rank, k = len(ys), len(length)
    axes = list(range(rank - k, rank))
    inv = float(dtype(np.longdouble(1) / np.longdouble(math.prod(length))))
    cshape = xs if kind == "IRFFT" else ys
    buf = _Scratch(s, ty, 2 * math.prod(cshape))

    def narrow(v: ir.Value) -> ir.Value:
        return v if wide else b.fptrunc(v, F32)

    def widen(v: ir.Value) -> ir.Value:
        return v if wide else b.fpext(v, F64)

    if kind == "RFFT":
        n = length[-1]
        plan = RFFT(n, _IROps(b, ty), dtype)
        with loop_nest(b, xs[:-1], "pr") as oidx:
            line = []
            for j in range(n):
                f.reset()
                line.append(narrow(convert(s, f.value_at(x, list(oidx) + [_c(j)]), xet, _W64)))
            res = plan.exec(line, 1.0, True)
            zero = ir.Constant(ty, 0.0)
            vals = [(res[0], zero)]
            vals += [(res[2 * i - 1], res[2 * i]) for i in range(1, (n - 1) // 2 + 1)]
            if n % 2 == 0:
                vals.append((res[n - 1], zero))
            dst = b.mul(linearize(b, list(oidx) + [_c(0)], ys), _c(2))
            for i, (re, im) in enumerate(vals):
                buf.store(b.add(dst, _c(2 * i)), re)
                buf.store(b.add(dst, _c(2 * i + 1)), im)
        for ax in axes[:-1]:
            _complex_axis(s, buf, cshape, ax, True, 1.0, dtype)
    else:
        with loop_nest(b, xs, "pi") as idx:
            f.reset()
            re, im = parts(b, convert(s, f.value_at(x, idx), xet, _C128))
            o = b.mul(linearize(b, idx, xs), _c(2))
            buf.store(o, narrow(re))
            buf.store(b.add(o, _c(1)), narrow(im))
        inner = axes if kind in ("FFT", "IFFT") else axes[:-1]
        for q, ax in enumerate(inner):
            fct = inv if (kind == "IFFT" and q == 0) else 1.0
            _complex_axis(s, buf, cshape, ax, kind == "FFT", fct, dtype)
    if kind == "IRFFT":
        n = length[-1]
        plan = RFFT(n, _IROps(b, ty), dtype)
        with loop_nest(b, ys[:-1], "po") as oidx:
            src = b.mul(linearize(b, list(oidx) + [_c(0)], xs), _c(2))
            line = [buf.load(src)]
            for i in range(1, (n - 1) // 2 + 1):
                line += [buf.load(b.add(src, _c(2 * i))), buf.load(b.add(src, _c(2 * i + 1)))]
            if n % 2 == 0:
                line.append(buf.load(b.add(src, _c(n))))
            res = plan.exec(line, inv, False)
            dst = linearize(b, list(oidx) + [_c(0)], ys)
            for j, v in enumerate(res):
                store_elem(s, out, et, b.add(dst, _c(j)), convert(s, widen(v), _W64, et))
    else:
        with loop_nest(b, ys, "pc") as idx:
            o = b.mul(linearize(b, idx, ys), _c(2))
            z = make(b, widen(buf.load(o)), widen(buf.load(b.add(o, _c(1)))))
            store_elem(s, out, et, linearize(b, idx, ys), convert(s, z, _C128, et))
    buf.free()
