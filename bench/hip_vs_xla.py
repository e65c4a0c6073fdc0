"""oxla hip vs XLA on ROCm (``jax[rocm]``) and torch ROCm (eager and ``torch.compile``)
on a real AMD GPU: the benchmark issue #15 asks for. NOT RUN HERE: no AMD GPU was
available when it was written, so it has no figures yet; run it on an MI200/MI300
(gfx90a/gfx942) or RDNA3 (gfx1100) machine with ROCm 6.x.

    python bench/hip_vs_xla.py [--quick] [--arch gfx942] [--json out/hip_vs_xla.json]

Workloads (the ones issue #14 names for cuda; bench/cuda_vs_xla.py where it exists):

* ``fusion``: a chain of elementwise ops over 64 Mi f32 (as a fraction of the device's
  measured copy bandwidth: bytes moved / time vs a device-to-device copy);
* ``gemm``: 4096^3 f32 (as a fraction of torch's, which calls rocBLAS/hipBLASLt);
* ``softmax`` and ``layernorm``: 8192 x 4096 f32 rows;
* ``dispatch``: the per-call cost of a 1-element add.

GPT-2 small and a transformer block go through ``bench/gpu_gpt2_sim.py --backend hip`` (compile and
simulated-device check); timing them on a GPU is left to ``oxla run`` there.

oxla runs the same StableHLO that ``jax.jit(...).lower()`` prints, compiled with
``--backend hip --hip-arch ARCH``; each is timed as the median of ``--repeat`` calls
after warm-up, with device results (``run_on_device``) so no host copy is timed.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _median(fn: Callable[[], Any], repeat: int, sync: Callable[[], None]) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _block(fn: Callable, args: list) -> None:
    import jax

    jax.block_until_ready(fn(*args))


def workloads(quick: bool) -> dict[str, tuple[Callable, Callable, list[tuple[int, ...]]]]:
    """name -> (the jax function, the same in torch, its f32 argument shapes)."""
    import jax
    import jax.numpy as jnp
    import torch

    n = 1 << (22 if quick else 26)
    rows, cols = (1024, 1024) if quick else (8192, 4096)
    m = 1024 if quick else 4096

    def layernorm(x, lib):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / lib.sqrt(var + 1e-5)

    return {
        "fusion": (lambda x: jnp.tanh(x * 1.5 + 0.5) * jnp.exp(-x * x),
                   lambda x: torch.tanh(x * 1.5 + 0.5) * torch.exp(-x * x), [(n,)]),
        "gemm": (lambda a, b: a @ b, lambda a, b: a @ b, [(m, m), (m, m)]),
        "softmax": (lambda x: jax.nn.softmax(x, axis=-1), lambda x: torch.softmax(x, -1),
                    [(rows, cols)]),
        "layernorm": (lambda x: layernorm(x, jnp), lambda x: layernorm(x, torch),
                      [(rows, cols)]),
        "dispatch": (lambda x: x + 1.0, lambda x: x + 1.0, [(1,)]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--arch", default=None, help="--hip-arch (default: the device's)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    import jax
    import torch
    from oxla_backend_hip import device as devices

    import oxla

    ok, why = devices.status()
    if not ok or devices.choice().kind == "sim":
        print(f"error: this benchmark needs an AMD GPU ({why or 'OXLA_HIP_DEVICE=sim'})",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available() or torch.version.hip is None:
        print("error: torch ROCm with a visible GPU is needed", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    results: dict[str, dict[str, float]] = {}
    extra = {"hip_arch": args.arch} if args.arch else {}
    device = None
    for name, (jfn, tfn, shapes) in workloads(args.quick).items():
        host = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        jitted = jax.jit(jfn)
        jx = [jax.device_put(h) for h in host]
        exe = oxla.compile(jitted.lower(*jx).as_text(), backend="hip", extra=extra)
        exe.run_on_device(*host)  # loads the module
        device = exe.runtime().device
        ox = [torch.from_numpy(h).cuda() for h in host]  # read in place (array interface)
        compiled = torch.compile(tfn)
        xla_sync = functools.partial(_block, jitted, jx)
        row = {
            "oxla": _median(functools.partial(exe.run_on_device, *ox), args.repeat,
                            torch.cuda.synchronize),
            "xla": _median(functools.partial(jitted, *jx), args.repeat, xla_sync),
            "torch_eager": _median(functools.partial(tfn, *ox), args.repeat,
                                   torch.cuda.synchronize),
            "torch_compile": _median(functools.partial(compiled, *ox), args.repeat,
                                     torch.cuda.synchronize),
        }
        results[name] = row
        print(f"{name:10s} " + "  ".join(f"{k} {v * 1e3:8.3f} ms" for k, v in row.items()))
    print("GPT-2 small and the transformer block: bench/gpu_gpt2_sim.py --backend hip compiles them; "
          "time the artifact with `oxla run` on the GPU (not measured: no AMD GPU here)")
    if args.json and device is not None:
        with open(args.json, "w") as f:
            json.dump({"device": device.name, "arch": device.arch, "results": results},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
