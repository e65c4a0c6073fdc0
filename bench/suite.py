"""The broad StableHLO suite: oxla ``cpu`` vs XLA:CPU and IREE on >= 40 JAX workloads.

Not a test. Every workload of ``suite_workloads.py`` (dots of every layout and dtype,
convolutions, reductions, cumulative ops, sort/top-k, gather/scatter, loops, attention,
normalizations, elementwise and layout ops, fft, rng), at a small and a large size, is
lowered once with ``jax.jit(f).lower(*args).as_text()``; that one text is compiled by
each engine (the engine wrappers of ``cpu_vs_xla.py``: oxla with its cache off, XLA
through jaxlib, IREE ``llvm-cpu`` when ``iree-base-compiler``/``iree-base-runtime`` are
installed). Every output is checked against XLA's (the anchor); an engine whose outputs
disagree is marked ``MISMATCH`` and, for IREE, left out of the best anchor. Timing is one
interleaved run (``timing.interleaved``: engines take turns in rounds, so drift hits all
alike); figures are median per-call times, reported as ratios oxla / best anchor (the
faster of XLA and IREE) in the same run. The table ends with the geomean, the count of
workloads above 1.2x, and the largest compile-time ratio oxla / XLA.

The machine may be shared: ratios, not absolute times, are the figures to read.

Usage::

    python bench/suite.py [--quick] [--sizes small,large] [--only NAME,...]
                          [--rounds N] [--json OUT.json] [--no-iree]

``--quick``: the small size only, fewer rounds.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import numpy as np
from cpu_vs_xla import Workload, _iree, _oxla, _oxla_runtime_build, _xla
from suite_workloads import workloads
from timing import interleaved


def _host(outs) -> list[np.ndarray]:
    if not isinstance(outs, list | tuple):
        outs = [outs]
    return [np.asarray(o) for o in outs]


def _check(ref: list[np.ndarray], got: list[np.ndarray], tol: float) -> tuple[bool, float]:
    """Whether ``got`` matches ``ref``: exact for integers and booleans, else the largest
    error relative to the largest reference magnitude within ``tol`` (NaNs must agree)."""
    if len(ref) != len(got):
        return False, math.inf
    worst = 0.0
    for a, b in zip(ref, got):
        if a.shape != b.shape:
            return False, math.inf
        if a.dtype.kind in "iub" or a.dtype == np.uint32:
            if not np.array_equal(a, b):
                return False, 1.0
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        if not np.array_equal(np.isnan(a64), np.isnan(b64)):
            return False, math.inf
        ok = ~np.isnan(a64)
        if not ok.any():
            continue
        fin = ok & np.isfinite(a64)
        if not np.array_equal(a64[ok & ~fin], b64[ok & ~fin]):
            return False, math.inf
        scale = float(np.max(np.abs(a64[fin]))) if fin.any() else 1.0
        err = float(np.max(np.abs(a64[fin] - b64[fin]))) if fin.any() else 0.0
        worst = max(worst, err / (scale or 1.0))
    return worst <= tol, worst


def _tol(args: list[np.ndarray]) -> float:
    low = any(a.dtype.itemsize == 2 and a.dtype.kind == "f" or a.dtype.name == "bfloat16"
              for a in args)
    return 2e-2 if low else 2e-4


def run(sizes: list[str], rounds: int, only: set[str] | None, use_iree: bool,
        budget: float) -> dict:
    import jax

    res: dict = {"sizes": sizes, "rounds": rounds, "cpu_count": os.cpu_count(),
                 "load_avg_start": os.getloadavg(), "jax": jax.__version__, "rows": []}
    try:
        import iree.compiler

        res["iree"] = getattr(iree.compiler, "__version__", "installed")
    except ImportError:
        res["iree"] = None
    with tempfile.TemporaryDirectory() as cache_dir:
        warm = Workload("warm", lambda a, b: a + b, [np.ones(4, np.float32)] * 2)
        warm.text = jax.jit(warm.fn).lower(*warm.args).as_text()
        _oxla(warm, cache_dir)
        _xla(warm)
        res["oxla_runtime_build_s"] = _oxla_runtime_build()
        for size in sizes:
            for name, fn, args in workloads(size):
                if only and name not in only:
                    continue
                row = _one(f"{name}/{size}", fn, args, rounds, budget, use_iree, cache_dir)
                res["rows"].append(row)
                print(_line(row), flush=True)
    res["load_avg_end"] = os.getloadavg()
    _summary(res)
    return res


def _one(name: str, fn, args, rounds: int, budget: float, use_iree: bool,
         cache_dir: str) -> dict:
    import jax

    w = Workload(name, fn, args)
    w.text = jax.jit(fn, keep_unused=True).lower(*args).as_text()
    engines = {"oxla": _oxla(w, cache_dir), "xla": _xla(w)}
    if use_iree:
        engines["iree"] = _iree(w)
    row: dict = {"name": name, "compile_s": {}, "notes": {}, "err": {}, "median_s": {}}
    ref = _host(engines["xla"].call())
    tol = _tol(args)
    calls = {}
    for k, e in engines.items():
        row["compile_s"][k] = e.compile_s if e.call else None
        if e.call is None:
            row["notes"][k] = e.note
            continue
        if k != "xla":
            try:
                ok, err = _check(ref, _host(e.call()), tol)
            except Exception as exc:  # noqa: BLE001 - reported in the table
                ok, err = False, math.inf
                row["notes"][k] = f"call failed: {str(exc).splitlines()[0][:80]}"
            row["err"][k] = err
            if not ok:
                row["notes"].setdefault(k, f"MISMATCH (rel err {err:.1e})")
                if k != "oxla":
                    continue
        calls[k] = e.call
    times = interleaved(calls, rounds, budget, 0.05, max_calls=200)
    row["median_s"] = {k: statistics.median(v) for k, v in times.items()}
    anchors = {k: v for k, v in row["median_s"].items() if k != "oxla"}
    if "oxla" in row["median_s"] and "MISMATCH" not in row["notes"].get("oxla", ""):
        best = min(anchors, key=anchors.get)
        row["best_anchor"] = best
        row["ratio_best"] = row["median_s"]["oxla"] / anchors[best]
        row["ratio_xla"] = row["median_s"]["oxla"] / anchors["xla"]
    cs = row["compile_s"]
    if cs.get("oxla") and cs.get("xla"):
        row["compile_ratio_xla"] = cs["oxla"] / cs["xla"]
    return row


def _line(row: dict) -> str:
    def ratio(k):
        if k in row["notes"]:
            return row["notes"][k][:28]
        v = row.get(k)
        return f"{v:6.2f}x" if v is not None else "-"
    med = row["median_s"]
    iree = (f"{med['iree'] / med['xla']:6.2f}x" if "iree" in med and "xla" in med
            else row["notes"].get("iree", "-")[:28])
    cr = row.get("compile_ratio_xla")
    return (f"{row['name']:28s} oxla/best {ratio('ratio_best'):>8s}  oxla/xla "
            f"{ratio('ratio_xla'):>8s}  iree/xla {iree:>8s}  compile oxla/xla "
            f"{(f'{cr:5.2f}x' if cr else '  -  ')}  xla {med.get('xla', 0) * 1e3:.3f} ms")


def _summary(res: dict) -> None:
    rs = [r["ratio_best"] for r in res["rows"] if "ratio_best" in r]
    g = math.exp(statistics.mean(map(math.log, rs))) if rs else None
    gx = [r["ratio_xla"] for r in res["rows"] if "ratio_xla" in r]
    res["geomean_oxla_over_best"] = g
    res["geomean_oxla_over_xla"] = math.exp(statistics.mean(map(math.log, gx))) if gx else None
    res["above_1.2"] = sorted((r["name"], round(r["ratio_best"], 2)) for r in res["rows"]
                              if r.get("ratio_best", 0) > 1.2)
    res["failed_or_mismatch"] = [(r["name"], r["notes"]["oxla"]) for r in res["rows"]
                                 if "oxla" in r["notes"]]
    comp = [(r["compile_ratio_xla"], r["name"]) for r in res["rows"]
            if "compile_ratio_xla" in r]
    res["largest_compile_ratio"] = max(comp) if comp else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small size only, fewer rounds")
    p.add_argument("--sizes", default=None, help="comma-separated: small,large")
    p.add_argument("--only", default=None, help="comma-separated workload names")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--no-iree", action="store_true", help="XLA as the only anchor")
    p.add_argument("--json", default=None, help="write results here")
    a = p.parse_args(argv)
    sizes = a.sizes.split(",") if a.sizes else (["small"] if a.quick else ["small", "large"])
    rounds = a.rounds or (2 if a.quick else 3)
    budget = 0.03 if a.quick else 0.1
    print(f"latency ratios (median, same interleaved run; <1 = oxla faster); "
          f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus", flush=True)
    t0 = time.perf_counter()
    res = run(sizes, rounds, set(a.only.split(",")) if a.only else None, not a.no_iree,
              budget)
    res["wall_s"] = time.perf_counter() - t0
    g, gx = res["geomean_oxla_over_best"], res["geomean_oxla_over_xla"]
    n = sum("ratio_best" in r for r in res["rows"])
    print(f"geomean oxla/best anchor over {n} workloads: " + (f"{g:.2f}x" if g else "-"))
    print("geomean oxla/xla: " + (f"{gx:.2f}x" if gx else "-"))
    print(f"above 1.2x ({len(res['above_1.2'])}): "
          + ", ".join(f"{k} {v}x" for k, v in res["above_1.2"]))
    if res["failed_or_mismatch"]:
        print("oxla failed or mismatched: "
              + "; ".join(f"{k}: {v}" for k, v in res["failed_or_mismatch"]))
    if res["largest_compile_ratio"]:
        cr, nm = res["largest_compile_ratio"]
        print(f"largest first-compile ratio oxla/xla: {cr:.2f}x ({nm})")
    print(f"load average at end: {res['load_avg_end'][0]:.2f}; wall {res['wall_s']:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
