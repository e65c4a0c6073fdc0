"""The contract of ``oxla.compile(torch_model, example_inputs=...)``: a TorchFunction that
takes torch tensors (or numpy), returns torch tensors in ``forward``'s structure, and
exposes the underlying executable's ``stats``/``save``."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import numpy as np
import torch

import oxla
from oxla.errors import OxlaError


class _Lin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class _Multi(torch.nn.Module):
    def forward(self, x, y):
        return x + y, {"prod": x * y, "list": [x - y]}


def test_single_output_is_a_tensor(backend: str, assert_close, tmp_path) -> None:
    m = _Lin().eval()
    x = torch.randn(2, 8)
    f = oxla.compile(m, example_inputs=(x,), backend=backend)
    with torch.no_grad():
        want = m(x)
    got = f(x)
    assert isinstance(got, torch.Tensor)
    assert_close(got, want)
    kept = got.clone()
    got_np = f(x.numpy() + 1)  # numpy inputs are accepted too; earlier results stay intact
    assert torch.equal(got, kept)
    got_np = f(x.numpy())
    assert isinstance(got_np, torch.Tensor)
    assert_close(got_np, want)
    assert f.stats["compile_seconds"] >= 0 and f.stats is f.executable.stats
    f.save(tmp_path / "lin.oxla")
    (flat,) = oxla.load(tmp_path / "lin.oxla")(x.numpy())
    np.testing.assert_allclose(flat, want.numpy(), rtol=1e-5, atol=1e-6)


def test_pytree_outputs_keep_forward_structure(backend: str, assert_close) -> None:
    x, y = torch.randn(3, 2), torch.randn(3, 2)
    f = oxla.compile(_Multi(), example_inputs=(x, y), backend=backend)
    got, want = f(x, y), _Multi()(x, y)
    assert isinstance(got, tuple) and len(got) == 2
    assert sorted(got[1]) == ["list", "prod"] and isinstance(got[1]["list"], list)
    assert_close(got[0], want[0])
    assert_close(got[1]["prod"], want[1]["prod"])
    assert_close(got[1]["list"][0], want[1]["list"][0])


def test_option_fields_pass_through() -> None:
    x = torch.randn(2, 8)
    f = oxla.compile(_Lin().eval(), example_inputs=(x,), backend="interpreter", cache=False)
    assert f.options is not None and f.options.cache is False


def test_module_without_example_inputs_is_a_clear_error() -> None:
    with pytest.raises(OxlaError, match=r"_Lin.forward needs arguments \(x\).*example_inputs"):
        oxla.compile(_Lin(), backend="interpreter")
