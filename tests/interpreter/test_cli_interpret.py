"""``oxla interpret`` and ``oxla conformance`` on small test files: pass, fail, hang
(killed after ``--timeout``), parse error; ``--json`` totals; the backend hook."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from oxla.cli.main import cli
from oxla.conformance import functions_to_run, run_conformance, run_file, split_checks
from oxla.ir import parse_module

PASSING = """
func.func @adds() {
  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi32>
  %b = stablehlo.add %a, %a : tensor<2xi32>
  check.expect_eq_const %b, dense<[2, 4]> : tensor<2xi32>
  func.return
}

// -----

func.func @negates() {
  %a = stablehlo.constant dense<1.5> : tensor<f32>
  %b = stablehlo.negate %a : tensor<f32>
  check.expect_almost_eq_const %b, dense<-1.5> : tensor<f32>
  func.return
}
"""

FAILING = """
func.func @good() {
  %a = stablehlo.constant dense<3> : tensor<i32>
  check.expect_eq_const %a, dense<3> : tensor<i32>
  func.return
}

// -----

func.func @bad() {
  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %b = stablehlo.multiply %a, %a : tensor<3xi32>
  check.expect_eq_const %b, dense<[1, 4, 10]> : tensor<3xi32>
  func.return
}
"""

HANGING = """
func.func @forever() {
  %zero = stablehlo.constant dense<0> : tensor<i64>
  %r = stablehlo.while(%i = %zero) : tensor<i64>
  cond {
    %t = stablehlo.constant dense<true> : tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    stablehlo.return %i : tensor<i64>
  }
  func.return
}
"""

BROKEN = """
func.func @oops() {
  %a = stablehlo.constant dense<1> : tensor<i32>
  %b = stablehlo.add %a, : tensor<i32>
  func.return
}
"""

JAX_STYLE = """
module @jit_main {
  func.func public @main() -> tensor<2xf32> {
    %0 = call @inputs() : () -> tensor<2xf32>
    %1 = call @expected() : () -> tensor<2xf32>
    %2 = stablehlo.abs %0 : tensor<2xf32>
    stablehlo.custom_call @check.expect_close(%2, %1) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
    return %2 : tensor<2xf32>
  }
  func.func private @inputs() -> tensor<2xf32> {
    %c = stablehlo.constant dense<[-1.0, 2.0]> : tensor<2xf32>
    return %c : tensor<2xf32>
  }
  func.func private @expected() -> tensor<2xf32> {
    %c = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
    return %c : tensor<2xf32>
  }
}
"""


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, text in [("pass", PASSING), ("fail", FAILING), ("hang", HANGING),
                       ("broken", BROKEN), ("jax", JAX_STYLE)]:
        p = tmp_path / "suite" / f"{name}.mlir"
        p.parent.mkdir(exist_ok=True)
        p.write_text(text)
        out[name] = p
    return out


def test_interpret_passing_file(files):
    r = CliRunner().invoke(cli, ["interpret", str(files["pass"])])
    assert r.exit_code == 0, r.output
    assert "PASS  @adds" in r.output and "PASS  @negates" in r.output
    assert "2 of 2 functions passed" in r.output


def test_interpret_failing_file_shows_the_difference(files):
    r = CliRunner().invoke(cli, ["interpret", str(files["fail"])])
    assert r.exit_code == 1
    assert "PASS  @good" in r.output and "FAIL  @bad" in r.output
    assert "1 of 3 elements differ: at [2]: expected 10, got 9" in r.output  # not np.int32(10)


def test_interpret_parse_error_is_reported(files):
    """Nothing of the file parses: a user error (exit 2, one line with the location),
    not a failed test (exit 1); issue #20."""
    r = CliRunner().invoke(cli, ["interpret", str(files["broken"])])
    assert r.exit_code == 2
    assert "broken.mlir:4" in r.stderr and r.stderr.count("error:") == 1


def test_interpret_runs_main_of_jax_style_files(files):
    res = run_file(files["jax"])
    assert [(f.name, f.status) for f in res.functions] == [("main", "pass")]


def test_conformance_counts_pass_fail_error_timeout(files, tmp_path):
    out = tmp_path / "report.json"
    r = CliRunner().invoke(cli, ["conformance", str(files["pass"].parent), "--jobs", "2",
                                 "--timeout", "2", "--json", str(out)])
    assert r.exit_code == 1, r.output
    data = json.loads(out.read_text())
    assert data["backend"] == "interpreter"
    assert (data["total"], data["passed"], data["failed"], data["errors"],
            data["timeouts"], data["skipped"]) == (5, 2, 1, 1, 1, 0)
    status = {p["path"].rsplit("/", 1)[-1]: p["status"] for p in data["files"]}
    assert status == {"broken.mlir": "error", "fail.mlir": "fail", "hang.mlir": "timeout",
                      "jax.mlir": "pass", "pass.mlir": "pass"}
    msgs = {p["path"].rsplit("/", 1)[-1]: p["message"] for p in data["files"]}
    assert "@bad" in msgs["fail.mlir"] and "timed out after 2 s" in msgs["hang.mlir"]
    assert "5 files on 'interpreter'" in r.output


@pytest.mark.filterwarnings("ignore:os.fork")
def test_conformance_crash_is_a_counted_error(tmp_path, monkeypatch):
    import oxla.conformance as C

    p = tmp_path / "a.mlir"
    p.write_text(PASSING)
    q = tmp_path / "b.mlir"
    q.write_text(PASSING)

    real = C.run_file

    def crash_on_a(path, backend="interpreter"):
        if str(path).endswith("a.mlir"):
            import os

            os._exit(3)
        return real(path, backend)

    monkeypatch.setattr(C, "run_file", crash_on_a)
    # fork, so that the worker sees the patched run_file
    rep = run_conformance([tmp_path], jobs=1, timeout=10, start_method="fork")
    got = {f.path.rsplit("/", 1)[-1]: (f.status, f.message) for f in rep.files}
    assert got["a.mlir"] == ("error", "worker crashed (exit code 3)")
    assert got["b.mlir"][0] == "pass"


def test_split_checks_turns_checks_into_results(files):
    m = parse_module(JAX_STYLE, "jax.mlir")
    assert functions_to_run(m) == ["main"]
    split, checks = split_checks(m, "main")
    assert [c.kind for c in checks] == ["close"]
    from oxla.interpreter import run_function

    vals = run_function(split, "main", [])
    a, e = (vals[i] for i in checks[0].results)
    np.testing.assert_array_equal(a, e)
    assert not any(op.name == "stablehlo.custom_call" for op in split.walk())


def test_conformance_on_interpreter_backend_through_the_compile_hook(files):
    # the generic path (split checks, compile, run, compare) works on the interpreter
    res = run_file(files["jax"], backend="interpreter", compiled=True)
    assert res.status == "pass", res.message
    res = run_file(files["fail"], backend="interpreter", compiled=True)
    assert res.status == "fail" and "@bad" in res.message
