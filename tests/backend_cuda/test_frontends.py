"""Frameworks onto the cuda backend's simulated device: torch.compile, oxla_frontend_jax.jit
and a small GPT-2 from transformers through ``oxla compile --frontend torch``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest


def test_torch_compile_on_cuda(sim):
    torch = pytest.importorskip("torch")
    pytest.importorskip("oxla_frontend_torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    x = torch.randn(3, 8)
    compiled = torch.compile(model, backend="oxla", options={"backend": "cuda"})
    with torch.no_grad():
        got, want = compiled(x), model(x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert sim.device.stats["gemms"] >= 2  # both Linear layers through the GEMM call


def test_jax_jit_on_cuda(sim):
    jnp = pytest.importorskip("jax.numpy")
    fej = pytest.importorskip("oxla_frontend_jax")

    def f(a, b):
        return jnp.tanh(a @ b) * 2.0 + 1.0

    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    got = np.asarray(fej.jit(f, backend="cuda")(a, b))
    np.testing.assert_allclose(got, np.tanh(a @ b) * 2.0 + 1.0, rtol=1e-5, atol=1e-6)


def test_small_gpt2_through_the_cli_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("oxla_frontend_torch")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=101,
                                     n_positions=16, use_cache=False)
    lm = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids).logits

    model = Logits(lm).eval()
    ids = torch.randint(0, 101, (1, 8))
    with torch.no_grad():
        want = model(ids).numpy()
    ep = torch.export.export(model, (ids,), strict=False)
    torch.export.save(ep, tmp_path / "gpt2.pt2")
    np.save(tmp_path / "ids.npy", ids.numpy())
    env = {k: v for k, v in os.environ.items() if k != "OXLA_CUDA_DEVICE"}
    cli = [sys.executable, "-m", "oxla.cli.main"]
    made = subprocess.run(cli + ["compile", "--frontend", "torch", "--backend", "cuda",
                                 str(tmp_path / "gpt2.pt2"), "-o", str(tmp_path / "g.oxla")],
                          capture_output=True, text=True, env=env)  # no device needed
    assert made.returncode == 0, made.stderr
    ran = subprocess.run(cli + ["run", str(tmp_path / "g.oxla"), "--input",
                                str(tmp_path / "ids.npy"), "--output", str(tmp_path / "o.npz")],
                         capture_output=True, text=True, env={**env, "OXLA_CUDA_DEVICE": "sim"})
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "o.npz")["result0"]
    err = np.abs(got - want).max()
    assert err <= 1e-4 * np.abs(want).max(), err
