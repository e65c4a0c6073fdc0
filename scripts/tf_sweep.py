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
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "sweep"))

import sweep_report  # noqa: E402
from sweep_common import summarize  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="cpu")
    p.add_argument("-k", dest="keyword", help="only cases whose name contains this")
    p.add_argument("--family", help="only families whose name contains this")
    p.add_argument("--sample", action="store_true", help="only the CI sample")
    p.add_argument("--json", type=Path, help="write every result here")
    p.add_argument("--markdown", type=Path, help="write the failure table here")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per case as it runs")
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
    summary = summarize(results)
    elapsed = time.perf_counter() - start
    print(sweep_report.text(results, summary, f"TF sweep on {a.backend}", elapsed))
    calls = {name: t for name, t in targets.items() if t}
    print("custom calls written by TensorFlow's bridge: "
          + ("; ".join(f"{n}: {', '.join(t)}" for n, t in calls.items()) or "none"))
    if a.json:
        a.json.write_text(json.dumps({"summary": summary, "seconds": round(elapsed, 1),
                                      "custom_calls": calls,
                                      "results": [r.to_json() for r in results]}, indent=1))
    if a.markdown:
        a.markdown.write_text(sweep_report.markdown(results, summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
