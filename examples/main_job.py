"""The main job: compile and run a real StableHLO program on the best installed backend.

A 2-layer MLP with a softmax head (``dot_general``, ``add``, ``maximum``, and two
``reduce`` ops for the softmax) is written as StableHLO text with random weights as
constants, compiled with :func:`oxla.compile` for the CPU backend when it is installed
(else the reference interpreter), run, and compared with numpy.

Usage: ``python examples/main_job.py [--backend NAME] [--batch N] [--runs N]``
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import oxla
from oxla import plugins

TOLERANCE = 1e-5


def dense(values: np.ndarray) -> str:
    """Formats a float32 array as an MLIR ``dense<...>`` literal (nested brackets)."""

    def fmt(a: np.ndarray) -> str:
        if a.ndim == 0:
            return f"{float(a):.9e}"
        return "[" + ", ".join(fmt(x) for x in a) + "]"

    return f"dense<{fmt(values)}>"


def mlp_program(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, b2: np.ndarray, batch: int):
    """Returns StableHLO text for ``softmax(relu(x @ w1 + b1) @ w2 + b2)``, as JAX writes it."""
    d_in, d_hid = w1.shape
    d_out = w2.shape[1]
    x_t, h_t, o_t = (f"tensor<{batch}x{n}xf32>" for n in (d_in, d_hid, d_out))
    return f"""module @mlp {{
  func.func public @main(%x: {x_t}) -> {o_t} {{
    %w1 = stablehlo.constant {dense(w1)} : tensor<{d_in}x{d_hid}xf32>
    %b1 = stablehlo.constant {dense(b1)} : tensor<{d_hid}xf32>
    %w2 = stablehlo.constant {dense(w2)} : tensor<{d_hid}x{d_out}xf32>
    %b2 = stablehlo.constant {dense(b2)} : tensor<{d_out}xf32>
    %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : ({x_t}, tensor<{d_in}x{d_hid}xf32>) -> {h_t}
    %1 = stablehlo.broadcast_in_dim %b1, dims = [1] : (tensor<{d_hid}xf32>) -> {h_t}
    %2 = stablehlo.add %0, %1 : {h_t}
    %zero = stablehlo.constant dense<0.000000e+00> : {h_t}
    %3 = stablehlo.maximum %2, %zero : {h_t}
    %4 = stablehlo.dot_general %3, %w2, contracting_dims = [1] x [0] : ({h_t}, tensor<{d_hid}x{d_out}xf32>) -> {o_t}
    %5 = stablehlo.broadcast_in_dim %b2, dims = [1] : (tensor<{d_out}xf32>) -> {o_t}
    %logits = stablehlo.add %4, %5 : {o_t}
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %max = stablehlo.reduce(%logits init: %ninf) applies stablehlo.maximum across dimensions = [1] : ({o_t}, tensor<f32>) -> tensor<{batch}xf32>
    %6 = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<{batch}xf32>) -> {o_t}
    %7 = stablehlo.subtract %logits, %6 : {o_t}
    %8 = stablehlo.exponential %7 : {o_t}
    %fzero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %sum = stablehlo.reduce(%8 init: %fzero) applies stablehlo.add across dimensions = [1] : ({o_t}, tensor<f32>) -> tensor<{batch}xf32>
    %9 = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<{batch}xf32>) -> {o_t}
    %10 = stablehlo.divide %8, %9 : {o_t}
    return %10 : {o_t}
  }}
}}
"""


def mlp_numpy(x, w1, b1, w2, b2) -> np.ndarray:
    """The same computation in numpy (float64, then rounded to float32)."""
    h = np.maximum(x.astype(np.float64) @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", help="default: cpu if installed, else interpreter")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    d_in, d_hid, d_out = 32, 64, 10
    w1 = (rng.standard_normal((d_in, d_hid)) / np.sqrt(d_in)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(d_hid)).astype(np.float32)
    w2 = (rng.standard_normal((d_hid, d_out)) / np.sqrt(d_hid)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(d_out)).astype(np.float32)
    x = rng.standard_normal((args.batch, d_in)).astype(np.float32)

    backend = args.backend or plugins.best_backend(("cpu", "interpreter"))
    text = mlp_program(w1, b1, w2, b2, args.batch)
    t0 = time.perf_counter()
    exe = oxla.compile(text, backend=backend, filename="mlp.mlir")
    compile_s = time.perf_counter() - t0

    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        (probs,) = exe(x)
        times.append(time.perf_counter() - t0)
    want = mlp_numpy(x, w1, b1, w2, b2)
    err = float(np.max(np.abs(np.asarray(probs, dtype=np.float32) - want)))

    print(
        f"oxla {oxla.__version__}: 2-layer MLP + softmax, batch {args.batch}, {d_in}->{d_hid}->{d_out}"
    )
    print(f"backend:     {backend}")
    print(f"compile:     {compile_s * 1e3:.1f} ms")
    print(f"run:         {np.median(times) * 1e3:.3f} ms (median of {args.runs})")
    print(f"max |error|: {err:.3g} vs numpy (tolerance {TOLERANCE:g})")
    if not err <= TOLERANCE:
        print("FAILED: result differs from numpy", file=sys.stderr)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except oxla.OxlaError as exc:  # user-facing errors: one diagnostic, no traceback
        print(exc.render(), file=sys.stderr)
        sys.exit(2)
