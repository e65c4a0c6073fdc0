"""Building blocks of the pocketfft port (:mod:`oxla_backend_cpu.pocketfft`): constants,
twiddles, factorizations, cost model and the base of the line transforms."""

from __future__ import annotations

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
C3 = _ld("0.8660254037844386467637231707529362")
C5 = (_ld("0.3090169943749474241022934171828191"), _ld("0.9510565162951535721164393333793821"),
       _ld("-0.8090169943749474241022934171828191"), _ld("0.5877852522924731291687059546390728"))
C7 = (_ld("0.6234898018587335305250048840042398"), _ld("0.7818314824680298087084445266740578"),
       _ld("-0.2225209339563144042889025644967948"), _ld("0.9749279121818236070181316829939312"),
       _ld("-0.9009688679024191262361023195074451"), _ld("0.433883739117558120475768332848359"))
C11 = (_ld("0.8412535328311811688618116489193677"), _ld("0.5406408174555975821076359543186917"),
        _ld("0.4154150130018864255292741492296232"), _ld("0.9096319953545183714117153830790285"),
        _ld("-0.1423148382732851404437926686163697"), _ld("0.9898214418809327323760920377767188"),
        _ld("-0.6548607339452850640569250724662936"), _ld("0.7557495743542582837740358439723444"),
        _ld("-0.9594929736144973898903680570663277"), _ld("0.2817325568414296977114179153466169"))
HSQT2 = _ld("0.707106781186547524400844362104849")
SQRT2 = _ld("1.414213562373095048801688724209698")


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

    def many(self, idx) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`__getitem__` of every index of the int array ``idx`` at once (the same
        double products, each rounded once to ``dtype``): (re, im) float arrays."""
        idx = np.asarray(idx, np.int64)
        conj = 2 * idx > self.n
        idx = np.where(conj, self.n - idx, idx)
        v1, v2 = np.asarray(self.v1, np.float64), np.asarray(self.v2, np.float64)
        a, c = v1[idx & self.mask], v2[idx >> self.shift]
        re = (a[:, 0] * c[:, 0] - a[:, 1] * c[:, 1]).astype(self.dtype).astype(np.float64)
        im = (a[:, 0] * c[:, 1] + a[:, 1] * c[:, 0]).astype(self.dtype).astype(np.float64)
        return re, np.where(conj, -im, im)

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


@dataclass
class Factor:
    ip: int
    tw: list
    tws: list | None


class Base:
    def __init__(self, ops, dtype):
        self.o, self.dtype = ops, np.dtype(dtype)

    def k(self, v) -> object:
        """A constant of the working precision (``v`` a float or long double); a value
        already of the ops' kind (a twiddle loaded from a table) is returned as is."""
        if not isinstance(v, (int, float, np.floating)):
            return v
        return self.o.const(float(self.dtype.type(v)))

    def rng(self, start: int, stop: int | None = None, step: int = 1):
        """``range(start, stop, step)`` of the ops: Python ints when unrolled; with
        loop-emitting ops (``ops.range``) one symbolic index inside an emitted loop."""
        if stop is None:
            start, stop = 0, start
        fn = getattr(self.o, "range", None)
        return range(start, stop, step) if fn is None else fn(start, stop, step)

    def even(self, n):
        """Yields once when ``n`` is even: a Python test for an int, an emitted branch
        (``ops.if_even``) for a symbolic one (a shared pass's ``ido``)."""
        if not isinstance(n, int):
            yield from self.o.if_even(n)
        elif n % 2 == 0:
            yield

    def run_pass(self, key: str, fn, ido: int, l1: int, cc, ch, wa) -> None:
        """``fn(ido, l1, cc, ch, wa)``, one fixed-radix pass; loop-emitting ops that
        share passes (``ops.shared_pass``) emit it once per ``key`` as a function of
        ``ido`` and ``l1`` and call it (the passes of one radix differ in those only)."""
        shared = getattr(self.o, "shared_pass", None)
        if shared is None:
            fn(ido, l1, cc, ch, wa)
        else:
            shared(self, key, fn, ido, l1, cc, ch, wa)

    def table(self, values: list):
        """``values`` (real constants) indexable by :meth:`rng`'s indices: the list
        itself when unrolled, a constant table (``ops.rtable``) with loop-emitting
        ops."""
        return self.o.rtable(values) if getattr(self.o, "looped", False) else values

    def ki(self, l1: int, ido: int):
        """``(k, i)`` over ``range(l1) x range(ido)`` with ``i == 0`` (a Python 0)
        separate from ``i`` in ``[1, ido)``, so a loop body can branch on it."""
        for k in self.rng(l1):
            yield k, 0
            yield from ((k, i) for i in self.rng(1, ido))

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


def is_int_at_most(x, m: int) -> bool:
    """Whether ``x`` is a Python int at most ``m`` (a symbolic index never is)."""
    return isinstance(x, int) and x <= m


def is_zero(i) -> bool:
    """Whether index ``i`` is the Python int 0 (a symbolic loop index never is)."""
    return isinstance(i, int) and i == 0


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
