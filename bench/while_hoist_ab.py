"""A/B of ``while`` loop-invariant hoisting on the suite's loop workloads, against XLA.

Not a test. Each workload of ``suite_workloads.py`` named in ``--only`` is lowered once
by JAX and compiled by oxla twice in this process, with the cpu policy's
``hoist_invariants`` (loop-invariant kernels and GEMM weights packed once before the
loop, :mod:`oxla.lowering.control`) and with it returning nothing (the code before it);
every output is checked against XLA's. Then one interleaved run
(``timing.interleaved``) gives median wall times per call, and alternating blocks of
calls give the least CPU time per call (``time.process_time``, every thread of the
process) of each engine: on a shared machine the wall times mostly measure the other
processes, the CPU times less so; run with ``OXLA_NUM_THREADS=1`` and
``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"`` to
compare one thread each. Caveat, seen on a shared 2-core machine: with both oxla
executables alive in one process, oxla's wall times here read 2-3x those of
``bench/suite.py`` for the same workload (XLA's did not change), so read the
hoist/nohoist ratios here, and the ratio to XLA from ``suite.py``.

Usage::

    python bench/while_hoist_ab.py [--only lstm_scan,fori_elementwise] [--size large]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
from suite_workloads import workloads
from timing import interleaved


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="lstm_scan", help="comma-separated workload names")
    p.add_argument("--size", default="large", choices=("small", "large"))
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args(argv)

    import jax
    from oxla_backend_cpu import policy as cpu_policy
    from oxla_backend_cpu.backend import CPUBackend

    from oxla.ir import parse_module
    from oxla.protocols import CompileOptions

    by_name = {w[0]: w for w in workloads(a.size)}
    for name in a.only.split(","):
        _, fn, args = by_name[name]
        text = jax.jit(fn).lower(*args).as_text()
        hoist = cpu_policy.CPUPolicy.hoist_invariants
        exes = {}
        try:
            for label, rule in (("nohoist", lambda self, body, inv, counter: []),
                                ("hoist", hoist)):
                cpu_policy.CPUPolicy.hoist_invariants = rule
                exes[label] = CPUBackend().compile(parse_module(text, f"{name}.mlir"),
                                                   CompileOptions())
        finally:
            cpu_policy.CPUPolicy.hoist_invariants = hoist
        jf = jax.jit(fn)
        jargs = [jax.device_put(x) for x in args]
        want = [np.asarray(o) for o in jax.tree_util.tree_leaves(jf(*jargs))]
        for label, exe in exes.items():
            got = exe(*args)
            got = [np.asarray(o) for o in (got if isinstance(got, list | tuple) else [got])]
            for g, w in zip(got, want, strict=True):
                if not np.allclose(g, w, rtol=1e-4, atol=1e-5):
                    print(f"{name}: {label} disagrees with XLA", file=sys.stderr)
                    return 1
        calls = {"xla": lambda jf=jf, jargs=jargs: jf(*jargs).block_until_ready(),
                 "nohoist": lambda e=exes["nohoist"], args=args: e(*args),
                 "hoist": lambda e=exes["hoist"], args=args: e(*args)}
        t = interleaved(calls, rounds=a.rounds, budget_s=0.3, settle_s=0.05)
        wall = {k: statistics.median(v) for k, v in t.items()}
        reps = max(3, int(0.3 / max(wall.values())))
        cpu: dict[str, list[float]] = {k: [] for k in calls}
        for _ in range(a.rounds):
            for k, call in calls.items():
                call()
                c0 = time.process_time()
                for _ in range(reps):
                    call()
                cpu[k].append((time.process_time() - c0) / reps)
        least = {k: min(v) for k, v in cpu.items()}
        print(f"{name}/{a.size} (load {os.getloadavg()[0]:.2f}, "
              f"{os.environ.get('OXLA_NUM_THREADS', 'all')} oxla threads)")
        print("  wall ms: " + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in wall.items()) +
              f"; hoist/xla {wall['hoist'] / wall['xla']:.2f}, "
              f"hoist/nohoist {wall['hoist'] / wall['nohoist']:.2f}")
        print("  cpu ms:  " + ", ".join(f"{k} {v * 1e3:.3f}" for k, v in least.items()) +
              f"; hoist/xla {least['hoist'] / least['xla']:.2f}, "
              f"hoist/nohoist {least['hoist'] / least['nohoist']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
