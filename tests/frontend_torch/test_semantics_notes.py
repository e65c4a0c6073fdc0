"""What the torch frontend tells the user: dynamic-size hints that name the user's Dim
and give a correct ``--input-spec``, and warnings where oxla's semantics differ."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch as ot
import torch

from oxla.errors import NotSupportedError


class _FlatSum(torch.nn.Module):
    def forward(self, x, ids):
        return x.reshape(-1) * 2 + ids.sum()


def _dynamic_ep() -> torch.export.ExportedProgram:
    x, ids = torch.randn(2, 8), torch.ones(3, dtype=torch.int64)
    dims = ({0: torch.export.Dim("batch")}, {0: torch.export.Dim("n")})
    return torch.export.export(_FlatSum(), (x, ids), dynamic_shapes=dims)


def test_dynamic_size_hint_names_the_dim_and_dtypes(tmp_path) -> None:
    with pytest.raises(NotSupportedError) as err:
        ot.import_program(_dynamic_ep())
    text = str(err.value)
    assert "Dim 'batch' (dim 0 of input 'x'" in text, text
    assert "--input-spec 2x8:f32 --input-spec 3:i64" in text, text
    # after torch.export.save/load the Dim name is gone: the input and dim still are
    torch.export.save(_dynamic_ep(), str(tmp_path / "m.pt2"))
    with pytest.raises(NotSupportedError) as err:
        ot.import_program(torch.export.load(str(tmp_path / "m.pt2")))
    assert "dim 0 of input 'x'" in str(err.value) and "2x8:f32" in str(err.value)


def test_dynamic_program_imports_with_the_suggested_shapes(assert_close) -> None:
    import oxla

    mod = ot.import_program(_dynamic_ep(), arg_shapes=[(2, 8), (3,)])
    x, ids = torch.randn(2, 8), torch.arange(3)
    (got,) = oxla.compile(mod)(x.numpy(), ids.numpy())
    assert_close(torch.from_numpy(got), _FlatSum()(x, ids))
