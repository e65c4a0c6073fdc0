"""pocketfft's real FFTPACK transform (``rfftp``), replayed operation for operation
(see :mod:`oxla_backend_cpu.pocketfft`)."""

from __future__ import annotations

import numpy as np

from oxla_backend_cpu.pocketfft_base import (
    C3,
    C5,
    HSQT2,
    SQRT2,
    Base,
    Factor,
    Twiddles,
    is_int_at_most,
    rfft_factors,
)


class RFFT(Base):
    """pocketfft's ``rfftp`` for length ``n``: ``forward`` takes ``n`` reals and gives
    FFTPACK's halfcomplex order ``r0, r1, i1, r2, i2, ...``; ``backward`` the
    reverse (unnormalized)."""

    def __init__(self, n: int, ops, dtype):
        super().__init__(ops, dtype)
        self.n = n
        self.fact: list[Factor] = []
        if n == 1:
            return
        tw = Twiddles(n, dtype)
        fs = rfft_factors(n)
        l1 = 1
        for kk, ip in enumerate(fs):
            ido = n // (l1 * ip)
            w = np.zeros((ip - 1, ido - 1))
            if kk < len(fs) - 1 and ido > 2:  # w[(j-1)*(ido-1) + 2i-2], [.. + 2i-1]
                jj, ii = np.meshgrid(np.arange(1, ip), np.arange(1, (ido - 1) // 2 + 1),
                                     indexing="ij")
                re, im = tw.many((jj * l1 * ii).ravel())
                w[:, 0:2 * ii.shape[1]:2] = re.reshape(ii.shape)
                w[:, 1:2 * ii.shape[1]:2] = im.reshape(ii.shape)
            w = w.ravel().tolist()
            tws = None
            if ip > 5:
                tws = [0.0] * (2 * ip)
                tws[0], tws[1] = 1.0, 0.0
                i, ic = 2, 2 * ip - 2
                while i <= ic:
                    re, im = tw[i // 2 * (n // ip)]
                    tws[i], tws[i + 1], tws[ic], tws[ic + 1] = re, im, re, -im
                    i, ic = i + 2, ic - 2
            self.fact.append(Factor(ip, w, tws))
            l1 *= ip

    def pm(self, c, d):
        return self.add(c, d), self.sub(c, d)

    def mulpm(self, c, d, e, f):
        """pocketfft's MULPM: ``(c*e + d*f, c*f - d*e)`` (``c``, ``d`` constants)."""
        c, d = self.k(c), self.k(d)
        return self.add(self.mul(c, e), self.mul(d, f)), self.sub(self.mul(c, f), self.mul(d, e))

    def exec(self, c: list, fct: float, forward: bool) -> list:
        """The transform of line ``c`` (``n`` reals) times ``fct``. With loop-emitting
        ops (``ops.looped``), ``c`` is a buffer (``ops.rscratch``) transformed in place,
        passes run as loops with twiddles from ``ops.rtable`` (as :meth:`CFFT.exec`)."""
        n = self.n
        mem = getattr(self.o, "looped", False)
        if n == 1:
            if fct == 1:
                return c if mem else list(c)
            v = self.mul(self.k(fct), c[0])
            if not mem:
                return [v]
            c[0] = v
            return c
        p1 = c if mem else list(c)
        other = self.o.rscratch(n) if mem else None
        nf = len(self.fact)
        order = range(nf - 1, -1, -1) if forward else range(nf)
        l1 = n if forward else 1
        for kk in order:
            f = self.fact[kk]
            if forward:
                ido = n // l1
                l1 //= f.ip
            else:
                ido = n // (f.ip * l1)
            p2 = other if mem else [None] * n
            wa = self.o.rtable(f.tw) if mem else f.tw
            if forward:
                fn = {2: self._radf2, 3: self._radf3, 4: self._radf4, 5: self._radf5}.get(f.ip)
                if fn is None:  # the generic pass leaves its result in its input
                    self._radfg(ido, f.ip, l1, p1, p2, wa, f.tws)
                    p1, p2 = p2, p1
                else:
                    self.run_pass(f"r{f.ip}f", fn, ido, l1, p1, p2, wa)
            else:
                fn = {2: self._radb2, 3: self._radb3, 4: self._radb4, 5: self._radb5}.get(f.ip)
                if fn is None:
                    self._radbg(ido, f.ip, l1, p1, p2, wa, f.tws)
                else:
                    self.run_pass(f"r{f.ip}b", fn, ido, l1, p1, p2, wa)
                l1 *= f.ip
            other, p1 = p1, p2
        s = self.k(fct) if fct != 1 else None
        if not mem:
            return p1 if s is None else [self.mul(s, v) for v in p1]
        if p1 is not c or s is not None:  # the result back into the line, scaled
            for j in self.rng(n):
                c[j] = p1[j] if s is None else self.mul(s, p1[j])
        return c

    # -- forward passes: CC(a,b,c) = cc[a+ido*(b+l1*c)], CH(a,b,c) = ch[a+ido*(b+ip*c)]

    def _radf2(self, ido, l1, cc, ch, wa):
        def CC(a, b, c):
            return cc[a + ido * (b + l1 * c)]

        def CH(a, b, c):
            return a + ido * (b + 2 * c)
        for k in self.rng(l1):
            ch[CH(0, 0, k)], ch[CH(ido - 1, 1, k)] = self.pm(CC(0, k, 0), CC(0, k, 1))
        for _ in self.even(ido):
            for k in self.rng(l1):
                ch[CH(0, 1, k)] = self.neg(CC(ido - 1, k, 1))
                ch[CH(ido - 1, 0, k)] = CC(ido - 1, k, 0)
        if is_int_at_most(ido, 2):  # else the i loops below are empty
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                tr2, ti2 = self.mulpm(wa[i - 2], wa[i - 1], CC(i - 1, k, 1), CC(i, k, 1))
                ch[CH(i - 1, 0, k)], ch[CH(ic - 1, 1, k)] = self.pm(CC(i - 1, k, 0), tr2)
                ch[CH(i, 0, k)], ch[CH(ic, 1, k)] = self.pm(ti2, CC(i, k, 0))

    def _radf3(self, ido, l1, cc, ch, wa):
        taur, taui = self.k(-0.5), self.k(C3)

        def CC(a, b, c):
            return cc[a + ido * (b + l1 * c)]

        def CH(a, b, c):
            return a + ido * (b + 3 * c)
        for k in self.rng(l1):
            cr2 = self.add(CC(0, k, 1), CC(0, k, 2))
            ch[CH(0, 0, k)] = self.add(CC(0, k, 0), cr2)
            ch[CH(0, 2, k)] = self.mul(taui, self.sub(CC(0, k, 2), CC(0, k, 1)))
            ch[CH(ido - 1, 1, k)] = self.add(CC(0, k, 0), self.mul(taur, cr2))
        if is_int_at_most(ido, 1):
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                dr2, di2 = self.mulpm(wa[i - 2], wa[i - 1], CC(i - 1, k, 1), CC(i, k, 1))
                dr3, di3 = self.mulpm(wa[i - 2 + (ido - 1)], wa[i - 1 + (ido - 1)],
                                      CC(i - 1, k, 2), CC(i, k, 2))
                dr2, di2, dr3, di3 = (self.add(dr2, dr3), self.add(di2, di3),
                                      self.sub(di2, di3), self.sub(dr3, dr2))
                ch[CH(i - 1, 0, k)] = self.add(CC(i - 1, k, 0), dr2)
                ch[CH(i, 0, k)] = self.add(CC(i, k, 0), di2)
                tr2 = self.add(CC(i - 1, k, 0), self.mul(taur, dr2))
                ti2 = self.add(CC(i, k, 0), self.mul(taur, di2))
                tr3, ti3 = self.mul(taui, dr3), self.mul(taui, di3)
                ch[CH(i - 1, 2, k)], ch[CH(ic - 1, 1, k)] = self.pm(tr2, tr3)
                ch[CH(i, 2, k)], ch[CH(ic, 1, k)] = self.pm(ti3, ti2)

    def _radf4(self, ido, l1, cc, ch, wa):
        h = self.k(HSQT2)

        def CC(a, b, c):
            return cc[a + ido * (b + l1 * c)]

        def CH(a, b, c):
            return a + ido * (b + 4 * c)

        def W(x, i):
            return wa[i + x * (ido - 1)]
        for k in self.rng(l1):
            tr1, ch[CH(0, 2, k)] = self.pm(CC(0, k, 3), CC(0, k, 1))
            tr2, ch[CH(ido - 1, 1, k)] = self.pm(CC(0, k, 0), CC(0, k, 2))
            ch[CH(0, 0, k)], ch[CH(ido - 1, 3, k)] = self.pm(tr2, tr1)
        for _ in self.even(ido):
            for k in self.rng(l1):
                ti1 = self.mul(self.neg(h), self.add(CC(ido - 1, k, 1), CC(ido - 1, k, 3)))
                tr1 = self.mul(h, self.sub(CC(ido - 1, k, 1), CC(ido - 1, k, 3)))
                ch[CH(ido - 1, 0, k)], ch[CH(ido - 1, 2, k)] = self.pm(CC(ido - 1, k, 0), tr1)
                ch[CH(0, 3, k)], ch[CH(0, 1, k)] = self.pm(ti1, CC(ido - 1, k, 2))
        if is_int_at_most(ido, 2):  # else the i loops below are empty
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                cr2, ci2 = self.mulpm(W(0, i - 2), W(0, i - 1), CC(i - 1, k, 1), CC(i, k, 1))
                cr3, ci3 = self.mulpm(W(1, i - 2), W(1, i - 1), CC(i - 1, k, 2), CC(i, k, 2))
                cr4, ci4 = self.mulpm(W(2, i - 2), W(2, i - 1), CC(i - 1, k, 3), CC(i, k, 3))
                tr1, tr4 = self.pm(cr4, cr2)
                ti1, ti4 = self.pm(ci2, ci4)
                tr2, tr3 = self.pm(CC(i - 1, k, 0), cr3)
                ti2, ti3 = self.pm(CC(i, k, 0), ci3)
                ch[CH(i - 1, 0, k)], ch[CH(ic - 1, 3, k)] = self.pm(tr2, tr1)
                ch[CH(i, 0, k)], ch[CH(ic, 3, k)] = self.pm(ti1, ti2)
                ch[CH(i - 1, 2, k)], ch[CH(ic - 1, 1, k)] = self.pm(tr3, ti4)
                ch[CH(i, 2, k)], ch[CH(ic, 1, k)] = self.pm(tr4, ti3)

    def _radf5(self, ido, l1, cc, ch, wa):
        tr11, ti11, tr12, ti12 = (self.k(v) for v in C5)

        def CC(a, b, c):
            return cc[a + ido * (b + l1 * c)]

        def CH(a, b, c):
            return a + ido * (b + 5 * c)

        def W(x, i):
            return wa[i + x * (ido - 1)]
        m, a = self.mul, self.add
        for k in self.rng(l1):
            cr2, ci5 = self.pm(CC(0, k, 4), CC(0, k, 1))
            cr3, ci4 = self.pm(CC(0, k, 3), CC(0, k, 2))
            c0 = CC(0, k, 0)
            ch[CH(0, 0, k)] = self.sum(c0, cr2, cr3)
            ch[CH(ido - 1, 1, k)] = self.sum(c0, m(tr11, cr2), m(tr12, cr3))
            ch[CH(0, 2, k)] = a(m(ti11, ci5), m(ti12, ci4))
            ch[CH(ido - 1, 3, k)] = self.sum(c0, m(tr12, cr2), m(tr11, cr3))
            ch[CH(0, 4, k)] = self.sub(m(ti12, ci5), m(ti11, ci4))
        if is_int_at_most(ido, 1):
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                dr2, di2 = self.mulpm(W(0, i - 2), W(0, i - 1), CC(i - 1, k, 1), CC(i, k, 1))
                dr3, di3 = self.mulpm(W(1, i - 2), W(1, i - 1), CC(i - 1, k, 2), CC(i, k, 2))
                dr4, di4 = self.mulpm(W(2, i - 2), W(2, i - 1), CC(i - 1, k, 3), CC(i, k, 3))
                dr5, di5 = self.mulpm(W(3, i - 2), W(3, i - 1), CC(i - 1, k, 4), CC(i, k, 4))
                dr2, di2, dr5, di5 = (a(dr2, dr5), a(di2, di5), self.sub(di2, di5),
                                      self.sub(dr5, dr2))
                dr3, di3, dr4, di4 = (a(dr3, dr4), a(di3, di4), self.sub(di3, di4),
                                      self.sub(dr4, dr3))
                cr, ci = CC(i - 1, k, 0), CC(i, k, 0)
                ch[CH(i - 1, 0, k)] = self.sum(cr, dr2, dr3)
                ch[CH(i, 0, k)] = self.sum(ci, di2, di3)
                tr2 = self.sum(cr, m(tr11, dr2), m(tr12, dr3))
                ti2 = self.sum(ci, m(tr11, di2), m(tr12, di3))
                tr3 = self.sum(cr, m(tr12, dr2), m(tr11, dr3))
                ti3 = self.sum(ci, m(tr12, di2), m(tr11, di3))
                tr5 = a(m(ti11, dr5), m(ti12, dr4))
                ti5 = a(m(ti11, di5), m(ti12, di4))
                tr4 = self.sub(m(ti12, dr5), m(ti11, dr4))
                ti4 = self.sub(m(ti12, di5), m(ti11, di4))
                ch[CH(i - 1, 2, k)], ch[CH(ic - 1, 1, k)] = self.pm(tr2, tr5)
                ch[CH(i, 2, k)], ch[CH(ic, 1, k)] = self.pm(ti5, ti2)
                ch[CH(i - 1, 4, k)], ch[CH(ic - 1, 3, k)] = self.pm(tr3, tr4)
                ch[CH(i, 4, k)], ch[CH(ic, 3, k)] = self.pm(ti4, ti3)

    def _gen_sums(self, src, dst, ip, idl1, cs, l):
        """The shared middle of radfg/radbg: ``dst[l]``/``dst[lc]`` from ``src``, the
        terms ``j >= 3`` added in groups of 4, then 2, then 1 (pocketfft's order).
        Term ``j`` takes the twiddle of angle ``j*l mod ip`` (pocketfft steps that
        angle by ``l``; ``ip`` is prime and ``0 < j, l < ip``, so it is never 0 and
        radfg's ``>=`` and radbg's ``>`` wrap tests agree)."""
        lc = ip - l
        K, m = self.k, self.mul
        for ik in self.rng(idl1):
            dst[ik + idl1 * l] = self.sum(src[ik], m(K(cs[2 * l]), src[ik + idl1]),
                                          m(K(cs[4 * l]), src[ik + idl1 * 2]))
            dst[ik + idl1 * lc] = self.add(m(K(cs[2 * l + 1]), src[ik + idl1 * (ip - 1)]),
                                           m(K(cs[4 * l + 1]), src[ik + idl1 * (ip - 2)]))
        ipph = (ip + 1) // 2

        def tw(j):
            a = (j * l) % ip
            return K(cs[2 * a]), K(cs[2 * a + 1])
        j = 3
        for width in (4, 2, 1):
            count = max(0, (ipph - (width - 1) - j + width - 1) // width)
            for t in self.rng(count):
                jj = j + width * t
                ws = [tw(jj + q) for q in range(width)]
                for ik in self.rng(idl1):
                    x, y = dst[ik + idl1 * l], dst[ik + idl1 * lc]
                    dst[ik + idl1 * l] = self.add(x, self.sum(
                        *(m(ar, src[ik + idl1 * (jj + q)]) for q, (ar, _) in enumerate(ws))))
                    dst[ik + idl1 * lc] = self.add(y, self.sum(
                        *(m(ai, src[ik + idl1 * (ip - jj - q)]) for q, (_, ai) in enumerate(ws))))
            j += width * count

    def _radfg(self, ido, ip, l1, cc, ch, wa, csarr):
        """The generic forward pass; its result is left in ``cc``."""
        ipph, idl1 = (ip + 1) // 2, ido * l1

        def C1(a, b, c):
            return a + ido * (b + l1 * c)

        def CC(a, b, c):
            return a + ido * (b + ip * c)
        m = self.mul
        if ido > 1:
            for j in self.rng(1, ipph):
                jc = ip - j
                is1, is2 = (j - 1) * (ido - 1), (jc - 1) * (ido - 1)
                for k in self.rng(l1):
                    for i in self.rng(1, ido - 1, 2):
                        d1, d2 = is1 + (i - 1), is2 + (i - 1)
                        t1, t2 = cc[C1(i, k, j)], cc[C1(i + 1, k, j)]
                        t3, t4 = cc[C1(i, k, jc)], cc[C1(i + 1, k, jc)]
                        w1, w2 = self.k(wa[d1]), self.k(wa[d1 + 1])
                        w3, w4 = self.k(wa[d2]), self.k(wa[d2 + 1])
                        x1 = self.add(m(w1, t1), m(w2, t2))
                        x2 = self.sub(m(w1, t2), m(w2, t1))
                        x3 = self.add(m(w3, t3), m(w4, t4))
                        x4 = self.sub(m(w3, t4), m(w4, t3))
                        cc[C1(i, k, j)], cc[C1(i + 1, k, jc)] = self.pm(x3, x1)
                        cc[C1(i + 1, k, j)], cc[C1(i, k, jc)] = self.pm(x2, x4)
        for j in self.rng(1, ipph):
            jc = ip - j
            for k in self.rng(l1):
                a, b = cc[C1(0, k, jc)], cc[C1(0, k, j)]
                cc[C1(0, k, jc)], cc[C1(0, k, j)] = self.sub(a, b), self.add(a, b)
        cs = self.table(csarr)
        for l in self.rng(1, ipph):
            self._gen_sums(cc, ch, ip, idl1, cs, l)
        for ik in self.rng(idl1):
            ch[ik] = cc[ik]
        for j in self.rng(1, ipph):
            for ik in self.rng(idl1):
                ch[ik] = self.add(ch[ik], cc[ik + idl1 * j])
        for k in self.rng(l1):
            for i in self.rng(ido):
                cc[CC(i, 0, k)] = ch[C1(i, k, 0)]
        for j in self.rng(1, ipph):
            jc, j2 = ip - j, 2 * j - 1
            for k in self.rng(l1):
                cc[CC(ido - 1, j2, k)] = ch[C1(0, k, j)]
                cc[CC(0, j2 + 1, k)] = ch[C1(0, k, jc)]
        if is_int_at_most(ido, 1):
            return
        for j in self.rng(1, ipph):
            jc, j2 = ip - j, 2 * j - 1
            for k in self.rng(l1):
                for i in self.rng(1, ido - 1, 2):
                    ic = ido - i - 2
                    a, b = ch[C1(i, k, j)], ch[C1(i, k, jc)]
                    a1, b1 = ch[C1(i + 1, k, j)], ch[C1(i + 1, k, jc)]
                    cc[CC(i, j2 + 1, k)] = self.add(a, b)
                    cc[CC(ic, j2, k)] = self.sub(a, b)
                    cc[CC(i + 1, j2 + 1, k)] = self.add(a1, b1)
                    cc[CC(ic + 1, j2, k)] = self.sub(b1, a1)

    # -- backward passes: CC(a,b,c) = cc[a+ido*(b+ip*c)], CH(a,b,c) = ch[a+ido*(b+l1*c)]

    def _radb2(self, ido, l1, cc, ch, wa):
        def CC(a, b, c):
            return cc[a + ido * (b + 2 * c)]

        def CH(a, b, c):
            return a + ido * (b + l1 * c)
        two = self.k(2.0)
        for k in self.rng(l1):
            ch[CH(0, k, 0)], ch[CH(0, k, 1)] = self.pm(CC(0, 0, k), CC(ido - 1, 1, k))
        for _ in self.even(ido):
            for k in self.rng(l1):
                ch[CH(ido - 1, k, 0)] = self.mul(two, CC(ido - 1, 0, k))
                ch[CH(ido - 1, k, 1)] = self.mul(self.k(-2.0), CC(0, 1, k))
        if is_int_at_most(ido, 2):  # else the i loops below are empty
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                ch[CH(i - 1, k, 0)], tr2 = self.pm(CC(i - 1, 0, k), CC(ic - 1, 1, k))
                ti2, ch[CH(i, k, 0)] = self.pm(CC(i, 0, k), CC(ic, 1, k))
                ch[CH(i, k, 1)], ch[CH(i - 1, k, 1)] = self.mulpm(wa[i - 2], wa[i - 1], ti2, tr2)

    def _radb3(self, ido, l1, cc, ch, wa):
        taur, taui = self.k(-0.5), self.k(C3)
        taui2 = self.k(2 * float(self.dtype.type(C3)))

        def CC(a, b, c):
            return cc[a + ido * (b + 3 * c)]

        def CH(a, b, c):
            return a + ido * (b + l1 * c)
        m = self.mul
        for k in self.rng(l1):
            tr2 = m(self.k(2.0), CC(ido - 1, 1, k))
            cr2 = self.add(CC(0, 0, k), m(taur, tr2))
            ch[CH(0, k, 0)] = self.add(CC(0, 0, k), tr2)
            ci3 = m(taui2, CC(0, 2, k))
            ch[CH(0, k, 2)], ch[CH(0, k, 1)] = self.pm(cr2, ci3)
        if is_int_at_most(ido, 1):
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                tr2 = self.add(CC(i - 1, 2, k), CC(ic - 1, 1, k))
                ti2 = self.sub(CC(i, 2, k), CC(ic, 1, k))
                cr2 = self.add(CC(i - 1, 0, k), m(taur, tr2))
                ci2 = self.add(CC(i, 0, k), m(taur, ti2))
                ch[CH(i - 1, k, 0)] = self.add(CC(i - 1, 0, k), tr2)
                ch[CH(i, k, 0)] = self.add(CC(i, 0, k), ti2)
                cr3 = m(taui, self.sub(CC(i - 1, 2, k), CC(ic - 1, 1, k)))
                ci3 = m(taui, self.add(CC(i, 2, k), CC(ic, 1, k)))
                dr3, dr2 = self.pm(cr2, ci3)
                di2, di3 = self.pm(ci2, cr3)
                ch[CH(i, k, 1)], ch[CH(i - 1, k, 1)] = self.mulpm(wa[i - 2], wa[i - 1], di2, dr2)
                ch[CH(i, k, 2)], ch[CH(i - 1, k, 2)] = self.mulpm(
                    wa[i - 2 + (ido - 1)], wa[i - 1 + (ido - 1)], di3, dr3)

    def _radb4(self, ido, l1, cc, ch, wa):
        s2 = self.k(SQRT2)

        def CC(a, b, c):
            return cc[a + ido * (b + 4 * c)]

        def CH(a, b, c):
            return a + ido * (b + l1 * c)

        def W(x, i):
            return wa[i + x * (ido - 1)]
        two = self.k(2.0)
        for k in self.rng(l1):
            tr2, tr1 = self.pm(CC(0, 0, k), CC(ido - 1, 3, k))
            tr3 = self.mul(two, CC(ido - 1, 1, k))
            tr4 = self.mul(two, CC(0, 2, k))
            ch[CH(0, k, 0)], ch[CH(0, k, 2)] = self.pm(tr2, tr3)
            ch[CH(0, k, 3)], ch[CH(0, k, 1)] = self.pm(tr1, tr4)
        for _ in self.even(ido):
            for k in self.rng(l1):
                ti1, ti2 = self.pm(CC(0, 3, k), CC(0, 1, k))
                tr2, tr1 = self.pm(CC(ido - 1, 0, k), CC(ido - 1, 2, k))
                ch[CH(ido - 1, k, 0)] = self.add(tr2, tr2)
                ch[CH(ido - 1, k, 1)] = self.mul(s2, self.sub(tr1, ti1))
                ch[CH(ido - 1, k, 2)] = self.add(ti2, ti2)
                ch[CH(ido - 1, k, 3)] = self.mul(self.neg(s2), self.add(tr1, ti1))
        if is_int_at_most(ido, 2):  # else the i loops below are empty
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                tr2, tr1 = self.pm(CC(i - 1, 0, k), CC(ic - 1, 3, k))
                ti1, ti2 = self.pm(CC(i, 0, k), CC(ic, 3, k))
                tr4, ti3 = self.pm(CC(i, 2, k), CC(ic, 1, k))
                tr3, ti4 = self.pm(CC(i - 1, 2, k), CC(ic - 1, 1, k))
                ch[CH(i - 1, k, 0)], cr3 = self.pm(tr2, tr3)
                ch[CH(i, k, 0)], ci3 = self.pm(ti2, ti3)
                cr4, cr2 = self.pm(tr1, tr4)
                ci2, ci4 = self.pm(ti1, ti4)
                for x, (ci, cr) in enumerate(((ci2, cr2), (ci3, cr3), (ci4, cr4))):
                    ch[CH(i, k, x + 1)], ch[CH(i - 1, k, x + 1)] = self.mulpm(
                        W(x, i - 2), W(x, i - 1), ci, cr)

    def _radb5(self, ido, l1, cc, ch, wa):
        tr11, ti11, tr12, ti12 = (float(self.dtype.type(v)) for v in C5)
        Kr11, Kr12 = self.k(tr11), self.k(tr12)

        def CC(a, b, c):
            return cc[a + ido * (b + 5 * c)]

        def CH(a, b, c):
            return a + ido * (b + l1 * c)

        def W(x, i):
            return wa[i + x * (ido - 1)]
        m, a = self.mul, self.add
        for k in self.rng(l1):
            ti5 = a(CC(0, 2, k), CC(0, 2, k))
            ti4 = a(CC(0, 4, k), CC(0, 4, k))
            tr2 = a(CC(ido - 1, 1, k), CC(ido - 1, 1, k))
            tr3 = a(CC(ido - 1, 3, k), CC(ido - 1, 3, k))
            c0 = CC(0, 0, k)
            ch[CH(0, k, 0)] = self.sum(c0, tr2, tr3)
            cr2 = self.sum(c0, m(Kr11, tr2), m(Kr12, tr3))
            cr3 = self.sum(c0, m(Kr12, tr2), m(Kr11, tr3))
            ci5, ci4 = self._mulpm_vc(ti5, ti4, ti11, ti12)
            ch[CH(0, k, 4)], ch[CH(0, k, 1)] = self.pm(cr2, ci5)
            ch[CH(0, k, 3)], ch[CH(0, k, 2)] = self.pm(cr3, ci4)
        if is_int_at_most(ido, 1):
            return
        for k in self.rng(l1):
            for i in self.rng(2, ido, 2):
                ic = ido - i
                tr2, tr5 = self.pm(CC(i - 1, 2, k), CC(ic - 1, 1, k))
                ti5, ti2 = self.pm(CC(i, 2, k), CC(ic, 1, k))
                tr3, tr4 = self.pm(CC(i - 1, 4, k), CC(ic - 1, 3, k))
                ti4, ti3 = self.pm(CC(i, 4, k), CC(ic, 3, k))
                cr, ci = CC(i - 1, 0, k), CC(i, 0, k)
                ch[CH(i - 1, k, 0)] = self.sum(cr, tr2, tr3)
                ch[CH(i, k, 0)] = self.sum(ci, ti2, ti3)
                cr2 = self.sum(cr, m(Kr11, tr2), m(Kr12, tr3))
                ci2 = self.sum(ci, m(Kr11, ti2), m(Kr12, ti3))
                cr3 = self.sum(cr, m(Kr12, tr2), m(Kr11, tr3))
                ci3 = self.sum(ci, m(Kr12, ti2), m(Kr11, ti3))
                cr5, cr4 = self._mulpm_vc(tr5, tr4, ti11, ti12)
                ci5, ci4 = self._mulpm_vc(ti5, ti4, ti11, ti12)
                dr4, dr3 = self.pm(cr3, ci4)
                di3, di4 = self.pm(ci3, cr4)
                dr5, dr2 = self.pm(cr2, ci5)
                di2, di5 = self.pm(ci2, cr5)
                for x, (di, dr) in enumerate(((di2, dr2), (di3, dr3), (di4, dr4), (di5, dr5))):
                    ch[CH(i, k, x + 1)], ch[CH(i - 1, k, x + 1)] = self.mulpm(
                        W(x, i - 2), W(x, i - 1), di, dr)

    def _mulpm_vc(self, c, d, e, f):
        """MULPM with variables ``c``, ``d`` and constants ``e``, ``f``."""
        e, f = self.k(e), self.k(f)
        m = self.mul
        return self.add(m(c, e), m(d, f)), self.sub(m(c, f), m(d, e))

    def _radbg(self, ido, ip, l1, cc, ch, wa, csarr):
        """The generic backward pass; its result is in ``ch``."""
        ipph, idl1 = (ip + 1) // 2, ido * l1

        def CC(a, b, c):
            return a + ido * (b + ip * c)

        def C1(a, b, c):
            return a + ido * (b + l1 * c)
        two = self.k(2.0)
        for k in self.rng(l1):
            for i in self.rng(ido):
                ch[C1(i, k, 0)] = cc[CC(i, 0, k)]
        for j in self.rng(1, ipph):
            jc, j2 = ip - j, 2 * j - 1
            for k in self.rng(l1):
                ch[C1(0, k, j)] = self.mul(two, cc[CC(ido - 1, j2, k)])
                ch[C1(0, k, jc)] = self.mul(two, cc[CC(0, j2 + 1, k)])
        if ido != 1:
            for j in self.rng(1, ipph):
                jc, j2 = ip - j, 2 * j - 1
                for k in self.rng(l1):
                    for i in self.rng(1, ido - 1, 2):
                        ic = ido - i - 2
                        ch[C1(i, k, j)] = self.add(cc[CC(i, j2 + 1, k)], cc[CC(ic, j2, k)])
                        ch[C1(i, k, jc)] = self.sub(cc[CC(i, j2 + 1, k)], cc[CC(ic, j2, k)])
                        ch[C1(i + 1, k, j)] = self.sub(cc[CC(i + 1, j2 + 1, k)],
                                                       cc[CC(ic + 1, j2, k)])
                        ch[C1(i + 1, k, jc)] = self.add(cc[CC(i + 1, j2 + 1, k)],
                                                        cc[CC(ic + 1, j2, k)])
        cs = self.table(csarr)
        for l in self.rng(1, ipph):
            self._gen_sums(ch, cc, ip, idl1, cs, l)
        for j in self.rng(1, ipph):
            for ik in self.rng(idl1):
                ch[ik] = self.add(ch[ik], ch[ik + idl1 * j])
        for j in self.rng(1, ipph):
            jc = ip - j
            for k in self.rng(l1):
                a, b = cc[C1(0, k, j)], cc[C1(0, k, jc)]
                ch[C1(0, k, jc)], ch[C1(0, k, j)] = self.pm(a, b)
        if is_int_at_most(ido, 1):
            return
        for j in self.rng(1, ipph):
            jc = ip - j
            for k in self.rng(l1):
                for i in self.rng(1, ido - 1, 2):
                    a, b = cc[C1(i, k, j)], cc[C1(i + 1, k, jc)]
                    c, d = cc[C1(i + 1, k, j)], cc[C1(i, k, jc)]
                    ch[C1(i, k, j)] = self.sub(a, b)
                    ch[C1(i, k, jc)] = self.add(a, b)
                    ch[C1(i + 1, k, j)] = self.add(c, d)
                    ch[C1(i + 1, k, jc)] = self.sub(c, d)
        m = self.mul
        for j in self.rng(1, ip):
            is1 = (j - 1) * (ido - 1)
            for k in self.rng(l1):
                for i in self.rng(1, ido - 1, 2):
                    d = is1 + (i - 1)
                    t1, t2 = ch[C1(i, k, j)], ch[C1(i + 1, k, j)]
                    w1, w2 = self.k(wa[d]), self.k(wa[d + 1])
                    ch[C1(i, k, j)] = self.sub(m(w1, t1), m(w2, t2))
                    ch[C1(i + 1, k, j)] = self.add(m(w1, t2), m(w2, t1))
