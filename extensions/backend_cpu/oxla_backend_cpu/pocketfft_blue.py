"""pocketfft's Bluestein transform (``fftblue``), replayed operation for operation
(see :mod:`oxla_backend_cpu.pocketfft`): lengths whose plan would need a large prime
pass are computed as a convolution through a complex FFT of a good length ``n2 >=
2n - 1``; its chirp ``bk`` and the chirp's transform ``bkf`` are computed here at plan
time, in the working precision, as pocketfft computes them."""

from __future__ import annotations

import numpy as np

from oxla_backend_cpu.pocketfft_base import Base, NumpyOps, Twiddles, good_size_cmplx
from oxla_backend_cpu.pocketfft_c import CFFT


class Bluestein(CFFT):
    """``fftblue`` for length ``n``: :meth:`exec` on ``n`` complex pairs, :meth:`exec_r`
    on ``n`` reals in FFTPACK's halfcomplex order (as :class:`RFFT.exec`)."""

    def __init__(self, n: int, ops, dtype):
        Base.__init__(self, ops, dtype)
        self.n, self.n2 = n, good_size_cmplx(2 * n - 1)
        self.plan = CFFT(self.n2, ops, dtype)
        t = self.dtype.type
        tmp = Twiddles(2 * n, dtype)
        bk = [(1.0, 0.0)]
        coeff = 0
        for m in range(1, n):
            coeff += 2 * m - 1
            if coeff >= 2 * n:
                coeff -= 2 * n
            bk.append(tmp[coeff])
        self.bk = bk
        xn2 = t(1) / t(self.n2)
        zero = (t(0), t(0))
        tb = [zero] * self.n2
        tb[0] = (t(bk[0][0]) * xn2, t(bk[0][1]) * xn2)
        for m in range(1, n):
            tb[m] = tb[self.n2 - m] = (t(bk[m][0]) * xn2, t(bk[m][1]) * xn2)
        arr = [(np.array([r], self.dtype), np.array([i], self.dtype)) for r, i in tb]
        out = CFFT(self.n2, NumpyOps(self.dtype), self.dtype).exec(arr, 1.0, True)
        self.bkf = [(float(r[0]), float(i[0])) for r, i in out[:self.n2 // 2 + 1]]

    def _mul(self, fwd: bool, v, w):
        """pocketfft's ``special_mul<fwd>`` of ``v`` by the constant ``w``."""
        return self.smul(fwd, v, w)

    def exec(self, c: list, fct: float, fwd: bool) -> list:
        if getattr(self.o, "looped", False):
            return self._exec_mem(c, fct, fwd)
        n, n2 = self.n, self.n2
        akf = [self._mul(fwd, c[m], self.bk[m]) for m in range(n)]
        z = self.cscale(akf[0], self.k(0.0))
        akf += [z] * (n2 - n)
        akf = self.plan.exec(akf, 1.0, True)
        akf[0] = self._mul(not fwd, akf[0], self.bkf[0])
        for m in range(1, (n2 + 1) // 2):
            akf[m] = self._mul(not fwd, akf[m], self.bkf[m])
            akf[n2 - m] = self._mul(not fwd, akf[n2 - m], self.bkf[m])
        if n2 % 2 == 0:
            akf[n2 // 2] = self._mul(not fwd, akf[n2 // 2], self.bkf[n2 // 2])
        akf = self.plan.exec(akf, 1.0, False)
        s = self.k(fct)
        return [self.cscale(self._mul(fwd, akf[m], self.bk[m]), s) for m in range(n)]

    def _exec_mem(self, c, fct: float, fwd: bool):
        """:meth:`exec` in loop form (see :meth:`CFFT.exec`): the same operations on
        buffers, the chirps as tables."""
        n, n2, o = self.n, self.n2, self.o
        bk, bkf = o.ctable(self.bk), o.ctable(self.bkf)
        akf = o.cscratch(n2)
        for m in self.rng(n):
            akf[m] = self._mul(fwd, c[m], bk[m])
        z = self.cscale(akf[0], self.k(0.0))
        for m in self.rng(n, n2):
            akf[m] = z
        self.plan.exec(akf, 1.0, True)
        akf[0] = self._mul(not fwd, akf[0], bkf[0])
        for m in self.rng(1, (n2 + 1) // 2):
            akf[m] = self._mul(not fwd, akf[m], bkf[m])
            akf[n2 - m] = self._mul(not fwd, akf[n2 - m], bkf[m])
        if n2 % 2 == 0:
            akf[n2 // 2] = self._mul(not fwd, akf[n2 // 2], bkf[n2 // 2])
        self.plan.exec(akf, 1.0, False)
        s = self.k(fct)
        for m in self.rng(n):
            c[m] = self.cscale(self._mul(fwd, akf[m], bk[m]), s)
        return c

    def exec_r(self, c: list, fct: float, fwd: bool) -> list:
        """The real transform of ``c`` (see the class doc) through :meth:`exec` on a
        complex line with zero imaginary parts (forward) or the Hermitian extension
        of the halfcomplex input (backward)."""
        if getattr(self.o, "looped", False):
            return self._exec_r_mem(c, fct, fwd)
        n = self.n
        zero = self.mul(self.k(0.0), c[0])
        if fwd:
            out = self.exec([(c[m], zero) for m in range(n)], fct, True)
            flat = [x for v in out for x in v]
            return [out[0][0]] + flat[2:n + 1]
        tmp = [(c[0], self.mul(c[0], self.k(0.0)))]
        rest = list(c[1:])
        for m in range(1, (n - 1) // 2 + 1):
            tmp.append((rest[2 * m - 2], rest[2 * m - 1]))
        if n % 2 == 0:
            tmp.append((rest[n - 2], self.mul(self.k(0.0), c[0])))
        for m in range(len(tmp), n):
            r, i = tmp[n - m]
            tmp.append((r, self.neg(i)))
        out = self.exec(tmp, fct, False)
        return [v[0] for v in out]

    def _exec_r_mem(self, c, fct: float, fwd: bool):
        """:meth:`exec_r` in loop form: ``c`` a real buffer (``ops.rscratch``),
        transformed in place through a complex scratch line."""
        n, o = self.n, self.o
        tmp = o.cscratch(n)
        if fwd:
            zero = self.mul(self.k(0.0), c[0])
            for m in self.rng(n):
                tmp[m] = (c[m], zero)
            self._exec_mem(tmp, fct, True)
            c[0] = tmp[0][0]
            for m in self.rng(1, (n - 1) // 2 + 1):
                re, im = tmp[m]
                c[2 * m - 1], c[2 * m] = re, im
            if n % 2 == 0:
                c[n - 1] = tmp[n // 2][0]
            return c
        tmp[0] = (c[0], self.mul(c[0], self.k(0.0)))
        for m in self.rng(1, (n - 1) // 2 + 1):
            tmp[m] = (c[2 * m - 1], c[2 * m])
        if n % 2 == 0:
            tmp[n // 2] = (c[n - 1], self.mul(self.k(0.0), c[0]))
        for m in self.rng(n // 2 + 1, n):
            r, i = tmp[n - m]
            tmp[m] = (r, self.neg(i))
        self._exec_mem(tmp, fct, False)
        for m in self.rng(n):
            c[m] = tmp[m][0]
        return c
