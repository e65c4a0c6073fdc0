"""GPT-2 small on the hip backend's simulated device: the figure issue #15 asks for.

Builds GPT-2 small (``transformers.GPT2Config()``, random weights, nothing downloaded),
saves it with ``torch.export.save``, compiles it with ``oxla compile --frontend torch
--backend hip --hip-arch gfx942`` on this machine (no GPU, no ROCm: llvmlite and
``ld.lld``), checks that the artifact carries a gfx942 code object, runs it with
``OXLA_HIP_DEVICE=sim oxla run`` (kernels as host twins at wave64, GEMMs as rocBLAS's
numpy semantics) and compares the logits with torch eager. Exits 1 when the largest
error is above 1e-4 of the largest logit. Not a test: it takes minutes on two cores.

    .venv/bin/python bench/hip_gpt2_sim.py [--seq 64] [--layers 12] [--out out/gpt2_hip]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--arch", default="gfx942")
    parser.add_argument("--out", default="out/gpt2_hip")
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
    ids = torch.randint(0, config.vocab_size, (1, args.seq),
                        generator=torch.Generator().manual_seed(1))
    n_params = sum(p.numel() for p in model.parameters())
    print(f"GPT-2: {n_params / 1e6:.1f}M parameters, {args.layers} layers, sequence {args.seq}")
    torch.export.save(torch.export.export(model, (ids,), strict=False), out / "gpt2.pt2")
    np.save(out / "ids.npy", ids.numpy())
    env = {k: v for k, v in os.environ.items() if not k.startswith("OXLA_HIP")}
    cli = [sys.executable, "-m", "oxla.cli.main"]
    t0 = time.perf_counter()
    subprocess.run(cli + ["compile", "--frontend", "torch", "--backend", "hip",
                          "--hip-arch", args.arch, str(out / "gpt2.pt2"),
                          "-o", str(out / "gpt2.oxla")], env=env, check=True)
    t1 = time.perf_counter()
    with zipfile.ZipFile(out / "gpt2.oxla") as z:
        members = [n for n in z.namelist() if n.endswith(".hsaco")]
    print(f"code objects in the artifact: {', '.join(members)}")
    if f"{args.arch}.hsaco" not in members:
        print(f"FAILED: no {args.arch} code object", file=sys.stderr)
        return 1
    subprocess.run(cli + ["run", str(out / "gpt2.oxla"), "--input", str(out / "ids.npy"),
                          "--output", str(out / "logits.npz")],
                   env={**env, "OXLA_HIP_DEVICE": "sim"}, check=True)
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
