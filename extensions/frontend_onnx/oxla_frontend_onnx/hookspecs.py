"""The hook through which other plugins add ONNX rules (added to oxla's plugin manager
by this frontend the first time it looks a rule up)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oxla.hookspecs import hookspec


@hookspec
def oxla_onnx_rules() -> dict[tuple[str, str, int], Callable[[Any], Any]]:
    """Extra ONNX lowering rules, called once per process on first import of a model.

    Returns:
        ``{(domain, op_type, since_version): fn}``; ``fn(ctx: NodeContext)`` returns one
        StableHLO value per node output (see :mod:`oxla_frontend_onnx.registry`). A key
        that oxla's own table already has is an error naming both.

    Example::

        @hookimpl
        def oxla_onnx_rules():
            return {("com.example", "MyGelu", 1): my_gelu_rule}
    """
