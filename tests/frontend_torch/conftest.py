"""Shared helpers for the torch frontend tests (skipped when torch is not installed)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import torch  # noqa: E402


class FnModule(torch.nn.Module):
    """An ``nn.Module`` whose forward is ``fn(*inputs)``: one op under test, exported."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


@pytest.fixture
def assert_close():
    """Returns a function comparing torch tensors within 1e-4 relative."""
    return _assert_close


def _assert_close(got, want, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Torch-tensor comparison: ``|got - want| <= atol + rtol * |want|`` elementwise."""
    got = got.detach()
    want = want.detach()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    err = (got.double() - want.double()).abs()
    bound = atol + rtol * want.double().abs()
    assert bool((err <= bound).all()), f"max abs error {err.max().item():.3g}"
