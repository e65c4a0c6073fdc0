"""Without a named backend, ``oxla.compile`` and ``oxla compile`` pick the fastest
available backend that compiles the program (the same order as ``torch.compile``'s
default), and pass over one that cannot with a warning, never silently."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import oxla
from oxla import plugins
from oxla.cli.main import cli

STATIC = """
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""

DYNAMIC = """
func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {
  %0 = stablehlo.add %a, %a : tensor<?xf32>
  return %0 : tensor<?xf32>
}"""

needs_cpu = pytest.mark.skipif("cpu" not in plugins.backends(), reason="cpu not installed")


def test_preference_lists_only_usable_backends_fastest_first():
    usable = plugins.available_backends()
    assert usable[-1] == "interpreter"
    order = [b for b in plugins.BACKEND_PREFERENCE if b in usable]
    assert usable == order


@needs_cpu
def test_compile_defaults_to_cpu():
    exe = oxla.compile(STATIC)
    assert exe.backend == "cpu"
    (out,) = exe(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(out, 2 * np.arange(4, dtype=np.float32))


@needs_cpu
def test_program_cpu_cannot_compile_falls_back_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exe = oxla.compile(DYNAMIC)
    assert exe.backend == "interpreter"
    msgs = [str(w.message) for w in caught if issubclass(w.category, plugins.PluginWarning)]
    assert any("backend 'cpu' cannot compile" in m and "'interpreter'" in m for m in msgs), msgs


def test_named_backend_is_never_replaced():
    exe = oxla.compile(STATIC, backend="interpreter")
    assert exe.backend == "interpreter"


@needs_cpu
def test_cli_compile_defaults_to_cpu(tmp_path):
    src = tmp_path / "m.mlir"
    src.write_text(STATIC)
    res = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "m.oxla")])
    assert res.exit_code == 0, res.output
    assert "backend cpu" in res.output
    assert oxla.load(tmp_path / "m.oxla").backend == "cpu"


@needs_cpu
def test_cli_fallback_prints_one_warning_line_and_no_error(tmp_path):
    src = tmp_path / "d.mlir"
    src.write_text(DYNAMIC)
    res = CliRunner().invoke(cli, ["compile", str(src), "-o", str(tmp_path / "d.oxla")])
    assert res.exit_code == 0, res.output
    warn = [line for line in res.output.splitlines() if line.startswith("warning:")]
    assert len(warn) == 1 and "error" not in warn[0], res.output
    assert "dynamic shape" in warn[0] and "(at " in warn[0], res.output
    assert "backend interpreter" in res.output
