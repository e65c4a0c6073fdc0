"""GPT-2 small on the cuda backend's simulated device: the figure issue #14 asks for.

Builds GPT-2 small (``transformers.GPT2Config()``, random weights, nothing downloaded),
saves it with ``torch.export.save``, compiles it with ``oxla compile --frontend torch
--backend cuda`` on this machine (no GPU needed), runs the artifact with
``OXLA_CUDA_DEVICE=sim oxla run`` (kernels as host twins, GEMMs as cuBLAS's numpy
semantics) and compares the logits with torch eager. Exits 1 when the largest error is
above 1e-4 of the largest logit. Not a test: it takes minutes on two cores.

    .venv/bin/python bench/cuda_gpt2_sim.py [--seq 64] [--layers 12] [--out out/gpt2_cuda]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TOLERANCE = 1e-4


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--out", default="out/gpt2_cuda")
    args = parser.parse_args(argv)

    import torch
    import transformers

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = transformers.GPT2Config(use_cache=False, n_layer=args.layers)
    lm = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids).logits

    model = Logits(lm).eval()
    n_params = sum(p.numel() for p in model.parameters())
    ids = torch.randint(0, config.vocab_size, (1, args.seq),
                        generator=torch.Generator().manual_seed(1))
    print(f"GPT-2: {n_params / 1e6:.1f}M parameters, {args.layers} layers, sequence {args.seq}")
    ep = torch.export.export(model, (ids,), strict=False)
    torch.export.save(ep, out / "gpt2.pt2")
    np.save(out / "ids.npy", ids.numpy())
    env = {k: v for k, v in os.environ.items() if k != "OXLA_CUDA_DEVICE"}
    cli = [sys.executable, "-m", "oxla.cli.main"]
    t0 = time.perf_counter()
    subprocess.run(cli + ["compile", "--frontend", "torch", "--backend", "cuda",
                          "--cuda-arch", "sm_80,sm_90", str(out / "gpt2.pt2"),
                          "-o", str(out / "gpt2.oxla")], env=env, check=True)
    t1 = time.perf_counter()
    subprocess.run(cli + ["run", str(out / "gpt2.oxla"), "--input", str(out / "ids.npy"),
                          "--output", str(out / "logits.npz")],
                   env={**env, "OXLA_CUDA_DEVICE": "sim"}, check=True)
    t2 = time.perf_counter()
    with torch.no_grad():
        want = model(ids).numpy()
    got = np.load(out / "logits.npz")["result0"]
    err = float(np.max(np.abs(got - want)))
    rel = err / float(np.max(np.abs(want)))
    print(f"compile (no GPU) {t1 - t0:.1f} s, run on the simulated device {t2 - t1:.1f} s")
    print(f"largest |error|: {err:.3g} ({rel:.2g} of the largest logit; tolerance "
          f"{TOLERANCE:g})")
    if not rel <= TOLERANCE:
        print("FAILED: the logits differ from PyTorch's", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
