"""Importing a ``.pt2`` shows none of torch's own deprecation warnings (torch 2.13 warns
about pytree ``LeafSpec`` when ``run_decompositions`` deep-copies a loaded program)."""

from __future__ import annotations

import warnings

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import numpy as np
import torch

import oxla


class _Max(torch.nn.Module):
    def forward(self, v: torch.Tensor) -> torch.Tensor:
        return torch.where(v > 1, torch.nan, v).amax(1)


def test_pt2_import_has_no_future_warning(tmp_path):
    path = tmp_path / "m.pt2"
    torch.export.save(torch.export.export(_Max(), (torch.randn(2, 3),)), path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = oxla.plugins.get_frontend("torch").import_path(path)
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == []
    x = np.array([[0.5, 2.0, -1.0], [0.25, 0.75, 0.5]], np.float32)
    got = oxla.compile(module, backend="interpreter")(x)[0]
    np.testing.assert_array_equal(np.isnan(got), [True, False])
    assert got[1] == np.float32(0.75)


@pytest.mark.parametrize("source", ["module", "exported", "path"])
def test_compile_api_has_no_future_warning(tmp_path, source):
    x = torch.tensor([[0.5, 2.0, -1.0], [0.25, 0.75, 0.5]])
    model: object = _Max()
    if source != "module":
        model = torch.export.export(_Max(), (x,))
    if source == "path":
        torch.export.save(model, tmp_path / "m.pt2")
        model = tmp_path / "m.pt2"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn = oxla.plugins.get_frontend("torch").compile_object(model, (x,), "interpreter")
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == []
    assert torch.equal(fn(x).isnan(), torch.tensor([True, False]))
