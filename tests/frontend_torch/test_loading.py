"""What users bring to ``oxla compile``, each in a fresh process: a ``.pt2`` whose output
type comes from ``transformers``, a TorchScript archive, an archive naming a pytree type
of a distribution that is not installed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import numpy as np
import torch

import oxla


def _oxla(*args: str) -> subprocess.CompletedProcess:
    """``oxla ARGS`` in a fresh interpreter (nothing imported that the archive needs)."""
    return subprocess.run([sys.executable, "-m", "oxla.cli.main", *args], capture_output=True,
                          text=True, timeout=300)


def _errors(r: subprocess.CompletedProcess) -> list[str]:
    return [s for s in r.stderr.splitlines() if s.strip() and "Warning" not in s]


def test_transformers_pt2_compiles_in_a_fresh_process(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64,
                                  n_positions=16, use_cache=False, bos_token_id=0,
                                  eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(1))
    src = tmp_path / "gpt2.pt2"
    torch.export.save(torch.export.export(model, (ids,), strict=False), str(src))
    out = tmp_path / "gpt2.oxla"
    r = _oxla("compile", str(src), "--backend", "cpu", "-o", str(out))
    assert r.returncode == 0, r.stderr
    (got,) = oxla.load(str(out))(ids.numpy())
    with torch.no_grad():
        want = model(ids).logits.numpy()
    assert np.abs(got - want).max() <= 1e-4 * np.abs(want).max()


@dataclasses.dataclass
class _Out:
    y: torch.Tensor


torch.utils._pytree.register_dataclass(_Out, serialized_type_name="oxla_absent_pkg.Out")


class _ReturnsOut(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> _Out:
        return _Out(x * 2)


def test_pt2_with_a_type_of_no_installed_distribution_says_what_to_import(tmp_path) -> None:
    src = tmp_path / "out.pt2"
    torch.export.save(torch.export.export(_ReturnsOut(), (torch.randn(2),)), str(src))
    r = _oxla("compile", str(src), "-o", str(tmp_path / "o.oxla"))
    assert r.returncode == 2, r.stderr
    lines = _errors(r)
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error:") and "oxla_absent_pkg.Out" in lines[0]
    assert "oxla_absent_pkg" in lines[0].split("provides")[1]


class _Script(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.relu6(self.fc(x) * 4)


def test_torchscript_archive_converts_with_input_specs(tmp_path) -> None:
    torch.manual_seed(0)
    model = _Script().eval()
    x = torch.randn(2, 4)
    src = tmp_path / "model.pt"
    torch.jit.script(model).save(str(src))
    out = tmp_path / "model.oxla"
    r = _oxla("compile", str(src), "--input-spec", "2x4:f32", "--backend", "cpu", "-o",
              str(out))
    assert r.returncode == 0, r.stderr
    (got,) = oxla.load(str(out))(x.numpy())
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_torchscript_archive_without_input_specs_is_one_line(tmp_path) -> None:
    from click.testing import CliRunner

    from oxla.cli.main import cli

    src = tmp_path / "model.pt"
    torch.jit.trace(_Script(), torch.randn(2, 4)).save(str(src))
    r = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "m.oxla")])
    assert r.exit_code == 2, r.output
    lines = [s for s in r.output.splitlines() if s.strip()]
    assert len(lines) == 1 and "--input-spec" in lines[0] and "TorchScript" in lines[0]
