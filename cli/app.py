"""The ``oxla`` click group: lazy built-in commands, plugin commands, error handling.

Every subcommand runs inside :meth:`OxlaGroup.invoke`, so errors are handled in one
place: an :class:`~oxla.errors.OxlaError` prints ``error: ...`` to stderr and exits 2,
any other exception exits 1 with ``internal error: ...``; ``--debug`` shows the
traceback too (same exit statuses) and sets ``OXLA_DEBUG=1`` while the command runs.
Commands need no error handling of their own.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import click

from oxla import plugins
from oxla.errors import OxlaError

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1


def _show_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """Prints oxla's own warnings as one ``warning: ...`` line on stderr."""
    click.echo(f"warning: {message}", err=True)


def report_error(exc: BaseException) -> int:
    """Prints ``exc`` the way the CLI reports errors; returns the exit status.

    Args:
        exc: the exception a command raised.

    Returns:
        2 for an :class:`OxlaError` (the user can fix it), 1 for anything else.
    """
    if isinstance(exc, OxlaError):
        click.echo(exc.render(), err=True)
        return EXIT_USER_ERROR
    user = _user_error_text(exc)
    if user is not None:
        click.echo(f"error: {user}", err=True)
        return EXIT_USER_ERROR
    detail = f"{type(exc).__name__}: {exc}"
    click.echo(f"internal error: {detail}; rerun with --debug for the traceback", err=True)
    return EXIT_INTERNAL_ERROR


def is_user_error(exc: BaseException) -> bool:
    """True for failures the user can fix (exit 2): an :class:`OxlaError`, or a bad
    path or input file (see :func:`report_error`)."""
    return isinstance(exc, OxlaError) or _user_error_text(exc) is not None


@contextlib.contextmanager
def _debug_environment(debug: bool) -> Iterator[None]:
    """Sets ``OXLA_DEBUG=1`` while a ``--debug`` command runs, so that plugins (the
    cpu backend's LLVM diagnostics, the tf frontend's logs) see it too."""
    if not debug or os.environ.get("OXLA_DEBUG"):
        yield
        return
    os.environ["OXLA_DEBUG"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OXLA_DEBUG", None)


def _user_error_text(exc: BaseException) -> str | None:
    """One line for failures caused by the user's files, not by oxla: a missing or
    unreadable path, a file that is not text, an empty or truncated input, an input too
    large for this machine's memory. None for anything else."""
    if isinstance(exc, IsADirectoryError):
        return f"'{exc.filename}' is a directory, expected a file"
    if isinstance(exc, FileNotFoundError):
        return f"no such file or directory: '{exc.filename}'"
    if isinstance(exc, PermissionError):
        return f"permission denied: '{exc.filename}'"
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text ({exc.reason} at byte {exc.start})"
    if isinstance(exc, EOFError):
        return f"input ended early: {exc}"
    if isinstance(exc, MemoryError):
        return f"out of memory: {exc}"
    return None


def debug_requested(ctx: click.Context | None) -> bool:
    """True when ``--debug`` was given (or ``OXLA_DEBUG=1`` is set)."""
    if os.environ.get("OXLA_DEBUG", "") not in ("", "0"):
        return True
    root = ctx.find_root() if ctx is not None else None
    return bool(root is not None and root.params.get("debug"))


class OxlaGroup(click.Group):
    """A click group whose built-in commands are imported on use, and which adds the
    commands plugins declare through ``oxla_cli_commands``.

    Args:
        lazy_commands: command name -> ``"module:attribute"`` of a ``click.Command``.
    """

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def _plugin_commands(self) -> dict[str, click.Command]:
        out = {}
        for name, info in plugins.cli_commands().items():
            if name in self.lazy_commands or name in self.commands:
                warnings.warn(
                    f"a plugin command '{name}' clashes with the built-in one and is ignored",
                    plugins.PluginWarning,
                    stacklevel=2,
                )
                continue
            out[name] = info.command
        return out

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(self.commands) | set(self.lazy_commands)
        try:
            names |= set(self._plugin_commands())
        except OxlaError as exc:  # --help must work even with conflicting plugins
            click.echo(f"warning: {exc.one_line().removeprefix('error: ')}", err=True)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name in self.lazy_commands:
            module_name, _, attr = self.lazy_commands[cmd_name].partition(":")
            return getattr(importlib.import_module(module_name), attr)
        return self._plugin_commands().get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        with _debug_environment(bool(ctx.params.get("debug"))):
            try:
                return super().invoke(ctx)
            except click.exceptions.ClickException as exc:  # bad arguments: one line too
                lines = [x.strip() for x in exc.format_message().splitlines() if x.strip()]
                sub = getattr(exc, "ctx", None)
                hint = f" (see '{sub.command_path} --help')" if sub is not None else ""
                click.echo(f"error: {'; '.join(lines)}{hint}", err=True)
                ctx.exit(exc.exit_code)
            except (click.exceptions.Exit, click.Abort,
                    BrokenPipeError):  # a closed pipe (`oxla plugins | head`): click
                raise  # silences the output and exits 1, like other CLIs; no "internal error"
            except Exception as exc:
                if not debug_requested(ctx):
                    ctx.exit(report_error(exc))
                if not is_user_error(exc):
                    raise  # exit 1 with Python's traceback
                # --debug: the traceback, and still the user-error exit status (2)
                click.echo(traceback.format_exc().rstrip("\n"), err=True)
                ctx.exit(report_error(exc))

    def main(self, args: Sequence[str] | None = None, *rest: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("default", plugins.PluginWarning)
            original = warnings.showwarning

            def show(message, category, filename, lineno, file=None, line=None):
                if issubclass(category, plugins.PluginWarning):
                    _show_warning(message, category)
                else:
                    original(message, category, filename, lineno, file, line)

            warnings.showwarning = show
            return super().main(args, *rest, **kwargs)


def exit_on_error(fn: Any) -> Any:
    """Wraps a plain function (outside the ``oxla`` group) with the CLI's error handling.

    Commands inside the group do not need it; scripts that embed oxla can use it.
    """
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if debug_requested(click.get_current_context(silent=True)):
                raise
            sys.exit(report_error(exc))

    return wrapper
