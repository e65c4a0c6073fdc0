"""First-compile time in a fresh process, caches off: oxla cpu vs XLA:CPU on one text.

Not a test. Each chosen workload of ``suite_workloads.py`` is lowered once with JAX;
its StableHLO text is then compiled in fresh processes, one compile per process, by:

* ``oxla``: ``CompileOptions(cache=False)`` with the installed runtime library
  (``python -m oxla_backend_cpu.prebuild``, see :mod:`oxla_backend_cpu.rtlib`);
* ``oxla-nolib``: the same with ``OXLA_RUNTIME_DIR=off`` (the runtime objects and FFT
  passes built by LLVM in the process, as before the library);
* ``xla``: jaxlib's ``compile_and_load`` of the same text (no persistent cache).

Each process imports its framework and loads its cpu backend (XLA's client; oxla's
``cpu`` plugin, as ``oxla.plugins.get_backend``) and sleeps 0.3 s (numpy's OpenBLAS
worker spins ~60 ms after import: CPU time a compile started at once was charged with)
before the clock starts, then times
the one compile (parse included; modules the compile imports on first use included): CPU time (``time.process_time``, all threads) and
wall time. oxla's sources are byte-compiled first (``compileall``, as an installed
package is; with ``PYTHONDONTWRITEBYTECODE`` set, every fresh process would otherwise
compile ~30 modules from source at its first compile, ~0.1-0.2 s that XLA, a compiled
library, does not have). Rounds are interleaved (every engine once per workload per round); figures
are medians. Ratios are against XLA in the same run.

Usage::

    python bench/first_compile.py [--only NAME/SIZE,...] [--rounds N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

DEFAULT = ("dot_f32_nn/small", "ew_chain_bcast/small", "gelu/large", "softmax_rows/small",
           "dot_int8/small", "conv_nhwc/small", "rfft/small", "rfft/large")

CHILD = r"""
import json, os, sys, time
text = open(sys.argv[2]).read()
def settle():
    # numpy's OpenBLAS starts a worker at import that spins ~60 ms (measured: 0.06 s
    # of CPU over a 0.3 s sleep right after `import numpy`, none later); a compile timed
    # just after the imports would be charged for it. Users compile long after import.
    time.sleep(0.3)
if sys.argv[1] == "xla":
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc
    backend = xb.get_backend("cpu")
    dev = backend.local_devices()[0]
    settle()
    c0, w0 = time.process_time(), time.perf_counter()
    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(text)
        backend.compile_and_load(module, executable_devices=xc.DeviceList((dev,)),
                                 compile_options=xc.CompileOptions())
    extra = {}
else:
    import oxla
    import oxla.ir
    from oxla import plugins
    plugins.get_backend("cpu")  # the backend loaded, as XLA's client above
    settle()
    c0, w0 = time.process_time(), time.perf_counter()
    oxla.compile(text, backend="cpu", cache=False)
    from oxla_backend_cpu import fft_lib, rtlib
    from oxla_codegen_llvm import jit
    extra = {"library": rtlib.STATS, "runtime_builds": jit.STATS["runtime_builds"],
             "fft_builds": fft_lib.STATS["builds"]}
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0,
                  **extra}))
"""


def _lower(names: list[str], out: str) -> dict[str, str]:
    import jax

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from suite_workloads import workloads

    paths = {}
    for size in sorted({n.split("/")[1] for n in names}):
        for name, fn, args in workloads(size):
            key = f"{name}/{size}"
            if key in names:
                path = os.path.join(out, key.replace("/", "-") + ".mlir")
                with open(path, "w") as f:
                    f.write(jax.jit(fn).lower(*args).as_text())
                paths[key] = path
    missing = set(names) - set(paths)
    if missing:
        raise SystemExit(f"unknown workloads: {sorted(missing)}")
    return paths


def _run(engine: str, path: str) -> dict:
    env = dict(os.environ)
    if engine == "oxla-nolib":
        env["OXLA_RUNTIME_DIR"] = "off"
    env["OXLA_CACHE_DIR"] = tempfile.mkdtemp(prefix="oxla-fc-")  # never read: cache off
    kind = "xla" if engine == "xla" else "oxla"
    p = subprocess.run([sys.executable, "-c", CHILD, kind, path], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(DEFAULT))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    names = args.only.split(",")
    import compileall

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for sub in ("core", "cli", "extensions"):
        compileall.compile_dir(os.path.join(root, sub), quiet=1)
    engines = ("oxla", "oxla-nolib", "xla")
    with tempfile.TemporaryDirectory() as d:
        paths = _lower(names, d)
        runs: dict = {n: {e: [] for e in engines} for n in names}
        for _ in range(args.rounds):
            for n in names:
                for e in engines:
                    runs[n][e].append(_run(e, paths[n]))
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} fresh processes")
    print(f"{'workload':24s} {'oxla cpu':>9s} {'nolib cpu':>9s} {'xla cpu':>8s} "
          f"{'oxla/xla':>8s} {'nolib/xla':>9s} {'oxla/xla wall':>13s}  built")
    rows = []
    for n in names:
        med = {e: {k: statistics.median(r[k] for r in runs[n][e]) for k in ("cpu", "wall")}
               for e in engines}
        last = runs[n]["oxla"][-1]
        built = f"rt {last['runtime_builds']} fft {last['fft_builds']}"
        x = med["xla"]
        print(f"{n:24s} {med['oxla']['cpu']:9.3f} {med['oxla-nolib']['cpu']:9.3f} "
              f"{x['cpu']:8.3f} {med['oxla']['cpu'] / x['cpu']:8.2f} "
              f"{med['oxla-nolib']['cpu'] / x['cpu']:9.2f} "
              f"{med['oxla']['wall'] / x['wall']:13.2f}  {built}")
        rows.append({"name": n, "median": med, "runs": runs[n]})
    worst = max(rows, key=lambda r: r["median"]["oxla"]["cpu"] / r["median"]["xla"]["cpu"])
    print(f"largest oxla/xla (cpu): {worst['median']['oxla']['cpu'] / worst['median']['xla']['cpu']:.2f}x "
          f"({worst['name']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load_average": os.getloadavg(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
