"""Every ATen overload tagged ``torch.Tag.core`` in the installed torch has a lowering rule
(direct, through a traced decomposition, or a documented refusal that is tested here)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch as ot
import torch
from oxla_frontend_torch.registry import LOWERINGS
from oxla_frontend_torch.rules.special import REFUSED

from oxla.errors import NotSupportedError
from tests.frontend_torch.conftest import FnModule


def core_overloads() -> list[torch._ops.OpOverload]:
    """The ATen overloads registered with the dispatcher and tagged ``torch.Tag.core``
    (``dir(torch.ops.aten)`` lists only the packets loaded so far)."""
    out = []
    for name in torch._C._dispatch_get_all_op_names():
        if not name.startswith("aten::"):
            continue
        base, _, overload = name[len("aten::"):].partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            out.append(op)
    return out


def test_every_core_aten_overload_has_a_rule() -> None:
    core = core_overloads()
    assert len(core) > 150  # the enumeration itself works
    missing = sorted(str(op) for op in core if op not in LOWERINGS)
    assert not missing, f"{len(missing)} of {len(core)} core ATen overloads have no rule"
    covered = [op for op in core if op not in REFUSED]
    print(f"core ATen: {len(covered)} of {len(core)} overloads lowered, "
          f"{len(core) - len(covered)} refused with a reason")


class _Ctx:
    """What a refusal rule reads: the node's target and the builder's location."""

    def __init__(self, op):
        self.node = type("Node", (), {"target": op})()
        self.b = type("B", (), {"loc": None})()


@pytest.mark.parametrize("op", sorted(REFUSED, key=str), ids=str)
def test_refusal_names_the_op_and_the_way_out(op) -> None:
    why, instead = REFUSED[op]
    with pytest.raises(NotSupportedError) as exc:
        LOWERINGS[op](_Ctx(op))
    assert str(op) in str(exc.value) and why in str(exc.value)
    assert instead in exc.value.notes


def test_nonzero_model_is_refused_end_to_end() -> None:
    model = FnModule(lambda x: x.nonzero().sum())
    x = torch.tensor([0.0, 1.0, 2.0])
    with pytest.raises(NotSupportedError, match="depends on the input's values"):
        ot.compile(model, (x,), "interpreter")
