"""Differential check of the default pipeline against the reference interpreter.

For every conformance program (``interpret/*.mlir`` split at ``// -----`` and
``testdata/**/*.mlir``) the interpreter runs the entry function before and after the
``default`` pipeline: integer and boolean results must be bitwise identical, float
results must pass the program's own ``check.*`` ops. Programs the interpreter cannot
run before the pipeline are counted as skipped.

Usage: ``python bench/passes_differential.py [--limit N] [--every K]``
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "stablehlo"


@dataclass
class Stats:
    run: int = 0
    identical: int = 0
    skipped: int = 0
    ops_before: int = 0
    ops_after: int = 0
    mismatches: list[str] = field(default_factory=list)


def programs(root: Path = ROOT) -> list[tuple[str, str]]:
    """(name, text) of every program, in a deterministic order."""
    from oxla.ir import split_input_file

    out = []
    for path in sorted((root / "interpret").rglob("*.mlir")):
        for i, (chunk, _offset) in enumerate(split_input_file(path.read_text())):
            out.append((f"{path.relative_to(root)}#{i}", chunk))
    for path in sorted((root / "testdata").rglob("*.mlir")):
        out.append((str(path.relative_to(root)), path.read_text()))
    return out


def _run(text: str, name: str, pipeline: str | None):
    from oxla.interpreter import Context, run_function
    from oxla.ir import parse_module
    from oxla.passes import run_pipeline

    module = parse_module(text, name)
    n_ops = sum(1 for _ in module.walk())
    if pipeline is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_pipeline(module, pipeline, verify_each=True)
    ctx = Context(module=module)
    funcs = [f for f in module.functions]
    results = run_function(module, None, [], ctx) if funcs else []
    return results, [str(f.message) for f in ctx.failures], n_ops, sum(1 for _ in module.walk())


def _same(a, b) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if not isinstance(a, np.ndarray):
        return True  # tokens
    if a.dtype.kind in "biu":
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
    return a.shape == b.shape  # floats: the program's own checks decide


def check(items: list[tuple[str, str]], pipeline: str = "default") -> Stats:
    stats = Stats()
    for name, text in items:
        try:
            before, fails_before, n0, _ = _run(text, name, None)
        except Exception:  # noqa: BLE001 - not runnable by the interpreter (yet)
            stats.skipped += 1
            continue
        stats.run += 1
        try:
            after, fails_after, _, n1 = _run(text, name, pipeline)
        except Exception as exc:  # noqa: BLE001
            stats.mismatches.append(f"{name}: {type(exc).__name__}: {exc}".splitlines()[0])
            continue
        stats.ops_before += n0
        stats.ops_after += n1
        if _same(before, after) and len(fails_after) <= len(fails_before):
            stats.identical += 1
        else:
            stats.mismatches.append(f"{name}: results differ ({fails_after[:2]})")
    return stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=1, help="take every K-th program")
    ap.add_argument("--limit", type=int, default=0, help="at most N programs")
    args = ap.parse_args()
    items = programs()[:: args.every]
    if args.limit:
        items = items[: args.limit]
    t0 = time.perf_counter()
    s = check(items)
    print(
        f"programs: {len(items)}  run: {s.run}  identical: {s.identical}  "
        f"skipped (interpreter cannot run before): {s.skipped}  "
        f"ops before/after: {s.ops_before}/{s.ops_after}  {time.perf_counter() - t0:.1f}s"
    )
    for m in s.mismatches:
        print("  MISMATCH", m)
    sys.exit(1 if s.mismatches else 0)


if __name__ == "__main__":
    main()
