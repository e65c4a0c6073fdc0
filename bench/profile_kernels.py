"""Where a compiled model's time goes: oxla's per-kernel profile next to torch's profiler.

Not a test. Compiles a model of ``bench/torch_models.py`` (GPT-2 small or BERT-base,
random weights) with the cpu backend's per-kernel timers on (``extra={"profile":
True}``, see :mod:`oxla_backend_cpu.profile`), runs it ``--calls`` times and prints:

* the top kernels by total time (label: kernel name, kind, shapes; ``dot ... NT``: BLAS
  transpose flags of lhs and rhs; ``P``: rhs pre-packed for oxla's own kernel), with ms per call and share of the kernel total;
* time per kind (dot, loop, op, pack) and per loop flavour (transposes, broadcasts);
* the call path: one whole executable call vs the sum of its kernels (the rest is
  Python, ctypes and arena/result allocation), and one ``TorchFunction`` call (tensor
  conversion and pytree work on top);
* with ``--torch``: torch eager's own profile (``torch.profiler``) of the same forward,
  top ops by self CPU time.

Timers add two ``clock_gettime`` calls per kernel; compare shares, not absolute times,
with an unprofiled run. Usage::

    python bench/profile_kernels.py --model bert --batch 1 [--seq 128] [--calls 10]
                                    [--top 25] [--torch]
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import MODELS  # noqa: E402


def _kind(label: str) -> str:
    parts = label.split()
    kind = parts[1] if len(parts) > 1 else "?"
    if kind == "loop":
        ops = label[label.find("[") + 1:label.rfind("]")].split(",")
        if ops == ["transpose"]:
            return "loop:transpose-only"
        if ops == ["broadcast_in_dim"]:
            return "loop:broadcast-only"
        if "transpose" in ops:
            return "loop:with-transpose"
    if kind == "op":
        return "op:" + label[label.find("[") + 1:label.rfind("]")].split(",")[-1]
    return kind


def _time(fn, n: int) -> float:
    fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=sorted(MODELS), default="bert")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--torch", action="store_true", help="also torch.profiler of eager")
    a = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    import oxla_frontend_torch as oft
    from oxla_backend_cpu.profile import read_profile, reset_profile

    from oxla.protocols import CompileOptions

    cls, vocab = MODELS[a.model]
    torch.manual_seed(0)
    model = cls().eval()
    ids = torch.randint(0, vocab, (a.batch, a.seq), generator=torch.Generator().manual_seed(1))
    if "OXLA_CACHE_DIR" not in os.environ:  # a private cache, removed at exit (~0.5 GB)
        cache_dir = tempfile.mkdtemp(prefix="oxla_prof_cache_")
        os.environ["OXLA_CACHE_DIR"] = cache_dir
        atexit.register(shutil.rmtree, cache_dir, ignore_errors=True)
    t0 = time.perf_counter()
    fn = oft.compile(model, (ids,), backend="cpu",
                     options=CompileOptions(extra={"profile": True}))
    print(f"{a.model} b{a.batch} s{a.seq}: compiled in {time.perf_counter() - t0:.1f}s, "
          f"{fn.executable.stats['kernel_count']} kernels, load {os.getloadavg()[0]:.2f}")
    exe = fn.executable
    arrays = [ids.numpy()]
    exe(*arrays)
    reset_profile(exe)
    t0 = time.perf_counter()
    for _ in range(a.calls):
        exe(*arrays)
    call_s = (time.perf_counter() - t0) / a.calls
    prof = read_profile(exe)
    total = sum(ns for _, ns, _ in prof) / a.calls / 1e9
    print(f"executable call {call_s * 1e3:.2f} ms, kernels {total * 1e3:.2f} ms, "
          f"rest (python/ctypes/alloc) {(call_s - total) * 1e3:.2f} ms")
    with torch.inference_mode():
        tf_s = _time(lambda: fn(ids), max(2, a.calls // 2))
    print(f"TorchFunction call {tf_s * 1e3:.2f} ms (profiled code)")
    rows = sorted(prof, key=lambda r: -r[1])
    print(f"\ntop {a.top} kernels (ms/call, % of kernel time):")
    for label, ns, _ in rows[:a.top]:
        ms = ns / a.calls / 1e6
        print(f"  {ms:8.3f} {100 * ms / 1e3 / total:5.1f}%  {label[:150]}")
    kinds: dict[str, list[float]] = {}
    for label, ns, _ in prof:
        k = kinds.setdefault(_kind(label), [0.0, 0])
        k[0] += ns / a.calls / 1e6
        k[1] += 1
    print("\nby kind (ms/call, %, kernels):")
    for k, (ms, n) in sorted(kinds.items(), key=lambda x: -x[1][0]):
        print(f"  {ms:8.3f} {100 * ms / 1e3 / total:5.1f}%  {n:4d}  {k}")
    dots: dict[str, list[float]] = {}
    for label, ns, _ in prof:
        m = re.match(r"\S+ dot (.*)", label)
        if m:
            d = dots.setdefault(m.group(1), [0.0, 0])
            d[0] += ns / a.calls / 1e6
            d[1] += 1
    print("\ndots by shape (ms/call total, count, GFLOP/s):")
    for shape, (ms, n) in sorted(dots.items(), key=lambda x: -x[1][0]):
        b, m, nn, k = (int(x[1:]) for x in shape.split()[:4])
        gf = 2.0 * b * m * nn * k * n / (ms / 1e3) / 1e9 if ms else 0.0
        print(f"  {ms:8.3f} {n:4d}  {gf:7.1f}  {shape}")
    if a.torch:
        from torch.profiler import ProfilerActivity, profile

        with torch.inference_mode():
            model(ids)
            with profile(activities=[ProfilerActivity.CPU]) as tp:
                for _ in range(max(2, a.calls // 2)):
                    model(ids)
        print("\ntorch eager profile (self CPU):")
        print(tp.key_averages().table(sort_by="self_cpu_time_total", row_limit=a.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
