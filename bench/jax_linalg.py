"""``jnp.linalg.solve`` and ``cholesky`` through ``oxla_frontend_jax.jit(backend="cpu")``
vs ``jax.jit`` (XLA:CPU with jaxlib's LAPACK kernels), f32.

Not a test. Workloads: a 512x512 system (``solve`` with 512x512 right-hand sides: getrf
+ two trsm; ``cholesky``: potrf) and a batch of 64 32x32 ones. Both engines run the
same LAPACK (scipy's, which jaxlib binds too); oxla calls it from the compiled program
through oxla-lapack's compiled XLA FFI handlers (the batch loop in C, one LAPACK call per
matrix; ``OXLA_LAPACK_NATIVE=0`` measures the Python host kernels instead).

Outputs are checked first (max relative error vs jax). Timing is one interleaved run
(``bench/timing.py``): each round gives every engine a pause, an untimed call, then a
block of timed calls; the figure is the median per-call time, reported as oxla / jax
(below 1: oxla is faster). The machine is shared, so only the ratio means anything.

Usage::

    python bench/jax_linalg.py [--rounds N] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from timing import interleaved  # noqa: E402


def _workloads() -> dict[str, tuple]:
    import jax.numpy as jnp

    rng = np.random.default_rng(0)

    def spd(shape: tuple[int, ...]) -> np.ndarray:
        a = rng.standard_normal(shape).astype(np.float32)
        n = shape[-1]
        return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n, dtype=np.float32)).astype(
            np.float32)

    out = {}
    for tag, shape in (("512x512", (512, 512)), ("64x32x32", (64, 32, 32))):
        a = spd(shape)
        b = rng.standard_normal(shape).astype(np.float32)
        out[f"solve {tag}"] = (jnp.linalg.solve, (a, b))
        out[f"cholesky {tag}"] = (jnp.linalg.cholesky, (a,))
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--json", type=Path)
    args = p.parse_args()

    import jax
    import oxla_frontend_jax as oj

    report = {}
    for name, (f, xs) in _workloads().items():
        jf = jax.jit(f)
        of = oj.jit(f, backend="cpu")
        dev = [jax.device_put(x) for x in xs]
        ref = np.asarray(jf(*dev))
        got = np.asarray(of(*xs))
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
        calls = {"oxla": lambda of=of, xs=xs: of(*xs),
                 "jax": lambda jf=jf, dev=dev: jf(*dev).block_until_ready()}
        times = interleaved(calls, rounds=args.rounds, budget_s=0.2, settle_s=0.05)
        med = {k: statistics.median(v) for k, v in times.items()}
        ratio = med["oxla"] / med["jax"]
        report[name] = {"max_rel_error": err, "oxla_s": med["oxla"], "jax_s": med["jax"],
                        "ratio": ratio}
        print(f"{name:20s} oxla/jax = {ratio:5.2f}x  (oxla {med['oxla'] * 1e3:8.3f} ms, "
              f"jax {med['jax'] * 1e3:8.3f} ms; max rel error {err:.1e})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
