#!/usr/bin/env python
"""The full TensorFlow API sweep: every case of ``tests/sweep/tf_sweep_cases.py``
through ``oxla_frontend_tf.compile(fn, inputs, backend=...)`` (TensorFlow's StableHLO
bridge, then oxla) against TensorFlow's own eager result.

Prints one line per non-passing case, the counts per family and in total, and the
custom calls TensorFlow's bridge wrote for any case; ``--json`` writes every result,
``--markdown`` the failure table of ``docs/tf_sweep.md``.

    .venv/bin/python scripts/tf_sweep.py --json tf_sweep.json     # about 5 min, 2 cores
    .venv/bin/python scripts/tf_sweep.py --family linalg -v
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "sweep"))

import sweep_report  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sweep_report.add_arguments(p)
    a = p.parse_args(argv)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tf_sweep_run as run

    cases = [c for c in run.all_cases() if (not a.keyword or a.keyword in c.name)
             and (not a.family or a.family in c.family)]
    if a.sample:
        cases = run.sample(cases)
    start = time.perf_counter()
    targets: dict[str, list[str]] = {}
    results = run.run_cases(cases, a.backend, progress=a.verbose, targets=targets)
    calls = {name: t for name, t in targets.items() if t}
    sweep_report.finish(a, results, f"TF sweep on {a.backend}", time.perf_counter() - start,
                        {"custom_calls": calls})
    print("custom calls written by TensorFlow's bridge: "
          + ("; ".join(f"{n}: {', '.join(t)}" for n, t in calls.items()) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
