"""What the API sweeps share: a case, its variants, tolerances and the comparison.

A *case* is one framework function (``jnp.sin``, ``tf.linalg.det``, a Keras layer) with
a small generator of random inputs per dtype; each *variant* is one (dtype, input
shapes) pair. The sweep runs every variant through the framework's own compiler (the
oracle: ``jax.jit`` on XLA:CPU, TensorFlow) and through oxla, and compares the results
leaf by leaf with the tolerance of the case's family (:data:`TOLERANCES`).

The module imports neither jax nor tensorflow: the case tables do (``jax_sweep_cases``,
``tf_sweep_cases``), and ``scripts/jax_sweep.py``/``scripts/tf_sweep.py`` and the CI
samples under ``tests/sweep`` run them.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    # family class -> dtype kind -> (rtol, atol relative to the largest |expected|);
    # integers, booleans and "exact" families are compared bit for bit.
    "exact": {},
    "elementwise": {"f32": (1e-5, 1e-6), "f64": (1e-12, 1e-14), "bf16": (1.6e-2, 1e-2),
                    "f16": (2e-3, 1e-3), "c64": (1e-5, 1e-6), "c128": (1e-12, 1e-14)},
    "special": {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12), "bf16": (3e-2, 2e-2)},
    "reduction": {"f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12), "bf16": (3e-2, 2e-2),
                  "c64": (1e-5, 1e-5), "c128": (1e-12, 1e-12), "f16": (5e-3, 3e-3)},
    "linalg": {"f32": (1e-4, 1e-4), "f64": (1e-10, 1e-10), "c64": (1e-4, 1e-4),
               "c128": (1e-10, 1e-10), "bf16": (5e-2, 5e-2)},
    "fft": {"f32": (1e-4, 1e-5), "f64": (1e-11, 1e-12), "c64": (1e-4, 1e-5),
            "c128": (1e-11, 1e-12)},
    "transform": {"f32": (1e-4, 1e-5), "f64": (1e-10, 1e-12), "bf16": (3e-2, 2e-2),
                  "c64": (1e-4, 1e-5)},
}
"""Tolerances per family class (the case's ``tol``) and dtype kind.

``elementwise``: one correctly rounded-ish operation per element (oxla's vector math
and XLA's differ by a few ulp; 1e-5 is ~80 f32 ulp). ``special``: the CHLO polynomial
and series decompositions of special functions (lgamma, digamma, igamma, erf_inv,
Bessel), evaluated in a different order. ``reduction``: sums in a different order,
hence atol relative to the output's largest magnitude. ``linalg``, ``fft``: O(n)
operations per element, error relative to the largest magnitude. ``transform``:
derivatives (several ops chained)."""

X64_DTYPES = frozenset({"f64", "c128", "i64", "u64"})
"""Dtypes that need ``jax_enable_x64`` (process-wide: a separate process runs them)."""

NP_DTYPES = {
    "f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
    "c64": "complex64", "c128": "complex128", "i8": "int8", "i16": "int16",
    "i32": "int32", "i64": "int64", "u8": "uint8", "u32": "uint32", "u64": "uint64",
    "bool": "bool",
}


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a short dtype name (``bf16`` through ml_dtypes)."""
    import ml_dtypes  # noqa: F401 - registers bfloat16 with numpy

    return np.dtype(NP_DTYPES[name])


Make = Callable[[np.random.Generator, str], Sequence[tuple[Any, ...]]]


@dataclass(frozen=True)
class Case:
    """One function of the swept API.

    Attributes:
        name: how users call it (``jnp.linalg.solve``).
        family: the group it is counted in (``jax.numpy.linalg``).
        fn: the function, taking arrays positionally (static arguments closed over).
        make: ``make(rng, dtype) -> [args, ...]``: one argument tuple per shape variant
            (numpy arrays of that dtype; index or integer operands may have their own).
        dtypes: the dtypes it is swept on (short names, :data:`NP_DTYPES`).
        tol: the family class of :data:`TOLERANCES`.
        pending: why it is expected to fail (counted apart), or ``None``.
        sample: whether the CI sample runs it.
    """

    name: str
    family: str
    fn: Callable[..., Any]
    make: Make
    dtypes: tuple[str, ...] = ("f32",)
    tol: str = "elementwise"
    pending: str | None = None
    sample: bool = False


@dataclass
class Result:
    """The outcome of one case in one process (x64 or not).

    ``status``: ``pass``, ``fail`` (wrong numbers, shapes or dtypes), ``error`` (oxla
    raised), ``skip`` (no variant for this process's dtypes), ``oracle-error`` (the
    framework itself failed: the case is wrong, counted as a sweep bug), ``excluded``
    (oxla raised and the framework's own XLA compilation, the ``alt_oracle`` of
    :func:`run_case`, raised too: the function is outside what the framework's XLA
    bridge compiles, so no program exists for oxla to compile; not counted, listed
    apart — checked on every run, never a fixed list).
    """

    name: str
    family: str
    status: str
    reason: str = ""
    dtypes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    pending: str | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "status": self.status,
                "reason": self.reason, "dtypes": self.dtypes,
                "seconds": round(self.seconds, 3), "pending": self.pending, "note": self.note}


class Mismatch(AssertionError):
    """A result differs from the oracle's beyond the tolerance."""


def dtype_kind(dt: np.dtype) -> str:
    """The short name of a numpy dtype, as :data:`TOLERANCES` keys it."""
    for short, long in NP_DTYPES.items():
        if np.dtype(long) == dt:
            return short
    return str(dt)


def compare(got: Any, want: Any, tol: str, where: str = "result") -> None:
    """Checks one result leaf against the oracle's.

    Shapes and dtypes must be equal; integers and booleans equal; floats within
    ``(rtol, atol)`` of :data:`TOLERANCES` (``atol`` times the largest finite
    ``|want|``, at least 1), with NaN where the oracle has NaN and equal infinities.

    Raises:
        Mismatch: naming the leaf, the worst element and the bound.
    """
    import ml_dtypes  # noqa: F401

    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        raise Mismatch(f"{where}: got {g.dtype}{list(g.shape)}, expected "
                       f"{w.dtype}{list(w.shape)}")
    kind = dtype_kind(w.dtype)
    bounds = TOLERANCES[tol].get(kind)
    floating = w.dtype.kind in "fc" or w.dtype == np.dtype("bfloat16")
    if bounds is None or not floating or tol == "exact":
        if floating:
            same = (g == w) | (np.isnan(g.astype(np.complex128)) & np.isnan(
                w.astype(np.complex128)))
        else:
            same = g == w
        if not np.all(same):
            i = np.unravel_index(int(np.argmin(same.reshape(-1))), w.shape) if w.ndim else ()
            raise Mismatch(f"{where}: {int(np.size(same) - np.count_nonzero(same))} of "
                           f"{w.size} elements differ (exact comparison); at {i}: got "
                           f"{g[i]!r}, expected {w[i]!r}")
        return
    rtol, atol = bounds
    gc = g.astype(np.complex128)
    wc = w.astype(np.complex128)
    nan_w, nan_g = np.isnan(wc), np.isnan(gc)
    if np.any(nan_w != nan_g):
        i = np.unravel_index(int(np.argmax((nan_w != nan_g).reshape(-1))), w.shape)
        raise Mismatch(f"{where}: NaN at {i} in one result only: got {g[i]!r}, "
                       f"expected {w[i]!r}")
    inf_w = np.isinf(wc)
    if np.any(inf_w) and not np.array_equal(gc[inf_w], wc[inf_w]):
        raise Mismatch(f"{where}: infinities differ")
    ok = ~(nan_w | inf_w)
    if not np.any(ok):
        return
    if np.any(np.isinf(gc[ok])):
        raise Mismatch(f"{where}: infinity where the oracle is finite")
    scale = max(1.0, float(np.max(np.abs(wc[ok]))))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(gc - wc)
    bound = atol * scale + rtol * np.abs(wc)
    bad = ok & (err > bound)
    if np.any(bad):
        i = np.unravel_index(int(np.argmax(np.where(ok, err / bound, 0).reshape(-1))),
                             w.shape) if w.ndim else ()
        raise Mismatch(f"{where}: {int(np.count_nonzero(bad))} of {w.size} elements "
                       f"outside rtol={rtol:g} atol={atol:g}*{scale:.3g}; worst at {i}: "
                       f"got {g[i]!r}, expected {w[i]!r}")


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, at most 300 characters."""
    text = str(exc).strip().splitlines()
    msg = text[0] if text else ""
    return f"{type(exc).__name__}: {msg}"[:300]


def run_case(case: Case, run_oracle: Callable[[Case, tuple], Any],
             run_oxla: Callable[[Case, tuple], Any], flatten: Callable[[Any], list],
             dtypes: Sequence[str], seed: int = 0, debug: bool = False,
             alt_oracle: Callable[[Case, tuple], Any] | None = None,
             max_variants: int | None = None) -> Result:
    """Runs every variant of ``case`` whose dtype is in ``dtypes``; the first failure
    decides the status.

    Args:
        case: the case.
        run_oracle: ``(case, args) -> outputs`` with the framework's compiler.
        run_oxla: ``(case, args) -> outputs`` through oxla.
        flatten: outputs -> list of leaves (the same pytree structure is checked).
        dtypes: the dtypes this process may run (x64 ones need their own process).
        seed: the random seed (the same inputs every run).
        debug: print tracebacks of oxla's errors.
        alt_oracle: a second oracle for the same framework (TensorFlow's XLA bridge,
            ``jit_compile=True``, next to its eager kernels): a result that differs from
            ``run_oracle`` but matches this one passes, with a ``note`` saying so.
        max_variants: run at most this many shape variants per dtype (the CI sample).
    """
    start = time.perf_counter()
    ran: list[str] = []
    res = Result(case.name, case.family, "skip", pending=case.pending)
    for dt in case.dtypes:
        if dt not in dtypes:
            continue
        rng = np.random.default_rng(seed)
        try:
            variants = list(case.make(rng, dt))[:max_variants]
        except Exception as exc:  # the case's own generator: a sweep bug
            res.status, res.reason = "oracle-error", f"inputs {dt}: {first_line(exc)}"
            break
        for vi, args in enumerate(variants):
            label = f"{dt} variant {vi} {_shapes(args)}"
            try:
                want = flatten(run_oracle(case, args))
            except Exception as exc:
                res.status, res.reason = "oracle-error", f"{label}: {first_line(exc)}"
                break
            try:
                got = flatten(run_oxla(case, args))
            except Exception as exc:
                if debug:
                    traceback.print_exc()
                res.status, res.reason = "error", f"{label}: {first_line(exc)}"
                xla_error = _raises(alt_oracle, case, args)
                if xla_error is not None:
                    res.status = "excluded"
                    res.reason = (f"{label}: the framework's own XLA compilation fails too "
                                  f"({xla_error}); oxla: {first_line(exc)}")
                break
            try:
                if len(got) != len(want):
                    raise Mismatch(f"{len(got)} results, expected {len(want)}")
                for k, (g, w) in enumerate(zip(got, want)):
                    compare(g, w, case.tol, f"result {k}")
            except Mismatch as exc:
                if alt_oracle is None or not _matches(alt_oracle, case, args, got, flatten):
                    res.status, res.reason = "fail", f"{label}: {exc}"
                    break
                res.note = (f"matches the framework's XLA compilation, not its eager "
                            f"kernels ({label}: {exc})")[:400]
        else:
            ran.append(dt)
            continue
        break
    else:
        res.status = "pass" if ran else "skip"
    res.dtypes = ran
    res.seconds = time.perf_counter() - start
    return res


def _raises(oracle: Callable[[Case, tuple], Any] | None, case: Case,
            args: tuple) -> str | None:
    """The first line of what ``oracle`` raises on ``args``, None when it runs (or when
    there is no oracle)."""
    if oracle is None:
        return None
    try:
        oracle(case, args)
    except Exception as exc:  # noqa: BLE001 - any failure counts
        return first_line(exc)
    return None


def _matches(oracle: Callable[[Case, tuple], Any], case: Case, args: tuple, got: list,
             flatten: Callable[[Any], list]) -> bool:
    try:
        want = flatten(oracle(case, args))
        if len(want) != len(got):
            return False
        for k, (g, w) in enumerate(zip(got, want)):
            compare(g, w, case.tol, f"result {k}")
    except Exception:  # noqa: BLE001 - any failure means: no match
        return False
    return True


def _shapes(args: tuple) -> str:
    return "(" + ", ".join("x".join(map(str, np.shape(a))) or "scalar" for a in args) + ")"


def summarize(results: Sequence[Result]) -> dict[str, Any]:
    """Counts per family and in total: ``{"total": {...}, "families": {fam: {...}}}``
    with ``pass``, ``fail`` (every non-pass, pending included), ``pending`` (failures of
    pending cases) and ``cases``; skipped cases are not counted, ``excluded`` ones
    (outside the framework's own XLA bridge, see :class:`Result`) are counted in
    ``total["excluded"]`` only."""
    fams: dict[str, dict[str, int]] = {}
    total = {"cases": 0, "pass": 0, "fail": 0, "pending": 0, "excluded": 0}
    for r in results:
        if r.status == "skip":
            continue
        if r.status == "excluded":
            total["excluded"] += 1
            continue
        f = fams.setdefault(r.family, {"cases": 0, "pass": 0, "fail": 0, "pending": 0})
        for d in (f, total):
            d["cases"] += 1
            if r.status == "pass":
                d["pass"] += 1
            else:
                d["fail"] += 1
                if r.pending:
                    d["pending"] += 1
    return {"total": total, "families": dict(sorted(fams.items()))}


def merge(per_process: Sequence[Sequence[Result]]) -> list[Result]:
    """One result per case from the runs of several processes (x64 and not): a case
    passes when every process that ran a variant of it passed."""
    out: dict[str, Result] = {}
    for results in per_process:
        for r in results:
            prev = out.get(r.name)
            if prev is None or prev.status == "skip":
                out[r.name] = r
            elif r.status == "skip":
                continue
            elif prev.status == "pass" and r.status != "pass":
                r.dtypes = prev.dtypes + r.dtypes
                out[r.name] = r
            else:
                prev.dtypes += r.dtypes
                prev.seconds += r.seconds
    return list(out.values())


# -- inputs ------------------------------------------------------------------------

def arr(rng: np.random.Generator, shape: tuple[int, ...], dt: str,
        kind: str = "normal") -> np.ndarray:
    """A random array of ``shape`` and dtype ``dt``.

    ``kind`` picks the domain: ``normal`` (floats N(0,1), integers in [-20, 20],
    unsigned in [0, 40]), ``pos`` ([0.1, 3]), ``unit`` ((-0.9, 0.9)), ``gt1`` ([1.1, 3]),
    ``small`` ([-3, 3] integers, shift amounts [0, 8)), ``prob`` ((0.02, 0.98)),
    ``bool``; complex dtypes get an imaginary part of the same kind.
    """
    d = np_dtype(dt)
    if d == np.bool_ or kind == "bool":
        return rng.random(shape) < 0.5 if d == np.bool_ else (rng.random(shape) < 0.5).astype(d)
    if d.kind in "iu":
        lo, hi = {"small": (0, 8) if d.kind == "u" else (-3, 4), "pos": (1, 20),
                  "shift": (0, 8)}.get(kind, (0, 41) if d.kind == "u" else (-20, 21))
        return rng.integers(lo, hi, size=shape).astype(d)

    def real() -> np.ndarray:
        if kind == "pos":
            return rng.uniform(0.1, 3.0, shape)
        if kind == "unit":
            return rng.uniform(-0.9, 0.9, shape)
        if kind == "gt1":
            return rng.uniform(1.1, 3.0, shape)
        if kind == "prob":
            return rng.uniform(0.02, 0.98, shape)
        if kind == "small":
            return rng.integers(-3, 4, size=shape).astype(np.float64)
        return rng.normal(size=shape)

    x = real()
    if d.kind == "c":
        x = x + 1j * real()
    return np.asarray(x).astype(d)


def ins(*variants: Any, kind: str | Sequence[str] = "normal") -> Make:
    """A ``make`` of random inputs: one variant per argument, each a shape tuple (one
    argument) or a list of shapes (several arguments); ``kind`` is one per argument or
    one for all (see :func:`arr`)."""
    def make(rng: np.random.Generator, dt: str) -> list[tuple[Any, ...]]:
        out = []
        for v in variants:
            shapes = list(v) if isinstance(v, list) else [v]
            kinds = [kind] * len(shapes) if isinstance(kind, str) else list(kind)
            out.append(tuple(arr(rng, tuple(s), dt, k) for s, k in zip(shapes, kinds)))
        return out
    return make


def spd(rng: np.random.Generator, shape: tuple[int, ...], dt: str) -> np.ndarray:
    """A random symmetric (Hermitian) positive definite matrix (batch) ``shape[-1]``
    square, well conditioned."""
    a = arr(rng, shape, dt)
    n = shape[-1]
    ah = np.conj(np.swapaxes(a, -1, -2))
    return (a @ ah + n * np.eye(n, dtype=a.dtype)).astype(a.dtype)
