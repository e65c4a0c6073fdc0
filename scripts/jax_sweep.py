#!/usr/bin/env python
"""The full JAX API sweep: every case of ``tests/sweep/jax_cases_*.py`` through
``oxla_frontend_jax.jit(f, backend=...)`` against ``jax.jit`` on XLA:CPU.

The f32/bf16/c64/int32 variants run in this process, the f64/c128/int64 ones in a
child process with ``JAX_ENABLE_X64=1``; a case passes when all its variants do.
Prints one line per non-passing case, the counts per family and in total, and writes
every result as JSON with ``--json``. ``--markdown`` writes the failure table of
``docs/jax_sweep.md``.

    .venv/bin/python scripts/jax_sweep.py --json sweep.json        # about 10 min, 2 cores
    .venv/bin/python scripts/jax_sweep.py -k linalg --family scipy
    .venv/bin/python scripts/jax_sweep.py --jobs 2                 # both processes at once
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "sweep"))

import sweep_report  # noqa: E402
from sweep_common import Result, merge  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweep_report.add_arguments(p)
    p.add_argument("--jobs", type=int, default=1, choices=(1, 2),
                   help="2: run the x64 process alongside (default 1: one after the other)")
    p.add_argument("--no-x64", action="store_true", help="skip the x64 process")
    a = p.parse_args(argv)

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax_sweep_run as run

    cases = run.select(run.all_cases(), a.keyword, a.family)
    if a.sample:
        cases = run.sample(cases)
    names = [c.name for c in cases]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="oxla-jax-sweep-") as tmp:
        out64 = Path(tmp) / "x64.json"
        child = None
        cmd = [sys.executable, str(run.HERE / "jax_sweep_run.py"), "--x64", "--backend",
               a.backend, "--json", str(out64), "--names", ",".join(names)]
        env = dict(os.environ, JAX_ENABLE_X64="1")
        if a.verbose:
            cmd.append("--progress")
        if not a.no_x64 and a.jobs == 2:
            child = subprocess.Popen(cmd, env=env)
        results32 = run.run_cases(cases, a.backend, x64=False, progress=a.verbose)
        results64: list[Result] = []
        if not a.no_x64:
            if child is None:
                child = subprocess.Popen(cmd, env=env)
            if child.wait() != 0:
                print(f"error: the x64 process failed (exit {child.returncode})",
                      file=sys.stderr)
                return 1
            results64 = [Result(**r) for r in json.loads(out64.read_text())]
    results = merge([results32, results64])
    sweep_report.finish(a, results, f"JAX sweep on {a.backend}", time.perf_counter() - start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
