"""oxla cpu against another oxla checkout (two venvs), interleaved in one run.

Not a test. Answers "did a change make anything slower?" for the workloads of
``bench/cpu_vs_xla.py`` (the same StableHLO texts, lowered once by this venv's jax) and
``bench/torch_models.py`` (GPT-2 small and BERT-base from transformers configs, random
weights, the same seed in both). Each venv runs one worker process (``--worker``), which
compiles every workload with its own oxla; this driver then times both workers in
rounds, alternating which goes first, so load and turbo drift hit both alike. Reported:
per workload the median per-call latency ratio B / A, and the first-compile ratio
(caches off: ``CompileOptions(cache=False)`` for texts, a fresh empty ``OXLA_CACHE_DIR``
for torch models; the first compile of each workload in its worker, after one untimed
warm-up compile of the smallest workload; ``--compile-rounds`` more are in the JSON). Outputs of both are compared.

Usage::

    python bench/ab_venvs.py --a /work/before/.venv/bin/python \
        --b .venv/bin/python [--quick] [--rounds 5] [--json OUT.json]
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
        times = []
        for _ in range(max(1, compile_rounds)):
            t0 = time.perf_counter()
            exe = backend.compile(parse_module(text, f"{name}.mlir"), CompileOptions(cache=False))
            times.append(time.perf_counter() - t0)
        self.calls[name] = lambda: exe(*arrays)
        return {"compile_s": times, "out": self._save(name, exe(*arrays))}

    def torch(self, name: str, batch: int, seq: int, compile_rounds: int) -> dict:
        import torch

        sys.path.insert(0, HERE)
        import oxla_frontend_torch as oft
        from torch_models import MODELS

        cls, vocab = MODELS[name]
        torch.manual_seed(0)
        model = cls().eval()
        ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))
        times = []
        fn = None
        for _ in range(max(1, compile_rounds)):
            os.environ["OXLA_CACHE_DIR"] = tempfile.mkdtemp(prefix="oxla_ab_")
            t0 = time.perf_counter()
            fn = oft.compile(model, (ids,), backend="cpu")
            times.append(time.perf_counter() - t0)
        key = f"{name}_{batch}x{seq}"
        self.calls[key] = lambda: fn(ids)
        return {"compile_s": times, "out": self._save(key, fn(ids))}

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
    def __init__(self, python: str) -> None:
        env = dict(os.environ, PYTHONPATH=HERE)
        self.p = subprocess.Popen([python, os.path.abspath(__file__), "--worker"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env, cwd=HERE)

    def ask(self, **req) -> dict:
        assert self.p.stdin and self.p.stdout
        self.p.stdin.write(json.dumps(req) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        if self.p.stdin:
            self.p.stdin.close()
        self.p.wait(timeout=60)


def _compare(pa: str, pb: str) -> float:
    a, b = np.load(pa), np.load(pb)
    err, scale = 0.0, 0.0
    for k in a.files:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        err = max(err, float(np.max(np.abs(x - y))) if x.size else 0.0)
        scale = max(scale, float(np.max(np.abs(x))) if x.size else 0.0)
    return err / scale if scale else err


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--a", help="python of venv A (the baseline)")
    p.add_argument("--b", default=sys.executable, help="python of venv B (the change)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--compile-rounds", type=int, default=3)
    p.add_argument("--no-torch", action="store_true")
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
    procs = {"A": _Proc(args.a), "B": _Proc(args.b)}
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
    if not args.no_torch:
        shapes = [("gpt2", 1, 32)] if args.quick else [("gpt2", 1, 128), ("bert", 1, 128)]
        shapes = [s for s in shapes if only is None or s[0] in only]
        for m, bsz, seq in shapes:
            jobs.append((f"{m}_{bsz}x{seq}", {"op": "torch", "name": m, "batch": bsz,
                                              "seq": seq}))
    for i, (name, req) in enumerate(jobs):
        warm = i == 0
        res = {}
        for k in ("A", "B"):  # compiles alternate inside each job's rounds
            res[k] = procs[k].ask(**req, compile_rounds=1 if warm else args.compile_rounds)
        if warm:
            continue
        row = rows[name] = {"notes": {}}
        for k in ("A", "B"):
            if "error" in res[k]:
                row["notes"][k] = res[k]["error"]
        if row["notes"]:
            print(f"{name:16s} skipped: {row['notes']}", flush=True)
            continue
        # the first compile of each workload in its process is the figure; later ones
        # may reuse in-process state, so they are kept in the JSON only
        row["compile_s"] = {k: res[k]["compile_s"][0] for k in res}
        row["compile_all_s"] = {k: res[k]["compile_s"] for k in res}
        row["rel_err"] = _compare(res["A"]["out"], res["B"]["out"])
        row["per_call_s"] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name, row in rows.items():
            if "per_call_s" not in row:
                continue
            done = row["per_call_s"]["A"] + row["per_call_s"]["B"]
            guess = statistics.median(done) if done else row["compile_s"]["A"] / 20
            n = int(min(50, max(3, 0.3 / max(guess, 1e-6))))
            for k in order:
                row["per_call_s"][k] += procs[k].ask(op="time", name=name, n=n)["per_call_s"]
        print(f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.1f}", flush=True)
    for pr in procs.values():
        pr.close()
    print(f"{'workload':16s} {'A ms':>9s} {'B ms':>9s} {'B/A':>6s} "
          f"{'compile A s':>11s} {'B s':>7s} {'B/A':>6s} {'rel err':>8s}")
    out = {"a": args.a, "b": args.b, "rounds": args.rounds, "rows": rows}
    for name, row in rows.items():
        if "per_call_s" not in row:
            continue
        med = {k: statistics.median(v) for k, v in row["per_call_s"].items()}
        row["median_s"] = med
        row["ratio"] = med["B"] / med["A"]
        row["compile_ratio"] = row["compile_s"]["B"] / row["compile_s"]["A"]
        print(f"{name:16s} {med['A'] * 1e3:9.3f} {med['B'] * 1e3:9.3f} {row['ratio']:6.2f} "
              f"{row['compile_s']['A']:11.2f} {row['compile_s']['B']:7.2f} "
              f"{row['compile_ratio']:6.2f} {row['rel_err']:8.1e}")
        del row["per_call_s"]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
