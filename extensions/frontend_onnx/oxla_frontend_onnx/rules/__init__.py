"""The ONNX lowering rules; importing this package fills :data:`registry.RULES`."""

from __future__ import annotations

from oxla_frontend_onnx.rules import (  # noqa: F401
    attention,
    control,
    elementwise,
    microsoft,
    misc,
    nn,
    quant,
    reduce,
    resize,
    rnn,
    sequence,
    shape,
)
