"""Rules for the CHLO ops (spec "Dialect Interop > CHLO"; CHLO's own op definitions
give the semantics the spec leaves to it).

Numerics: floats are computed in ``f64`` (complex in ``complex128``) and rounded once
to the result type; the special functions come from :mod:`scipy.special`, imported
when an op needs it (scipy is an optional dependency: without it those ops raise
:class:`~oxla.errors.NotSupportedError`). Values at poles and outside the domain
follow XLA's CHLO decompositions: ``digamma`` is NaN at non-positive integers,
``lgamma`` is ``+inf`` there.

``chlo.constant`` is handled with ``stablehlo.constant`` in :mod:`.core`.
"""

from __future__ import annotations

import re

import numpy as np

from oxla.errors import InterpreterError, NotSupportedError
from oxla.interpreter.registry import interpreter_rule, lookup_rule
from oxla.interpreter.rules.util import attr, result_dtype
from oxla.ir import attributes as A
from oxla.ir import types as T


def _special(op):
    try:
        import scipy.special as sp
    except ImportError as e:  # pragma: no cover - scipy is in the test extra
        raise NotSupportedError(f"install scipy for {op.name}", op.loc,
                                notes=["pip install scipy"]) from e
    return sp


def _et(v) -> T.ElementType:
    return v.type.element_type


def _wide(x, et: T.ElementType) -> np.ndarray:
    if isinstance(et, T.ComplexType):
        return np.asarray(x).astype(np.complex128)
    return np.asarray(x).astype(np.float64)


def _is_int(et: T.ElementType) -> bool:
    return isinstance(et, T.IntegerType | T.IndexType)


# ---------------------------------------------------------------------------
# Unary math.


def _digamma(sp, x):
    y = sp.psi(x)
    return np.where((x <= 0) & (x == np.floor(x)), np.nan, y)


def cosh_f32(x: np.ndarray) -> np.ndarray:
    """``cosh`` as CHLO decomposes it, ``exp(x + log(1/2)) + exp(-x + log(1/2))``, each
    step rounded to f32 (XLA's result for f32 and narrower types; the direct f64 value
    rounded once can be 4 ULP away from it for large ``|x|``)."""
    f32 = np.float32
    half = np.float64(f32(np.log(0.5)))
    x = np.asarray(x, dtype=np.float64)
    e1 = np.exp((x + half).astype(f32).astype(np.float64)).astype(f32)
    e2 = np.exp((-x + half).astype(f32).astype(np.float64)).astype(f32)
    return (e1.astype(np.float64) + e2.astype(np.float64)).astype(f32).astype(np.float64)


def _lgamma(sp, x):
    y = sp.gammaln(x)
    return np.where(np.isinf(x), np.inf, y)


_UNARY = {
    "acos": lambda sp, x: np.arccos(x),
    "acosh": lambda sp, x: np.arccosh(x),
    "asin": lambda sp, x: np.arcsin(x),
    "asinh": lambda sp, x: np.arcsinh(x),
    "atan": lambda sp, x: np.arctan(x),
    "atanh": lambda sp, x: np.arctanh(x),
    "cosh": lambda sp, x: np.cosh(x),
    "sinh": lambda sp, x: np.sinh(x),
    "tan": lambda sp, x: np.tan(x),
    "bessel_i1e": lambda sp, x: sp.i1e(x),
    "digamma": _digamma,
    "erf": lambda sp, x: sp.erf(x),
    "erfc": lambda sp, x: sp.erfc(x),
    "erf_inv": lambda sp, x: sp.erfinv(x),
    "lgamma": _lgamma,
}
_NEEDS_SCIPY = frozenset({"bessel_i1e", "digamma", "erf", "erfc", "erf_inv", "lgamma"})


def _unary_rule(name: str):
    fn = _UNARY[name]

    def rule(ctx, op, args):
        sp = _special(op) if name in _NEEDS_SCIPY else None
        et = _et(op.operands[0])
        if not isinstance(et, T.FloatType | T.ComplexType):
            raise InterpreterError(f"'{op.name}' does not accept element type {et}", op.loc)
        with np.errstate(all="ignore"):
            if name == "cosh" and isinstance(et, T.FloatType) and et.bitwidth < 64:
                y = cosh_f32(args[0])
            else:
                y = fn(sp, _wide(args[0], et))
        return [np.asarray(y).astype(result_dtype(op))]

    rule.__doc__ = f"``chlo.{name}`` in f64 (complex128), rounded once to the result type."
    return rule


for _n in _UNARY:
    interpreter_rule(f"chlo.{_n}")(_unary_rule(_n))


@interpreter_rule("chlo.conj")
def conj(ctx, op, args):
    return [np.conj(np.asarray(args[0])).astype(result_dtype(op))]


@interpreter_rule("chlo.square")
def square(ctx, op, args):
    """``x * x``: wraps for integers, one rounding for floats."""
    et = _et(op.operands[0])
    x = np.asarray(args[0])
    with np.errstate(all="ignore"):
        if isinstance(et, T.IntegerType) and et.width == 1:
            return [x.astype(np.bool_)]
        if _is_int(et):
            from oxla.interpreter.rules.elementwise import to_wide_int, wrap_int

            w = to_wide_int(x, et)
            return [wrap_int(w * w, et)]
        if isinstance(et, T.ComplexType):
            return [(x * x).astype(result_dtype(op))]
        w = _wide(x, et)
        return [(w * w).astype(result_dtype(op))]


def _is_inf_rule(kind: str):
    def rule(ctx, op, args):
        x = np.asarray(args[0]).astype(np.float64)
        y = {"is_inf": np.isinf(x), "is_pos_inf": x == np.inf,
             "is_neg_inf": x == -np.inf}[kind]
        return [np.asarray(y, dtype=np.bool_)]

    return rule


for _n in ("is_inf", "is_pos_inf", "is_neg_inf"):
    interpreter_rule(f"chlo.{_n}")(_is_inf_rule(_n))


# ---------------------------------------------------------------------------
# Binary special functions.


def next_after_values(x: np.ndarray, y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """IEEE ``nextafter`` in ``dtype`` (any float width, via its bit pattern): NaN if
    either is NaN, ``y`` if ``x == y``, the smallest subnormal toward ``y`` from 0."""
    x = np.asarray(x, dtype=dtype)
    y = np.asarray(y, dtype=dtype)
    x, y = np.broadcast_arrays(x, y)
    bits = np.dtype(dtype).itemsize * 8
    udt = np.dtype(f"u{np.dtype(dtype).itemsize}")
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    xb = np.asarray(x, order="C").view(udt).astype(np.uint64)
    sign = np.uint64(1 << (bits - 1))
    away = (xf < yf) == (xf > 0)  # moving away from zero: magnitude grows
    with np.errstate(over="ignore"):
        stepped = np.where(away, xb + np.uint64(1), xb - np.uint64(1))
    yb = np.asarray(y, order="C").view(udt).astype(np.uint64)
    tiny = (yb & sign) | np.uint64(1)
    out = np.where(xf == 0, tiny, stepped)
    out = out.astype(udt).view(dtype)
    out = np.where(xf == yf, y, out)
    out = np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan, dtype=dtype), out)
    return np.asarray(out, dtype=dtype)


@interpreter_rule("chlo.next_after")
def next_after(ctx, op, args):
    return [next_after_values(args[0], args[1], result_dtype(op))]


@interpreter_rule("chlo.polygamma")
def polygamma(ctx, op, args):
    """``polygamma(n, x)``; NaN unless ``n`` is a non-negative integer."""
    sp = _special(op)
    n = np.asarray(args[0]).astype(np.float64)
    x = np.asarray(args[1]).astype(np.float64)
    with np.errstate(all="ignore"):
        ok = (n >= 0) & (n == np.floor(n))
        nn = np.where(ok, n, 0)
        y = np.where(nn == 0, _digamma(sp, x), sp.polygamma(nn.astype(np.int64), x))
        y = np.where(ok, y, np.nan)
    return [np.asarray(y).astype(result_dtype(op))]


@interpreter_rule("chlo.zeta")
def zeta(ctx, op, args):
    """Hurwitz zeta ``zeta(x, q)``."""
    sp = _special(op)
    with np.errstate(all="ignore"):
        y = sp.zeta(np.asarray(args[0]).astype(np.float64),
                    np.asarray(args[1]).astype(np.float64))
    return [np.asarray(y).astype(result_dtype(op))]


@interpreter_rule("chlo.mulhi")
def mulhi(ctx, op, args):
    """The high ``width`` bits of the ``2 * width``-bit product (signed or unsigned)."""
    et = _et(op.operands[0])
    dt = result_dtype(op)
    w = et.width
    a, b = np.asarray(args[0]), np.asarray(args[1])
    if w <= 32:
        p = a.astype(np.int64) * b.astype(np.int64)
        hi = p >> w
        from oxla.interpreter.rules.elementwise import wrap_int

        return [wrap_int(hi, et)]
    mask = (1 << w) - 1

    def hi64(x, y):
        v = (int(x) * int(y)) >> w
        v &= mask
        if not et.unsigned and v >= 1 << (w - 1):
            v -= 1 << w
        return v

    f = np.frompyfunc(hi64, 2, 1)
    return [np.asarray(f(a, b), dtype=object).astype(dt)]


# ---------------------------------------------------------------------------
# Broadcasting binary ops.


def _bcast_shape(shapes, bdims) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        dims = _dims_for(len(s), rank, bdims)
        for d, n in zip(dims, s):
            if n != 1:
                if out[d] not in (1, n):
                    raise InterpreterError(f"shapes {shapes} do not broadcast")
                out[d] = n
    return tuple(out)


def _dims_for(rank: int, out_rank: int, bdims) -> list[int]:
    if bdims is not None and rank < out_rank and len(bdims) == rank:
        return list(bdims)
    return list(range(out_rank - rank, out_rank))


def broadcast_to(x: np.ndarray, shape: tuple[int, ...], bdims=None) -> np.ndarray:
    """``x`` broadcast to ``shape``: numpy's right-aligned rule, or with
    ``broadcast_dimensions`` mapping the lower-rank operand's dims to result dims."""
    x = np.asarray(x)
    dims = _dims_for(x.ndim, len(shape), bdims)
    view = [1] * len(shape)
    for d, n in zip(dims, x.shape):
        view[d] = n
    return np.broadcast_to(x.reshape(view), shape)


def _broadcast_args(op, args):
    bdims = attr(op, "broadcast_dimensions")
    shape = _bcast_shape([np.shape(a) for a in args], bdims)
    return [np.asarray(broadcast_to(a, shape, bdims), order="C") for a in args]


_BROADCAST_TO_RULE = {
    "next_after": "chlo.next_after", "polygamma": "chlo.polygamma", "zeta": "chlo.zeta",
}


def _broadcast_rule(name: str):
    target = _BROADCAST_TO_RULE.get(name, f"stablehlo.{name}")

    def rule(ctx, op, args):
        inner = lookup_rule(target)
        if inner is None:
            raise NotSupportedError(f"'{op.name}' needs a rule for '{target}'", op.loc)
        return inner(ctx, op, _broadcast_args(op, args))

    rule.__doc__ = f"``chlo.broadcast_{name}``: broadcast, then ``{target}``."
    return rule


for _n in ("add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply",
           "next_after", "or", "polygamma", "power", "remainder", "shift_left",
           "shift_right_arithmetic", "shift_right_logical", "subtract", "xor", "zeta"):
    interpreter_rule(f"chlo.broadcast_{_n}")(_broadcast_rule(_n))


def _enum_word(op, name: str) -> str | None:
    """An enum attribute's value, also from ``#chlo<comparison_direction LT>`` text."""
    a = op.attributes.get(name)
    if a is None:
        return None
    v = A.to_python(a)
    if isinstance(v, str):
        return v
    m = re.search(r"(\w+)\s*>\s*$", str(a))
    if m is None:
        raise InterpreterError(f"cannot read attribute '{name}' = {a}", op.loc)
    return m.group(1)


@interpreter_rule("chlo.broadcast_compare")
def broadcast_compare(ctx, op, args):
    """Broadcast, then the spec's ``compare``."""
    from oxla.interpreter.rules.elementwise import compare_values

    a, b = _broadcast_args(op, args)
    et = _et(op.operands[0])
    if isinstance(et, T.QuantizedType):
        from oxla.interpreter.rules.util import dequantize

        a, b = dequantize(a, et), dequantize(b, _et(op.operands[1]))
        et = et.expressed_type
    direction = _enum_word(op, "comparison_direction")
    ctype = _enum_word(op, "compare_type")
    return [np.asarray(compare_values(a, b, et, direction, ctype), dtype=np.bool_)]


@interpreter_rule("chlo.broadcast_select")
def broadcast_select(ctx, op, args):
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return lookup_rule("stablehlo.select")(
        ctx, op, [np.asarray(np.broadcast_to(a, shape), order="C") for a in args])


@interpreter_rule("chlo.constant_like")
def constant_like(ctx, op, args):
    """A tensor of the operand's shape filled with the scalar ``value``."""
    value = op.attributes["value"]
    if isinstance(value, A.DenseElementsAttr):
        v = value.array
    else:
        v = A.to_python(value)
    dt = result_dtype(op)
    return [np.full(np.shape(args[0]), np.asarray(v).reshape(()), dtype=dt)]


# ---------------------------------------------------------------------------
# top_k


def descending_key(x: np.ndarray, et: T.ElementType) -> np.ndarray:
    """uint64 keys whose ascending order is ``x``'s descending total order
    (``+NaN`` first, ``-NaN`` last, ``+0`` before ``-0``)."""
    x = np.asarray(x)
    if isinstance(et, T.FloatType):
        b = np.asarray(x.astype(np.float64), order="C").view(np.int64)
        u = b.view(np.uint64)
        key = np.where(b < 0, ~u, u | np.uint64(1 << 63))
    elif isinstance(et, T.IntegerType) and et.width == 1:
        key = x.astype(np.uint64)
    elif isinstance(et, T.IntegerType) and et.unsigned:
        key = x.astype(np.uint64)
    else:
        key = x.astype(np.int64).view(np.uint64) ^ np.uint64(1 << 63)
    return ~key


@interpreter_rule("chlo.top_k")
def top_k(ctx, op, args):
    """The ``k`` largest elements of the last dimension, descending, with their
    indices; ties keep the lower index first."""
    k = attr(op, "k")
    x = np.asarray(args[0])
    order = np.argsort(descending_key(x, _et(op.operands[0])), axis=-1, kind="stable")
    idx = order[..., :k]
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(result_dtype(op, 1))]


# ---------------------------------------------------------------------------
# ragged_dot


_RAGGED_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions",
                  "lhs_contracting_dimensions", "rhs_contracting_dimensions",
                  "lhs_ragged_dimensions", "rhs_group_dimensions")


def ragged_dims(a) -> dict[str, tuple[int, ...]]:
    """The fields of ``#chlo.ragged_dot<...>`` as tuples of ints."""
    if isinstance(a, A.StructAttr):
        return {f: tuple(a.get(f, ())) for f in _RAGGED_FIELDS}
    text = str(a)
    out = {}
    for f in _RAGGED_FIELDS:
        m = re.search(rf"{f}\s*=\s*\[([^\]]*)\]", text)
        out[f] = tuple(int(t) for t in m.group(1).split(",") if t.strip()) if m else ()
    return out


def _acc_dtype(dt: np.dtype) -> np.dtype:
    if dt.kind == "c":
        return np.dtype(np.complex128)
    if dt.kind in "iub":
        return np.dtype(np.uint64) if dt == np.uint64 else np.dtype(np.int64)
    return np.dtype(np.float64)


def dot_general(lhs, rhs, lb, rb, lc, rc) -> np.ndarray:
    """Spec ``dot_general`` result layout: batch dims, lhs free dims, rhs free dims
    (accumulated in a 64-bit type)."""
    lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.ndim) if d not in rb and d not in rc]
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls = [""] * lhs.ndim
    rs = [""] * rhs.ndim
    for a, b in zip(lb, rb):
        ls[a] = rs[b] = next(letters)
    for a, b in zip(lc, rc):
        ls[a] = rs[b] = next(letters)
    for d in lf:
        ls[d] = next(letters)
    for d in rf:
        rs[d] = next(letters)
    out = "".join(ls[d] for d in lb) + "".join(ls[d] for d in lf) + "".join(rs[d] for d in rf)
    with np.errstate(all="ignore"):
        return np.einsum(f"{''.join(ls)},{''.join(rs)}->{out}", lhs, rhs)


def _group_bounds(gs: np.ndarray, j: int):
    ends = np.cumsum(gs, axis=-1)
    return (ends - gs)[..., j], ends[..., j]


@interpreter_rule("chlo.ragged_dot")
def ragged_dot(ctx, op, args):
    """CHLO ``ragged_dot``, its three modes by where the lhs ragged dimension is:
    a free dimension (rhs has a group dimension; each row uses its group's rhs), a
    contracting dimension (one result per group, leading), or a batch dimension (a
    plain ``dot_general``)."""
    dn = ragged_dims(op.attributes["ragged_dot_dimension_numbers"])
    out_dt = result_dtype(op)
    acc = _acc_dtype(out_dt)
    lhs = np.asarray(args[0]).astype(acc)
    rhs = np.asarray(args[1]).astype(acc)
    gs = np.asarray(args[2]).astype(np.int64)
    lb, rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
    lc, rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
    (r,) = dn["lhs_ragged_dimensions"]
    groups = gs.shape[-1]
    if r in lb:
        res = dot_general(lhs, rhs, lb, rb, lc, rc)
    elif r in lc:
        rr = rc[lc.index(r)]
        outs = []
        for j in range(groups):
            s, e = _group_bounds(gs, j)
            idx_l = np.arange(lhs.shape[r]).reshape(
                [-1 if d == r else 1 for d in range(lhs.ndim)])
            mask = (idx_l >= np.reshape(s, np.shape(s) + (1,) * (lhs.ndim - np.ndim(s)))) & \
                   (idx_l < np.reshape(e, np.shape(e) + (1,) * (lhs.ndim - np.ndim(e))))
            idx_r = np.arange(rhs.shape[rr])
            sl, el = int(np.min(s)), int(np.max(e))
            keep = (idx_r >= sl) & (idx_r < el)
            lj = np.where(mask, lhs, 0)
            outs.append(dot_general(np.compress(keep, lj, axis=r),
                                    np.compress(keep, rhs, axis=rr), lb, rb, lc, rc))
        res = np.stack(outs, axis=0)
    else:
        (g,) = dn["rhs_group_dimensions"]

        def shift(ds):
            return [d - (d > g) for d in ds]

        lf = [d for d in range(lhs.ndim) if d not in lb and d not in lc]
        r_out = len(lb) + lf.index(r)
        res = None
        for j in range(groups):
            part = dot_general(lhs, np.take(rhs, j, axis=g), lb, shift(rb), lc, shift(rc))
            if res is None:
                res = np.zeros_like(part)
            s, e = _group_bounds(gs, j)
            lead = np.ndim(s)
            idx = np.arange(part.shape[r_out]).reshape(
                [-1 if d == r_out else 1 for d in range(lead, part.ndim)])
            s = np.reshape(s, np.shape(s) + (1,) * (part.ndim - lead))
            e = np.reshape(e, np.shape(e) + (1,) * (part.ndim - lead))
            res = np.where((idx >= s) & (idx < e), part, res)
    if np.dtype(out_dt).kind in "iu":
        from oxla.interpreter.rules.elementwise import wrap_int

        return [wrap_int(res, op.results[0].type.element_type)]
    return [np.asarray(res).astype(out_dt)]


# ---------------------------------------------------------------------------
# scan


@interpreter_rule("chlo.scan")
def scan(ctx, op, args):
    """CHLO ``scan``: the body maps (input slices..., carries...) to (output slices...,
    new carries...) along ``dimension``, from the end when ``is_reverse``; results are
    the stacked outputs then the final carries."""
    n_in = len(op.operand_group("inputs"))
    inputs = [np.asarray(a) for a in args[:n_in]]
    carries = list(args[n_in:])
    n_out = len(op.results) - len(carries)
    dim = attr(op, "dimension")
    length = inputs[0].shape[dim] if inputs else op.results[0].type.shape[dim]
    steps = range(length - 1, -1, -1) if attr(op, "is_reverse", False) else range(length)
    outs: list[list] = [[None] * length for _ in range(n_out)]
    for i in steps:
        res = ctx.run_region(op.regions[0], [np.take(x, i, axis=dim) for x in inputs]
                             + carries)
        for k in range(n_out):
            outs[k][i] = np.asarray(res[k])
        carries = list(res[n_out:])
    results = []
    for k in range(n_out):
        if length:
            results.append(np.stack(outs[k], axis=dim).astype(result_dtype(op, k)))
        else:
            results.append(np.zeros(op.results[k].type.shape, dtype=result_dtype(op, k)))
    return [*results, *carries]
