"""oxla cpu against another oxla checkout (two venvs), interleaved in one run.

Not a test. Answers "did a change make anything slower?" for the workloads of
``bench/cpu_vs_xla.py`` (the same StableHLO texts, lowered once by this venv's jax) and
``bench/torch_models.py`` (GPT-2 small and BERT-base from transformers configs, random
weights, the same seed in both; batches of ``--batches`` at sequence 128).

Per-call latency: each venv runs one long-lived worker process (``--worker``) that
compiles every workload once with its own oxla; the driver then times both workers in
``--rounds`` rounds, alternating which goes first, so load and turbo drift hit both
alike. Reported: per workload the median per-call latency ratio B / A. Outputs of both
are compared (relative max error).

First compile: ``--compile-rounds`` rounds, A and B alternating first; in each round
every workload is compiled once per venv in a *fresh* worker process with caches off
(``CompileOptions(cache=False)`` for texts and a fresh empty ``OXLA_CACHE_DIR`` for
everything, so no runtime object or kernel comes from disk). In that process the
smallest workload is compiled first (its time, which includes the once-per-process
runtime build, is the ``startup`` row), then the workload itself. Each compile is
measured as wall time and as CPU time (user+sys of the whole process, all threads,
``time.process_time``); the driver also reports the user+sys of the whole child
process, imports included (``os.wait4``). Ratios are of medians over the rounds. The
machine this runs on is usually shared: read the CPU-time ratios first, and repeat a
workload that fails a bound (``--only``) before believing it.

Usage::

    python bench/ab_venvs.py --a /work/before/.venv/bin/python \
        --b .venv/bin/python [--quick] [--rounds 5] [--compile-rounds 5] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# --- worker (runs inside the venv under test) -----------------------------------------


class _Worker:
    def __init__(self) -> None:
        self.calls: dict[str, object] = {}

    def text(self, name: str, path: str, args: list[str], compile_rounds: int) -> dict:
        from oxla.ir import parse_module
        from oxla.plugins import get_backend
        from oxla.protocols import CompileOptions

        with open(path) as f:
            text = f.read()
        arrays = [np.load(a) for a in args]
        backend = get_backend("cpu")
        times, cpu = [], []
        for _ in range(max(1, compile_rounds)):
            t0, c0 = time.perf_counter(), time.process_time()
            exe = backend.compile(parse_module(text, f"{name}.mlir"), CompileOptions(cache=False))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        self.calls[name] = lambda: exe(*arrays)
        return {"compile_s": times, "compile_cpu_s": cpu, "out": self._save(name, exe(*arrays))}

    def torch(self, name: str, batch: int, seq: int, compile_rounds: int) -> dict:
        import torch

        sys.path.insert(0, HERE)
        import oxla_frontend_torch as oft
        from torch_models import MODELS

        cls, vocab = MODELS[name]
        torch.manual_seed(0)
        model = cls().eval()
        ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
        times, cpu = [], []
        fn = None
        for _ in range(max(1, compile_rounds)):
            os.environ["OXLA_CACHE_DIR"] = tempfile.mkdtemp(prefix="oxla_ab_")
            t0, c0 = time.perf_counter(), time.process_time()
            fn = oft.compile(model, (ids,), backend="cpu")
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        key = f"{name}_{batch}x{seq}"
        self.calls[key] = lambda: fn(ids)
        return {"compile_s": times, "compile_cpu_s": cpu, "out": self._save(key, fn(ids))}

    def time(self, name: str, n: int) -> dict:
        call = self.calls[name]
        call()  # untimed
        per = []
        for _ in range(n):
            t0 = time.perf_counter()
            call()
            per.append(time.perf_counter() - t0)
        return {"per_call_s": per}

    @staticmethod
    def _save(name: str, outs) -> str:
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        arrs = [o.detach().numpy() if hasattr(o, "detach") else np.asarray(o) for o in outs]
        path = os.path.join(tempfile.gettempdir(), f"oxla_ab_{os.getpid()}_{name}.npz")
        np.savez(path, *arrs)
        return path


def _worker_main() -> None:
    w = _Worker()
    for line in sys.stdin:
        req = json.loads(line)
        op = req.pop("op")
        try:
            res = getattr(w, op)(**req)
        except Exception as exc:  # noqa: BLE001 - reported to the driver
            res = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
        print(json.dumps(res), flush=True)


# --- driver ---------------------------------------------------------------------------


class _Proc:
    def __init__(self, python: str, env: dict | None = None) -> None:
        env = dict(os.environ, PYTHONPATH=HERE, **(env or {}))
        self.p = subprocess.Popen([python, os.path.abspath(__file__), "--worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env, cwd=HERE)

    def ask(self, **req) -> dict:
        assert self.p.stdin and self.p.stdout
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            return {"error": f"worker exited with {self.p.wait()}"}
        return json.loads(line)

    def close(self) -> float:
        """Ends the worker; returns its user+sys CPU seconds (imports included)."""
        if self.p.stdin:
            self.p.stdin.close()
        _, status, usage = os.wait4(self.p.pid, 0)
        self.p.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_utime + usage.ru_stime


def _compare(pa: str, pb: str) -> float:
    a, b = np.load(pa), np.load(pb)
    err, scale = 0.0, 0.0
    for k in a.files:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        err = max(err, float(np.max(np.abs(x - y))) if x.size else 0.0)
        scale = max(scale, float(np.max(np.abs(x))) if x.size else 0.0)
    return err / scale if scale else err


def _fresh_compile(python: str, warm: dict, req: dict | None) -> dict:
    """One fresh worker, caches off: compiles ``warm`` (the smallest workload), then
    ``req`` (None: only the warm one). Returns wall/CPU seconds of both compiles and
    the whole process's CPU seconds, or ``{"error": ...}``."""
    proc = _Proc(python, {"OXLA_CACHE_DIR": tempfile.mkdtemp(prefix="oxla_ab_fresh_")})
    try:
        first = proc.ask(**warm, compile_rounds=1)
        res = first if req is None or "error" in first else proc.ask(**req, compile_rounds=1)
    finally:
        proc_cpu = proc.close()
    if "error" in res:
        return {"error": res["error"]}
    return {"startup_s": first["compile_s"][0], "startup_cpu_s": first["compile_cpu_s"][0],
            "compile_s": res["compile_s"][0], "compile_cpu_s": res["compile_cpu_s"][0],
            "process_cpu_s": proc_cpu}


def _med_ratio(d: dict, key: str) -> tuple[float, float, float]:
    a, b = statistics.median(d["A"][key]), statistics.median(d["B"][key])
    return a, b, b / a


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--a", help="python of venv A (the baseline)")
    p.add_argument("--b", default=sys.executable, help="python of venv B (the change)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--compile-rounds", type=int, default=5,
                   help="fresh-process compile rounds per workload and venv (0: none)")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--batches", default="1", help="torch model batches, comma-separated")
    p.add_argument("--only", default=None, help="comma-separated workload names")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.worker:
        _worker_main()
        return
    if not args.a:
        p.error("--a is required")
    sys.path.insert(0, HERE)
    from cpu_vs_xla import _workloads

    tmp = tempfile.mkdtemp(prefix="oxla_ab_")
    workloads = _workloads(args.quick)
    only = set(args.only.split(",")) if args.only else None
    if only:
        workloads = [w for w in workloads if w.name in only or w is workloads[-1]]
    pythons = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    procs = {k: _Proc(py, {"OXLA_CACHE_DIR": tempfile.mkdtemp(prefix="oxla_ab_")})
             for k, py in pythons.items()}
    rows: dict[str, dict] = {}
    smallest = workloads[-1]
    jobs: list[tuple[str, dict]] = []
    for w in [smallest] + workloads:
        path = os.path.join(tmp, f"{w.name}.mlir")
        with open(path, "w") as f:
            f.write(w.text)
        files = []
        for i, a in enumerate(w.args):
            files.append(os.path.join(tmp, f"{w.name}_{i}.npy"))
            np.save(files[-1], a)
        jobs.append((w.name, {"op": "text", "name": w.name, "path": path, "args": files}))
    warm_req = jobs[0][1]
    if not args.no_torch:
        if args.quick:
            shapes = [("gpt2", 1, 32)]
        else:
            shapes = [(m, int(b), 128) for b in args.batches.split(",") for m in ("gpt2", "bert")]
        shapes = [s for s in shapes if only is None or s[0] in only or
                  f"{s[0]}_{s[1]}x{s[2]}" in only]
        for m, bsz, seq in shapes:
            jobs.append((f"{m}_{bsz}x{seq}", {"op": "torch", "name": m, "batch": bsz,
                                              "seq": seq}))
    # --- per-call latency: one long-lived worker per venv --------------------------------
    for i, (name, req) in enumerate(jobs):
        warm = i == 0
        res = {k: procs[k].ask(**req, compile_rounds=1) for k in ("A", "B")}
        if warm:
            continue
        row = rows[name] = {"notes": {}}
        for k in ("A", "B"):
            if "error" in res[k]:
                row["notes"][k] = res[k]["error"]
        if row["notes"]:
            print(f"{name:16s} skipped: {row['notes']}", flush=True)
            continue
        # compiles in the long-lived worker reuse its process state: JSON only
        row["inproc_compile_s"] = {k: res[k]["compile_s"][0] for k in res}
        row["rel_err"] = _compare(res["A"]["out"], res["B"]["out"])
        row["per_call_s"] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name, row in rows.items():
            if "per_call_s" not in row:
                continue
            done = row["per_call_s"]["A"] + row["per_call_s"]["B"]
            guess = statistics.median(done) if done else row["inproc_compile_s"]["A"] / 20
            n = int(min(50, max(3, 0.3 / max(guess, 1e-6))))
            for k in order:
                row["per_call_s"][k] += procs[k].ask(op="time", name=name, n=n)["per_call_s"]
        print(f"timing round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}",
              flush=True)
    for pr in procs.values():
        pr.close()
    out = {"a": args.a, "b": args.b, "rounds": args.rounds,
           "compile_rounds": args.compile_rounds, "rows": rows}
    print(f"{'workload':16s} {'A ms':>9s} {'B ms':>9s} {'B/A':>6s} {'rel err':>8s}")
    for name, row in rows.items():
        if "per_call_s" not in row:
            continue
        med = {k: statistics.median(v) for k, v in row["per_call_s"].items()}
        row["median_s"] = med
        row["ratio"] = med["B"] / med["A"]
        print(f"{name:16s} {med['A'] * 1e3:9.3f} {med['B'] * 1e3:9.3f} {row['ratio']:6.2f} "
              f"{row['rel_err']:8.1e}", flush=True)
        row["per_call_s"] = {k: [min(v), max(v), len(v)] for k, v in row["per_call_s"].items()}
    _save(args.json, out)
    # --- first compile: a fresh process per workload, venv and round ----------------------
    fresh: dict[str, dict] = {"startup": {"A": {}, "B": {}}}
    for name, _ in jobs[1:]:
        if "per_call_s" in rows.get(name, {}):
            fresh[name] = {"A": {}, "B": {}}
    for r in range(args.compile_rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name, req in jobs:
            if name == smallest.name and req is warm_req:
                name = "startup"
            if name not in fresh:
                continue
            for k in order:
                got = _fresh_compile(pythons[k], warm_req, None if name == "startup" else req)
                if "error" in got:
                    rows.setdefault(name, {}).setdefault("notes", {})[k] = got["error"]
                    continue
                if name == "startup":
                    got = {"compile_s": got["startup_s"], "compile_cpu_s": got["startup_cpu_s"],
                           "process_cpu_s": got["process_cpu_s"]}
                for key, v in got.items():
                    if not key.startswith("startup"):
                        fresh[name][k].setdefault(key, []).append(v)
        print(f"compile round {r + 1}/{args.compile_rounds} done, load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        out["fresh_compile"] = fresh  # each round kept, should the run be cut short
        _save(args.json, out)
    if args.compile_rounds:
        print(f"\nfirst compile, fresh process, caches off (median of {args.compile_rounds})")
        print(f"{'workload':16s} {'wall A s':>9s} {'B s':>7s} {'B/A':>6s} "
              f"{'cpu A s':>8s} {'B s':>7s} {'B/A':>6s} {'proc cpu B/A':>12s}")
    out.pop("fresh_compile", None)
    for name, d in fresh.items():
        if not (d["A"].get("compile_s") and d["B"].get("compile_s")):
            continue
        wa, wb, wr = _med_ratio(d, "compile_s")
        ca, cb, cr = _med_ratio(d, "compile_cpu_s")
        pr_ = _med_ratio(d, "process_cpu_s")[2]
        row = rows.setdefault(name, {})
        row["fresh_compile"] = d
        row["compile_ratio"], row["compile_cpu_ratio"], row["process_cpu_ratio"] = wr, cr, pr_
        print(f"{name:16s} {wa:9.3f} {wb:7.3f} {wr:6.2f} {ca:8.3f} {cb:7.3f} {cr:6.2f} "
              f"{pr_:12.2f}")
    _save(args.json, out)


def _save(path: str | None, out: dict) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
