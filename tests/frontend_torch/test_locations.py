"""Errors point at the user's source line of the op that failed (from the FX node's
``stack_trace``) and name the submodule it came from, in export and torch.compile."""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch as ot
import oxla_frontend_torch.rules  # noqa: F401  (fills LOWERINGS)
import torch
from oxla_frontend_torch.registry import LOWERINGS

from oxla.errors import LoweringError


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.act = torch.nn.ReLU6()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(4, 4, 1), torch.nn.ReLU6())

    def forward(self, x: torch.Tensor, deep: bool = False) -> torch.Tensor:
        y = self.conv(x)
        y = self.act(y)  # the ReLU6 line
        if deep:
            y = self.features(y)  # the Sequential line
        return y * 2


def _line(marker: str) -> int:
    src, start = inspect.getsourcelines(_Net.forward)
    return start + next(i for i, s in enumerate(src) if marker in s)


@pytest.fixture
def no_hardtanh(monkeypatch):
    monkeypatch.delitem(LOWERINGS, torch.ops.aten.hardtanh.default)


def test_export_error_points_at_the_relu6_line(no_hardtanh) -> None:
    with pytest.raises(LoweringError) as exc:
        ot.compile(_Net(), (torch.randn(1, 3, 8, 8),), "interpreter")
    text = str(exc.value)
    assert f"test_locations.py:{_line('the ReLU6 line')}:" in text.splitlines()[0]
    assert "aten.hardtanh.default in 'act' (ReLU6)" in text
    assert "y = self.act(y)" in text  # the source line under the message


def test_sequential_member_is_named(no_hardtanh) -> None:
    class Deep(_Net):
        def __init__(self) -> None:
            super().__init__()
            self.act = torch.nn.ReLU()

        def forward(self, x):
            return super().forward(x, deep=True)

    with pytest.raises(LoweringError) as exc:
        ot.compile(Deep(), (torch.randn(1, 3, 8, 8),), "interpreter")
    first = str(exc.value).splitlines()[0]
    assert f":{_line('the Sequential line')}:" in first
    assert "in 'features.1' (ReLU6)" in first


def test_torch_compile_error_points_at_the_relu6_line(no_hardtanh) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_Net().eval(), backend="oxla")
    with pytest.raises(Exception) as exc, torch.no_grad():
        compiled(torch.randn(1, 3, 8, 8))
    cause = exc.value
    while cause is not None and not isinstance(cause, LoweringError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None
    assert f"test_locations.py:{_line('the ReLU6 line')}:" in str(cause).splitlines()[0]
    torch._dynamo.reset()
