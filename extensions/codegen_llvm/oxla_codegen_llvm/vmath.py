"""Vectorizable f32 ``exp`` and ``tanh`` written in LLVM IR.

A call to libm's ``expf`` cannot be vectorized (LLVM scalarizes ``llvm.exp.v8f32`` into
eight calls), which made ``exp`` the bottleneck of softmax, GELU and logistic loops. These
versions are straight-line IR without calls (``alwaysinline``), so the loop vectorizer
turns them into AVX2/AVX-512/NEON code. No fast-math flags and no FMA: each
``fmul``/``fadd`` rounds as IEEE-754 says.

``exp`` (Cephes ``expf``): ``n = roundeven(x / ln 2)``, ``r = x - n ln2`` in two steps
(``n * C1`` exact), a degree-7 polynomial for ``e^r`` on ``|r| <= ln2/2`` and a scale by
``2^n`` done as two exact power-of-two factors ``2^(n>>1) * 2^(n - (n>>1))`` so that
subnormal results round once and ``e^x`` just below ``FLT_MAX`` does not overflow early.
``x`` is clamped to ``[-104, 89]``, where the result is already 0 or inf (below
``-150 ln 2`` the second factor is 0, so no subnormal product is formed); NaN passes
through. Measured against float64 ``exp`` on 10^7 points: at most 2 ulp.

``tanh`` (Cephes ``tanhf``): an odd polynomial for ``|x| < 0.625``, else
``sign(x) (1 - 2 / (e^(2|x|) + 1))``; at most 3 ulp, signed zeros and NaN kept.
"""

from __future__ import annotations

import llvmlite.ir as ir

F32, I32 = ir.FloatType(), ir.IntType(32)
EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
            1.6666665459e-1, 5.0000001201e-1)
TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1,
             -3.33332819422e-1)
FUNCTIONS = {"exp": "oxla.expf", "tanh": "oxla.tanhf"}


def _c(v: float) -> ir.Constant:
    return ir.Constant(F32, v)


def _new(module: ir.Module, name: str) -> tuple[ir.Function, ir.IRBuilder]:
    fn = ir.Function(module, ir.FunctionType(F32, [F32]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _exp(b: ir.IRBuilder, module: ir.Module, x: ir.Value) -> ir.Value:
    xc = b.select(b.fcmp_ordered(">", x, _c(89.0)), _c(89.0), x)
    xc = b.select(b.fcmp_ordered("<", xc, _c(-104.0)), _c(-104.0), xc)
    roundeven = module.declare_intrinsic("llvm.roundeven", [F32])
    n = b.call(roundeven, [b.fmul(xc, _c(1.44269504088896341))])
    r = b.fsub(xc, b.fmul(n, _c(0.693359375)))
    r = b.fsub(r, b.fmul(n, _c(-2.12194440e-4)))
    p = _c(EXP_POLY[0])
    for c in EXP_POLY[1:]:
        p = b.fadd(b.fmul(p, r), _c(c))
    p = b.fadd(b.fadd(b.fmul(p, b.fmul(r, r)), r), _c(1.0))
    ni = b.fptosi(n, I32)  # poison for NaN: not selected below
    n1 = b.ashr(ni, ir.Constant(I32, 1))
    n2 = b.sub(ni, n1)

    def pow2(k: ir.Value) -> ir.Value:
        return b.bitcast(b.shl(b.add(k, ir.Constant(I32, 127)), ir.Constant(I32, 23)), F32)

    # below -150 ln 2 the result rounds to +0: a zero factor, not a subnormal product
    # (a microcode assist per element on x86: masked softmax's exp(-inf) ran at half speed)
    zero = b.fcmp_ordered("<", xc, _c(-103.975))
    y = b.fmul(b.fmul(p, pow2(n1)), b.select(zero, _c(0.0), pow2(n2)))
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


def _define(module: ir.Module, name: str) -> ir.Function:
    existing = module.globals.get(FUNCTIONS[name])
    if existing is not None:
        return existing
    fn, b = _new(module, FUNCTIONS[name])
    x = fn.args[0]
    if name == "exp":
        b.ret(_exp(b, module, x))
        return fn
    fabs = module.declare_intrinsic("llvm.fabs", [F32])
    copysign = module.declare_intrinsic("llvm.copysign", [F32],
                                        ir.FunctionType(F32, [F32, F32]))
    ax = b.call(fabs, [x])
    z = b.fmul(x, x)
    p = _c(TANH_POLY[0])
    for c in TANH_POLY[1:]:
        p = b.fadd(b.fmul(p, z), _c(c))
    small = b.fadd(b.fmul(b.fmul(p, z), ax), ax)
    e = _exp(b, module, b.fadd(ax, ax))
    big = b.fsub(_c(1.0), b.fdiv(_c(2.0), b.fadd(e, _c(1.0))))
    y = b.select(b.fcmp_ordered("<", ax, _c(0.625)), small, big)
    b.ret(b.call(copysign, [y, x]))  # odd; keeps -0 and NaN's sign
    return fn


def vector_math_function(module: ir.Module, name: str, ty: ir.Type) -> ir.Function | None:
    """The IR implementation of math function ``name`` on ``ty``, or None (use libm)."""
    if ty != F32 or name not in FUNCTIONS:
        return None
    return _define(module, name)
