"""The Triton implementation of the demo RMSNorm (imported only when it is compiled or
run: importing Triton is too slow for a plugin hook)."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def demo_rmsnorm(x_ptr, w_ptr, y_ptr, eps, D: tl.constexpr, BLOCK: tl.constexpr):
    """One program per row of ``D`` floats: ``y = w * x / sqrt(mean(x*x) + eps)``."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < D
    x = tl.load(x_ptr + row * D + offs, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / D + eps)
    tl.store(y_ptr + row * D + offs, w * (x * inv), mask=mask)
