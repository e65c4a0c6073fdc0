"""The demo's kernel, ``demo.rmsnorm``, declared once with six implementations, and
the override that puts it in place of the RMSNorm that transformers' Llama emits
through ``torch.export`` (after oxla's default pipeline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from oxla_kernels import (
    CImpl,
    CudaImpl,
    HipImpl,
    Kernel,
    NumpyImpl,
    Override,
    SyclImpl,
    TritonImpl,
)

SRC = Path(__file__).parent / "src"
"""The kernels' sources. ``rmsnorm.spv`` is the SYCL device image, the SPIR-V that
``rmsnorm.cl`` compiles to (what a SYCL compiler ships; rebuilt with Debian's clang-15
and llvm-spirv-15: ``clang-15 -cc1 -triple spir64-unknown-unknown -cl-std=CL1.2
-finclude-default-header -emit-llvm-bc -O2 rmsnorm.cl -o rmsnorm.bc && llvm-spirv-15
rmsnorm.bc -o rmsnorm.spv``)."""


def rmsnorm_reference(x: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """``w * x / sqrt(mean(x**2, -1) + eps)`` in f32 (the interpreter's implementation)."""
    ms = np.mean(np.square(x, dtype=np.float32), axis=-1, keepdims=True, dtype=np.float32)
    return (w * (x * (np.float32(1) / np.sqrt(ms + np.float32(eps))))).astype(np.float32)


def _rows(ins, attrs) -> tuple[int]:
    return (int(np.prod(ins[0].shape[:-1])),)


def _block(ins, attrs) -> dict:
    d = ins[0].shape[-1]
    return {"D": d, "BLOCK": 1 << max(int(d) - 1, 1).bit_length()}


def _dim(ins, attrs) -> int:
    return int(ins[0].shape[-1])


RMSNORM = Kernel(
    "demo.rmsnorm",
    operands=["f32[b, s, d]", "f32[d]"],
    results=["f32[b, s, d]"],
    attributes={"eps": 1e-6},
    sharding_rule="([i, j, k], [k]) -> ([i, j, k])",
    impls=[
        CImpl((SRC / "rmsnorm.c").read_text(), "demo_rmsnorm"),
        NumpyImpl(rmsnorm_reference),
        SyclImpl("demo_rmsnorm", _rows, spirv=SRC / "rmsnorm.spv", scalars=(_dim, "eps")),
        CudaImpl((SRC / "rmsnorm.cu").read_text(), "demo_rmsnorm", grid=_rows,
                 block=(128,), scalars=(_dim, "eps"), shared_mem=128 * 4),
        HipImpl((SRC / "rmsnorm.hip").read_text(), "demo_rmsnorm", grid=_rows,
                block=(128,), scalars=(_dim, "eps"), shared_mem=128 * 4),
        TritonImpl("oxla_kernels_demo.triton_rmsnorm:demo_rmsnorm", grid=_rows,
                   constexprs=_block, scalars=("eps",), num_warps=1),
    ],
)
"""``demo.rmsnorm(x: f32[b, s, d], w: f32[d]) -> f32[b, s, d]`` with attribute ``eps``."""

LLAMA_RMSNORM = """
func.func @llama_rmsnorm(%x: tensor<?x?x?xf32>, %w: tensor<?xf32>, %n: tensor<f32>,
                         %eps: tensor<f32>) -> tensor<?x?x?xf32> {
  %sq = stablehlo.multiply %x, %x : tensor<?x?x?xf32>
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %sum = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [2]
      : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %nb = stablehlo.broadcast_in_dim %n, dims = [] : (tensor<f32>) -> tensor<?x?xf32>
  %mean = stablehlo.divide %sum, %nb : tensor<?x?xf32>
  %r = stablehlo.reshape %mean : (tensor<?x?xf32>) -> tensor<?x?x1xf32>
  %eb = stablehlo.broadcast_in_dim %eps, dims = [] : (tensor<f32>) -> tensor<?x?x1xf32>
  %a = stablehlo.add %r, %eb : tensor<?x?x1xf32>
  %rs = stablehlo.rsqrt %a : tensor<?x?x1xf32>
  %rb = stablehlo.broadcast_in_dim %rs, dims = [0, 1, 2]
      : (tensor<?x?x1xf32>) -> tensor<?x?x?xf32>
  %y = stablehlo.multiply %x, %rb : tensor<?x?x?xf32>
  %wb = stablehlo.broadcast_in_dim %w, dims = [2] : (tensor<?xf32>) -> tensor<?x?x?xf32>
  %out = stablehlo.multiply %wb, %y : tensor<?x?x?xf32>
  func.return %out : tensor<?x?x?xf32>
}
"""
"""``LlamaRMSNorm.forward`` as ``torch.export`` + oxla's default pipeline leave it."""

RMSNORM_OVERRIDE = Override(
    "demo.llama-rmsnorm", LLAMA_RMSNORM, RMSNORM, operands=["x", "w"],
    attrs={"eps": lambda m: float(m.const("eps"))},
    constraints=[("%n is a constant", lambda m: m.const("n") is not None),
                 ("%eps is a constant", lambda m: m.const("eps") is not None),
                 ("%n equals the normalized dim", lambda m: m.const("n") == m.shape("x")[-1])],
    backends=("cpu",))
"""Replaces Llama's RMSNorm by ``demo.rmsnorm`` on the cpu backend."""
