"""pocketfft's complex FFTPACK transform (``cfftp``), replayed operation for operation
(see :mod:`oxla_backend_cpu.pocketfft`)."""

from __future__ import annotations

import numpy as np

from oxla_backend_cpu.pocketfft_base import (
    C3,
    C5,
    C7,
    C11,
    HSQT2,
    Base,
    Factor,
    Twiddles,
    cfft_factors,
    is_zero,
)


class CFFT(Base):
    """pocketfft's ``cfftp`` for length ``n``; lines are lists of ``(re, im)``."""

    def __init__(self, n: int, ops, dtype):
        super().__init__(ops, dtype)
        self.n = n
        self.fact: list[Factor] = []
        if n == 1:
            return
        tw = Twiddles(n, dtype)
        l1 = 1
        for ip in cfft_factors(n):
            ido = n // (l1 * ip)
            jj, ii = np.meshgrid(np.arange(1, ip), np.arange(1, ido), indexing="ij")
            re, im = tw.many((jj * l1 * ii).ravel())  # w[(j-1)*(ido-1) + i-1]
            w = list(zip(re.tolist(), im.tolist()))
            tws = [tw[j * l1 * ido] for j in range(ip)] if ip > 11 else None
            self.fact.append(Factor(ip, w, tws))
            l1 *= ip

    # complex helpers (pairs of scalars)
    def cadd(self, a, b):
        return self.add(a[0], b[0]), self.add(a[1], b[1])

    def csub(self, a, b):
        return self.sub(a[0], b[0]), self.sub(a[1], b[1])

    def pm(self, c, d):
        return self.cadd(c, d), self.csub(c, d)

    def cscale(self, a, s):
        return self.mul(a[0], s), self.mul(a[1], s)

    def smul(self, fwd, v, w):
        """``v * conj(w)`` (forward) or ``v * w`` with twiddle ``w`` (floats)."""
        wr, wi = self.k(w[0]), self.k(w[1])
        if fwd:
            return (self.add(self.mul(v[0], wr), self.mul(v[1], wi)),
                    self.sub(self.mul(v[1], wr), self.mul(v[0], wi)))
        return (self.sub(self.mul(v[0], wr), self.mul(v[1], wi)),
                self.add(self.mul(v[0], wi), self.mul(v[1], wr)))

    def rot90(self, fwd, a):
        return (a[1], self.neg(a[0])) if fwd else (self.neg(a[1]), a[0])

    def exec(self, c: list, fct: float, fwd: bool) -> list:
        """The transform of line ``c`` (``n`` complex pairs) times ``fct``. With
        loop-emitting ops (``ops.looped``), ``c`` is a buffer (``ops.cscratch``)
        transformed in place, passes run as loops with twiddles from ``ops.ctable``."""
        mem = getattr(self.o, "looped", False)
        if self.n == 1:
            if fct == 1:
                return c if mem else list(c)
            v = self.cscale(c[0], self.k(fct))
            if not mem:
                return [v]
            c[0] = v
            return c
        p1, l1 = (c if mem else list(c)), 1
        other = self.o.cscratch(self.n) if mem else None
        for f in self.fact:
            ip = f.ip
            ido = self.n // (l1 * ip)
            p2 = other if mem else [None] * self.n
            wa = self.o.ctable(f.tw) if mem else f.tw
            if ip in (2, 3, 4, 5, 7, 8, 11):
                def fn(ido, l1, cc, ch, wa, ip=ip):
                    if ip in (2, 4, 8):
                        getattr(self, f"_pass{ip}")(fwd, ido, l1, cc, ch, wa)
                    else:
                        self._passodd(fwd, ido, l1, cc, ch, wa, ip)
                self.run_pass(f"c{ip}{'f' if fwd else 'b'}", fn, ido, l1, p1, p2, wa)
            else:
                self._passg(fwd, ido, ip, l1, p1, p2, wa, f.tws)
                p1, p2 = p2, p1  # the generic pass leaves its result in its input
            other, p1 = p1, p2
            l1 *= ip
        s = self.k(fct) if fct != 1 else None
        if not mem:
            return p1 if s is None else [self.cscale(v, s) for v in p1]
        if p1 is not c or s is not None:  # the result back into the line, scaled
            for j in self.rng(self.n):
                c[j] = p1[j] if s is None else self.cscale(p1[j], s)
        return c

    def _pass2(self, fwd, ido, l1, cc, ch, wa):
        for k, i in self.ki(l1, ido):
            a, b = cc[i + ido * (0 + 2 * k)], cc[i + ido * (1 + 2 * k)]
            ch[i + ido * k] = self.cadd(a, b)
            d = self.csub(a, b)
            ch[i + ido * (k + l1)] = d if is_zero(i) else self.smul(fwd, d, wa[i - 1])

    def _pass4(self, fwd, ido, l1, cc, ch, wa):
        for k, i in self.ki(l1, ido):
            c0, c1, c2, c3 = (cc[i + ido * (m + 4 * k)] for m in range(4))
            t2, t1 = self.pm(c0, c2)
            t3, t4 = self.pm(c1, c3)
            t4 = self.rot90(fwd, t4)

            def put(m, v, i=i, k=k):
                ch[i + ido * (k + l1 * m)] = v
            if is_zero(i):
                a, b = self.pm(t2, t3)
                put(0, a)
                put(2, b)
                a, b = self.pm(t1, t4)
                put(1, a)
                put(3, b)
            else:
                put(0, self.cadd(t2, t3))
                put(1, self.smul(fwd, self.cadd(t1, t4), wa[i - 1]))
                put(2, self.smul(fwd, self.csub(t2, t3), wa[i - 1 + (ido - 1)]))
                put(3, self.smul(fwd, self.csub(t1, t4), wa[i - 1 + 2 * (ido - 1)]))

    def _rot45(self, fwd, a):
        h = self.k(HSQT2)
        r, i = a
        if fwd:
            return self.mul(h, self.add(r, i)), self.mul(h, self.sub(i, r))
        return self.mul(h, self.sub(r, i)), self.mul(h, self.add(i, r))

    def _rot135(self, fwd, a):
        h = self.k(HSQT2)
        r, i = a
        if fwd:
            return self.mul(h, self.sub(i, r)), self.mul(h, self.sub(self.neg(r), i))
        return self.mul(h, self.sub(self.neg(r), i)), self.mul(h, self.sub(r, i))

    def _pass8(self, fwd, ido, l1, cc, ch, wa):
        for k, i in self.ki(l1, ido):
            c = [cc[i + ido * (m + 8 * k)] for m in range(8)]

            def put(m, v, i=i, k=k):
                ch[i + ido * (k + l1 * m)] = v
            a1, a5 = self.pm(c[1], c[5])
            a3, a7 = self.pm(c[3], c[7])
            a1, a3 = self.pm(a1, a3)
            a3 = self.rot90(fwd, a3)
            a7 = self.rot90(fwd, a7)
            a5, a7 = self.pm(a5, a7)
            a5 = self._rot45(fwd, a5)
            a7 = self._rot135(fwd, a7)
            a0, a4 = self.pm(c[0], c[4])
            a2, a6 = self.pm(c[2], c[6])
            if is_zero(i):
                for (m1, m2), (x, y) in (((0, 4), (self.cadd(a0, a2), a1)),
                                         ((2, 6), (self.csub(a0, a2), a3))):
                    u, v = self.pm(x, y)
                    put(m1, u)
                    put(m2, v)
                a6 = self.rot90(fwd, a6)
                for (m1, m2), (x, y) in (((1, 5), (self.cadd(a4, a6), a5)),
                                         ((3, 7), (self.csub(a4, a6), a7))):
                    u, v = self.pm(x, y)
                    put(m1, u)
                    put(m2, v)
                continue

            def w(x, i=i):
                return wa[i - 1 + x * (ido - 1)]
            a0, a2 = self.pm(a0, a2)
            put(0, self.cadd(a0, a1))
            put(4, self.smul(fwd, self.csub(a0, a1), w(3)))
            put(2, self.smul(fwd, self.cadd(a2, a3), w(1)))
            put(6, self.smul(fwd, self.csub(a2, a3), w(5)))
            a6 = self.rot90(fwd, a6)
            a4, a6 = self.pm(a4, a6)
            put(1, self.smul(fwd, self.cadd(a4, a5), w(0)))
            put(5, self.smul(fwd, self.csub(a4, a5), w(4)))
            put(3, self.smul(fwd, self.cadd(a6, a7), w(2)))
            put(7, self.smul(fwd, self.csub(a6, a7), w(6)))

    def _odd_consts(self, ip, fwd):
        """(cos, ±sin) of ``2*pi*m/ip`` for m = 1..(ip-1)/2 as pocketfft's literals."""
        if ip == 3:
            pairs = [(np.longdouble(-0.5), C3)]
        else:
            tab = {5: C5, 7: C7, 11: C11}[ip]
            pairs = [(tab[2 * m], tab[2 * m + 1]) for m in range(len(tab) // 2)]
        sgn = -1 if fwd else 1
        return [(float(self.dtype.type(r)), sgn * float(self.dtype.type(s))) for r, s in pairs]

    def _passodd(self, fwd, ido, l1, cc, ch, wa, ip):
        """pass3/5/7/11: pocketfft's hard-coded odd radices (their macros share this
        shape: sums and differences of mirrored inputs, then per output pair a real
        part ``t0 + sum x_m t_m`` and a rotated part from the differences)."""
        h = (ip - 1) // 2
        consts = self._odd_consts(ip, fwd)
        for k, i in self.ki(l1, ido):
            c = [cc[i + ido * (m + ip * k)] for m in range(ip)]
            t0 = c[0]
            s, d = [], []
            for m in range(1, h + 1):
                a, b = self.pm(c[m], c[ip - m])
                s.append(a)
                d.append(b)
            if ip == 3:
                ch[i + ido * k] = self.cadd(t0, s[0])
            else:
                ch[i + ido * k] = (self.sum(t0[0], *(x[0] for x in s)),
                                   self.sum(t0[1], *(x[1] for x in s)))
            for u in range(1, h + 1):
                # coefficient of term m for output u: cos/sin of 2*pi*u*m/ip
                xs, ys = [], []
                for m in range(1, h + 1):
                    q = (u * m) % ip
                    sg = 1.0
                    if q > h:
                        q, sg = ip - q, -1.0
                    cr, ci = consts[q - 1]
                    xs.append(cr)
                    ys.append(sg * ci)
                if ip == 3:
                    ca = self.cadd(t0, self.cscale(s[0], self.k(xs[0])))
                    yk = self.k(ys[0])
                    cb = (self.neg(self.mul(d[0][1], yk)), self.mul(d[0][0], yk))
                elif ip == 11:
                    ca = t0
                    for m in range(h):
                        ca = self.cadd(ca, self.cscale(s[m], self.k(xs[m])))
                    cb = self._rotpart(ys, d)
                else:
                    ca = (self.sum(t0[0], *(self.mul(self.k(xs[m]), s[m][0]) for m in range(h))),
                          self.sum(t0[1], *(self.mul(self.k(xs[m]), s[m][1]) for m in range(h))))
                    cb = self._rotpart(ys, d)
                if is_zero(i):
                    a, b = self.pm(ca, cb)
                else:
                    a = self.smul(fwd, self.cadd(ca, cb), wa[i - 1 + (u - 1) * (ido - 1)])
                    b = self.smul(fwd, self.csub(ca, cb), wa[i - 1 + (ip - u - 1) * (ido - 1)])
                ch[i + ido * (k + l1 * u)] = a
                ch[i + ido * (k + l1 * (ip - u))] = b

    def _rotpart(self, ys, d):
        im = self.sum(*(self.mul(self.k(y), t[0]) for y, t in zip(ys, d)))
        re = self.neg(self.sum(*(self.mul(self.k(y), t[1]) for y, t in zip(ys, d))))
        return re, im

    def _passg(self, fwd, ido, ip, l1, cc, ch, wa, csarr):
        """The generic (prime) pass; its result is left in ``cc``."""
        ipph, idl1 = (ip + 1) // 2, ido * l1

        def CC(a, b, c):
            return a + ido * (b + ip * c)

        def CX(a, b, c):
            return a + ido * (b + l1 * c)

        wal = [(1.0, 0.0)] + [(csarr[i][0], -csarr[i][1] if fwd else csarr[i][1])
                              for i in range(1, ip)]
        if getattr(self.o, "looped", False):
            wal = self.o.ctable(wal)
        for k in self.rng(l1):
            for i in self.rng(ido):
                ch[CX(i, k, 0)] = cc[CC(i, 0, k)]
        for j in self.rng(1, ipph):
            jc = ip - j
            for k in self.rng(l1):
                for i in self.rng(ido):
                    ch[CX(i, k, j)], ch[CX(i, k, jc)] = self.pm(cc[CC(i, j, k)], cc[CC(i, jc, k)])
        for k in self.rng(l1):
            for i in self.rng(ido):
                tmp = ch[CX(i, k, 0)]
                for j in range(1, ipph):
                    tmp = self.cadd(tmp, ch[CX(i, k, j)])
                cc[CX(i, k, 0)] = tmp
        for l in self.rng(1, ipph):
            self._passg_sums(ch, cc, ip, idl1, wal, l)
        for j in self.rng(1, ipph):
            jc = ip - j
            for k, i in self.ki(l1, ido):
                t1, t2 = cc[CX(i, k, j)], cc[CX(i, k, jc)]
                x1, x2 = self.pm(t1, t2)
                if not is_zero(i):
                    x1 = self.smul(fwd, x1, wa[(j - 1) * (ido - 1) + i - 1])
                    x2 = self.smul(fwd, x2, wa[(jc - 1) * (ido - 1) + i - 1])
                cc[CX(i, k, j)], cc[CX(i, k, jc)] = x1, x2

    def _passg_sums(self, ch, cc, ip, idl1, wal, l):
        """The middle of :meth:`_passg`: ``cc[l]``/``cc[lc]`` from ``ch``, the terms
        ``j >= 3`` in pairs, then one (pocketfft's order). Term ``j`` takes the root
        of angle ``j*l mod ip`` (pocketfft steps it by ``l``; ``ip`` prime)."""
        lc, K = ip - l, self.k
        ipph = (ip + 1) // 2
        w1, w2 = wal[l], wal[2 * l]
        for ik in self.rng(idl1):
            h0, h1, h2 = ch[ik], ch[ik + idl1], ch[ik + idl1 * 2]
            hm1, hm2 = ch[ik + idl1 * (ip - 1)], ch[ik + idl1 * (ip - 2)]
            cc[ik + idl1 * l] = (
                self.sum(h0[0], self.mul(K(w1[0]), h1[0]), self.mul(K(w2[0]), h2[0])),
                self.sum(h0[1], self.mul(K(w1[0]), h1[1]), self.mul(K(w2[0]), h2[1])))
            cc[ik + idl1 * lc] = (
                self.sub(self.neg(self.mul(K(w1[1]), hm1[1])), self.mul(K(w2[1]), hm2[1])),
                self.add(self.mul(K(w1[1]), hm1[0]), self.mul(K(w2[1]), hm2[0])))
        pairs = max(0, (ipph - 1 - 3 + 1) // 2)
        for t in self.rng(pairs):
            j = 3 + 2 * t
            xw, xw2 = wal[(j * l) % ip], wal[((j + 1) * l) % ip]
            for ik in self.rng(idl1):
                a, b = ch[ik + idl1 * j], ch[ik + idl1 * (j + 1)]
                e, g = ch[ik + idl1 * (ip - j)], ch[ik + idl1 * (ip - j - 1)]
                x, y = cc[ik + idl1 * l], cc[ik + idl1 * lc]
                cc[ik + idl1 * l] = (
                    self.add(x[0], self.add(self.mul(a[0], K(xw[0])), self.mul(b[0], K(xw2[0])))),
                    self.add(x[1], self.add(self.mul(a[1], K(xw[0])), self.mul(b[1], K(xw2[0])))))
                cc[ik + idl1 * lc] = (
                    self.sub(y[0], self.add(self.mul(e[1], K(xw[1])), self.mul(g[1], K(xw2[1])))),
                    self.add(y[1], self.add(self.mul(e[0], K(xw[1])), self.mul(g[0], K(xw2[1])))))
        j = 3 + 2 * pairs
        if j < ipph:
            xw = wal[(j * l) % ip]
            for ik in self.rng(idl1):
                a, e = ch[ik + idl1 * j], ch[ik + idl1 * (ip - j)]
                x, y = cc[ik + idl1 * l], cc[ik + idl1 * lc]
                cc[ik + idl1 * l] = (self.add(x[0], self.mul(a[0], K(xw[0]))),
                                     self.add(x[1], self.mul(a[1], K(xw[0]))))
                cc[ik + idl1 * lc] = (self.sub(y[0], self.mul(e[1], K(xw[1]))),
                                      self.add(y[1], self.mul(e[0], K(xw[1]))))
