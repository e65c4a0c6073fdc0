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
``ops`` (:mod:`oxla_backend_cpu.fft_pocket`) and gets straight-line code per line.
Lines of more than :data:`MAX_OPS` ops are not handled here (:func:`supported`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

_PI = np.longdouble("3.141592653589793238462643383279502884197")
MAX_OPS = 40000
"""Most scalar ops of one unrolled line (n = 1024 complex: 38150): the emitted code is
compiled at about 0.1 ms per thousand ops (:mod:`oxla_backend_cpu.fft_pocket`)."""


def _ld(s: str) -> np.longdouble:
    return np.longdouble(s)


# the radix constants, as long double literals rounded to the working precision
_C3 = _ld("0.8660254037844386467637231707529362")
_C5 = (_ld("0.3090169943749474241022934171828191"), _ld("0.9510565162951535721164393333793821"),
       _ld("-0.8090169943749474241022934171828191"), _ld("0.5877852522924731291687059546390728"))
_C7 = (_ld("0.6234898018587335305250048840042398"), _ld("0.7818314824680298087084445266740578"),
       _ld("-0.2225209339563144042889025644967948"), _ld("0.9749279121818236070181316829939312"),
       _ld("-0.9009688679024191262361023195074451"), _ld("0.433883739117558120475768332848359"))
_C11 = (_ld("0.8412535328311811688618116489193677"), _ld("0.5406408174555975821076359543186917"),
        _ld("0.4154150130018864255292741492296232"), _ld("0.9096319953545183714117153830790285"),
        _ld("-0.1423148382732851404437926686163697"), _ld("0.9898214418809327323760920377767188"),
        _ld("-0.6548607339452850640569250724662936"), _ld("0.7557495743542582837740358439723444"),
        _ld("-0.9594929736144973898903680570663277"), _ld("0.2817325568414296977114179153466169"))
_HSQT2 = _ld("0.707106781186547524400844362104849")
_SQRT2 = _ld("1.414213562373095048801688724209698")


class Twiddles:
    """``exp(2*pi*i*k/n)`` for ``k`` in ``[0, n)`` as pocketfft's ``sincos_2pibyn``
    tabulates it: two tables of double-precision roots, one product in double,
    rounded to ``dtype`` (float32 or float64)."""

    def __init__(self, n: int, dtype):
        self.n, self.dtype = n, np.dtype(dtype)
        ang = float(np.longdouble(0.25) * _PI / np.longdouble(n))
        nval = (n + 2) // 2
        shift = 1
        while (1 << shift) * (1 << shift) < nval:
            shift += 1
        self.shift, self.mask = shift, (1 << shift) - 1
        self.v1 = [(1.0, 0.0)] + [self._calc(i, n, ang) for i in range(1, self.mask + 1)]
        n2 = (nval + self.mask) // (self.mask + 1)
        self.v2 = [(1.0, 0.0)] + [self._calc(i * (self.mask + 1), n, ang) for i in range(1, n2)]

    @staticmethod
    def _calc(x: int, n: int, ang: float) -> tuple[float, float]:
        x <<= 3
        cos, sin = math.cos, math.sin
        if x < 4 * n:
            if x < 2 * n:
                if x < n:
                    return cos(x * ang), sin(x * ang)
                return sin((2 * n - x) * ang), cos((2 * n - x) * ang)
            x -= 2 * n
            if x < n:
                return -sin(x * ang), cos(x * ang)
            return -cos((2 * n - x) * ang), sin((2 * n - x) * ang)
        x = 8 * n - x
        if x < 2 * n:
            if x < n:
                return cos(x * ang), -sin(x * ang)
            return sin((2 * n - x) * ang), -cos((2 * n - x) * ang)
        x -= 2 * n
        if x < n:
            return -sin(x * ang), -cos(x * ang)
        return -cos((2 * n - x) * ang), -sin((2 * n - x) * ang)

    def __getitem__(self, idx: int) -> tuple[float, float]:
        conj = 2 * idx > self.n
        if conj:
            idx = self.n - idx
        (ar, ai), (br, bi) = self.v1[idx & self.mask], self.v2[idx >> self.shift]
        t = self.dtype.type
        re, im = t(ar * br - ai * bi), t(ar * bi + ai * br)
        return float(re), float(-im if conj else im)


def _factors(n: int, radices: tuple[int, ...]) -> list[int]:
    """pocketfft's factorization: the ``radices`` (largest first) as often as they
    divide, one 2 moved to the front, then odd factors ascending."""
    f, m = [], n
    for r in radices:
        while m % r == 0:
            f.append(r)
            m //= r
    if m % 2 == 0:
        m //= 2
        f.append(2)
        f[0], f[-1] = f[-1], f[0]
    d = 3
    while d * d <= m:
        while m % d == 0:
            f.append(d)
            m //= d
        d += 2
    if m > 1:
        f.append(m)
    return f


def cfft_factors(n: int) -> list[int]:
    """pocketfft's complex factorization: 8s, 4s, one 2 moved to the front, odd
    factors ascending."""
    return _factors(n, (8, 4))


def rfft_factors(n: int) -> list[int]:
    """pocketfft's real factorization: 4s, one 2 moved to the front, odd factors."""
    return _factors(n, (4,))


def _largest_prime_factor(n: int) -> int:
    res = 1
    while n % 2 == 0:
        res, n = 2, n // 2
    x = 3
    while x * x <= n:
        while n % x == 0:
            res, n = x, n // x
        x += 2
    return n if n > 1 else res


def cost_guess(n: int) -> float:
    """pocketfft's cost estimate of an FFTPACK plan for length ``n``."""
    lfp, ni, result = 1.1, n, 0.0
    while n % 2 == 0:
        result += 2
        n //= 2
    x = 3
    while x * x <= n:
        while n % x == 0:
            result += x if x <= 5 else lfp * x
            n //= x
        x += 2
    if n > 1:
        result += n if n <= 5 else lfp * n
    return result * ni


def good_size_cmplx(n: int) -> int:
    """The smallest product of 2, 3, 5, 7 and 11 that is at least ``n``."""
    if n <= 12:
        return n
    best = 2 * n
    f11 = 1
    while f11 < best:
        f117 = f11
        while f117 < best:
            f1175 = f117
            while f1175 < best:
                x = f1175
                while x < n:
                    x *= 2
                while True:
                    if x < n:
                        x *= 3
                    elif x > n:
                        best = min(best, x)
                        if x & 1:
                            break
                        x >>= 1
                    else:
                        return n
                f1175 *= 5
            f117 *= 7
        f11 *= 11
    return best


def uses_bluestein(n: int, real: bool = False) -> bool:
    """True when pocketfft plans length ``n`` with Bluestein's algorithm
    (:mod:`.pocketfft_blue`): ``n >= 50``, a prime factor above ``sqrt(n)``, and
    Bluestein's cost estimate lower than the direct plan's (halved for a real
    transform), as pocketfft_c/pocketfft_r choose."""
    if n < 50:
        return False
    p = _largest_prime_factor(n)
    if p * p <= n:
        return False
    direct = cost_guess(n) * (0.5 if real else 1.0)
    return 2 * cost_guess(good_size_cmplx(2 * n - 1)) * 1.5 < direct


def plan(n: int, real: bool, ops, dtype):
    """The line transform pocketfft uses for length ``n``: ``exec(line, fct, forward)``
    (complex pairs, or reals in halfcomplex order when ``real``)."""
    from oxla_backend_cpu.pocketfft_blue import Bluestein
    from oxla_backend_cpu.pocketfft_c import CFFT
    from oxla_backend_cpu.pocketfft_r import RFFT

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


def supported(n: int, real: bool) -> bool:
    """Whether a line of length ``n`` is replayed here: at most :data:`MAX_OPS` scalar
    ops (FFTPACK or Bluestein plan)."""
    if n < 1:
        return False
    if uses_bluestein(n, real):
        return work(good_size_cmplx(2 * n - 1), False) <= 8 * MAX_OPS and \
            op_count(n, real) <= MAX_OPS
    return work(n, real) <= 4 * MAX_OPS and op_count(n, real) <= MAX_OPS


@dataclass
class _Factor:
    ip: int
    tw: list
    tws: list | None


class _Base:
    def __init__(self, ops, dtype):
        self.o, self.dtype = ops, np.dtype(dtype)

    def k(self, v) -> object:
        """A constant of the working precision (``v`` a float or long double)."""
        return self.o.const(float(self.dtype.type(v)))

    # real scalar helpers
    def add(self, a, b):
        return self.o.add(a, b)

    def sub(self, a, b):
        return self.o.sub(a, b)

    def mul(self, a, b):
        return self.o.mul(a, b)

    def neg(self, a):
        return self.o.neg(a)

    def sum(self, *xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = self.o.add(acc, x)
        return acc


class NumpyOps:
    """Scalars as numpy arrays of one dtype (one element per transformed line)."""

    def __init__(self, dtype):
        self.t = np.dtype(dtype).type

    def const(self, x: float):
        return self.t(x)

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def mul(self, a, b):
        return a * b

    def neg(self, a):
        return -a


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
