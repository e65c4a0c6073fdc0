"""The conformance harness on compiling backends (inputs become arguments, so nothing
is constant-folded away) and on round-trip files without checks (``testdata/dynamic``),
plus the interpreter rules those files exercise with ``?`` result dimensions."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.conformance import run_file
from oxla.conformance_compiled import hoist_inputs, split_checks
from oxla.conformance_dynamic import (
    compare,
    dimension_arg_count,
    is_roundtrip_module,
    refine_for_inputs,
    roundtrip_failures,
    synthetic_inputs,
)
from oxla.interpreter import run_function
from oxla.ir import func_type, parse_module

JAX_STYLE = """
module @jit_main {
  func.func public @main() -> tensor<3xf32> {
    %0 = call @inputs() : () -> tensor<3xf32>
    %1 = call @expected() : () -> tensor<3xf32>
    %2 = "stablehlo.sort"(%0) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare LT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }) {dimension = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
    return %2 : tensor<3xf32>
  }
  func.func private @inputs() -> tensor<3xf32> {
    %c = stablehlo.constant dense<[3.0, 1.0, 2.0]> : tensor<3xf32>
    return %c : tensor<3xf32>
  }
  func.func private @expected() -> tensor<3xf32> {
    %c = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    return %c : tensor<3xf32>
  }
}
"""

INTERPRET_STYLE = """
func.func @add_op_test() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %e = stablehlo.constant dense<[2, 4]> : tensor<2xi32>
  %s = stablehlo.constant dense<[2]> : tensor<1xi32>
  %b = stablehlo.add %a, %a : tensor<2xi32>
  %r = stablehlo.dynamic_reshape %b, %s : (tensor<2xi32>, tensor<1xi32>) -> tensor<2xi32>
  check.expect_eq %r, %e : tensor<2xi32>
  func.return
}
"""

DYNAMIC = """
module @jit_fun_flat_jax {
  func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x4xf32> {mhlo.sharding = ""}) -> tensor<?x4xf32> {
    %0 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %2 = stablehlo.constant dense<4> : tensor<1xi32>
    %3 = stablehlo.concatenate %1, %2, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %4 = stablehlo.dynamic_broadcast_in_dim %arg1, %3, dims = [0, 1] : (tensor<?x4xf32>, tensor<2xi32>) -> tensor<?x4xf32>
    %5 = stablehlo.add %4, %arg1 : tensor<?x4xf32>
    return %5 : tensor<?x4xf32>
  }
}
"""


def _has_cpu() -> bool:
    try:
        from oxla.plugins import get_backend

        return get_backend("cpu").available()[0]
    except Exception:  # noqa: BLE001 - not installed
        return False


needs_cpu = pytest.mark.skipif(not _has_cpu(), reason="oxla-backend-cpu not available")


def test_jax_inputs_become_arguments_and_expected_stays_on_host():
    m = parse_module(JAX_STYLE)
    args, host = hoist_inputs(m, "main")
    assert [a.tolist() for a in args] == [[3.0, 1.0, 2.0]]
    fn = m.lookup("main")
    assert len(func_type(fn).inputs) == 1
    sort = next(op for op in fn.walk() if op.name == "stablehlo.sort")
    assert sort.operands[0] is fn.regions[0].blocks[0].args[0]
    m, checks = split_checks(m, "main", host)
    assert not any(op.name == "func.call" for op in m.walk())
    assert {f.attributes["sym_name"].value for f in m.functions} == {"main"}
    (c,) = checks
    assert isinstance(c.sources[0], int) and c.sources[1].tolist() == [1.0, 2.0, 3.0]
    outs = run_function(m, "main", args)
    assert outs[c.sources[0]].tolist() == [1.0, 2.0, 3.0]


def test_interpret_constants_hoisted_except_expected_and_shape_operands():
    m = parse_module(INTERPRET_STYLE)
    args, host = hoist_inputs(m, "add_op_test")
    assert [a.tolist() for a in args] == [[1, 2]]  # %e: expected only, %s: shape operand
    fn = m.lookup("add_op_test")
    reshape = next(op for op in fn.walk() if op.name == "stablehlo.dynamic_reshape")
    assert reshape.operands[1].owner_op.name == "stablehlo.constant"
    m, checks = split_checks(m, "add_op_test", host)
    assert [op.name for op in fn.walk()].count("stablehlo.constant") == 1  # %s only


def test_compiled_path_on_the_interpreter_backend_passes_and_fails(tmp_path):
    p = tmp_path / "t.mlir"
    p.write_text(JAX_STYLE + "\n// -----\n" + INTERPRET_STYLE)
    assert run_file(p, "interpreter", compiled=True).status == "pass"
    p.write_text(INTERPRET_STYLE.replace("[2, 4]", "[2, 5]"))
    res = run_file(p, "interpreter", compiled=True)
    assert res.status == "fail" and "@add_op_test" in res.message


@needs_cpu
def test_cpu_runs_the_op_under_test_instead_of_folding_it(tmp_path):
    from oxla.plugins import get_backend

    p = tmp_path / "sort.mlir"
    p.write_text(JAX_STYLE)
    # compiled as written, constant folding computes the sort and the cpu backend passes
    folded, checks = split_checks(parse_module(JAX_STYLE), "main")
    vals = get_backend("cpu").compile(folded)()
    assert vals[checks[0].results[0]].tolist() == [1.0, 2.0, 3.0]
    # the harness passes the inputs as arguments: the sort reaches the backend
    res = run_file(p, "cpu")
    assert res.status == "pass", res.message  # the cpu backend's own sort kernel ran
    assert run_file(p, "interpreter").status == "pass"


@needs_cpu
def test_cpu_runs_jax_style_abs_on_arguments(tmp_path):
    sort = JAX_STYLE[JAX_STYLE.index('"stablehlo.sort"'):JAX_STYLE.index("    stablehlo.custom")]
    src = (JAX_STYLE.replace(sort, "stablehlo.abs %0 : tensor<3xf32>\n")
           .replace("[3.0, 1.0, 2.0]", "[-1.0, 2.0, -3.0]").replace("[1.0, 2.0, 3.0]",
                                                                    "[1.0, 2.0, 3.0]"))
    p = tmp_path / "abs.mlir"
    p.write_text(src)
    res = run_file(p, "cpu")
    assert res.status == "pass", res.message
    p.write_text(src.replace("[1.0, 2.0, 3.0]", "[1.0, 2.0, 4.0]"))
    assert run_file(p, "cpu").status == "fail"


def test_dynamic_file_convention_and_synthetic_inputs():
    m = parse_module(DYNAMIC)
    assert is_roundtrip_module(m)
    assert dimension_arg_count(m.main) == 1
    ins = synthetic_inputs(m.main, 3)
    assert ins[0].shape == () and int(ins[0]) == 3 and ins[0].dtype == np.int64
    assert ins[1].shape == (3, 4) and ins[1].dtype == np.float32
    np.testing.assert_array_equal(ins[1], synthetic_inputs(m.main, 3)[1])  # seeded
    assert roundtrip_failures(m) == []
    (out,) = run_function(m, "main", ins)
    np.testing.assert_array_equal(out, ins[1] * 2)
    refined, rest = refine_for_inputs(m, ins)
    assert [str(t) for t in func_type(refined.main).inputs] == ["tensor<3x4xf32>"]
    assert [str(t) for t in func_type(refined.main).results] == ["tensor<3x4xf32>"]
    assert len(rest) == 1


def test_dynamic_files_pass_on_the_interpreter_and_checked_files_are_not_roundtrip(tmp_path):
    p = tmp_path / "d.mlir"
    p.write_text(DYNAMIC)
    res = run_file(p)
    assert res.status == "pass", res.message
    assert not is_roundtrip_module(parse_module(JAX_STYLE))
    p.write_text(DYNAMIC.replace("stablehlo.add %4, %arg1", "stablehlo.add %4, %4"
                                 ).replace("dims = [0, 1]", "dims = [0, 2]"))
    assert run_file(p).status == "error"


@needs_cpu
def test_dynamic_file_on_cpu_matches_the_interpreter(tmp_path):
    p = tmp_path / "d.mlir"
    p.write_text(DYNAMIC)
    res = run_file(p, "cpu")
    assert res.status == "pass", res.message


def test_compare_is_bitwise_for_ints_and_ulp_for_floats():
    a = np.array([1.0, 2.0], np.float32)
    assert compare([a], [a.copy()]) == []
    assert compare([np.nextafter(a, 10)], [a]) == []  # 1 ULP
    assert compare([a + 1], [a]) != []
    assert compare([np.array([1, 2])], [np.array([1, 3])]) == [
        "result #0: 1 of 2 elements differ"]
    assert compare([np.array([np.nan], np.float32)], [np.array([np.nan], np.float32)]) == []
    assert "expected int64[2]" in compare([a], [np.array([1, 2])])[0]


# -- interpreter rules with `?` result dims (shapes come from the operands) -------------


def test_reduce_window_and_bitcast_convert_with_dynamic_result_types():
    m = parse_module("""
func.func public @main(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x4x2xui16>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}
    : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x2xf32>
  %c = stablehlo.bitcast_convert %x : (tensor<?x4xf32>) -> tensor<?x4x2xui16>
  return %r, %c : tensor<?x2xf32>, tensor<?x4x2xui16>
}
""")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    r, c = run_function(m, "main", [x])
    np.testing.assert_array_equal(r, x.reshape(3, 2, 2).sum(-1))
    assert c.shape == (3, 4, 2)
    np.testing.assert_array_equal(c.reshape(3, 4 * 2).view(np.float32), x)


def test_chlo_broadcast_ops_keep_scalar_shapes():
    m = parse_module("""
func.func public @main(%a: tensor<f32>, %b: tensor<f32>) -> (tensor<f32>, tensor<f32>) {
  %n = chlo.broadcast_next_after %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %p = chlo.next_after %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  return %n, %p : tensor<f32>, tensor<f32>
}
""")
    a, b = np.array(1.0, np.float32), np.array(2.0, np.float32)
    n, p = run_function(m, "main", [a, b])
    assert n.shape == () and p.shape == ()
    assert n == np.nextafter(a, b) and p == np.nextafter(a, b)


def test_report_groups_unsupported_ops_and_reasons():
    from oxla.conformance import FileResult, Report, reason

    msg = ("@main: a/b.mlir:19:12: error: 'stablehlo.reduce' is not supported by the cpu "
           "backend yet (variadic reduce)")
    rep = Report("cpu", [FileResult("a", "error", msg), FileResult("b", "error", msg),
                         FileResult("c", "error", "@f: 'stablehlo.sort' is not supported (+2 more)"),
                         FileResult("g", "error", "'stablehlo.bitcast_convert' between "
                                    "types of different widths is not supported"),
                         FileResult("d", "fail", "@f: x.mlir:3:4: 2 of 9 elements differ"),
                         FileResult("e", "pass")])
    assert rep.unsupported_ops() == {"stablehlo.reduce (variadic reduce)": 2,
                                     "stablehlo.sort": 1, "stablehlo.bitcast_convert": 1}
    assert rep.reasons()["fail: N of N elements differ"] == 1
    assert reason(msg).startswith("'stablehlo.reduce' is not supported")
    assert rep.to_dict()["unsupported_ops"]["stablehlo.sort"] == 1


def test_cli_summary_prints_grouped_failures(tmp_path):
    from click.testing import CliRunner

    from oxla.cli.main import cli

    p = tmp_path / "bad.mlir"
    p.write_text(INTERPRET_STYLE.replace("[2, 4]", "[2, 5]"))
    r = CliRunner().invoke(cli, ["conformance", str(tmp_path), "--summary"])
    assert r.exit_code == 1
    assert "failures by reason (1 files):" in r.output
    assert "fail: check.expect_eq: N of N elements differ" in r.output


def test_refine_shapes_reaches_ops_without_an_op_table_rule():
    from oxla.passes import run_pipeline

    m = parse_module("""
func.func public @main(%x: tensor<3x4xf32>) -> (tensor<?x4xf32>, tensor<?x2xf32>, tensor<?xi32>) {
  %c = stablehlo.clamp %x, %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%c, %z) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>}
    : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x2xf32>
  %d = stablehlo.get_dimension_size %x, dim = 0 : (tensor<3x4xf32>) -> tensor<i32>
  %d1 = stablehlo.reshape %d : (tensor<i32>) -> tensor<1xi32>
  %i = stablehlo.dynamic_iota %d1, dim = 0 : (tensor<1xi32>) -> tensor<?xi32>
  return %c, %r, %i : tensor<?x4xf32>, tensor<?x2xf32>, tensor<?xi32>
}
""")
    run_pipeline(m, "stablehlo-refine-shapes")
    assert [str(t) for t in func_type(m.main).results] == [
        "tensor<3x4xf32>", "tensor<3x2xf32>", "tensor<3xi32>"]
    assert not any(op.name == "stablehlo.get_dimension_size" for op in m.walk())


CHECK_EQ_RETURNED = """
module {
  func.func @main() -> tensor<i1> {
    %a = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %e = stablehlo.constant dense<[2.0, 4.0]> : tensor<2xf32>
    %b = stablehlo.add %a, %a : tensor<2xf32>
    %r = stablehlo.custom_call @check.eq(%e, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<i1>
    return %r : tensor<i1>
  }
}
"""


@pytest.mark.parametrize("compiled", [False, True])
def test_returned_check_eq_decides_pass_and_fail(tmp_path, compiled):
    p = tmp_path / "q.mlir"
    p.write_text(CHECK_EQ_RETURNED)
    assert run_file(p, "interpreter", compiled=compiled).status == "pass"
    p.write_text(CHECK_EQ_RETURNED.replace("[2.0, 4.0]", "[2.0, 5.0]"))
    res = run_file(p, "interpreter", compiled=compiled)
    assert res.status == "fail" and "1 of 2 elements differ" in res.message, res.message


def test_refine_shapes_keeps_the_result_element_type():
    from oxla.passes import run_pipeline

    m = parse_module("""
func.func public @main(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> tensor<?xf64> {
  %d = "stablehlo.dot_general"(%a, %b) {dot_dimension_numbers = #stablehlo.dot<
    lhs_batching_dimensions = [0], rhs_batching_dimensions = [0],
    lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [1]>}
    : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<?xf64>
  return %d : tensor<?xf64>
}
""")
    run_pipeline(m, "stablehlo-refine-shapes")
    assert [str(t) for t in func_type(m.main).results] == ["tensor<3xf64>"]


GRID_FILE = """
func.func @main() {
  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = "interpreter.run_parallel"(%x) {programs = [[@step]]} : (tensor<2xf32>) -> tensor<2xf32>
  check.expect_eq_const %r, dense<[1.0, 2.0]> : tensor<2xf32>
  func.return
}
func.func @step(%a: tensor<2xf32>) -> tensor<2xf32> {
  func.return %a : tensor<2xf32>
}
"""


def test_compiled_path_skips_process_grid_files_with_a_reason(tmp_path):
    p = tmp_path / "grid.mlir"
    p.write_text(GRID_FILE)
    res = run_file(p, "interpreter", compiled=True)
    assert res.status == "skip" and "multi-process grid" in res.message
