"""The im2col packing of GEMM-mode convolutions as one precompiled, descriptor-driven
routine in the parallel runtime, instead of a vectorized loop nest emitted (and run
through LLVM's ``-O3`` and code generation) in every program.

A feature-innermost GEMM-mode :class:`~oxla_backend_cpu.conv.ConvKernel` (layout A of
:mod:`oxla_backend_cpu.conv`: ``col[P][G][K]``) without input dilation packs its
columns with ``oxla_conv_im2col_<dtype>(desc, src, dst, p_first, count)``: output
pixels ``[p_first, p_first + count)`` (rows of ``P``) into ``dst`` (``count`` rows of
``G*K`` elements). ``desc`` is a constant ``i64[DESC_WORDS]`` (:func:`descriptor`) that
describes the convolution's input addressing as a linear map: every index of the
output pixel (up to 4 dimensions: batch and spatial) and of the contraction (group and
up to 3 kernel roles, then the row role, the kernel's innermost non-output dimension)
adds ``index * co`` to the input element offset and ``index * cq[i]`` to the position
``q[i]`` in spatial dimension ``i`` of the padded input; an element is the input at
that offset when every ``0 <= q[i] < lim[i]``, else zero (padding). That is the
StableHLO ``convolution`` window (spec section "convolution") with unit
``lhs_dilation``: ``q = o * stride + k * rhs_dilation - low_padding`` (reversed window
dimensions count ``k`` from the end).

Per row of the row role (``n`` elements along one index), the in-bounds part is one
interval ``[ja, jb)`` computed once (no division unless the row moves along a spatial
dimension by more than one); the row is then zeros, a copy (32-byte vectors when its
input step is 1, else element by element) and zeros. Rows hold whole kernel windows
or channel runs, so this is the same work as the emitted im2col of
:func:`oxla_backend_cpu.conv_gemm._im2col_task`, with run-time loop bounds.

Measured (load ~6 on 2 cores, the 1x32x32x16 3x3 NHWC convolution of
``bench/suite.py``, best of 5, CPU time): the program's LLVM ``-O3`` + code generation
went from 26.7 ms to 11.1 ms; the routine itself is built once per process with the
runtime (:meth:`oxla_backend_cpu.parallel.HostRuntime.subset`).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range

from oxla_backend_cpu.conv import ConvGeom

I1, I64 = ir.IntType(1), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

PIX_DIMS = 4
"""Output pixel dimensions the routine walks (batch and up to 3 spatial)."""
K_DIMS = 4
"""Contraction dimensions before the row (group and up to 3 kernel roles)."""
SPATIAL = 3
"""Most spatial dimensions."""

# descriptor layout (i64 words)
_PE, _PCO, _PCQ = 0, PIX_DIMS, 2 * PIX_DIMS  # extents, offset coefficients, q coefficients
_KE = _PCQ + PIX_DIMS * SPATIAL
_KCO = _KE + K_DIMS
_KCQ = _KCO + K_DIMS
_RN = _KCQ + K_DIMS * SPATIAL  # row: extent, step, q coefficients
_RCO = _RN + 1
_RCQ = _RCO + 1
_OFF0 = _RCQ + SPATIAL
_Q0 = _OFF0 + 1
_LIM = _Q0 + SPATIAL
DESC_WORDS = _LIM + SPATIAL
"""Words of the descriptor: per pixel dimension (extent, co, cq[3]), per contraction
dimension the same, the row's (n, co, cq[3]), then off0, q0[3], lim[3]."""

VEC_BYTES = 32
"""Bytes per vector of the row copy and zero fill (AVX2 width; split by the code
generator on narrower targets)."""


def driver_name(dtype: str) -> str:
    """The runtime symbol of the im2col routine for ``dtype`` (``"f32"``/``"f64"``)."""
    return f"oxla_conv_im2col_{dtype}"


DRIVER_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64])  # desc, src, dst, p, count


def supported(g: ConvGeom) -> bool:
    """True when :func:`descriptor` describes ``g``'s im2col: f32/f64, feature-innermost
    output, no input dilation, at most :data:`SPATIAL` spatial dimensions."""
    return (g.dtype in ("f32", "f64") and g.feature_last and g.ns <= SPATIAL
            and all(d == 1 for d in g.ldil) and len(g.k_roles) >= 1)


def descriptor(g: ConvGeom) -> list[int]:
    """The ``i64[DESC_WORDS]`` descriptor of ``g``'s layout-A im2col (module doc).

    Rows of ``col`` follow :func:`oxla_backend_cpu.conv_gemm._im2col_task`: per output
    pixel (output dimensions but the feature, in memory order), the group, then the
    kernel's non-output roles in its memory order, the last of them the row.

    Raises:
        ValueError: ``g`` is not :func:`supported`.
    """
    if not supported(g):
        raise ValueError("im2col descriptor: convolution layout not supported")
    lst = g.lst

    def coeffs(role: str) -> tuple[int, list[int]]:
        cq = [0] * SPATIAL
        if role == "b":
            return lst[g.ib], cq
        if role == "g":
            return ((g.cg * lst[g.if_] if g.fgc > 1 else 0)
                    + (g.nb * lst[g.ib] if g.bgc > 1 else 0)), cq
        if role == "ci":
            return lst[g.if_], cq
        i = int(role[1:])
        if role[0] == "o":
            cq[i] = g.strides[i]
        else:
            cq[i] = -g.rdil[i] if g.rev[i] else g.rdil[i]
        return cq[i] * lst[g.isd[i]], cq

    words = [0] * DESC_WORDS
    pix = [g.out_role(d) for d in range(len(g.os)) if d != g.of]
    kroles = ["g"] + g.k_roles
    outer, row = kroles[:-1], kroles[-1]
    for base_e, base_co, base_cq, roles, cap in ((_PE, _PCO, _PCQ, pix, PIX_DIMS),
                                               (_KE, _KCO, _KCQ, outer, K_DIMS)):
        if len(roles) > cap:
            raise ValueError("im2col descriptor: too many dimensions")
        for j in range(cap):
            if j >= len(roles):
                words[base_e + j] = 1
                continue
            co, cq = coeffs(roles[j])
            words[base_e + j] = g.extent(roles[j])
            words[base_co + j] = co
            words[base_cq + j * SPATIAL:base_cq + (j + 1) * SPATIAL] = cq
    co, cq = coeffs(row)
    words[_RN], words[_RCO] = g.extent(row), co
    words[_RCQ:_RCQ + SPATIAL] = cq
    off0 = 0
    for i in range(SPATIAL):
        if i >= g.ns:
            words[_LIM + i] = 1  # q stays 0: always in bounds
            continue
        q0 = -g.lo[i]
        if g.rev[i]:  # k counts from the window's end: q = ... + rdil * (K - 1 - k)
            q0 += g.rdil[i] * (g.ks[g.ksd[i]] - 1)
        words[_Q0 + i] = q0
        words[_LIM + i] = g.ls[g.isd[i]]
        off0 += q0 * lst[g.isd[i]]
    words[_OFF0] = off0
    return words


def row_elems(words: list[int]) -> int:
    """Elements of ``col`` per output pixel for descriptor ``words``."""
    return math.prod(words[_KE:_KE + K_DIMS]) * words[_RN]


def define_conv_runtime(module: ir.Module) -> None:
    """Defines the f32 and f64 im2col routines in the runtime ``module`` (a runtime
    extension, :func:`oxla_backend_cpu.parallel.register_runtime_extension`)."""
    for ty, dt in ((ir.FloatType(), "f32"), (ir.DoubleType(), "f64")):
        _define(module, ty, dt)


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _min(b: ir.IRBuilder, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _max(b: ir.IRBuilder, x, y):
    return b.select(b.icmp_signed(">", x, y), x, y)


def _floor_div(b: ir.IRBuilder, x, c):
    """``floor(x / c)`` for ``c > 0``."""
    q = b.sdiv(x, c)
    fix = b.and_(b.icmp_signed("!=", b.srem(x, c), _c(0)), b.icmp_signed("<", x, _c(0)))
    return b.sub(q, b.zext(fix, I64))


def _define(module: ir.Module, ty: ir.Type, dt: str) -> None:
    fn = ir.Function(module, DRIVER_TYPE, driver_name(dt))
    desc, src, dst, p_first, count = fn.args
    src.add_attribute("noalias")
    dst.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    w = [b.load(b.gep(desc, [_c(i)], source_etype=I64), typ=I64) for i in range(DESC_WORDS)]
    ja_p, jb_p = b.alloca(I64, name="ja"), b.alloca(I64, name="jb")
    n, step = w[_RN], w[_RCO]
    per_pixel = b.mul(b.mul(b.mul(b.mul(w[_KE], w[_KE + 1]), w[_KE + 2]), w[_KE + 3]), n)
    size = 4 if isinstance(ty, ir.FloatType) else 8
    vl = VEC_BYTES // size
    vec = ir.VectorType(ty, vl)
    zero_v = ir.Constant(vec, [0.0] * vl)

    def elem(p, off):
        return b.gep(p, [off], source_etype=ty, inbounds=True)

    def fill(row, lo, hi):
        nv = b.sdiv(b.sub(hi, lo), _c(vl))
        with for_range(b, nv, "zv") as v:
            b.store(zero_v, elem(row, b.add(lo, b.mul(v, _c(vl)))), align=size)
        with for_range(b, hi, "zs", b.add(lo, b.mul(nv, _c(vl)))) as j:
            b.store(ir.Constant(ty, 0.0), elem(row, j))

    with for_range(b, count, "t") as t:
        p = b.add(p_first, t)
        off, q = w[_OFF0], [w[_Q0 + i] for i in range(SPATIAL)]
        for d in reversed(range(PIX_DIMS)):  # innermost pixel dimension first
            e = w[_PE + d]
            idx = b.urem(p, e)
            p = b.udiv(p, e)
            off = b.add(off, b.mul(idx, w[_PCO + d]))
            q = [b.add(q[i], b.mul(idx, w[_PCQ + d * SPATIAL + i])) for i in range(SPATIAL)]
        base = elem(dst, b.mul(t, per_pixel))
        with for_range(b, w[_KE], "k0") as k0, for_range(b, w[_KE + 1], "k1") as k1, \
                for_range(b, w[_KE + 2], "k2") as k2, for_range(b, w[_KE + 3], "k3") as k3:
            ks = [k0, k1, k2, k3]
            o, qq = off, list(q)
            for d, kd in enumerate(ks):
                o = b.add(o, b.mul(kd, w[_KCO + d]))
                qq = [b.add(qq[i], b.mul(kd, w[_KCQ + d * SPATIAL + i])) for i in range(SPATIAL)]
            lin = b.add(b.mul(b.add(b.mul(b.add(b.mul(k0, w[_KE + 1]), k1), w[_KE + 2]), k2),
                              w[_KE + 3]), k3)
            row = elem(base, b.mul(lin, n))
            b.store(_c(0), ja_p)
            b.store(n, jb_p)
            for i in range(SPATIAL):
                _bound(b, qq[i], w[_RCQ + i], w[_LIM + i], ja_p, jb_p)
            ja = _min(b, _max(b, b.load(ja_p), _c(0)), n)
            jb = _max(b, _min(b, b.load(jb_p), n), ja)
            fill(row, _c(0), ja)
            with b.if_else(b.icmp_signed("==", step, _c(1))) as (unit, strided):
                with unit:
                    nv = b.sdiv(b.sub(jb, ja), _c(vl))
                    with for_range(b, nv, "cv") as v:
                        j = b.add(ja, b.mul(v, _c(vl)))
                        x = b.load(elem(src, b.add(o, j)), typ=vec, align=size)
                        b.store(x, elem(row, j), align=size)
                    with for_range(b, jb, "cs", b.add(ja, b.mul(nv, _c(vl)))) as j:
                        b.store(b.load(elem(src, b.add(o, j)), typ=ty), elem(row, j))
                with strided:
                    with for_range(b, jb, "cg", ja) as j:
                        x = b.load(elem(src, b.add(o, b.mul(j, step))), typ=ty)
                        b.store(x, elem(row, j))
            fill(row, jb, n)
    b.ret_void()


def _bound(b: ir.IRBuilder, q, c, lim, ja_p, jb_p) -> None:
    """Narrows ``[*ja_p, *jb_p)`` to the ``j`` with ``0 <= q + c*j < lim``."""
    with b.if_else(b.icmp_signed("==", c, _c(0))) as (fixed, moving):
        with fixed:  # the whole row is in or out
            ok = b.and_(b.icmp_signed(">=", q, _c(0)), b.icmp_signed("<", q, lim))
            with b.if_then(b.not_(ok)):
                b.store(_c(0), jb_p)
        with moving:
            with b.if_else(b.icmp_signed("==", c, _c(1))) as (unit, other):
                with unit:  # 0 <= q + j < lim
                    b.store(_max(b, b.load(ja_p), b.sub(_c(0), q)), ja_p)
                    b.store(_min(b, b.load(jb_p), b.sub(lim, q)), jb_p)
                with other:
                    pos = b.icmp_signed(">", c, _c(0))
                    a = b.select(pos, c, b.sub(_c(0), c))
                    # c > 0: ceil(-q / c) <= j < ceil((lim - q) / c)
                    lo_p = b.sub(_c(0), _floor_div(b, q, a))
                    hi_p = b.sub(_c(0), _floor_div(b, b.sub(q, lim), a))
                    # c < 0: floor((q - lim) / |c|) + 1 <= j < floor(q / |c|) + 1
                    lo_n = b.add(_floor_div(b, b.sub(q, lim), a), _c(1))
                    hi_n = b.add(_floor_div(b, q, a), _c(1))
                    b.store(_max(b, b.load(ja_p), b.select(pos, lo_p, lo_n)), ja_p)
                    b.store(_min(b, b.load(jb_p), b.select(pos, hi_p, hi_n)), jb_p)


def _register() -> None:
    from oxla_backend_cpu.parallel import register_runtime_extension

    register_runtime_extension("cpu-conv", define_conv_runtime,
                               [driver_name("f32"), driver_name("f64")])


_register()
