"""Hook implementations of the test plugin (only hooks here; no heavy imports)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from oxla import hookimpl
from oxla.errors import NotSupportedError
from oxla.protocols import BackendInfo, CliCommandInfo, CustomCallInfo, PassInfo


class DummyBackend:
    """A backend that says it cannot run here, and refuses to compile."""

    name = "testdummy"

    def available(self) -> tuple[bool, str]:
        return False, "test plugin: no device"

    def compile(self, module: Any, options: Any) -> Any:
        raise NotSupportedError("the testdummy backend compiles nothing")

    def load(self, path: Any) -> Any:
        raise NotSupportedError("the testdummy backend loads nothing")


@dataclass(frozen=True)
class NoopPass:
    """Does nothing; assumes nothing, guarantees the module is unchanged."""

    name: str = "test-noop"

    def run(self, module: Any) -> None:
        return None


@click.command("test-hello")
@click.argument("who", default="world")
def hello(who: str) -> None:
    """Say hello (a command added by the test plugin)."""
    click.echo(f"hello, {who}, from oxla-test-plugin")


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [BackendInfo("testdummy", "test plugin backend (never available)", DummyBackend)]


@hookimpl
def oxla_passes() -> list[PassInfo]:
    return [PassInfo("test-noop", NoopPass, "does nothing")]


@hookimpl
def oxla_custom_calls() -> list[CustomCallInfo]:
    return [CustomCallInfo("test_identity", "interpreter", lambda *args: args)]


@hookimpl
def oxla_cli_commands() -> list[CliCommandInfo]:
    return [CliCommandInfo(hello)]
