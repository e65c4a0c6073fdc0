"""Rules for upsampling, sort/topk, erfinv, transposed convolution and dropout, against
eager torch on each backend (and on ``?`` dims where a rule is marked dynamic-safe)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import numpy as np
import oxla_frontend_torch as ot
import torch
import torch.nn.functional as F
from oxla_frontend_torch.importer import export_module, import_program

from oxla.errors import NotSupportedError
from oxla.interpreter import run_function
from tests.frontend_torch.conftest import FnModule

aten = torch.ops.aten


_g = torch.Generator().manual_seed(0)
X = torch.randn(2, 3, 5, 6, generator=_g)
V = torch.randn(3, 7, generator=_g)
VN = V.clone()
VN[0, 2] = VN[1, 5] = float("nan")
TIES = torch.tensor([[1.0, 3.0, 1.0, 2.0, 3.0, 1.0], [0.0, -0.0, 2.0, 0.0, 2.0, -1.0]])
W_T = torch.randn(3, 4, 3, 3, generator=_g) * 0.3  # [Cin, Cout, kh, kw]
W_TG = torch.randn(4, 3, 3, 2, generator=_g) * 0.3  # groups=2: [Cin, Cout/2, kh, kw]
B_T = torch.randn(4, generator=_g)

CASES = {
    "nearest_x2": (lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), (X,)),
    "nearest_size": (lambda x: F.interpolate(x, size=(7, 9), mode="nearest"), (X,)),
    "nearest_frac_scale": (lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest"), (X,)),
    "nearest_down": (lambda x: F.interpolate(x, size=(3, 4), mode="nearest"), (X,)),
    "nearest_default": (lambda x: aten.upsample_nearest2d(x, [8, 13]), (X,)),
    "nearest_1d": (lambda x: F.interpolate(x[0], scale_factor=3, mode="nearest"), (X,)),
    "bilinear_x2": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), (X,)),
    "bilinear_ac": (lambda x: F.interpolate(x, size=(7, 9), mode="bilinear",
                                            align_corners=True), (X,)),
    "bilinear_down": (lambda x: F.interpolate(x, size=(3, 4), mode="bilinear"), (X,)),
    "bilinear_frac": (lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear"), (X,)),
    "bilinear_default": (lambda x: aten.upsample_bilinear2d(x, [9, 4], True), (X,)),
    "bilinear_default_scales": (lambda x: aten.upsample_bilinear2d(x, [10, 12], False,
                                                                   2.0, 2.0), (X,)),
    "sort_asc": (lambda x: torch.sort(x, dim=1), (V,)),
    "sort_desc_dim0": (lambda x: torch.sort(x, dim=0, descending=True), (V,)),
    "sort_nan": (lambda x: torch.sort(x, dim=-1)[0] + torch.sort(x, descending=True)[0], (VN,)),
    "sort_nan_idx": (lambda x: torch.sort(x, dim=-1)[1] * 10
                     + torch.sort(x, descending=True)[1], (VN,)),
    "sort_stable_ties": (lambda x: torch.sort(x, stable=True)[1] * 10
                         + torch.sort(x, stable=True, descending=True)[1], (TIES,)),
    "sort_int": (lambda x: torch.sort((x * 4).long(), descending=True)[0], (V,)),
    "topk": (lambda x: torch.topk(x, 3, dim=-1), (V,)),
    "topk_smallest_dim0": (lambda x: torch.topk(x, 2, dim=0, largest=False), (V,)),
    "erfinv": (lambda x: torch.erfinv(torch.tanh(x) * 0.999), (V,)),
    "conv_t": (lambda x: F.conv_transpose2d(x, W_T, B_T, stride=2, padding=1,
                                            output_padding=1), (X,)),
    "conv_t_plain": (lambda x: F.conv_transpose2d(x, W_T), (X,)),
    "conv_t_groups_dil": (lambda x: F.conv_transpose2d(x[:, :2].repeat(1, 2, 1, 1), W_TG,
                                                       stride=(1, 3), padding=(2, 0),
                                                       dilation=2, groups=2), (X,)),
    "conv_t_crop": (lambda x: F.conv_transpose2d(x, W_T, stride=2, padding=3), (X,)),
    "conv_t_1d": (lambda x: F.conv_transpose1d(x[:, :, 0], W_T[..., 0], stride=3, padding=1),
                  (X,)),
    "dropout_eval": (lambda x: F.dropout(x, 0.5, training=False) * 2, (V,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_matches_eager(name: str, backend: str, assert_close) -> None:
    fn, args = CASES[name]
    model = FnModule(fn).eval()
    with torch.no_grad():
        want = model(*args)
    got = ot.compile(model, args, backend)(*args)
    if isinstance(want, torch.Tensor):
        want, got = (want,), (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        nan = torch.isnan(w) if w.is_floating_point() else torch.zeros_like(w, dtype=bool)
        assert torch.equal(torch.isnan(g) if g.is_floating_point() else nan, nan)
        assert_close(g[~nan], w[~nan], rtol=2e-4 if name == "erfinv" else 1e-4)


def test_nearest_is_exact(backend: str) -> None:
    """Nearest upsampling copies elements: bit-for-bit equal to torch."""
    m = FnModule(lambda x: F.interpolate(x, scale_factor=1.7, mode="nearest")).eval()
    assert torch.equal(ot.compile(m, (X,), backend)(X), m(X))


def test_train_mode_dropout_is_refused_with_advice() -> None:
    m = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Dropout(0.3)).train()
    ep = torch.export.export(m, (X[0, 0],))
    with pytest.raises(NotSupportedError, match=r"dropout in train mode \(p=0.3\)") as err:
        ot.compile(ep)
    assert "model.eval()" in str(err.value)
    # an nn.Module is exported in eval mode: dropout is the identity
    f = ot.compile(m, (X[0, 0],))
    m.eval()
    with torch.no_grad():
        assert torch.allclose(f(X[0, 0]), m(X[0, 0]), rtol=1e-5, atol=1e-6)


_B = torch.export.Dim("b", min=1, max=16)
_DYN = {
    "conv_t": (lambda x: F.conv_transpose2d(x, W_T, B_T, stride=2, padding=1,
                                            output_padding=1), {0: _B}),
    "erfinv": (lambda x: torch.erfinv(torch.tanh(x) * 0.9), {0: _B, 2: torch.export.Dim("h")}),
    "upsample": (lambda x: F.interpolate(x, scale_factor=1.5, mode="bilinear")
                 + F.interpolate(x, size=(7, 9), mode="nearest"),
                 {0: _B, 1: torch.export.Dim("c")}),
    "upsample_default": (lambda x: aten.upsample_bilinear2d(x, [9, 4], True)
                         + aten.upsample_nearest2d(x, [9, 4]), {0: _B}),
}


@pytest.mark.parametrize("name", sorted(_DYN))
def test_dynamic_safe_rules_on_question_mark_dims(name: str, backend: str) -> None:
    """Rules marked dynamic-safe: one ``?`` module run at two batch sizes, and the
    TorchFunction (refined per shape on the backend), against eager torch."""
    fn, dims = _DYN[name]
    m = FnModule(fn).eval()
    ep = export_module(m, (X,), dynamic_shapes=((dims,),))
    mod = import_program(ep, decompose=False, dynamic=True)
    assert "?" in str(mod.body.ops[0]).splitlines()[0]
    f = ot.compile(ep, backend=backend)
    assert f.dynamic_module is not None, f.dynamic_error
    for b in (3, 1):
        x = torch.randn(b, 3, 5, 6, generator=torch.Generator().manual_seed(b))
        with torch.no_grad():
            want = m(x).numpy()
        got = np.asarray(run_function(mod, "main", [x.numpy()])[0])
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5)
        np.testing.assert_allclose(f(x).numpy(), want, rtol=2e-4, atol=1e-5)


class _Decoder(torch.nn.Module):
    """A small segmentation-style decoder: conv, transposed conv, bilinear upsample."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.enc = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=2, padding=1),
                                       torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.up = torch.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.head = torch.nn.Upsample(scale_factor=2, mode="bilinear")
        self.near = torch.nn.Upsample(scale_factor=(1, 2, 2), mode="nearest")

    def forward(self, x):
        y = self.head(torch.relu(self.up(self.enc(x))))
        return y, self.near(y.unsqueeze(1))


def test_decoder_model(backend: str, assert_close) -> None:
    m = _Decoder().eval()
    x = torch.randn(2, 3, 8, 10)
    f = ot.compile(m, (x,), backend)
    with torch.no_grad():
        want = m(x)
    got = f(x)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])
