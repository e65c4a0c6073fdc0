"""CHLO special functions decomposed into StableHLO, as XLA/StableHLO do it
(``ChloDecompositionPatterns``, XLA ``client/lib/math.cc``).

* ``erf``/``erfc``: f32 rational approximations; f64 Cephes ``ndtr.c`` (``erf`` on
  ``|x| < 1``, ``erfc`` elsewhere).
* ``erf_inv``: M. Giles, "Approximating the erfinv function" (single and double).
* ``lgamma``/``digamma``: the Lanczos approximation (g = 7, 9 terms) with reflection
  for ``x < 0.5``; ``lgamma`` is ``+inf`` at poles and ``±inf``, ``digamma`` NaN at
  non-positive integers.
* ``bessel_i1e``: Cephes ``i1.c`` Chebyshev expansions.
* ``zeta`` (Hurwitz): 10-term series plus a 12-term Euler–Maclaurin tail;
  ``polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x)`` (``digamma`` for ``n = 0``).

f16/bf16 are computed in f32 and rounded back.
"""

from __future__ import annotations

import math

from oxla.ir import Value
from oxla.passes.chlo_common import Emitter, register_float

# ---------------------------------------------------------------------------
# erf / erfc

_ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
_ERFC_P32 = (
    2.326819970068386e-2,
    -1.387039388740657e-1,
    3.687424674597105e-1,
    -5.824733027278666e-1,
    6.210004621745983e-1,
    -4.944515323274145e-1,
    3.404879937665872e-1,
    -2.741127028184656e-1,
    5.638259427386472e-1,
)
_ERFC_R32 = (
    -1.047766399936249e1,
    1.297719955372516e1,
    -7.495518717768503e0,
    2.921019019210786e0,
    -1.015265279202700e0,
    4.218463358204948e-1,
    -2.820767439740514e-1,
    5.641895067754075e-1,
)
_ERF_T64 = (
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
)
_ERF_U64 = (
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
)
_ERFC_P64 = (
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
)
_ERFC_Q64 = (
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
)
_ERFC_R64 = (
    5.64189583547755073984e-1,
    1.27536670759978104416e0,
    5.01905042251180477414e0,
    6.16021097993053585195e0,
    7.40974269950448939160e0,
    2.97886665372100240670e0,
)
_ERFC_S64 = (
    1.0,
    2.26052863220117276590e0,
    9.39603524938001434673e0,
    1.20489539808096656605e1,
    1.70814450747565897222e1,
    9.60896809063285878198e0,
    3.36907645100081516050e0,
)
_MAXLOG64 = 7.09782712893383996843e2
_MAXLOG32 = 88.72283905206835


def _is64(x: Value) -> bool:
    return x.type.element_type.name == "f64"


def _erf32(e: Emitter, x: Value) -> Value:
    xc = e.op("stablehlo.clamp", [e.const(-4.0, x), x, e.const(4.0, x)])
    x2 = e.multiply(xc, xc)
    return e.divide(e.multiply(xc, e.poly(x2, _ERF_ALPHA)), e.poly(x2, _ERF_BETA))


def _erfc32_core(e: Emitter, x: Value) -> Value:
    ax = e.abs(x)
    nx2 = e.negate(e.multiply(x, x))
    z = e.exponential(nx2)
    q = e.divide(e.const(1.0, x), ax)
    y = e.multiply(q, q)
    p = e.sel(e.cmp(ax, e.const(2.0, x), "LT"), e.poly(y, _ERFC_P32), e.poly(y, _ERFC_R32))
    y = e.multiply(e.multiply(z, q), p)
    y = e.where(e.cmp(nx2, e.const(-_MAXLOG32, x), "LT"), 0.0, y, x)
    return e.sel(e.cmp(x, e.const(0.0, x), "LT"), e.subtract(e.const(2.0, x), y), y)


def _erf64_core(e: Emitter, x: Value) -> Value:
    z = e.multiply(x, x)
    return e.divide(e.multiply(x, e.poly(z, _ERF_T64)), e.poly(z, _ERF_U64))


def _erfc64_core(e: Emitter, x: Value) -> Value:
    ax = e.abs(x)
    nx2 = e.negate(e.multiply(x, x))
    ez = e.exponential(nx2)
    pq = e.divide(e.multiply(ez, e.poly(ax, _ERFC_P64)), e.poly(ax, _ERFC_Q64))
    rs = e.divide(e.multiply(ez, e.poly(ax, _ERFC_R64)), e.poly(ax, _ERFC_S64))
    y = e.sel(e.cmp(ax, e.const(8.0, x), "LT"), pq, rs)
    y = e.where(e.cmp(nx2, e.const(-_MAXLOG64, x), "LT"), 0.0, y, x)
    return e.sel(e.cmp(x, e.const(0.0, x), "LT"), e.subtract(e.const(2.0, x), y), y)


def erf(e: Emitter, x: Value) -> Value:
    """``erf``: f32 rational approximation on ``clamp(x, -4, 4)``; f64 Cephes."""
    if not _is64(x):
        return _erf32(e, x)
    small = e.cmp(e.abs(x), e.const(1.0, x), "LT")
    return e.sel(small, _erf64_core(e, x), e.subtract(e.const(1.0, x), _erfc64_core(e, x)))


def erfc(e: Emitter, x: Value) -> Value:
    """``erfc``: ``1 - erf(x)`` for ``|x| < 1``, the erfc expansion elsewhere."""
    core = _erfc64_core if _is64(x) else _erfc32_core
    small_erf = _erf64_core(e, x) if _is64(x) else _erf32(e, x)
    small = e.cmp(e.abs(x), e.const(1.0, x), "LT")
    return e.sel(small, e.subtract(e.const(1.0, x), small_erf), core(e, x))


# ---------------------------------------------------------------------------
# erf_inv (Giles)

_EI32_LT5 = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_EI32_GT5 = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)
_EI64_LT625 = (
    -3.6444120640178196996e-21,
    -1.685059138182016589e-19,
    1.2858480715256400167e-18,
    1.115787767802518096e-17,
    -1.333171662854620906e-16,
    2.0972767875968561637e-17,
    6.6376381343583238325e-15,
    -4.0545662729752068639e-14,
    -8.1519341976054721522e-14,
    2.6335093153082322977e-12,
    -1.2975133253453532498e-11,
    -5.4154120542946279317e-11,
    1.051212273321532285e-09,
    -4.1126339803469836976e-09,
    -2.9070369957882005086e-08,
    4.2347877827932403518e-07,
    -1.3654692000834678645e-06,
    -1.3882523362786468719e-05,
    0.0001867342080340571352,
    -0.00074070253416626697512,
    -0.0060336708714301490533,
    0.24015818242558961693,
    1.6536545626831027356,
)
_EI64_LT16 = (
    2.2137376921775787049e-09,
    9.0756561938885390979e-08,
    -2.7517406297064545428e-07,
    1.8239629214389227755e-08,
    1.5027403968909827627e-06,
    -4.013867526981545969e-06,
    2.9234449089955446044e-06,
    1.2475304481671778723e-05,
    -4.7318229009055733981e-05,
    6.8284851459573175448e-05,
    2.4031110387097893999e-05,
    -0.0003550375203628474796,
    0.00095328937973738049703,
    -0.0016882755560235047313,
    0.0024914420961078508066,
    -0.0037512085075692412107,
    0.005370914553590063617,
    1.0052589676941592334,
    3.0838856104922207635,
)
_EI64_GT16 = (
    -2.7109920616438573243e-11,
    -2.5556418169965252055e-10,
    1.5076572693500548083e-09,
    -3.7894654401267369937e-09,
    7.6157012080783393804e-09,
    -1.4960026627149240478e-08,
    2.9147953450901080826e-08,
    -6.7711997758452339498e-08,
    2.2900482228026654717e-07,
    -9.9298272942317002539e-07,
    4.5260625972231537039e-06,
    -1.9681778105531670567e-05,
    7.5995277030017761139e-05,
    -0.00021503011930044477347,
    -0.00013871931833623122026,
    1.0103004648645343977,
    4.8499064014085844221,
)


def _piecewise_poly(e: Emitter, w: Value, branches) -> Value:
    """Horner over coefficient tables chosen per element: ``branches`` is
    ``[(pred, coeffs), ..., (None, coeffs)]``, shorter tables padded with leading 0."""
    n = max(len(c) for _, c in branches)
    tables = [(p, (0.0,) * (n - len(c)) + tuple(c)) for p, c in branches]

    def coeff(i: int) -> Value:
        v = e.const(tables[-1][1][i], w)
        for p, c in reversed(tables[:-1]):
            v = e.sel(p, e.const(c[i], w), v)
        return v

    acc = coeff(0)
    for i in range(1, n):
        acc = e.add(coeff(i), e.multiply(acc, w))
    return acc


def erf_inv(e: Emitter, x: Value) -> Value:
    """``erf_inv`` by Giles' polynomials in ``w = -log1p(-x^2)``; ``±inf`` at ``±1``."""
    w = e.negate(e.log_plus_one(e.negate(e.multiply(x, x))))
    if _is64(x):
        lt625 = e.cmp(w, e.const(6.25, x), "LT")
        lt16 = e.cmp(w, e.const(16.0, x), "LT")
        sq = e.sqrt(w)
        ww = e.sel(
            lt625,
            e.subtract(w, e.const(3.125, x)),
            e.sel(lt16, e.subtract(sq, e.const(3.25, x)), e.subtract(sq, e.const(5.0, x))),
        )
        p = _piecewise_poly(e, ww, [(lt625, _EI64_LT625), (lt16, _EI64_LT16), (None, _EI64_GT16)])
    else:
        lt5 = e.cmp(w, e.const(5.0, x), "LT")
        ww = e.sel(lt5, e.subtract(w, e.const(2.5, x)), e.subtract(e.sqrt(w), e.const(3.0, x)))
        p = _piecewise_poly(e, ww, [(lt5, _EI32_LT5), (None, _EI32_GT5)])
    r = e.multiply(p, x)
    at_one = e.cmp(e.abs(x), e.const(1.0, x), "EQ")
    return e.sel(at_one, e.multiply(x, e.const(math.inf, x)), r)


# ---------------------------------------------------------------------------
# lgamma / digamma (Lanczos)

_LANCZOS_G = 7.0
_LANCZOS_BASE = 0.99999999999980993227684700473478
_LANCZOS = (
    676.520368121885098567009190444019,
    -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,
    -176.61502916214059906584551354,
    12.507343278686904814458936853,
    -0.13857109526572011689554707,
    9.984369578019570859563e-6,
    1.50563273514931155834e-7,
)


def _lanczos_log_t(e: Emitter, z: Value) -> tuple[Value, Value]:
    """``t = z + g + 1/2`` and ``log(t)`` as ``log(g + 1/2) + log1p(z / (g + 1/2))``."""
    gh = _LANCZOS_G + 0.5
    t = e.add(z, e.const(gh, z))
    log_t = e.add(e.const(math.log(gh), z), e.log_plus_one(e.divide(z, e.const(gh, z))))
    return t, log_t


def lgamma(e: Emitter, x: Value) -> Value:
    """``lgamma``: Lanczos for ``x >= 0.5``, reflection ``log(pi / |sin(pi x)|) -
    lgamma(1 - x)`` below; ``+inf`` at non-positive integers and ``±inf``."""
    one = e.const(1.0, x)
    reflect = e.cmp(x, e.const(0.5, x), "LT")
    z = e.sel(reflect, e.negate(x), e.subtract(x, one))
    a = e.const(_LANCZOS_BASE, x)
    for i, c in enumerate(_LANCZOS):
        a = e.add(a, e.divide(e.const(c, x), e.add(z, e.const(i + 1.0, x))))
    t, log_t = _lanczos_log_t(e, z)
    log_y = e.add(
        e.add(
            e.const(math.log(math.sqrt(2 * math.pi)), x),
            e.multiply(e.subtract(e.add(z, e.const(0.5, x)), e.divide(t, log_t)), log_t),
        ),
        e.log(a),
    )
    ax = e.abs(x)
    frac = e.subtract(ax, e.floor(ax))
    frac = e.sel(e.cmp(frac, e.const(0.5, x), "GT"), e.subtract(one, frac), frac)
    denom = e.log(e.sine(e.multiply(e.const(math.pi, x), frac)))
    refl = e.sel(
        e.isfinite(denom),
        e.subtract(e.subtract(e.const(math.log(math.pi), x), denom), log_y),
        e.negate(denom),
    )
    r = e.sel(reflect, refl, log_y)
    return e.where(e.cmp(ax, e.const(math.inf, x), "EQ"), math.inf, r, x)


def digamma(e: Emitter, x: Value) -> Value:
    """``digamma``: derivative of the Lanczos ``lgamma`` with reflection
    ``psi(x) - pi cot(pi x)``; NaN at non-positive integers."""
    one = e.const(1.0, x)
    reflect = e.cmp(x, e.const(0.5, x), "LT")
    z = e.sel(reflect, e.negate(x), e.subtract(x, one))
    num = e.const(0.0, x)
    den = e.const(_LANCZOS_BASE, x)
    for i, c in enumerate(_LANCZOS):
        zi = e.add(z, e.const(i + 1.0, x))
        num = e.subtract(num, e.divide(e.const(c, x), e.multiply(zi, zi)))
        den = e.add(den, e.divide(e.const(c, x), zi))
    t, log_t = _lanczos_log_t(e, z)
    y = e.subtract(e.add(log_t, e.divide(num, den)), e.divide(e.const(_LANCZOS_G, x), t))
    rx = e.add(x, e.abs(e.floor(e.add(x, e.const(0.5, x)))))
    pix = e.multiply(e.const(math.pi, x), rx)
    refl = e.subtract(y, e.divide(e.multiply(e.const(math.pi, x), e.cosine(pix)), e.sine(pix)))
    r = e.sel(reflect, refl, y)
    pole = e.and_(e.cmp(x, e.const(0.0, x), "LE"), e.cmp(x, e.floor(x), "EQ"))
    return e.where(pole, math.nan, r, x)


# ---------------------------------------------------------------------------
# bessel_i1e (Cephes)

_I1E_A32 = (
    9.38153738649577178388e-9,
    -4.44505912879632808065e-8,
    2.00329475355213526229e-7,
    -8.56872026469545474066e-7,
    3.47025130813767847674e-6,
    -1.32731636560394358279e-5,
    4.78156510755005422638e-5,
    -1.61760815825896745588e-4,
    5.12285956168575772895e-4,
    -1.51357245063125314899e-3,
    4.15642294431288815669e-3,
    -1.05640848946261981558e-2,
    2.47264490306265168283e-2,
    -5.29459812080949914269e-2,
    1.02643658689847095384e-1,
    -1.76416518357834055153e-1,
    2.52587186443633654823e-1,
)
_I1E_B32 = (
    -3.83538038596423702205e-9,
    -2.63146884688951950684e-8,
    -2.51223623787020892529e-7,
    -3.88256480887769039346e-6,
    -1.10588938762623716291e-4,
    -9.76109749136146840777e-3,
    7.78576235018280120474e-1,
)
_I1E_A64 = (
    2.77791411276104639959e-18,
    -2.11142121435816608115e-17,
    1.55363195773620046921e-16,
    -1.10559694773538630805e-15,
    7.60068429473540693410e-15,
    -5.04218550472791168711e-14,
    3.22379336594557470981e-13,
    -1.98397439776494371520e-12,
    1.17361862988909016308e-11,
    -6.66348972350202774223e-11,
    3.62559028155211703701e-10,
    -1.88724975172282928790e-9,
) + _I1E_A32
_I1E_B64 = (
    7.51729631084210481353e-18,
    4.41434832307170791151e-18,
    -4.65030536848935832153e-17,
    -3.20952592199342395980e-17,
    2.96262899764595013876e-16,
    3.30820231092092828324e-16,
    -1.88035477551078244854e-15,
    -3.81440307243700780478e-15,
    1.04202769841288027642e-14,
    4.27244001671195135429e-14,
    -2.10154184277266431302e-14,
    -4.08355111109219731823e-13,
    -7.19855177624590851209e-13,
    2.03562854414708950722e-12,
    1.41258074366137813316e-11,
    3.25260358301548823856e-11,
    -1.89749581235054123450e-11,
    -5.58974346219658380687e-10,
) + _I1E_B32


def _chbevl(e: Emitter, x: Value, coeffs) -> Value:
    b0 = e.const(coeffs[0], x)
    b1 = e.const(0.0, x)
    b2 = b1
    for c in coeffs[1:]:
        b2, b1 = b1, b0
        b0 = e.add(e.subtract(e.multiply(x, b1), b2), e.const(c, x))
    return e.multiply(e.const(0.5, x), e.subtract(b0, b2))


def bessel_i1e(e: Emitter, x: Value) -> Value:
    """``bessel_i1e``: Chebyshev series on ``[0, 8]`` and ``(8, inf)``, odd in ``x``."""
    a, b = (_I1E_A64, _I1E_B64) if _is64(x) else (_I1E_A32, _I1E_B32)
    z = e.abs(x)
    y1 = e.subtract(e.multiply(e.const(0.5, x), z), e.const(2.0, x))
    r1 = e.multiply(_chbevl(e, y1, a), z)
    y2 = e.subtract(e.divide(e.const(32.0, x), z), e.const(2.0, x))
    r2 = e.divide(_chbevl(e, y2, b), e.sqrt(z))
    r = e.sel(e.cmp(z, e.const(8.0, x), "LE"), r1, r2)
    return e.sel(e.cmp(x, e.const(0.0, x), "LT"), e.negate(r), r)


# ---------------------------------------------------------------------------
# zeta / polygamma

_ZETA = (
    -7.1661652561756670113e18,
    1.8152105401943546773e17,
    -4.5979787224074726105e15,
    1.1646782814350067249e14,
    -2.950130727918164224e12,
    7.47242496e10,
    -1.8924375803183791606e9,
    47900160.0,
    -1213200.0,
    30240.0,
    -720.0,
    12.0,
)


def zeta(e: Emitter, x: Value, q: Value) -> Value:
    """Hurwitz ``zeta(x, q)`` as XLA computes it (see module docstring); NaN for
    ``x < 1`` or a non-integer ``x`` with ``q <= 0``, ``inf`` at ``x == 1``."""
    one = e.const(1.0, x)
    nx = e.negate(x)
    a = q
    initial = e.power(q, nx)
    for _ in range(9):
        a = e.add(a, one)
        initial = e.add(initial, e.power(a, nx))
    a = e.add(a, one)
    neg_power = e.power(a, nx)
    s = e.add(initial, e.divide(e.multiply(neg_power, a), e.subtract(x, one)))
    a_inv_sq = e.divide(one, e.multiply(a, a))
    horner = e.const(0.0, x)
    for i in range(11):
        factor = e.multiply(
            e.add(x, e.const(22.0 - 2.0 * i, x)), e.add(x, e.const(21.0 - 2.0 * i, x))
        )
        horner = e.multiply(e.multiply(factor, a_inv_sq), e.add(horner, e.const(1.0 / _ZETA[i], x)))
    tail = e.add(
        e.const(0.5, x), e.multiply(e.divide(x, a), e.add(e.const(1.0 / _ZETA[11], x), horner))
    )
    s = e.add(s, e.multiply(neg_power, tail))
    import numpy as np

    eps = float(np.finfo(x.type.element_type.dtype).eps)
    accurate = e.cmp(e.abs(neg_power), e.multiply(e.abs(initial), e.const(eps, x)), "LT")
    out = e.sel(accurate, initial, s)
    out = e.where(e.cmp(x, one, "EQ"), math.inf, out, x)
    out = e.where(e.cmp(x, one, "LT"), math.nan, out, x)
    q_le0 = e.cmp(q, e.const(0.0, x), "LE")
    x_not_int = e.cmp(x, e.floor(x), "NE")
    out = e.where(e.and_(q_le0, x_not_int), math.nan, out, x)
    at_pole = e.and_(q_le0, e.cmp(q, e.floor(q), "EQ"))
    even = e.and_(
        e.cmp(e.remainder(x, e.const(2.0, x)), e.const(0.0, x), "EQ"), e.cmp(x, e.floor(x), "EQ")
    )
    return e.sel(at_pole, e.where(even, math.inf, math.nan, x), out)


def polygamma(e: Emitter, n: Value, x: Value) -> Value:
    """``polygamma(n, x)``: ``digamma`` for ``n = 0``, else ``(-1)^(n+1) n!
    zeta(n+1, x)``; NaN unless ``n`` is a non-negative integer."""
    one = e.const(1.0, n)
    n1 = e.add(n, one)
    sign = e.subtract(e.multiply(e.const(2.0, n), e.remainder(n, e.const(2.0, n))), one)
    general = e.multiply(e.multiply(sign, e.exponential(lgamma(e, n1))), zeta(e, n1, x))
    out = e.sel(e.cmp(n, e.const(0.0, n), "EQ"), digamma(e, x), general)
    bad = e.or_(e.cmp(n, e.floor(n), "NE"), e.cmp(n, e.const(0.0, n), "LT"))
    return e.where(bad, math.nan, out, n)


for _name, _fn in (
    ("chlo.erf", erf),
    ("chlo.erfc", erfc),
    ("chlo.erf_inv", erf_inv),
    ("chlo.lgamma", lgamma),
    ("chlo.digamma", digamma),
    ("chlo.bessel_i1e", bessel_i1e),
    ("chlo.zeta", zeta),
    ("chlo.polygamma", polygamma),
):
    register_float(_name, _fn)
