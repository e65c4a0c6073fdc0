"""The sweeps' comparison fails where it should: shapes, dtypes, one ulp in an exact
family, NaN in one result only, and errors beyond the family's tolerance."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from sweep_common import Case, Mismatch, Result, compare, merge, run_case, summarize


def test_equal_and_within_tolerance_pass():
    w = np.array([1.0, -2.0, np.nan, np.inf], np.float32)
    compare(w.copy(), w, "exact")
    compare(w * np.float32(1 + 2e-6), w, "elementwise")
    compare(np.array([1, 2], np.int32), np.array([1, 2], np.int32), "elementwise")


@pytest.mark.parametrize("got, want, tol, match", [
    (np.zeros(3, np.float32), np.zeros(4, np.float32), "exact", "expected float32"),
    (np.zeros(3, np.float64), np.zeros(3, np.float32), "elementwise", "expected float32"),
    (np.nextafter(np.float32(1), np.float32(2)) * np.ones(2, np.float32),
     np.ones(2, np.float32), "exact", "exact comparison"),
    (np.array([np.nan, 1.0]), np.array([0.0, 1.0]), "elementwise", "NaN"),
    (np.array([1.001], np.float32), np.array([1.0], np.float32), "elementwise", "outside"),
    (np.array([1.1], ml_dtypes.bfloat16), np.array([1.0], ml_dtypes.bfloat16), "elementwise",
     "outside"),
    (np.array([3], np.int32), np.array([2], np.int32), "reduction", "exact comparison"),
    (np.array([np.inf]), np.array([1.0]), "linalg", "infinit"),
])
def test_mismatches_are_reported(got, want, tol, match):
    with pytest.raises(Mismatch, match=match):
        compare(got, want, tol)


def test_merge_and_summary_count_each_case_once():
    a = [Result("f", "fam", "pass", dtypes=["f32"]), Result("g", "fam", "pass"),
         Result("h", "other", "skip")]
    b = [Result("f", "fam", "fail", "f64: wrong", pending=None),
         Result("g", "fam", "skip"), Result("h", "other", "error", "x", pending="later")]
    merged = {r.name: r for r in merge([a, b])}
    assert merged["f"].status == "fail" and merged["g"].status == "pass"
    s = summarize(list(merged.values()))
    assert s["total"] == {"cases": 3, "pass": 1, "fail": 2, "pending": 1, "excluded": 0}


def _raise(*_):
    raise RuntimeError("no XLA kernel")


def test_excluded_only_when_the_frameworks_xla_fails_too():
    """A case oxla cannot compile is left out of the count only when the framework's
    own XLA compilation (the alt oracle) fails on it too."""
    case = Case("f", "fam", lambda x: x, lambda rng, dt: [(np.ones(2, np.float32),)])
    ok = lambda c, args: args[0]  # noqa: E731
    flat = lambda out: [np.asarray(out)]  # noqa: E731
    r = run_case(case, ok, _raise, flat, ("f32",), alt_oracle=_raise)
    assert r.status == "excluded" and "XLA compilation fails too" in r.reason
    r2 = run_case(case, ok, _raise, flat, ("f32",), alt_oracle=ok)
    assert r2.status == "error"
    s = summarize([r, r2])
    assert s["total"] == {"cases": 1, "pass": 0, "fail": 1, "pending": 0, "excluded": 1}
