"""Lowering rules, one module per op family; importing this package fills ``LOWERINGS``."""

from __future__ import annotations

from oxla_frontend_torch.rules import elementwise, nn, reduce, scatter, shape  # noqa: F401
