"""The ``check`` test ops (StableHLO interpreter tests) and their custom-call forms.

A failed check is recorded in ``ctx.failures`` with which elements differ (expected vs.
actual) and evaluation goes on, so one run reports every failed check.
Defaults follow StableHLO's check dialect: ``expect_almost_eq`` tolerance 1e-4,
``expect_close`` at most 3 ULP apart.
"""

from __future__ import annotations

import numpy as np

from oxla.interpreter.engine import CheckFailure
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import attr
from oxla.ir import attributes as A

DEFAULT_TOLERANCE = 1e-4
DEFAULT_MAX_ULP = 3


def _describe(actual: np.ndarray, expected: np.ndarray, bad: np.ndarray, limit: int = 5) -> str:
    idx = np.argwhere(np.asarray(bad).reshape(actual.shape) if actual.shape else bad)
    n = int(np.count_nonzero(bad))
    parts = []
    for ix in idx[:limit]:
        t = tuple(int(i) for i in ix)
        # str, not repr: "7.0", not "np.float32(7.0)" (numpy 2's scalar repr)
        parts.append(f"at {list(t)}: expected {expected[t]}, got {actual[t]}")
    more = f" (and {n - limit} more)" if n > limit else ""
    return f"{n} of {actual.size} elements differ: " + "; ".join(parts) + more


def _float_view(a: np.ndarray) -> np.ndarray:
    """Float data as float64 (complex split into real/imag pairs)."""
    if np.iscomplexobj(a):
        return np.stack([a.real.astype(np.float64), a.imag.astype(np.float64)], -1)
    return a.astype(np.float64)


def _is_float(a: np.ndarray) -> bool:
    return a.dtype.kind in "fc" or a.dtype.name in (
        "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
        "float8_e4m3b11fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu",
        "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")


def _shape_mismatch(ctx, op, actual, expected) -> bool:
    if np.shape(actual) != np.shape(expected):
        ctx.failures.append(CheckFailure(
            op, f"expected shape {np.shape(expected)}, got {np.shape(actual)}"))
        return True
    return False


def expect_eq(ctx, op, actual, expected) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if _shape_mismatch(ctx, op, actual, expected):
        return
    if _is_float(actual):
        a, e = _float_view(actual), _float_view(expected)
        bad = ~((a == e) | (np.isnan(a) & np.isnan(e)))
        if bad.ndim > actual.ndim:
            bad = bad.any(-1)
    else:
        bad = actual != expected
    if np.any(bad):
        ctx.failures.append(CheckFailure(op, _describe(actual, expected, bad)))


def expect_almost_eq(ctx, op, actual, expected, tolerance: float = DEFAULT_TOLERANCE) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if _shape_mismatch(ctx, op, actual, expected):
        return
    if not _is_float(actual):
        expect_eq(ctx, op, actual, expected)
        return
    a, e = _float_view(actual), _float_view(expected)
    with np.errstate(invalid="ignore"):
        # As StableHLO's areApproximatelyEqual: equal, both NaN, or finite with the
        # same sign and at most `tolerance` apart.
        close = (np.abs(a - e) <= tolerance) & (np.signbit(a) == np.signbit(e))
        ok = close | (a == e) | (np.isnan(a) & np.isnan(e))
    bad = ~ok
    if bad.ndim > actual.ndim:
        bad = bad.any(-1)
    if np.any(bad):
        ctx.failures.append(CheckFailure(op, _describe(actual, expected, bad)))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULP distance between same-dtype float arrays (0 for equal values, including
    +0/-0 and NaN/NaN; max int for NaN vs number)."""
    dt = a.dtype
    uint = np.dtype(f"u{dt.itemsize}")
    sint = np.dtype(f"i{dt.itemsize}")
    bits = dt.itemsize * 8

    def ordered(x):
        u = x.view(uint).astype(np.int64) if dt.itemsize < 8 else x.view(sint).astype(object)
        if dt.itemsize < 8:
            sign = 1 << (bits - 1)
            return np.where(u & sign, -(u & (sign - 1)), u)
        return np.array([(-(int(v) & ((1 << 63) - 1)) if int(v) < 0 else int(v)) for v in
                         x.reshape(-1).view(sint)], dtype=object).reshape(x.shape)

    oa, ob = ordered(a), ordered(b)
    d = np.abs(oa - ob)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(af) & np.isnan(bf)
    one_nan = np.isnan(af) ^ np.isnan(bf)
    d = np.where(both_nan | (af == bf), 0, d)
    d = np.where(one_nan, np.iinfo(np.int64).max, d)
    return d


def expect_close(ctx, op, actual, expected, max_ulp: int = DEFAULT_MAX_ULP,
                 min_ulp: int = 0) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    if _shape_mismatch(ctx, op, actual, expected):
        return
    if not _is_float(actual):
        expect_eq(ctx, op, actual, expected)
        return
    if np.iscomplexobj(actual):
        parts = [(actual.real, expected.real), (actual.imag, expected.imag)]
    else:
        parts = [(actual, expected)]
    bad = np.zeros(actual.shape, dtype=bool)
    for a, e in parts:
        a = np.array(a, order="C")  # (ascontiguousarray would turn 0-d into 1-d)
        e = np.array(e, order="C").astype(a.dtype)
        d = ulp_distance(a, e)
        bad |= (d > max_ulp) | (d < min_ulp)
    if np.any(bad):
        ctx.failures.append(CheckFailure(
            op, f"more than {max_ulp} ULP apart: " + _describe(actual, expected, bad)))


@interpreter_rule("check.expect_eq")
def _expect_eq(ctx, op, args):
    expect_eq(ctx, op, args[0], args[1])
    return []


@interpreter_rule("check.expect_eq_const")
def _expect_eq_const(ctx, op, args):
    expect_eq(ctx, op, args[0], op.attributes["value"].array)
    return []


@interpreter_rule("check.expect_almost_eq")
def _expect_almost_eq(ctx, op, args):
    expect_almost_eq(ctx, op, args[0], args[1], attr(op, "tolerance", DEFAULT_TOLERANCE))
    return []


@interpreter_rule("check.expect_almost_eq_const")
def _expect_almost_eq_const(ctx, op, args):
    expect_almost_eq(ctx, op, args[0], op.attributes["value"].array,
                     attr(op, "tolerance", DEFAULT_TOLERANCE))
    return []


@interpreter_rule("check.expect_close")
def _expect_close(ctx, op, args):
    expect_close(ctx, op, args[0], args[1], attr(op, "max_ulp_difference", DEFAULT_MAX_ULP),
                 attr(op, "min_ulp_difference", 0))
    return []


@interpreter_rule("interpreter.probe")
def _probe(ctx, op, args):
    ctx.probes.setdefault(attr(op, "probe_id"), []).append(np.array(args[0], copy=True))
    return [args[0]]


@interpreter_rule("interpreter.print")
def _print(ctx, op, args):
    """Prints the operand to stdout (a debugging aid) and returns it unchanged."""
    print(f"{op.operands[0].type}: {np.asarray(args[0])}", flush=True)
    return [args[0]]


@interpreter_rule("check.expect_serialized_eq")
def _expect_serialized_eq(ctx, op, args):
    pid = attr(op, "probe_id")
    it = attr(op, "iteration", 0)
    seen = ctx.probes.get(pid, [])
    if it >= len(seen):
        ctx.failures.append(CheckFailure(op, f"probe '{pid}' iteration {it} was never recorded"))
        return []
    expect_eq(ctx, op, seen[it], args[0])
    return []


def _cc_eq(ctx, op, args):
    expect_eq(ctx, op, args[0], args[1])
    return []


def _cc_almost_eq(ctx, op, args):
    expect_almost_eq(ctx, op, args[0], args[1])
    return []


def _cc_close(ctx, op, args):
    expect_close(ctx, op, args[0], args[1])
    return []


def _cc_bool_eq(ctx, op, args):
    """``custom_call @check.eq(a, b) -> tensor<i1>``: all elements equal, as a value;
    a difference is also a check failure (the test files return this value and expect
    it to be true: a harness that ignored it would pass every such file)."""
    before = len(ctx.failures)
    expect_eq(ctx, op, args[0], args[1])
    return [np.array(len(ctx.failures) == before)]


CHECK_CUSTOM_CALLS = {
    "check.expect_eq": _cc_eq,
    "check.expect_almost_eq": _cc_almost_eq,
    "check.expect_close": _cc_close,
    "check.eq": _cc_bool_eq,
}

__all__ = ["expect_eq", "expect_almost_eq", "expect_close", "ulp_distance", "A"]
