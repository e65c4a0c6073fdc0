"""The demo kernel package as a user gets it: built as a wheel from its own
pyproject.toml, pip-installed into a fresh venv, listed by ``oxla plugins`` and used by
``oxla compile``; and its override on a transformers Llama, with and without."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.custom_calls.demo_pkg import DEMO, ROOT, demo_modules
from tests.custom_calls.test_overrides import rmsnorm_program

pytest.importorskip("oxla_kernels")
pytest.importorskip("oxla_backend_cpu")
NAME = "demo.llama-rmsnorm"
LAYERS = 2


def _run(*cmd, cwd=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "OXLA_LOAD_PLUGINS",
                        "OXLA_DISABLE_OVERRIDES")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                          timeout=600, cwd=cwd)
    if proc.returncode != 0:
        pytest.fail(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}")
    return proc


@pytest.mark.slow
def test_installed_into_a_fresh_venv_it_is_listed_and_fires(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(DEMO, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                             "__pycache__"))
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", wheels, src)
    (wheel,) = wheels.glob("oxla_kernels_demo-*.whl")
    env_dir = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", env_dir)
    python, oxla_bin = env_dir / "bin" / "python", env_dir / "bin" / "oxla"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib.stdout.strip(), "_oxla_outer_deps.pth").write_text("\n".join(sorted(outer)))
    editable = [ROOT, *(ROOT / "extensions" / d for d in ("custom_calls", "backend_cpu",
                                                          "codegen_llvm"))]
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         *[a for e in editable for a in ("-e", e)])
    _run(python, "-m", "pip", "install", "-q", "--no-deps", wheel)
    rows = json.loads(_run(oxla_bin, "plugins", "--json").stdout)
    mine = {(r["name"], r["kind"]) for r in rows if r["distribution"] == "oxla-kernels-demo"}
    assert mine == {(NAME, "pattern"), *((f"demo.rmsnorm@{b}", "custom_call") for b in (
        "cpu", "interpreter", "sycl", "cuda", "hip"))}, rows
    model = tmp_path / "m.mlir"
    model.write_text(rmsnorm_program())
    out = _run(oxla_bin, "compile", model, "--backend", "cpu", "--explain-overrides",
               "-o", tmp_path / "m.oxla", cwd=tmp_path).stdout
    assert f"override {NAME}: fired 1 time(s)" in out, out


@pytest.fixture(scope="module")
def llama():
    pytest.importorskip("transformers")
    pytest.importorskip("oxla_frontend_torch")
    demo_modules()
    import llama_override  # examples/kernels_demo/llama_override.py, on sys.path now

    return llama_override, *llama_override.build(layers=LAYERS, hidden=32, seq=8)


def test_llama_with_and_without_the_override(demo, llama):
    job, model, ids, ep = llama
    with_it, without, _ = job.compile_both(ep, ids)
    assert job.fired(with_it) == 2 * LAYERS + 1
    assert job.fired(without) == 0
    x = ids.numpy()
    a, b = np.asarray(with_it(x)[0]), np.asarray(without(x)[0])
    assert np.max(np.abs(a - b)) <= 1e-5 * np.max(np.abs(b))
    ref = model(ids).logits.detach().numpy()
    assert np.max(np.abs(a - ref)) <= 1e-4 * np.max(np.abs(ref))
    la, lb = job.latency(with_it, without, x, rounds=3, calls=5)
    print(f"\nLlama {LAYERS} layers: with the override {la:.3f} ms, without {lb:.3f} ms")


def test_explain_overrides_on_the_exported_llama(demo, llama, tmp_path):
    import torch

    from oxla.cli.main import cli

    _, _, _, ep = llama
    torch.export.save(ep, tmp_path / "llama.pt2")
    run = CliRunner().invoke(cli, ["compile", str(tmp_path / "llama.pt2"), "--backend",
                                   "cpu", "--explain-overrides", "-o",
                                   str(tmp_path / "llama.oxla")])
    assert run.exit_code == 0, run.output
    assert f"override {NAME}: fired {2 * LAYERS + 1} time(s)" in run.output
    assert run.output.count("\n  at ") == 2 * LAYERS + 1
