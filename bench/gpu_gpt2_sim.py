"""GPT-2 small on a GPU backend's simulated device: the figure issues #14 (cuda) and #15
(hip) ask for.

Builds GPT-2 small (transformers, random weights), saves it with ``torch.export``,
compiles it with ``oxla compile --frontend torch --backend cuda|hip`` on this machine (no
GPU needed: ptxas/nvJitLink for cuda, llvmlite and ``ld.lld`` for hip), checks that the
artifact carries the code for the requested arch (``--arch``: ``sm_80,sm_90`` for cuda,
``gfx942`` for hip), runs it with ``OXLA_<BACKEND>_DEVICE=sim oxla run`` (kernels as host
twins, GEMMs as cuBLAS's/rocBLAS's numpy semantics) and compares the logits with torch
eager. Exits 1 when the largest error is above 1e-4 of the largest logit. Not a test: it
takes minutes on two cores.

Usage::

    .venv/bin/python bench/gpu_gpt2_sim.py --backend cuda|hip [--arch A] [--seq 64]
        [--layers 12] [--out out/gpt2_<backend>]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

TOLERANCE = 1e-4
GPU = {"cuda": ("--cuda-arch", "sm_80,sm_90", ".cubin"),
       "hip": ("--hip-arch", "gfx942", ".hsaco")}
"""backend: (its arch flag, the archs compiled by default, the code objects' suffix)"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--backend", choices=sorted(GPU), default="cuda")
    parser.add_argument("--arch", default=None, help="--cuda-arch/--hip-arch value")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    arch_flag, default_arch, suffix = GPU[args.backend]
    archs = (args.arch or default_arch).split(",")
    args.out = args.out or f"out/gpt2_{args.backend}"

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
    ids = torch.randint(0, config.vocab_size, (1, args.seq),
                        generator=torch.Generator().manual_seed(1))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"GPT-2: {n_params / 1e6:.1f}M parameters, {args.layers} layers, sequence {args.seq}")
    torch.export.save(torch.export.export(model, (ids,), strict=False), out / "gpt2.pt2")
    np.save(out / "ids.npy", ids.numpy())
    device_env = f"OXLA_{args.backend.upper()}_DEVICE"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(f"OXLA_{args.backend.upper()}")}
    cli = [sys.executable, "-m", "oxla.cli.main"]
    t0 = time.perf_counter()
    subprocess.run(cli + ["compile", "--frontend", "torch", "--backend", args.backend,
                          arch_flag, ",".join(archs), str(out / "gpt2.pt2"),
                          "-o", str(out / "gpt2.oxla")], env=env, check=True)
    t1 = time.perf_counter()
    with zipfile.ZipFile(out / "gpt2.oxla") as z:
        members = [n for n in z.namelist() if n.endswith(suffix)]
    print(f"code objects in the artifact: {', '.join(members)}")
    missing = [a for a in archs if not any(m.endswith(a + suffix) for m in members)]
    if missing:
        print(f"FAILED: no code object for {', '.join(missing)}", file=sys.stderr)
        return 1
    subprocess.run(cli + ["run", str(out / "gpt2.oxla"), "--input", str(out / "ids.npy"),
                          "--output", str(out / "logits.npz")],
                   env={**env, device_env: "sim"}, check=True)
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
