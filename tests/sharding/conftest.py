"""Fixtures of the sharding tests: JAX-made sharded programs (made once per session in
a subprocess with 8 forced host devices) and the ../shared conformance directory."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{module} is required under CI=true (the test venv installs it)")
        pytest.skip(f"{module} is not installed")


@pytest.fixture(scope="session")
def jax_programs(tmp_path_factory) -> Path:
    """A directory of ``<case>.sdy.mlir``, ``<case>.gspmd.mlir`` and ``<case>.npz``
    (inputs ``in*``, jax.jit's outputs ``out*``); see jax_programs.py."""
    _need("jax")
    out = tmp_path_factory.mktemp("jax_programs")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, str(HERE / "jax_programs.py"), str(out)], check=True,
                   env=env, timeout=300)
    return out


@pytest.fixture(scope="session")
def shardy_dir() -> Path:
    """``../shared/conformance/shardy`` (skips when absent)."""
    env = os.environ.get("OXLA_SHARED")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared", REPO / "shared"]:
        d = cand / "conformance" / "shardy"
        if d.is_dir():
            return d
    pytest.skip("../shared/conformance/shardy not found (set OXLA_SHARED)")


def small_llama():
    """``(model, ids, eager logits)``: the sharding tests' transformers Llama (2 layers,
    hidden 64, 4 heads, vocabulary 128, eager attention; random weights, seed 0) in eval
    mode and a (1, 8) batch of input ids."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=4,
                                   vocab_size=128, max_position_embeddings=64,
                                   use_cache=False, attn_implementation="eager")
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 128, (1, 8))
    with torch.no_grad():
        ref = model(ids).logits.numpy()
    return model, ids, ref
