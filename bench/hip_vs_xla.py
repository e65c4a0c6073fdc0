"""oxla ``hip`` vs XLA on ROCm (``jax[rocm]``) vs ``torch.compile`` (torch ROCm) on one
AMD GPU: the benchmark issue #15 asks for. NOT RUN HERE: no AMD GPU was available when
it was written, so it has no figures yet; run it on an MI200/MI300 (gfx90a/gfx942) or
RDNA3 (gfx1100) machine with ROCm 6.x.

The workloads, engines, timing and targets are bench/cuda_vs_xla.py's, run on the
``hip`` backend and jax's ``rocm`` platform (see that script's docstring): ``chain``
(fusion, as a fraction of the measured device copy bandwidth), ``gemm`` (8192^3 f32 vs
torch's rocBLAS/hipBLASLt ``a @ b``), ``softmax``, ``layer_norm``, a pre-LN
``transformer`` block, GPT-2 small at batch 1 and 8 (oxla vs the faster of XLA and
torch.compile), and ``dispatch`` (per-call cost). Without an AMD GPU (no ROCm runtime,
no device, or ``OXLA_HIP_DEVICE=sim``) it prints one ``error:`` line and exits 2.

Install on the GPU machine: ``pip install -e extensions/backend_hip 'jax[rocm]'
transformers`` and torch from its ROCm index.

Usage::

    python bench/hip_vs_xla.py [--quick] [--json OUT.json] [--rounds N] [--only NAME,...]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cuda_vs_xla  # noqa: E402 - the shared driver, next to this script


def main(argv: list[str] | None = None) -> int:
    cuda_vs_xla.PLATFORM = cuda_vs_xla.HIP
    return cuda_vs_xla.main(argv)


if __name__ == "__main__":
    sys.exit(main())
