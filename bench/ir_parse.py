"""Benchmark (not a test): oxla parse + verify against jaxlib's MLIR parser.

Generates (1) a module with >= 100k ops and (2) a module with >= 100 MB of hex
constants, then times ``oxla.ir.parse_module`` + ``verify`` and jaxlib's
``ir.Module.parse`` on the same text. Run: ``.venv/bin/python bench/ir_parse.py [--ops N]
[--mb M]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from oxla.ir import parse_module, verify


def many_ops_module(n_ops: int) -> str:
    """A function of ``n_ops`` elementwise/compare/select ops on tensor<4x8xf32>."""
    t = "tensor<4x8xf32>"
    lines = [f"func.func @main(%arg0: {t}, %arg1: {t}) -> {t} {{"]
    prev = ["%arg0", "%arg1"]
    kinds = ["add", "multiply", "subtract", "maximum", "tanh", "negate"]
    for i in range(n_ops):
        k = kinds[i % len(kinds)]
        a, b = prev[-1], prev[-2]
        if k in ("tanh", "negate"):
            lines.append(f"  %{i} = stablehlo.{k} {a} : {t}")
        else:
            lines.append(f"  %{i} = stablehlo.{k} {a}, {b} : {t}")
        prev.append(f"%{i}")
    lines.append(f"  return {prev[-1]} : {t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def hex_module(megabytes: int) -> str:
    """A function returning the sum of constants holding ``megabytes`` MB of f32 hex."""
    n_consts = 8
    per = megabytes * 1024 * 1024 // n_consts // 4
    t = f"tensor<{per}xf32>"
    rng = np.random.default_rng(0)
    lines = [f"func.func @main() -> {t} {{"]
    for i in range(n_consts):
        blob = rng.random(per, dtype=np.float32).tobytes().hex().upper()
        lines.append(f'  %c{i} = stablehlo.constant dense<"0x{blob}"> : {t}')
    acc = "%c0"
    for i in range(1, n_consts):
        lines.append(f"  %s{i} = stablehlo.add {acc}, %c{i} : {t}")
        acc = f"%s{i}"
    lines.append(f"  return {acc} : {t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def timed(fn, repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def jax_parser():
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return None
    ctx = mlir.make_ir_context()

    def parse(text: str) -> None:
        with ctx:
            mlir.ir.Module.parse(text)

    return parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args()
    jp = jax_parser()
    for name, text, hex_bytes in (
        (f"{args.ops} ops", many_ops_module(args.ops), 0),
        (f"{args.mb} MB hex", hex_module(args.mb), args.mb * 1024 * 1024),
    ):
        mb = len(text) / 1e6
        t_parse = timed(lambda t=text: parse_module(t, "bench.mlir"))
        m = parse_module(text, "bench.mlir")
        t_verify = timed(lambda m=m: verify(m))
        oxla_t = t_parse + t_verify
        line = (f"{name}: {mb:.1f} MB text; oxla parse {t_parse:.2f} s + verify {t_verify:.2f} s"
                f" = {oxla_t:.2f} s ({mb / oxla_t:.1f} MB/s")
        if hex_bytes:
            line += f", hex decoded at {len(text) / 1e6 / t_parse:.0f} MB/s of text"
        line += ")"
        if jp is not None:
            t_jax = timed(lambda t=text: jp(t))
            line += f"; jaxlib parse {t_jax:.2f} s; ratio oxla/jaxlib {oxla_t / t_jax:.2f}x"
        print(line, flush=True)


if __name__ == "__main__":
    main()
