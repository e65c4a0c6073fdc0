"""Plugin rewrite patterns run in their own pass for the backends they declare
(``plugin-patterns{backend=NAME}``), never inside ``canonicalize``."""

from __future__ import annotations

import pytest

from oxla import hookimpl, plugins
from oxla.ir import parse_module
from oxla.passes import run_pipeline
from oxla.plugins import PluginRegistry, PluginSource
from oxla.protocols import PatternInfo

TEXT = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = stablehlo.negate %x : tensor<4xf32>
  %1 = stablehlo.abs %x : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
"""


def drop(op, rw):
    """A rewrite only a test would register: ``op(x) -> x``."""
    rw.replace_op(op, [op.operands[0]])
    return True


class PatternPlugin:
    @hookimpl
    def oxla_patterns(self):
        return [PatternInfo("stablehlo.negate", drop, 1, "cpu-only", backends=("cpu",)),
                PatternInfo("stablehlo.abs", drop, 1, "everywhere")]


@pytest.fixture
def registry():
    reg = PluginRegistry()
    reg.register_builtins()
    reg.register(PatternPlugin(), PluginSource("oxla-test-patterns", "0.1", "pats = x"))
    old = plugins.set_registry(reg)
    yield reg
    plugins.set_registry(old)


def _ops(pipeline: str) -> set[str]:
    module = parse_module(TEXT, "t.mlir")
    run_pipeline(module, pipeline)
    return {op.name for op in module.walk()}


def test_canonicalize_never_runs_plugin_patterns(registry):
    ops = _ops("canonicalize")
    assert {"stablehlo.negate", "stablehlo.abs"} <= ops


def test_patterns_run_for_the_backends_they_declare(registry):
    cpu = _ops("plugin-patterns{backend=cpu}")
    assert "stablehlo.negate" not in cpu and "stablehlo.abs" not in cpu
    other = _ops("plugin-patterns{backend=interpreter}")
    assert "stablehlo.negate" in other and "stablehlo.abs" not in other


def test_pattern_filter_by_backend(registry):
    names = {p.name for p in plugins.patterns(backend="hip", builtin=False)}
    assert names == {"everywhere"}
    assert {p.name for p in plugins.patterns(backend="cpu", builtin=False)} == \
        {"everywhere", "cpu-only"}


def test_cpu_backend_runs_its_plugin_patterns(registry):
    pytest.importorskip("llvmlite")
    pytest.importorskip("oxla_backend_cpu")
    import numpy as np
    from oxla_backend_cpu.backend import CPUBackend

    from oxla.protocols import CompileOptions

    exe = CPUBackend().compile(parse_module(TEXT, "t.mlir"), CompileOptions(cache=False))
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    neg, ab = exe(x)
    np.testing.assert_array_equal(neg, x)  # the cpu-only pattern replaced negate by x
    np.testing.assert_array_equal(ab, x)
    assert "plugin patterns: for cpu" in exe.stages
