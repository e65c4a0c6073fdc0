"""The conformance sweep of the SIMT kernels on the host twin (a script, not a test).

``python -m oxla_codegen_llvm.simt.sweep ../shared/conformance/stablehlo [--limit N]
[--filter WORD] [--json OUT]`` runs every test file through :class:`TwinBackend` (the
:class:`~oxla_codegen_llvm.simt.harness.SimtPolicy` plan, every kernel from
:func:`~oxla_codegen_llvm.simt.kernels_for`, run on the :class:`HostTwin`, control flow
on the host) with oxla's conformance runner, one file at a time in this process (a
timeout per file), and prints the counts and the kinds that have no GPU kernel yet.
With ``--ptx`` each compiled program's kernels also go through ``to_ptx`` and ptxas for
sm_80 and sm_90 (slow: one ptxas run per program and arch).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import signal
import sys
import time
from pathlib import Path

import numpy as np

from oxla.conformance import discover, run_file
from oxla.interpreter.engine import storage_dtype
from oxla.ir import Module, func_type
from oxla.lowering import pipeline
from oxla.protocols import CompileOptions
from oxla_codegen_llvm.simt.harness import SimtPolicy, gpu_kernels, run_plan
from oxla_codegen_llvm.simt.host import HostTwin
from oxla_codegen_llvm.simt.nvptx import check_ptx, to_ptx

CHECK_PTX = False


class TwinExecutable:
    """A compiled program on the host twin: ``exe(*arrays) -> list of arrays``."""

    def __init__(self, module: Module):
        ft = func_type(module.main)
        self.results = list(ft.results)
        c = pipeline.Compilation(module, SimtPolicy(), None, CompileOptions())
        for stage in pipeline.TARGET_FREE:
            stage.run(c)
        assert c.plan is not None
        self.plan = c.plan
        self.gpu = gpu_kernels(self.plan)
        kernels = [g for gs in self.gpu.values() for g in gs]
        self.twin = HostTwin(kernels) if kernels else None
        if CHECK_PTX and kernels:
            for arch in ("sm_80", "sm_90"):
                check_ptx(to_ptx(kernels, arch), arch)

    def __call__(self, *args):
        twin = self.twin
        raw = run_plan(self.plan, [np.asarray(a) for a in args],
                       lambda k, a: twin.launch(k.name, k.grid, k.block, k.shared_bytes, a),
                       self.gpu)
        out = []
        for data, t in zip(raw, self.results):
            dt = storage_dtype(t)
            shape = tuple(t.shape)
            n = int(np.prod(shape)) * dt.itemsize
            out.append(data[:n].view(dt).reshape(shape).copy())
        return out


class TwinBackend:
    """What the conformance runner asks of a backend."""

    name = "simt-twin"

    def compile(self, module: Module, options: CompileOptions | None = None) -> TwinExecutable:
        return TwinExecutable(module)


def install() -> None:
    """Makes ``oxla.plugins.get_backend("simt-twin")`` the :class:`TwinBackend` (once)."""
    import oxla.plugins as plugins

    if getattr(plugins.get_backend, "oxla_simt_twin", False):
        return
    real = plugins.get_backend

    def get_backend(name: str):
        return TwinBackend() if name == TwinBackend.name else real(name)

    get_backend.oxla_simt_twin = True  # type: ignore[attr-defined]
    plugins.get_backend = get_backend


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


_KIND = re.compile(r"'([a-z_.]+)'[^'\n]*?(?:has no GPU kernel|not supported)")


def main(argv: list[str] | None = None) -> int:
    global CHECK_PTX
    ap = argparse.ArgumentParser(prog="python -m oxla_codegen_llvm.simt.sweep")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--filter", default="")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--json", default="")
    ap.add_argument("--ptx", action="store_true")
    args = ap.parse_args(argv)
    CHECK_PTX = args.ptx
    install()
    files = [str(p) for p in discover(args.paths) if args.filter in str(p)]
    if args.limit:
        files = files[:args.limit]
    counts: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    rows = []
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.perf_counter()
    for i, path in enumerate(files):
        signal.alarm(args.timeout)
        try:
            res = run_file(path, TwinBackend.name)
            status, msg = res.status, res.message or "; ".join(
                m for f in res.functions for m in f.messages)[:300]
        except _Timeout:
            status, msg = "timeout", ""
        finally:
            signal.alarm(0)
        counts[status] += 1
        if status != "pass":
            m = _KIND.search(msg)
            kinds[m.group(1) if m else status + ": " + msg[:80]] += 1
        rows.append({"path": path, "status": status, "message": msg})
        if (i + 1) % 100 == 0:
            print(f"{i + 1}/{len(files)} {dict(counts)}", file=sys.stderr, flush=True)
    dt = time.perf_counter() - t0
    print(f"simt host twin: {counts['pass']} of {len(files)} files pass "
          f"({dict(counts)}) in {dt:.0f} s")
    for k, n in kinds.most_common(40):
        print(f"  {n:5d}  {k}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
