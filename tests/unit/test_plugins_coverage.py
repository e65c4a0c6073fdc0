"""``oxla plugins --coverage``: per backend, the op-table ops it has no rule for,
computed from the registries; a compile with such an op fails before codegen."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oxla import hookimpl, plugins
from oxla.cli.main import cli
from oxla.errors import NotSupportedError
from oxla.ir import parse_module
from oxla.ir.opdef import SYMBOL, TERMINATOR, all_opdefs
from oxla.plugins import PluginRegistry, PluginSource
from oxla.protocols import BackendInfo

NEEDING_RULES = {n for n, d in all_opdefs().items() if not d.traits & {SYMBOL, TERMINATOR}}


class ToyBackend:
    name = "toy"


class CoveragePlugin:
    @hookimpl
    def oxla_backends(self):
        return [BackendInfo("toy", "adds and nothing else", ToyBackend,
                            rules=lambda: ["stablehlo.add"]),
                BackendInfo("mute", "declares nothing", ToyBackend)]


@pytest.fixture
def registry():
    reg = PluginRegistry()
    reg.register_builtins()
    reg.register(CoveragePlugin(), PluginSource("oxla-test-coverage", "0.1", "cov = x"))
    old = plugins.set_registry(reg)
    yield reg
    plugins.set_registry(old)


def run(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_coverage_is_the_op_table_minus_the_rules(registry):
    (toy,) = plugins.coverage("toy")
    assert toy.total == len(NEEDING_RULES)
    assert set(toy.missing) == NEEDING_RULES - {"stablehlo.add"}
    (mute,) = plugins.coverage("mute")
    assert mute.missing is None
    (interp,) = plugins.coverage("interpreter")
    assert interp.missing == ()  # a rule for every op (tests/interpreter checks the rules)


def test_cli_text_and_json(registry):
    r = run("plugins", "--coverage", "--backend", "toy")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"toy: 1 of {len(NEEDING_RULES)} ops have a rule; " \
                       f"{len(NEEDING_RULES) - 1} without"
    assert "  stablehlo.multiply" in lines and "  stablehlo.add" not in lines
    r = run("plugins", "--coverage", "--json")
    data = {d["backend"]: d for d in json.loads(r.output)}
    assert {"toy", "mute", "interpreter"} <= set(data)
    assert data["interpreter"]["missing"] == [] and data["mute"]["missing"] is None
    assert data["toy"]["covered"] == 1


def test_unknown_backend_is_one_error_line(registry):
    r = run("plugins", "--coverage", "--backend", "hip")
    assert r.exit_code == 2
    assert "unknown backend 'hip'; installed:" in r.output and "Traceback" not in r.output


def test_backend_without_coverage_is_a_usage_error(registry):
    assert run("plugins", "--backend", "toy").exit_code == 2


BROADCAST = """
func.func @main(%x: tensor<2x3xf32>) -> tensor<4x2x3xf32> {
  %0 = stablehlo.broadcast %x, sizes = [4] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}
"""


def test_cpu_coverage_names_what_compile_refuses_before_codegen(monkeypatch):
    pytest.importorskip("llvmlite")
    pytest.importorskip("oxla_backend_cpu")
    from oxla_backend_cpu import stages
    from oxla_backend_cpu.backend import CPUBackend

    (cpu,) = plugins.coverage("cpu")
    assert "stablehlo.broadcast" in cpu.missing
    assert "stablehlo.add" not in cpu.missing and "chlo.erf" not in cpu.missing
    assert set(cpu.missing) < NEEDING_RULES

    def no_codegen(*a, **k):
        raise AssertionError("codegen ran")

    monkeypatch.setattr(stages, "emit_program", no_codegen)
    from oxla.protocols import CompileOptions

    with pytest.raises(NotSupportedError) as e:
        CPUBackend().compile(parse_module(BROADCAST, "b.mlir"), CompileOptions(cache=False))
    msg = str(e.value)
    assert "'stablehlo.broadcast'" in msg and "cpu backend" in msg and "b.mlir:3:8" in msg
