"""The main job: a real PyTorch model through oxla's CLI, on the CPU backend.

Builds GPT-2 small (124M parameters, ``transformers.GPT2Config()``, random weights: no
download), saves it with ``torch.export.save``, compiles it with
``oxla compile --frontend torch --backend cpu``, runs it with ``oxla run``, and compares
the logits with PyTorch's. Prints the largest error and oxla's latency against eager
PyTorch's, both measured in this run (interleaved rounds, medians).

Usage: ``python examples/gpt2_main_job.py [--seq N] [--batch N] [--out DIR] [--rounds N]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TOLERANCE = 1e-4  # relative to the largest logit magnitude


def build_model(seed: int):
    import torch
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(use_cache=False)
    model = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        """GPT-2's logits only (the exported program returns one tensor)."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids=input_ids).logits

    return Logits(model).eval(), config


def oxla_cli(*args: str) -> str:
    """Runs the ``oxla`` CLI of this interpreter's environment; returns its stdout."""
    exe = Path(sys.executable).with_name("oxla")
    cmd = [str(exe) if exe.exists() else "oxla", *args]
    print("$ oxla " + " ".join(args), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(proc.returncode)
    out = proc.stdout.strip()
    if out:
        print("  " + out.replace("\n", "\n  "))
    return out


def others_busy(seconds: float = 1.0) -> float | None:
    """The fraction of all CPUs that other processes used during ``seconds`` of this
    process sleeping (from ``/proc/stat``), or None where that file does not exist."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1.0 - (i1 - i0) / max(t1 - t0, 1)


def median_latency(fn, rounds: int, calls: int = 3) -> float:
    """Median seconds of ``fn()`` over ``rounds`` blocks of ``calls`` calls."""
    fn()  # untimed warm-up call
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t0) / calls)
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", default="out/gpt2")
    args = parser.parse_args(argv)

    import torch

    import oxla

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, config = build_model(0)
    n_params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), generator=torch.Generator().manual_seed(1))
    print(f"GPT-2 small: {n_params / 1e6:.1f}M parameters, random weights, "
          f"batch {args.batch}, sequence {args.seq}")

    t0 = time.perf_counter()
    ep = torch.export.export(model, (ids,), strict=False)
    torch.export.save(ep, out / "gpt2.pt2")
    print(f"torch.export + save: {time.perf_counter() - t0:.1f} s -> {out / 'gpt2.pt2'}")

    oxla_cli("compile", "--frontend", "torch", "--backend", "cpu", str(out / "gpt2.pt2"),
             "-o", str(out / "gpt2.oxla"))
    np.save(out / "input_ids.npy", ids.numpy())
    oxla_cli("run", str(out / "gpt2.oxla"), "--input", str(out / "input_ids.npy"),
             "--output", str(out / "logits.npz"))

    with torch.no_grad():
        want = model(ids).numpy()
    got = np.load(out / "logits.npz")["result0"]
    err = float(np.max(np.abs(got - want)))
    rel = err / float(np.max(np.abs(want)))

    # Latency: the loaded artifact against eager PyTorch, interleaved in rounds.
    busy = others_busy()
    exe = oxla.load(out / "gpt2.oxla")
    x = ids.numpy()
    torch_t, oxla_t = [], []
    for _ in range(args.rounds):
        with torch.no_grad():
            torch_t.append(median_latency(lambda: model(ids), 1))
        oxla_t.append(median_latency(lambda: exe(x), 1))
    t_torch, t_oxla = float(np.median(torch_t)), float(np.median(oxla_t))
    print(f"largest |error|: {err:.3g} ({rel:.2g} of the largest logit; tolerance {TOLERANCE:g})")
    print(f"latency: oxla cpu {t_oxla * 1e3:.1f} ms, torch eager {t_torch * 1e3:.1f} ms "
          f"(oxla / torch = {t_oxla / t_torch:.2f}x, threads: {torch.get_num_threads()} "
          f"torch, {os.environ.get('OXLA_NUM_THREADS', 'all')} oxla)")
    if busy is not None and busy > 0.25:
        print(f"note: other processes kept {busy:.0%} of the CPUs busy just before timing; "
              "both engines share what is left, and torch's thread pool slows down far "
              "more than oxla's under contention, so the latency ratio is not meaningful")
    if not rel <= TOLERANCE:
        print("FAILED: oxla's logits differ from PyTorch's", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
