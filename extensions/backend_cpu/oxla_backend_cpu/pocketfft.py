"""pocketfft's FFTPACK algorithm, operation for operation, over abstract scalars.

XLA's CPU FFT (ducc0, pocketfft's successor) and ``scipy.fft`` (pocketfft C++) compute
in the operand's precision (f32 for f32/complex64) with a mixed-radix FFTPACK plan;
the conformance files' ``expect_close`` checks (3 ULP) hold against those bits, not
against an exact DFT rounded once (near-zero outputs carry the FFT's own rounding).
So the cpu backend replays the same plan here: the same factorization (8, 4, 2 first,
then odd primes; radix 2/3/4/5/7/8/11 butterflies and the generic prime pass), the
same twiddles (``sincos_2pibyn``: double-precision cos/sin of ``2*pi*k/n`` split in
two tables, multiplied in double, rounded to the working precision), the same
order of every addition and multiplication, and the same normalization.

The passes (:mod:`.pocketfft_c`, :mod:`.pocketfft_r`, Bluestein's
:mod:`.pocketfft_blue` for lengths with a large prime factor where pocketfft's cost
model picks it, :func:`plan`) work on lists of scalars through an ``ops`` object
(``add``, ``sub``, ``mul``, ``neg``, ``const``), fully unrolled for one line of the
transform: with :class:`NumpyOps` each scalar is a numpy array (one element per line)
and the result is what pocketfft computes; the cpu backend passes an LLVM-emitting
``ops`` (:mod:`oxla_backend_cpu.fft_pocket`) and gets straight-line code per line
(short lines, at most :data:`MAX_OPS` ops) or, with loop-emitting ``ops``, one loop
nest per pass (``ops.range``, line buffers and twiddle tables in memory).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from oxla_backend_cpu.pocketfft_base import (
    MAX_OPS,
    NumpyOps,
    cfft_factors,
    good_size_cmplx,
    rfft_factors,
    uses_bluestein,
)
from oxla_backend_cpu.pocketfft_blue import Bluestein
from oxla_backend_cpu.pocketfft_c import CFFT
from oxla_backend_cpu.pocketfft_r import RFFT

__all__ = ["MAX_OPS", "NumpyOps", "cfft_factors", "good_size_cmplx", "rfft_factors", "uses_bluestein", "op_count", "plan", "reference", "work"]


def plan(n: int, real: bool, ops, dtype):
    """The line transform pocketfft uses for length ``n``: ``exec(line, fct, forward)``
    (complex pairs, or reals in halfcomplex order when ``real``)."""
    if uses_bluestein(n, real):
        blue = Bluestein(n, ops, dtype)
        return _RealBlue(blue) if real else blue
    return RFFT(n, ops, dtype) if real else CFFT(n, ops, dtype)


class _RealBlue:
    def __init__(self, blue):
        self.blue = blue

    def exec(self, c: list, fct: float, forward: bool) -> list:
        return self.blue.exec_r(c, fct, forward)


def work(n: int, real: bool) -> int:
    """Rough (over)estimate of the scalar ops of one line of length ``n``."""
    fs = rfft_factors(n) if real else cfft_factors(n)
    return n * sum(fs) * (2 if real else 4)


class _CountOps:
    """Ops that only count (for :func:`op_count`)."""

    def __init__(self):
        self.n = 0

    def const(self, x: float) -> float:
        return x

    def add(self, a, b):
        self.n += 1
        return 0.0

    sub = mul = add

    def neg(self, a):
        self.n += 1
        return 0.0


@functools.lru_cache(maxsize=256)
def op_count(n: int, real: bool) -> int:
    """The exact number of scalar ops of one line of length ``n``."""
    ops = _CountOps()
    line = [0.0] * n if real else [(0.0, 0.0)] * n
    plan(n, real, ops, np.float64).exec(line, 1.0, True)
    return ops.n


def _lines_c(z: np.ndarray, axis: int, fwd: bool, fct: float) -> np.ndarray:
    n = z.shape[axis]
    dt = z.real.dtype
    zz = np.moveaxis(z, axis, -1).reshape(-1, n)
    out = plan(n, False, NumpyOps(dt), dt).exec([(zz[:, j].real.copy(), zz[:, j].imag.copy()) for j in range(n)], fct, fwd)
    res = np.empty_like(zz)
    for j, (re, im) in enumerate(out):
        res[:, j].real, res[:, j].imag = re, im
    return np.moveaxis(res.reshape(np.moveaxis(z, axis, -1).shape), -1, axis)


def reference(x: np.ndarray, kind: str, length: tuple[int, ...]) -> np.ndarray:
    """``stablehlo.fft`` of ``x`` over its trailing ``len(length)`` axes as replayed
    here in numpy (f32/complex64 or f64/complex128 working precision, as
    ``scipy.fft``'s fftn/ifftn/rfftn/irfftn): the model the cpu emitter follows, for
    tests. Shapes as the spec requires (no cropping or padding)."""
    axes = list(range(x.ndim - len(length), x.ndim))
    wide = x.dtype in (np.float64, np.complex128)
    rt = np.float64 if wide else np.float32
    ct = np.complex128 if wide else np.complex64
    total = math.prod(length)
    inv = float(rt(np.longdouble(1) / np.longdouble(total)))
    if kind in ("FFT", "IFFT"):
        z = x.astype(ct)
        for q, ax in enumerate(axes):
            z = _lines_c(z, ax, kind == "FFT", inv if (kind == "IFFT" and q == 0) else 1.0)
        return z
    n = length[-1]
    if kind == "RFFT":
        xr = x.astype(rt).reshape(-1, n)
        out = plan(n, True, NumpyOps(rt), rt).exec([xr[:, j].copy() for j in range(n)], 1.0,
                                                   True)
        z = np.zeros((xr.shape[0], n // 2 + 1), ct)
        z[:, 0].real = out[0]
        for ii in range(1, (n - 1) // 2 + 1):
            z[:, ii].real, z[:, ii].imag = out[2 * ii - 1], out[2 * ii]
        if n % 2 == 0:
            z[:, n // 2].real = out[n - 1]
        z = z.reshape(x.shape[:-1] + (n // 2 + 1,))
        for ax in axes[:-1]:
            z = _lines_c(z, ax, True, 1.0)
        return z
    z = x.astype(ct)
    for ax in axes[:-1]:
        z = _lines_c(z, ax, False, 1.0)
    zz = z.reshape(-1, z.shape[-1])
    line = [zz[:, 0].real.copy()]
    for ii in range(1, (n - 1) // 2 + 1):
        line += [zz[:, ii].real.copy(), zz[:, ii].imag.copy()]
    if n % 2 == 0:
        line.append(zz[:, n // 2].real.copy())
    out = plan(n, True, NumpyOps(rt), rt).exec(line, inv, False)
    return np.stack(out, -1).reshape(x.shape[:-1] + (n,))
