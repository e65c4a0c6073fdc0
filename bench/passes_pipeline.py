"""Times the default pipeline on a generated module of about 100k ops.

The module chains elementwise ops with redundant work for every pass to find:
``x*1``, double negations, duplicated subexpressions (CSE) and dead values (DCE).

Usage: ``python bench/passes_pipeline.py [--ops N]``
"""

from __future__ import annotations

import argparse
import time


def make_module_text(n_ops: int) -> str:
    lines = [
        "func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {",
        "  %one = stablehlo.constant dense<1.0> : tensor<8xf32>",
    ]
    prev = "%x"
    i = 0
    while i < n_ops:
        t = "tensor<8xf32>"
        lines += [
            f"  %m{i} = stablehlo.multiply {prev}, %one : {t}",
            f"  %a{i} = stablehlo.add %m{i}, {prev} : {t}",
            f"  %b{i} = stablehlo.add %m{i}, {prev} : {t}",
            f"  %n{i} = stablehlo.negate %a{i} : {t}",
            f"  %p{i} = stablehlo.negate %n{i} : {t}",
            f"  %d{i} = stablehlo.exponential %b{i} : {t}",
            f"  %s{i} = stablehlo.subtract %p{i}, %b{i} : {t}",
        ]
        prev = f"%s{i}"
        i += 7
    lines += [f"  return {prev} : tensor<8xf32>", "}"]
    return "\n".join(lines)


def main() -> None:
    from oxla.ir import parse_module
    from oxla.passes import PassManager

    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=100_000)
    args = ap.parse_args()
    text = make_module_text(args.ops)
    t0 = time.perf_counter()
    module = parse_module(text)
    t_parse = time.perf_counter() - t0
    before = sum(1 for _ in module.walk())
    pm = PassManager.from_pipeline("default", timing=True)
    t0 = time.perf_counter()
    pm.run(module)
    elapsed = time.perf_counter() - t0
    after = sum(1 for _ in module.walk())
    print(
        f"ops before: {before}  after: {after}  parse: {t_parse:.2f}s  "
        f"default pipeline: {elapsed:.2f}s (target < 5 s)"
    )
    print(pm.timing_report())


if __name__ == "__main__":
    main()
