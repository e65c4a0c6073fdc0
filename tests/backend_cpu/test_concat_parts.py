"""Loop kernels whose root is a ``concatenate``: one loop nest per operand
(:func:`oxla_backend_cpu.codegen._emit_concat_parts`), each evaluating only its own
fused expression, against the interpreter, along the first (parallel-split) and inner
dimensions, with empty operands and operands that are plain inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(7)


def _program(dim: int, parts: list[int], rows: int = 8, cols: int = 256) -> tuple[str, list]:
    """``concatenate`` along ``dim`` of ``logistic(a_i) * tanh(b_i)`` per part (the
    LSTM's hidden state), a part of size 0 included when listed."""
    def ty(n):
        sh = (n, cols) if dim == 0 else (rows, n)
        return "tensor<" + "x".join(map(str, sh)) + "xf32>"
    params, ops, names, args = [], [], [], []
    for i, n in enumerate(parts):
        params += [f"%a{i}: {ty(n)}", f"%b{i}: {ty(n)}"]
        sh = (n, cols) if dim == 0 else (rows, n)
        args += [RNG.standard_normal(sh).astype(np.float32) for _ in range(2)]
        ops += [f"%s{i} = stablehlo.logistic %a{i} : {ty(n)}",
                f"%t{i} = stablehlo.tanh %b{i} : {ty(n)}",
                f"%h{i} = stablehlo.multiply %s{i}, %t{i} : {ty(n)}"]
        names.append(f"%h{i}")
    total = sum(parts)
    ops.append(f"%c = stablehlo.concatenate {', '.join(names)}, dim = {dim} : "
               f"({', '.join(ty(n) for n in parts)}) -> {ty(total)}")
    body = "\n  ".join(ops)
    return f"""
func.func @main({", ".join(params)}) -> {ty(total)} {{
  {body}
  return %c : {ty(total)}
}}""", args


@pytest.mark.parametrize("dim,parts,rows,cols", [
    (0, [8] * 32, 8, 256),          # the LSTM's 32 stacked steps: parallel over dim 0
    (0, [3, 0, 5, 1], 8, 64),       # uneven and empty parts
    (1, [16, 48, 0, 7], 64, 0),     # along the inner dimension
    (1, [1] * 9, 300, 0),
])
def test_concatenate_root_matches_interpreter(dim, parts, rows, cols):
    text, args = _program(dim, parts, rows, cols)
    run_both(text, args, rtol=2e-6, atol=1e-6)


def test_reshaped_concatenate_root():
    """The LSTM's form: 32 steps ``[1, 8, 256]`` stacked along dimension 0, reshaped to
    ``[256, 256]`` for the next layer's GEMM (the parallel split is then over the 32
    steps, not the reshaped rows)."""
    ty = "tensor<1x8x256xf32>"
    params = ", ".join(f"%a{i}: {ty}" for i in range(32))
    ops = [f"%t{i} = stablehlo.tanh %a{i} : {ty}" for i in range(32)]
    ops.append("%c = stablehlo.concatenate " + ", ".join(f"%t{i}" for i in range(32)) +
               f", dim = 0 : ({', '.join([ty] * 32)}) -> tensor<32x8x256xf32>")
    ops.append("%r = stablehlo.reshape %c : (tensor<32x8x256xf32>) -> tensor<256x256xf32>")
    body = "\n  ".join(ops)
    text = f"""
func.func @main({params}) -> tensor<256x256xf32> {{
  {body}
  return %r : tensor<256x256xf32>
}}"""
    args = [RNG.standard_normal((1, 8, 256)).astype(np.float32) for _ in range(32)]
    run_both(text, args, rtol=2e-6, atol=1e-6)


def test_input_operands_are_copied():
    text = """
func.func @main(%a: tensor<300x64xf32>, %b: tensor<200x64xf32>) -> tensor<500x64xf32> {
  %e = stablehlo.exponential %b : tensor<200x64xf32>
  %c = stablehlo.concatenate %a, %e, dim = 0 : (tensor<300x64xf32>, tensor<200x64xf32>)
      -> tensor<500x64xf32>
  return %c : tensor<500x64xf32>
}"""
    args = [RNG.standard_normal(s).astype(np.float32) for s in ((300, 64), (200, 64))]
    labels = compile_cpu(text, cache=False, extra={"profile": True}).stats["profile_labels"]
    assert any("concatenate" in lab for lab in labels), labels
    run_both(text, args, rtol=1e-6, atol=0)
