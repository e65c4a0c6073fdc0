"""Running the JAX sweep: each case through ``jax.jit`` (XLA:CPU, the oracle) and
``oxla_frontend_jax.jit(f, backend=...)``, in this process or in a subprocess with
``jax_enable_x64`` (process-wide in JAX, so f64/c128/i64 variants run apart).

``python jax_sweep_run.py --x64 --json OUT [--sample] [-k SUBSTR]`` is that subprocess:
it writes the results as JSON. ``scripts/jax_sweep.py`` and ``test_jax_sweep.py`` call it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_common import NP_DTYPES, X64_DTYPES, Case, Result, run_case

HERE = Path(__file__).resolve().parent


def all_cases() -> list[Case]:
    """Every case of the JAX sweep, in table order (names are unique)."""
    import jax_cases_lax
    import jax_cases_linalg
    import jax_cases_nn
    import jax_cases_numpy

    cases = (jax_cases_numpy.CASES + jax_cases_linalg.CASES + jax_cases_lax.CASES
             + jax_cases_nn.CASES)
    names = [c.name for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {sorted(dup)}"
    return cases


def sample(cases: Sequence[Case], every: int = 4) -> list[Case]:
    """The CI sample: every ``every``-th case of each family (its first one included),
    so each family is covered, plus cases marked ``sample=True``."""
    seen: dict[str, int] = {}
    out = []
    for c in cases:
        i = seen.get(c.family, 0)
        seen[c.family] = i + 1
        if i % every == 0 or c.sample:
            out.append(c)
    return out


def select(cases: Sequence[Case], keyword: str | None = None,
           family: str | None = None) -> list[Case]:
    """Cases whose name contains ``keyword`` and whose family contains ``family``."""
    return [c for c in cases if (not keyword or keyword in c.name)
            and (not family or family in c.family)]


def process_dtypes(x64: bool) -> list[str]:
    """The dtypes this process runs: the x64 ones with ``jax_enable_x64``, else the rest."""
    return [d for d in NP_DTYPES if (d in X64_DTYPES) == x64]


def run_cases(cases: Sequence[Case], backend: str = "cpu", x64: bool = False,
              debug: bool = False, progress: bool = False,
              max_variants: int | None = None) -> list[Result]:
    """Runs ``cases`` in this process (whose ``jax_enable_x64`` must equal ``x64``);
    ``max_variants`` shape variants per dtype at most (all by default)."""
    import jax
    import numpy as np
    import oxla_frontend_jax as oj

    if bool(jax.config.jax_enable_x64) != x64:
        raise RuntimeError(f"jax_enable_x64 is {jax.config.jax_enable_x64}, expected {x64}")

    def oracle(case: Case, args: tuple) -> Any:
        return jax.jit(case.fn)(*args)

    def ours(case: Case, args: tuple) -> Any:
        return oj.jit(case.fn, backend=backend, return_numpy=True)(*args)

    def flatten(out: Any) -> list:
        return [np.asarray(x) for x in jax.tree_util.tree_leaves(out)]

    dtypes = process_dtypes(x64)
    results = []
    for c in cases:
        r = run_case(c, oracle, ours, flatten, dtypes, debug=debug, max_variants=max_variants)
        jax.clear_caches()  # the jitted executables of this case are not needed again
        if progress:
            print(f"{r.status:>12} {r.seconds:6.2f}s {c.name} {r.reason}", file=sys.stderr,
                  flush=True)
        results.append(r)
    return results


def run_x64_subprocess(names: Sequence[str] | None, backend: str, out: Path,
                       timeout: float | None = None, progress: bool = False,
                       max_variants: int | None = None) -> list[Result]:
    """Runs the named cases (all when ``None``) in a child process with
    ``JAX_ENABLE_X64=1`` and returns its results."""
    cmd = [sys.executable, str(HERE / "jax_sweep_run.py"), "--x64", "--backend", backend,
           "--json", str(out)]
    if names is not None:
        cmd += ["--names", ",".join(names)]
    if progress:
        cmd.append("--progress")
    if max_variants is not None:
        cmd += ["--max-variants", str(max_variants)]
    env = dict(os.environ, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    subprocess.run(cmd, check=True, env=env, timeout=timeout)
    return [Result(**r) for r in json.loads(out.read_text())]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--x64", action="store_true", help="run the x64 dtypes (needs "
                   "JAX_ENABLE_X64=1 in the environment)")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--names", help="comma-separated case names")
    p.add_argument("--json", required=True, type=Path)
    p.add_argument("--progress", action="store_true")
    p.add_argument("--max-variants", type=int)
    a = p.parse_args(argv)
    cases = all_cases()
    if a.names:
        wanted = set(a.names.split(","))
        cases = [c for c in cases if c.name in wanted]
    results = run_cases(cases, a.backend, a.x64, progress=a.progress,
                        max_variants=a.max_variants)
    a.json.write_text(json.dumps([r.to_json() for r in results]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
