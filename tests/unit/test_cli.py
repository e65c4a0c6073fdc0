"""Tests of the ``oxla`` CLI: version, ``plugins``, error handling, ``--backend``."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

import oxla
from oxla import hookimpl, plugins
from oxla.cli.main import COMMANDS, cli
from oxla.cli.options import backend_option
from oxla.errors import ParseError
from oxla.plugins import PluginRegistry, PluginSource
from oxla.protocols import BackendInfo, CliCommandInfo


class Dummy:
    name = "testdummy"

    def available(self):
        return False, "test plugin: no device"


@click.command("fail")
@click.option("--kind", type=click.Choice(["user", "internal"]), default="user")
def fail(kind: str) -> None:
    """Raise an error."""
    if kind == "user":
        raise ParseError("expected '}', got end of input")
    raise RuntimeError("kaboom")


@click.command("pick")
@backend_option()
def pick(backend: str) -> None:
    """Echo the backend."""
    click.echo(f"backend={backend}")


class CliPlugin:
    @hookimpl
    def oxla_backends(self):
        return [BackendInfo("testdummy", "", Dummy)]

    @hookimpl
    def oxla_cli_commands(self):
        return [CliCommandInfo(fail), CliCommandInfo(pick)]


@pytest.fixture
def registry():
    """A fresh process-wide registry with the built-ins and ``CliPlugin``."""
    reg = PluginRegistry()
    reg.register_builtins()
    reg.register(CliPlugin(), PluginSource("oxla-test-cli", "0.3", "cli = x"))
    old = plugins.set_registry(reg)
    yield reg
    plugins.set_registry(old)


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env)


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert result.output.strip() == f"oxla {oxla.__version__}"


def test_help_lists_builtin_and_plugin_commands(registry):
    result = run("--help")
    assert result.exit_code == 0
    for name in [*COMMANDS, "fail", "pick"]:
        assert f"  {name}" in result.output


def test_plugins_json_lists_interpreter_and_plugin(registry):
    result = run("plugins", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert all(
        set(r) == {"name", "kind", "distribution", "version", "available", "reason"} for r in rows
    )
    by_name = {(r["name"], r["kind"]): r for r in rows}
    assert by_name["interpreter", "backend"]["distribution"] == "oxla"
    dummy = by_name["testdummy", "backend"]
    assert dummy == {
        "name": "testdummy",
        "kind": "backend",
        "distribution": "oxla-test-cli",
        "version": "0.3",
        "available": False,
        "reason": "test plugin: no device",
    }
    assert by_name["pick", "command"]["available"] is True


def test_plugins_table(registry):
    result = run("plugins")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "DISTRIBUTION", "VERSION", "STATUS"]
    dummy = next(line for line in lines if line.startswith("testdummy"))
    assert dummy.split()[:4] == ["testdummy", "backend", "oxla-test-cli", "0.3"]
    assert dummy.endswith("unavailable: test plugin: no device")


def test_user_error_is_one_line_and_exit_2(registry):
    result = run("fail")
    assert result.exit_code == 2
    assert result.stderr == "error: expected '}', got end of input\n"
    assert result.stdout == ""


def test_internal_error_exit_1_suggests_debug(registry):
    result = run("fail", "--kind", "internal")
    assert result.exit_code == 1
    assert result.stderr == (
        "internal error: RuntimeError: kaboom; rerun with --debug for the traceback\n"
    )


def test_debug_shows_the_exception(registry):
    result = run("--debug", "fail", "--kind", "internal")
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)
    for args, env in ((("--debug", "fail"), None), (("fail",), {"OXLA_DEBUG": "1"})):
        result = run(*args, env=env)  # a user error keeps exit 2, with the traceback
        assert result.exit_code == 2
        assert "Traceback (most recent call last)" in result.stderr
        assert "ParseError" in result.stderr
        assert result.stderr.endswith("error: expected '}', got end of input\n")


def test_backend_option_validates_and_hints(registry):
    assert run("pick").stdout == "backend=interpreter\n"
    assert run("pick", "--backend", "testdummy").stdout == "backend=testdummy\n"
    result = run("pick", "--backend", "hip")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "error: unknown backend 'hip'; installed: interpreter, testdummy; "
        "try: pip install -e extensions/backend_hip"
    )


def test_unknown_command_is_a_usage_error(registry):
    result = run("no-such-command")
    assert result.exit_code == 2
    assert "No such command" in result.stderr


def test_broken_plugin_warns_and_cli_still_works(registry):
    import importlib.metadata as md

    ep = md.EntryPoint("backend_hip", "oxla_no_such_module_xyz", "oxla")
    with pytest.warns(plugins.PluginWarning):
        registry.load_entry_point(ep, "oxla-backend-hip", "0.9")
    result = run("plugins", "--json")
    assert result.exit_code == 0
    broken = [r for r in json.loads(result.stdout) if r["distribution"] == "oxla-backend-hip"]
    assert [(r["name"], r["kind"], r["available"]) for r in broken] == [
        ("hip", "backend", False)]
    assert "failed to load: ModuleNotFoundError" in broken[0]["reason"]
    result = run("pick", "--backend", "hip")
    assert result.exit_code == 2
    assert "backend 'hip' is unavailable: plugin distribution 'oxla-backend-hip'" in result.stderr


def test_plugin_warning_is_printed_as_one_line(registry):
    import importlib.metadata as md

    reg = PluginRegistry()
    reg.register_builtins()
    plugins.set_registry(None)
    ep = md.EntryPoint("broken", "oxla_no_such_module_xyz", "oxla")

    @click.command("load-broken")
    def load_broken():
        reg.load_entry_point(ep, "oxla-broken", "1.0")

    cli.add_command(load_broken)
    try:
        result = run("load-broken")
    finally:
        cli.commands.pop("load-broken")
    assert result.exit_code == 0
    assert result.stderr.startswith("warning: plugin distribution 'oxla-broken' 1.0")


def test_duplicate_plugins_are_an_error_naming_both(registry):
    registry.register(CliPlugin(), PluginSource("oxla-test-cli-2", "1", "cli2 = y"))
    result = run("plugins", "--json")
    assert result.exit_code == 2
    assert "'oxla-test-cli' and 'oxla-test-cli-2'" in result.stderr.splitlines()[0]
    assert run("--help").exit_code == 0  # help still works, with a warning
