"""Unit tests of the pass manager, the rewrite driver and the core passes."""

from __future__ import annotations

import io

import numpy as np
import pytest

from oxla.errors import PassError
from oxla.interpreter import run_function
from oxla.ir import parse_module, print_module
from oxla.ir import types as T
from oxla.passes import (
    DEFAULT_PIPELINE,
    GreedyDriver,
    PassManager,
    PatternSet,
    builtin_passes,
    builtin_patterns,
    parse_pipeline,
    pattern,
    run_pipeline,
)
from oxla.passes.canon_shape import represents_exactly

SRC = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %a = stablehlo.multiply %x, %one : tensor<4xf32>
  %b = stablehlo.negate %a : tensor<4xf32>
  %c = stablehlo.negate %b : tensor<4xf32>
  return %c : tensor<4xf32>
}
"""


def _ops(module) -> list[str]:
    return [op.name for op in module.walk()]


def test_pipeline_parsing_options_and_default():
    passes = parse_pipeline("inline,canonicalize{max-iterations=3 debug=true},cse")
    assert [p.name for p in passes] == ["inline", "canonicalize", "cse"]
    assert passes[1].max_iterations == 3 and passes[1].debug is True
    assert [p.name for p in parse_pipeline("default")] == DEFAULT_PIPELINE.split(",")


@pytest.mark.parametrize(
    "text, message",
    [
        ("bogus", "unknown pass 'bogus'; registered: absorb-dot-transposes, canonicalize"),
        ("cse{foo=1}", "pass 'cse' has no option 'foo'"),
        ("canonicalize{max-iterations=x}", "expects int, got 'x'"),
        ("canonicalize{max-iterations=3", "unbalanced"),
    ],
)
def test_pipeline_errors_list_what_exists(text, message):
    with pytest.raises(PassError, match=message):
        parse_pipeline(text)


def test_builtin_passes_and_patterns_register_through_hooks():
    from oxla import plugins

    names = {p.name for p in builtin_passes()}
    assert {
        "inline",
        "canonicalize",
        "constant-fold",
        "cse",
        "dce",
        "chlo-legalize-to-stablehlo",
        "stablehlo-refine-shapes",
    } <= names
    assert names <= set(plugins.passes())
    assert len(builtin_patterns()) >= 25
    assert any(p.name == "mul_by_one" for p in plugins.patterns("stablehlo.multiply"))


def test_print_dump_and_timing(tmp_path):
    module = parse_module(SRC)
    out = io.StringIO()
    pm = PassManager.from_pipeline(
        "canonicalize,cse",
        verify_each=True,
        print_after={"cse"},
        dump_dir=str(tmp_path),
        timing=True,
        out=out,
    )
    pm.run(module)
    assert "IR Dump After cse" in out.getvalue()
    assert "IR Dump After canonicalize" not in out.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "00-input.mlir",
        "01-canonicalize.mlir",
        "02-cse.mlir",
    ]
    report = pm.timing_report()
    assert "canonicalize" in report and "percent" in report and "total" in report
    assert _ops(module) == ["builtin.module", "func.func", "func.return"]


def test_debug_flag_names_pattern_and_location(monkeypatch, capsys):
    monkeypatch.setenv("OXLA_DEBUG_PATTERNS", "1")
    run_pipeline(parse_module(SRC, "t.mlir"), "canonicalize")
    err = capsys.readouterr().err
    assert "pattern mul_by_one (canon_algebra.py:" in err and "t.mlir:" in err


def test_plugin_style_pattern_with_benefit_runs_first():
    fired = []

    @pattern("stablehlo.negate", benefit=5, into=(local := []))
    def erase_negate(op, rw):
        fired.append(op.name)
        rw.replace_op(op, [op.operands[0]])
        return True

    module = parse_module(SRC)
    GreedyDriver(PatternSet(local)).run(module.op)
    assert fired == ["stablehlo.negate", "stablehlo.negate"]
    assert "stablehlo.negate" not in _ops(module)


def test_represents_exactly():
    f16, f32, f64, bf16 = (T.FloatType(n) for n in ("f16", "f32", "f64", "bf16"))
    i8, i32, ui8 = T.IntegerType(8), T.IntegerType(32), T.IntegerType(8, True)
    assert represents_exactly(f16, f32) and represents_exactly(bf16, f32)
    assert not represents_exactly(f32, f16) and not represents_exactly(f16, bf16)
    assert represents_exactly(i8, f32) and not represents_exactly(i32, f32)
    assert represents_exactly(ui8, i32) and not represents_exactly(i8, ui8)
    assert not represents_exactly(f32, i32)


def test_inline_keeps_public_and_cse_in_regions():
    module = parse_module("""
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %a = call @pub(%x) : (tensor<f32>) -> tensor<f32>
  return %a : tensor<f32>
}
func.func @pub(%y: tensor<f32>) -> tensor<f32> {
  return %y : tensor<f32>
}
""")
    run_pipeline(module, "inline")
    assert "func.call" in _ops(module)


def test_dce_keeps_side_effects_and_constant_fold_limit():
    text = """
func.func @main() -> tensor<4xi32> {
  %a = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %t = stablehlo.create_token : !stablehlo.token
  %o = "stablehlo.outfeed"(%a, %t) : (tensor<4xi32>, !stablehlo.token) -> !stablehlo.token
  %s = stablehlo.custom_call @foo(%a) {has_side_effect = true} : (tensor<4xi32>) -> tensor<4xi32>
  return %a : tensor<4xi32>
}
"""
    module = parse_module(text)
    run_pipeline(module, "dce,constant-fold{max-elements=2}")
    assert "stablehlo.outfeed" in _ops(module) and "stablehlo.custom_call" in _ops(module)


def test_refine_shapes_turns_dynamic_ops_static():
    module = parse_module("""
func.func @main(%x: tensor<6xf32>) -> tensor<?x3xf32> {
  %s = stablehlo.constant dense<[2, 3]> : tensor<2xi64>
  %a = stablehlo.dynamic_reshape %x, %s : (tensor<6xf32>, tensor<2xi64>) -> tensor<?x3xf32>
  return %a : tensor<?x3xf32>
}
""")
    run_pipeline(module, "stablehlo-refine-shapes")
    text = print_module(module)
    assert "dynamic_reshape" not in text and "-> tensor<2x3xf32>" in text


def test_default_pipeline_preserves_results_on_int_program():
    text = """
func.func @main(%x: tensor<4xi32>) -> tensor<4xi32> {
  %z = stablehlo.constant dense<0> : tensor<4xi32>
  %a = stablehlo.add %x, %z : tensor<4xi32>
  %b = stablehlo.subtract %a, %a : tensor<4xi32>
  %c = stablehlo.add %a, %b : tensor<4xi32>
  return %c : tensor<4xi32>
}
"""
    x = np.array([1, -2, 3, 2**31 - 1], dtype=np.int32)
    try:
        before = run_function(parse_module(text), None, [x])
    except Exception as exc:  # the interpreter rules are landing separately
        pytest.skip(f"interpreter cannot run it yet: {exc}")
    module = parse_module(text)
    run_pipeline(module, "default", verify_each=True)
    after = run_function(module, None, [x])
    np.testing.assert_array_equal(before[0], after[0])


def test_lazy_passes_name_their_class():
    """A pass registered as a :class:`~oxla.protocols.LazyPass` (imported at first use)
    names a class that exists, under the same pipeline name and docstring line."""
    from oxla import plugins
    from oxla.protocols import LazyPass

    lazy = [p for p in plugins.passes().values() if isinstance(p.factory, LazyPass)]
    assert {"sharding-propagation", "spmd-partition", "import-shardings"} <= {p.name for p in lazy}
    for p in lazy:
        cls = p.factory.load()
        assert cls.name == p.name
        assert (cls.__doc__ or "").strip().splitlines()[0] == p.description


def test_first_compile_does_not_import_sharding():
    import subprocess
    import sys

    code = ("import sys, oxla; oxla.compile('func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> "
            "{ %0 = stablehlo.add %a, %a : tensor<4xf32>\\n return %0 : tensor<4xf32> }', "
            "backend='interpreter'); "
            "print(sorted(m for m in sys.modules if m.startswith('oxla.sharding.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == "[]"
