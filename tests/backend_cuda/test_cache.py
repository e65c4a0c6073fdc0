"""The cuda compile cache (``oxla_backend_cuda.cache``): miss then hit in one process,
a hit in a fresh process, a changed option or arch misses, ``cache=False`` is off, and a
program with host-staged steps is stored and hit like any other."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from oxla_backend_cuda.backend import CUDABackend

from oxla.ir import parse_module
from oxla.protocols import CompileOptions

MOD = """
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<4xf32>
  %1 = stablehlo.exponential %0 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""

HOST = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.replica_id : tensor<ui32>
  %1 = stablehlo.convert %0 : (tensor<ui32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.add %x, %2 : tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    return tmp_path


def _compile(text: str, **kw):
    return CUDABackend().compile(parse_module(text), CompileOptions(**kw))


def test_miss_then_hit_and_options_that_miss(cache_dir, sim):
    first = _compile(MOD, extra={"cuda_arch": "sm_80"})
    assert first.stats["cache"] == "miss" and "cache_note" not in first.stats
    assert len([p for p in os.listdir(cache_dir) if p.startswith("cuda-")]) == 1
    again = _compile(MOD, extra={"cuda_arch": "sm_80"})
    assert again.stats["cache"] == "hit" and again.ptx == first.ptx
    x, y = np.linspace(-1, 1, 4, dtype=np.float32), np.full(4, 0.5, np.float32)
    np.testing.assert_allclose(again(x, y)[0], np.exp(x * y), rtol=1e-6)
    assert _compile(MOD, extra={"cuda_arch": "sm_90"}).stats["cache"] == "miss"  # arch
    assert _compile(MOD, extra={"cuda_arch": "sm_80"}, fast_math=True).stats["cache"] == "miss"
    assert _compile(MOD.replace("exponential", "tanh"),
                    extra={"cuda_arch": "sm_80"}).stats["cache"] == "miss"  # module
    off = _compile(MOD, extra={"cuda_arch": "sm_80"}, cache=False)
    assert off.stats["cache"] == "off"


def test_hit_in_a_fresh_process(cache_dir):
    code = ("import sys; from oxla_backend_cuda.backend import CUDABackend; "
            "from oxla.ir import parse_module; from oxla.protocols import CompileOptions; "
            "e = CUDABackend().compile(parse_module(sys.stdin.read()), "
            "CompileOptions(extra={'cuda_arch': 'sm_80'})); print(e.stats['cache'])")
    env = dict(os.environ, OXLA_CACHE_DIR=str(cache_dir))
    runs = [subprocess.run([sys.executable, "-c", code], input=MOD, env=env,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert [r.stdout.strip() for r in runs] == ["miss", "hit"], [r.stderr for r in runs]


def test_a_program_with_host_steps_is_stored_and_hit(cache_dir, monkeypatch):
    """Its host-staged op (replica_id) travels in the artifact (host_ops.mlir); the hit
    runs it as the first compile does (process (0, 0): x + 0). A program that still
    cannot be an artifact (custom-call kernels) is tests/custom_calls'."""
    monkeypatch.setenv("OXLA_CUDA_DEVICE", "sim")
    exe = _compile(HOST, extra={"cuda_arch": "sm_80"})
    assert exe.stats["cache"] == "miss" and "cache_note" not in exe.stats
    assert [p for p in os.listdir(cache_dir) if p.startswith("cuda-")]
    hit = _compile(HOST, extra={"cuda_arch": "sm_80"})
    assert hit.stats["cache"] == "hit"
    assert [op.name for op in hit.program.host_ops] == ["stablehlo.replica_id"]
    x = np.array([1.0, -2.0, 3.5, 0.0], np.float32)
    np.testing.assert_array_equal(hit(x)[0], exe(x)[0])
    np.testing.assert_array_equal(hit(x)[0], x)
