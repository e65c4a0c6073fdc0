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
    oxla-backend-hip is not written yet ...``. The command receives the name as ``backend``.
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


class InputPath(click.Path):
    """``click.Path`` for a file the command reads: a missing path is one line,
    ``error: no such file: X`` (exit 2), like every other user error, instead of click's
    three-line usage message. Other checks (``dir_okay``...) are click's."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["exists"] = False
        super().__init__(**kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import os

        from oxla.errors import OxlaError

        if not (self.allow_dash and value == "-") and not os.path.lexists(os.fspath(value)):
            raise OxlaError(f"no such file: {os.fspath(value)}")
        return super().convert(value, param, ctx)
