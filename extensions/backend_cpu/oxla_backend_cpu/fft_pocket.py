"""``stablehlo.fft`` as XLA's CPU FFT computes it: pocketfft's plans replayed in the
operand's precision (:mod:`oxla_backend_cpu.pocketfft`). Each line length and
direction becomes one function ``void f(T* line)`` (shared by the module's kernels),
called in a loop over the lines; a line is gathered into a small buffer first unless it
is contiguous. Short lines are straight-line code compiled ``optnone``; longer ones are
loops calling one function per radix pass, which comes from the precompiled pass
library (:mod:`oxla_backend_cpu.fft_lib`, built once per process or read from the
compile cache's store) when the line calls it more than once, else is defined here.

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

import functools
import math
import re
import struct

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import Scalar, linearize, loop_nest
from oxla_codegen_llvm.complex import make, parts
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range
from oxla_codegen_llvm.scalar import convert

from oxla.errors import LoweringError
from oxla.ir import types as T
from oxla_backend_cpu import pocketfft as P
from oxla_backend_cpu.misc_ops import libc
from oxla_backend_cpu.pocketfft_c import CFFT
from oxla_backend_cpu.pocketfft_r import RFFT

PREFIX = "oxla_pocketfft_pass_"
"""Every pass symbol starts so."""

_SYMBOL = re.compile(r"oxla_pocketfft_pass_(c|r)(\d+)(f|b)_(s|d)")
COMPLEX_RADICES = (2, 3, 4, 5, 7, 8, 11)
REAL_RADICES = (2, 3, 4, 5)

ARG_LIMIT = 1 << 16
"""A library pass takes ``ido`` and ``l1`` in ``[1, ARG_LIMIT)``, stated to LLVM as
argument ranges: with unbounded ones it cannot rule out that the index products wrap,
and the radix-8 pass took 4x the -O3 time (0.37 s) and ran ~1.8x slower. A pass with a
larger argument (lines longer than 65536) is compiled into its program instead."""


def pass_symbol(key: str, wide: bool) -> str:
    """The symbol of pass ``key`` (``c8f``: complex radix 8 forward; ``r4b``: real
    radix 4 backward) in f64 (``wide``) or f32."""
    return f"{PREFIX}{key}_{'d' if wide else 's'}"


def parse_symbol(name: str) -> tuple[bool, int, bool, bool]:
    """``(real, radix, forward, wide)`` of a pass symbol.

    Raises:
        LoweringError: ``name`` is not the symbol of a pass this library defines.
    """
    m = _SYMBOL.fullmatch(name)
    radix = int(m.group(2)) if m else 0
    if m is None or radix not in (REAL_RADICES if m.group(1) == "r" else COMPLEX_RADICES):
        raise LoweringError(f"'{name}' is not an FFT pass of the cpu library")
    return m.group(1) == "r", radix, m.group(3) == "f", m.group(4) == "d"


I64, F32, F64, PTR = ir.IntType(64), ir.FloatType(), ir.DoubleType(), ir.PointerType()
_C128 = T.ComplexType(T.FloatType("f64"))
_W64 = T.FloatType("f64")


class _IROps:
    """pocketfft's scalar ops as LLVM instructions (no fast-math flags: every
    rounding is kept, nothing is contracted into an FMA)."""

    BLOCK_OPS = 128
    """Arithmetic ops per basic block (code generation is faster on small blocks)."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type, ptr: ir.Value):
        self.b, self.ty, self.ptr = b, ty, ptr
        self._count = 0

    def _tick(self) -> ir.IRBuilder:
        self._count += 1
        if self._count % self.BLOCK_OPS == 0:
            nxt = self.b.function.append_basic_block("fft")
            self.b.branch(nxt)
            self.b.position_at_end(nxt)
        return self.b

    def const(self, x: float) -> ir.Constant:
        return ir.Constant(self.ty, x)

    def add(self, a, c):
        return self._tick().fadd(a, c)

    def sub(self, a, c):
        return self._tick().fsub(a, c)

    def mul(self, a, c):
        return self._tick().fmul(a, c)

    def neg(self, a):
        return self._tick().fneg(a)

    def at(self, i: int) -> ir.Value:
        return self.b.gep(self.ptr, [_c(i)], source_etype=self.ty, inbounds=True)


_NW = ("nuw", "nsw")
"""Flags of the passes' index arithmetic: indices and their partial sums are
non-negative and far below 2**63, so no operation wraps (lets LLVM's loop analyses
reason about the addresses without the call sites' argument ranges)."""


class _Ix:
    """A symbolic i64 index (a loop variable and arithmetic on it) that mixes with
    Python ints the way the pass code's index expressions do."""

    __slots__ = ("b", "v")

    def __init__(self, b: ir.IRBuilder, v: ir.Value):
        self.b, self.v = b, v

    @staticmethod
    def val(x) -> ir.Value:
        return x.v if isinstance(x, _Ix) else _c(x)

    def __add__(self, x):
        if isinstance(x, int) and x == 0:
            return self
        return _Ix(self.b, self.b.add(self.v, self.val(x), flags=_NW))

    __radd__ = __add__

    def __floordiv__(self, m: int):  # of a non-negative index
        return _Ix(self.b, self.b.sdiv(self.v, _c(m)))

    def __mod__(self, m: int):
        return _Ix(self.b, self.b.urem(self.v, _c(m)))

    def __sub__(self, x):
        if isinstance(x, int) and x == 0:
            return self
        return _Ix(self.b, self.b.sub(self.v, self.val(x), flags=_NW))

    def __rsub__(self, x):
        return _Ix(self.b, self.b.sub(self.val(x), self.v, flags=_NW))

    def __mul__(self, x):
        if isinstance(x, int) and x == 1:
            return self
        return _Ix(self.b, self.b.mul(self.v, self.val(x), flags=_NW))

    __rmul__ = __mul__


class _Buf:
    """``n`` complex values of ``T`` (interleaved) at ``ptr``, indexed by int or
    :class:`_Ix`: items are ``(re, im)`` pairs of loaded values."""

    def __init__(self, ops: _LoopOps, ptr: ir.Value):
        self.o, self.ptr = ops, ptr

    def _at(self, i, part: int) -> ir.Value:
        b = self.o.b
        off = (_c(2 * i + part) if isinstance(i, int)
               else b.add(b.mul(i.v, _c(2), flags=_NW), _c(part), flags=_NW))
        return b.gep(self.ptr, [off], source_etype=self.o.ty, inbounds=True)

    def __getitem__(self, i):
        b = self.o.b
        return (b.load(self._at(i, 0), typ=self.o.ty), b.load(self._at(i, 1), typ=self.o.ty))

    def __setitem__(self, i, v) -> None:
        self.o.b.store(v[0], self._at(i, 0))
        self.o.b.store(v[1], self._at(i, 1))


class _Table(_Buf):
    """A constant table of complex ``T`` values (twiddles, chirps): a constant index
    gives constants, a symbolic one loads."""

    def __init__(self, ops: _LoopOps, ptr: ir.Value | None, values: list):
        super().__init__(ops, ptr)
        self.values = values

    def __getitem__(self, i):
        if isinstance(i, int):
            return tuple(self.o.const(v) for v in self.values[i])
        return super().__getitem__(i)


class _RBuf:
    """``n`` real values of ``T`` at ``ptr``, indexed by int or :class:`_Ix`."""

    def __init__(self, ops: _LoopOps, ptr: ir.Value):
        self.o, self.ptr = ops, ptr

    def _at(self, i) -> ir.Value:
        return self.o.b.gep(self.ptr, [_Ix.val(i)], source_etype=self.o.ty, inbounds=True)

    def __getitem__(self, i):
        return self.o.b.load(self._at(i), typ=self.o.ty)

    def __setitem__(self, i, v) -> None:
        self.o.b.store(v, self._at(i))


class _RTable(_RBuf):
    """A constant table of real ``T`` values (the real passes' twiddles): a constant
    index gives the float (rounded by the pass as a constant), a symbolic one loads."""

    def __init__(self, ops: _LoopOps, ptr: ir.Value | None, values: list):
        super().__init__(ops, ptr)
        self.values = values

    def __getitem__(self, i):
        if isinstance(i, int):
            return self.values[i]
        return super().__getitem__(i)


class _LoopOps(_IROps):
    """:class:`_IROps` that emit the passes' loops as loops (``looped``): ``range``
    yields one :class:`_Ix` inside an emitted loop, line buffers live in memory
    (``cscratch``: ``malloc``'d, freed by :meth:`free_all`), twiddle tables are
    module constants (``ctable``)."""

    BLOCK_OPS = 1 << 62
    looped = True

    def __init__(self, b: ir.IRBuilder, ty: ir.Type, module: ir.Module):
        super().__init__(b, ty, None)
        self.module = module
        self.malloc = libc(module, "malloc", PTR, [I64])
        self.free = libc(module, "free", ir.VoidType(), [PTR])
        self.allocs: list[ir.Value] = []

    def range(self, start: int, stop, step: int):
        """``range(start, stop, step)`` as a loop (``stop`` an int or, in a shared
        pass, an :class:`_Ix`); a constant range of at most one index stays Python."""
        if isinstance(stop, int):
            r = range(start, stop, step)
            if len(r) <= 1:
                yield from r
                return
            count = _c(len(r))
        else:  # a non-positive count runs no iteration
            count = self.b.sdiv(self.b.add(self.b.sub(stop.v, _c(start)), _c(step - 1)),
                                _c(step))
        # not unrolled: the pass loops are many (a few per radix pass) and LLVM's full
        # unrolling of the short ones grew the optimized code by ~30% (more code
        # generation time) with no faster lines (n = 1024 and 16384, real and complex)
        with for_range(self.b, count, "fq", hints=(("llvm.loop.unroll.disable", None),)) as t:
            yield _Ix(self.b, t) * step + start

    def if_even(self, n: _Ix):
        with self.b.if_then(self.b.icmp_signed("==", self.b.and_(n.v, _c(1)), _c(0))):
            yield

    def shared_pass(self, plan, key: str, fn, ido: int, l1: int, cc, ch, wa) -> None:
        """One fixed-radix pass as a call of ``void pass(T* cc, T* ch, T* wa, i64 ido,
        i64 l1)`` (``key``: radix and direction): a length's passes of one radix (five
        radix-4 passes at n = 1024) share code, and so do different lengths. Same
        operations, so the same bits.

        With ``ido`` and ``l1`` below :data:`oxla_backend_cpu.fft_lib.ARG_LIMIT` (every
        pass of a line up to 65536 long) the pass is declared here and defined by the
        precompiled pass library (:mod:`oxla_backend_cpu.fft_lib`), compiled once per
        process, not per program; otherwise it is defined in this module (internal)."""
        wide = self.ty == F64
        real, radix, fwd, _ = parse_symbol(pass_symbol(key, wide))
        calls = sum(f.ip == radix for f in plan.fact)
        if calls >= 2 and ido < ARG_LIMIT and l1 < ARG_LIMIT:
            name = pass_symbol(key, wide)
            f = self.module.globals.get(name)
            if f is None:  # external: the library's object defines it
                f = ir.Function(self.module, PASS_TYPE, name)
        else:
            name = f"oxla_pocketfft_ipass_{key}_{'d' if wide else 's'}"
            f = self.module.globals.get(name)
            if f is None:
                f = define_pass(self.module, name, real, radix, fwd, wide)
                f.linkage = "internal"
                f.attributes.add("noinline")
        wp = wa.ptr if wa.ptr is not None else ir.Constant(PTR, None)
        self.b.call(f, [cc.ptr, ch.ptr, wp, _c(ido), _c(l1)])

    def cscratch(self, n: int) -> _Buf:
        size = 4 if self.ty == F32 else 8
        ptr = self.b.call(self.malloc, [_c(max(2 * n * size, 16))])
        self.allocs.append(ptr)
        return _Buf(self, ptr)

    def rscratch(self, n: int) -> _RBuf:
        size = 4 if self.ty == F32 else 8
        ptr = self.b.call(self.malloc, [_c(max(n * size, 16))])
        self.allocs.append(ptr)
        return _RBuf(self, ptr)

    def _global(self, flat: list[float]) -> ir.GlobalVariable | None:
        """A module constant holding ``flat`` in ``T`` (values already rounded to it),
        as raw bytes: an ``i8`` string is built and parsed in microseconds, where an
        array of 16k float literals took ~1 s of Python and LLVM parsing (n = 16384)."""
        if not flat:
            return None
        data = bytearray(np.asarray(flat, np.float32 if self.ty == F32 else np.float64)
                         .astype("<f4" if self.ty == F32 else "<f8").tobytes())
        arr = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(self.module, arr, self.module.get_unique_name("oxla_fft_tw"))
        g.global_constant, g.linkage, g.align = True, "internal", 16
        g.initializer = ir.Constant(arr, data)
        return g

    def ctable(self, pairs: list) -> _Table:
        return _Table(self, self._global([float(x) for p in pairs for x in p]), pairs)

    def rtable(self, values: list) -> _RTable:
        return _RTable(self, self._global([float(x) for x in values]), values)

    def free_all(self) -> None:
        for p in self.allocs:
            self.b.call(self.free, [p])


PASS_TYPE = ir.FunctionType(ir.VoidType(), [PTR] * 3 + [I64] * 2)
"""``void pass(T* cc, T* ch, T* wa, i64 ido, i64 l1)``: one fixed-radix pass."""


def define_pass(module: ir.Module, name: str, real: bool, radix: int, fwd: bool,
                wide: bool) -> ir.Function:
    """Defines pass ``name`` (:func:`oxla_backend_cpu.fft_lib.pass_symbol`) in
    ``module`` with external linkage: pocketfft's radix-``radix`` pass (real when
    ``real``; ``fwd``: forward; ``wide``: f64, else f32) as loops over the symbolic
    ``ido`` and ``l1``, ``cc`` and ``ch`` the two line buffers, ``wa`` the twiddles."""
    ty, dtype = (F64, np.float64) if wide else (F32, np.float32)
    f = ir.Function(module, PASS_TYPE, name)
    for arg in f.args[:3]:  # cc and ch are the two line buffers, wa a constant
        arg.add_attribute("noalias")
    sub = _LoopOps(ir.IRBuilder(f.append_basic_block("entry")), ty, module)
    plan = RFFT(1, sub, dtype) if real else CFFT(1, sub, dtype)  # its pass methods only
    if real:
        body = getattr(plan, f"_rad{'f' if fwd else 'b'}{radix}")
    elif radix in (2, 4, 8):
        body = functools.partial(getattr(plan, f"_pass{radix}"), fwd)
    else:
        def body(ido, l1, cc, ch, wa):
            plan._passodd(fwd, ido, l1, cc, ch, wa, radix)
    a = f.args
    buf, tab = (_RBuf, _RTable) if real else (_Buf, _Table)
    body(_Ix(sub.b, a[3]), _Ix(sub.b, a[4]), buf(sub, a[0]), buf(sub, a[1]),
         tab(sub, a[2], None))
    sub.free_all()
    sub.b.ret_void()
    return f


LOOP_WORK = 6000
"""Lines whose :func:`pocketfft.work` estimate is above this are emitted in loop form
(:class:`_LoopOps`: code size per pass, not per butterfly); smaller ones
straight-line."""


def looped(n: int, real: bool) -> bool:
    """Whether a line of length ``n`` (complex, or real when ``real``) is emitted in
    loop form; every other length has at most :data:`pocketfft.MAX_OPS` ops
    straight-line."""
    return P.work(n, real) > LOOP_WORK


def _line_fn(module: ir.Module, kind: str, n: int, fwd: bool, fct: float, ty: ir.Type,
             dtype) -> ir.Function:
    """``void f(T* line)``: one in-place transform of a line (``kind`` ``c``: ``n``
    interleaved complex values; ``r``: ``n`` reals, forward to / backward from
    FFTPACK's halfcomplex order), shared by every kernel of the module.

    The body is one straight-line block of a few thousand ops for n in the hundreds;
    LLVM's optimizer and instruction selection are superlinear in a block's size
    (seconds at n = 256), so it is compiled ``optnone`` (fast instruction selection,
    linear: ~0.1 ms per thousand ops) and runs at a few microseconds per line."""
    name = (f"oxla_pocketfft_{kind}{n}{'f' if fwd else 'b'}_{'d' if ty == F64 else 's'}_"
            f"{struct.pack('>d', fct).hex()}")
    if name in module.globals:
        return module.globals[name]
    if looped(n, kind == "r"):
        return _loop_line_fn(module, name, n, fwd, fct, ty, dtype, kind == "r")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    fn.attributes.add("optnone")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ops = _IROps(b, ty, fn.args[0])
    m = 2 * n if kind == "c" else n
    vals = [b.load(ops.at(i), typ=ty) for i in range(m)]
    if kind == "c":
        out = P.plan(n, False, ops, dtype).exec(
            [(vals[2 * j], vals[2 * j + 1]) for j in range(n)], fct, fwd)
        flat = [x for v in out for x in v]
    else:
        flat = P.plan(n, True, ops, dtype).exec(vals, fct, fwd)
    for i, v in enumerate(flat):
        b.store(v, ops.at(i))
    b.ret_void()
    return fn


def _loop_line_fn(module: ir.Module, name: str, n: int, fwd: bool, fct: float,
                  ty: ir.Type, dtype, real: bool) -> ir.Function:
    """:func:`_line_fn` in loop form (the same operations, so the same bits);
    optimized normally (its blocks are small)."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name)
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ops = _LoopOps(b, ty, module)
    line = (_RBuf if real else _Buf)(ops, fn.args[0])
    P.plan(n, real, ops, dtype).exec(line, fct, fwd)
    ops.free_all()
    b.ret_void()
    return fn


def _is_wide(et: T.ElementType) -> bool:
    inner = et.element_type if isinstance(et, T.ComplexType) else et
    return inner.name == "f64"


def pocket_plan_ok(kind: str, length: list[int], xs: list[int], ys: list[int]) -> bool:
    """True when the shapes are the ones XLA accepts (trailing operand dims =
    ``fft_length``, RFFT's result and IRFFT's operand last dim ``n//2+1``): every line
    length has a plan (straight-line or loop form)."""
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
    return all(m >= 1 for m in length)


class _Scratch:
    """A malloc'd array of ``T`` scalars."""

    def __init__(self, s: Scalar, ty: ir.Type, count: int):
        self.s, self.ty = s, ty
        malloc = libc(s.module, "malloc", PTR, [I64])
        self.free_fn = libc(s.module, "free", ir.VoidType(), [PTR])
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


def _complex_axis(s: Scalar, buf: _Scratch, line: _Scratch, shape: list[int], axis: int,
                  fwd: bool, fct: float, dtype) -> None:
    """In-place complex transform of ``buf`` (``shape``, interleaved) along ``axis``
    (through ``line``, 2n scalars, unless the axis is contiguous)."""
    b = s.b
    n = shape[axis]
    fn = _line_fn(s.module, "c", n, fwd, fct, buf.ty, dtype)
    stride = math.prod(shape[axis + 1:])
    outer = [d for i, d in enumerate(shape) if i != axis]
    with loop_nest(b, outer, f"pl{axis}") as oidx:
        idx = list(oidx)
        idx.insert(axis, _c(0))
        base = b.mul(linearize(b, idx, shape), _c(2))
        if stride == 1:
            b.call(fn, [buf.at(base)])
        else:
            with for_range(b, n, f"pg{axis}") as j:
                o = b.add(base, b.mul(j, _c(2 * stride)))
                line.store(b.mul(j, _c(2)), buf.load(o))
                line.store(b.add(b.mul(j, _c(2)), _c(1)), buf.load(b.add(o, _c(1))))
            b.call(fn, [line.ptr])
            with for_range(b, n, f"ps{axis}") as j:
                o = b.add(base, b.mul(j, _c(2 * stride)))
                buf.store(o, line.load(b.mul(j, _c(2))))
                buf.store(b.add(o, _c(1)), line.load(b.add(b.mul(j, _c(2)), _c(1))))


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
    # a 1-D real transform needs no complex scratch: its halfcomplex line goes straight
    # to the result (RFFT) or comes straight from the operand (IRFFT)
    direct = k == 1 and kind in ("RFFT", "IRFFT")
    buf = None if direct else _Scratch(s, ty, 2 * math.prod(cshape))

    def narrow(v: ir.Value) -> ir.Value:
        return v if wide else b.fptrunc(v, F32)

    def widen(v: ir.Value) -> ir.Value:
        return v if wide else b.fpext(v, F64)

    def put(oidx, i: ir.Value, re: ir.Value, im: ir.Value) -> None:
        """Complex element ``i`` of RFFT's row ``oidx``: into the result or the scratch."""
        e = b.add(linearize(b, list(oidx) + [_c(0)], ys), i)
        if direct:
            z = make(b, widen(re), widen(im))
            store_elem(s, out, et, e, convert(s, z, _C128, et))
        else:
            buf.store(b.mul(e, _c(2)), re)
            buf.store(b.add(b.mul(e, _c(2)), _c(1)), im)

    def get(oidx, i: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Complex element ``i`` of IRFFT's row ``oidx``: from the operand or scratch."""
        if direct:
            f.reset()
            re, im = parts(b, convert(s, f.value_at(x, list(oidx) + [i]), xet, _C128))
            return narrow(re), narrow(im)
        e = b.mul(b.add(linearize(b, list(oidx) + [_c(0)], xs), i), _c(2))
        return buf.load(e), buf.load(b.add(e, _c(1)))

    n = length[-1]
    line = _Scratch(s, ty, 2 * max(length))
    zero = ir.Constant(ty, 0.0)
    if kind == "RFFT":  # halfcomplex r0, r1, i1, r2, i2, ... [, r_{n/2}] -> complex
        fn = _line_fn(s.module, "r", n, True, 1.0, ty, dtype)
        with loop_nest(b, xs[:-1], "pr") as oidx:
            with for_range(b, n, "prg") as j:
                f.reset()
                line.store(j, narrow(convert(s, f.value_at(x, list(oidx) + [j]), xet, _W64)))
            f.reset()
            b.call(fn, [line.ptr])
            put(oidx, _c(0), line.load(_c(0)), zero)
            with for_range(b, (n - 1) // 2 + 1, "pru", start=1) as i:
                put(oidx, i, line.load(b.sub(b.mul(i, _c(2)), _c(1))),
                    line.load(b.mul(i, _c(2))))
            if n % 2 == 0:
                put(oidx, _c(n // 2), line.load(_c(n - 1)), zero)
        for ax in axes[:-1]:
            _complex_axis(s, buf, line, cshape, ax, True, 1.0, dtype)
    elif not direct:
        with loop_nest(b, xs, "pi") as idx:
            f.reset()
            re, im = parts(b, convert(s, f.value_at(x, idx), xet, _C128))
            o = b.mul(linearize(b, idx, xs), _c(2))
            buf.store(o, narrow(re))
            buf.store(b.add(o, _c(1)), narrow(im))
        inner = axes if kind in ("FFT", "IFFT") else axes[:-1]
        for q, ax in enumerate(inner):
            fct = inv if (kind == "IFFT" and q == 0) else 1.0
            _complex_axis(s, buf, line, cshape, ax, kind == "FFT", fct, dtype)
    if kind == "IRFFT":  # complex -> halfcomplex (imaginary parts of r0, r_{n/2} unread)
        fn = _line_fn(s.module, "r", n, False, inv, ty, dtype)
        with loop_nest(b, ys[:-1], "po") as oidx:
            line.store(_c(0), get(oidx, _c(0))[0])
            with for_range(b, (n - 1) // 2 + 1, "pou", start=1) as i:
                re, im = get(oidx, i)
                line.store(b.sub(b.mul(i, _c(2)), _c(1)), re)
                line.store(b.mul(i, _c(2)), im)
            if n % 2 == 0:
                line.store(_c(n - 1), get(oidx, _c(n // 2))[0])
            f.reset()
            b.call(fn, [line.ptr])
            dst = linearize(b, list(oidx) + [_c(0)], ys)
            with for_range(b, n, "pos") as j:
                store_elem(s, out, et, b.add(dst, j), convert(s, widen(line.load(j)), _W64, et))
    elif not direct:
        with loop_nest(b, ys, "pc") as idx:
            o = b.mul(linearize(b, idx, ys), _c(2))
            z = make(b, widen(buf.load(o)), widen(buf.load(b.add(o, _c(1)))))
            store_elem(s, out, et, linearize(b, idx, ys), convert(s, z, _C128, et))
    if buf is not None:
        buf.free()
    line.free()
