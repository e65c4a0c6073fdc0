"""Reusable click options that validate plugin names (``--backend``, ``--frontend``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from oxla import plugins


def _check_backend(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    registry = plugins.get_registry()
    table = registry.backends()
    if value not in table:
        raise registry.lookup_error("backend", value, table)
    return value


def _check_frontend(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    registry = plugins.get_registry()
    table = registry.frontends()
    if value not in table:
        raise registry.lookup_error("frontend", value, table)
    return value


def backend_option(default: str | None = "interpreter", **kwargs: Any) -> Callable[..., Any]:
    """``--backend NAME``: must name an installed backend.

    An unknown name is a ``PluginError`` (exit 2) listing the installed backends and the
    distribution that would add it: ``unknown backend 'hip'; installed: cpu, interpreter;
    try: pip install oxla-backend-hip``. The command receives the name as ``backend``.
    """
    kwargs.setdefault("help", "backend to compile for (see `oxla plugins`)")
    return click.option(
        "--backend", default=default, show_default=True, callback=_check_backend, **kwargs
    )


def frontend_option(default: str | None = None, **kwargs: Any) -> Callable[..., Any]:
    """``--frontend NAME``: must name an installed frontend (validated like
    :func:`backend_option`). The command receives the name as ``frontend``."""
    kwargs.setdefault("help", "frontend to import with (default: detected from the input)")
    return click.option("--frontend", default=default, callback=_check_frontend, **kwargs)
