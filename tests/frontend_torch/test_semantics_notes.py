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


class _ConvBN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def test_train_mode_batch_norm_warns_that_running_stats_are_dropped(backend: str,
                                                                     assert_close) -> None:
    m = _ConvBN().train()
    x = torch.randn(2, 3, 6, 6)
    ep = torch.export.export(m, (x,))
    with pytest.warns(UserWarning, match=r"module 'bn' \(BatchNorm2d\): running_mean, "
                                         r"running_var.*dropped.*model.eval\(\)"):
        f = ot.compile(ep, backend=backend)
    with torch.no_grad():
        want = _ConvBN().train()(x)  # a fresh copy: batch statistics, like the program
    assert_close(f(x), want)


def test_eval_module_compiles_quietly_and_keeps_its_mode(recwarn) -> None:
    m = _ConvBN().train()
    x = torch.randn(2, 3, 6, 6)
    f = ot.compile(m, (x,), "interpreter")  # exported in eval mode: nothing is mutated
    assert m.training and m.bn.training  # the caller's module is left as it was
    assert not [w for w in recwarn if "updates buffers" in str(w.message)]
    m.eval()
    with torch.no_grad():
        assert torch.allclose(f(x), m(x), rtol=1e-4, atol=1e-5)


class _Emb(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(5, 3)

    def forward(self, ids):
        return self.emb(ids)


def test_embedding_out_of_range_ids_are_clamped(backend: str, assert_close) -> None:
    """The documented difference: torch raises, oxla reads the nearest row (gather)."""
    m = _Emb().eval()
    f = ot.compile(m, (torch.tensor([0, 1, 2, 3]),), backend)
    ids = torch.tensor([-3, 2, 5, 99])
    with pytest.raises(IndexError):
        m(ids)
    with torch.no_grad():
        assert_close(f(ids), m(torch.tensor([0, 2, 4, 4])))
