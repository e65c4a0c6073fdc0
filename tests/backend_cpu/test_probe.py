"""``interpreter.probe`` on cpu: the identity, recording each value it sees (every loop
iteration) in ``exe.probes`` as the interpreter records them in ``Context.probes``; the
compiled conformance path checks ``check.expect_serialized_eq`` against them."""

from __future__ import annotations

import numpy as np

from tests.backend_cpu.conftest import compile_cpu

LOOP = """
func.func @main(%x: tensor<3xf32>, %n: tensor<i64>) -> (tensor<3xf32>, tensor<i64>) {
  %z = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %p = interpreter.probe %x, probe_id = "in" : tensor<3xf32>
  %r0, %r1 = stablehlo.while(%a = %z, %s = %p) : tensor<i64>, tensor<3xf32>
  cond {
    %c = stablehlo.compare LT, %a, %n, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %s2 = stablehlo.multiply %s, %s : tensor<3xf32>
    %q = interpreter.probe %s2, probe_id = "loop/sq" : tensor<3xf32>
    %a2 = stablehlo.add %a, %one : tensor<i64>
    stablehlo.return %a2, %q : tensor<i64>, tensor<3xf32>
  }
  return %r1, %r0 : tensor<3xf32>, tensor<i64>
}"""


def _interpret(text: str, args: list):
    from oxla.interpreter import Context, run_function
    from oxla.ir import parse_module

    m = parse_module(text, "t.mlir")
    ctx = Context(module=m)
    return run_function(m, "main", args, ctx), ctx.probes


def test_probe_records_every_iteration_as_the_interpreter():
    x = np.array([1.5, -2.0, 0.5], np.float32)
    exe = compile_cpu(LOOP)
    for n in (3, 1):
        got = exe(x, np.array(n, np.int64))
        want, probes = _interpret(LOOP, [x, np.array(n, np.int64)])
        np.testing.assert_array_equal(got[0], want[0])
        assert sorted(exe.probes) == sorted(probes) == ["in", "loop/sq"]
        for pid, seen in probes.items():  # only this call's records, in order
            assert len(exe.probes[pid]) == len(seen)
            for g, w in zip(exe.probes[pid], seen):
                assert g.dtype == w.dtype
                np.testing.assert_array_equal(g, w)
    assert len(exe.probes["loop/sq"]) == 1


def test_conformance_checks_serialized_probes(tmp_path):
    from oxla.conformance import run_file

    text = """
func.func @probe_iterations() {
  %init = stablehlo.constant dense<0> : tensor<i64>
  %one = stablehlo.constant dense<1> : tensor<i64>
  %two = stablehlo.constant dense<2> : tensor<i64>
  %r0, %r1 = stablehlo.while(%a = %init, %s = %init) : tensor<i64>, tensor<i64>
  cond {
    %c = stablehlo.compare LT, %a, %two : (tensor<i64>, tensor<i64>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %s2 = stablehlo.add %s, %one : tensor<i64>
    %p = interpreter.probe %s2, probe_id = "it" : tensor<i64>
    %a2 = stablehlo.add %a, %one : tensor<i64>
    stablehlo.return %a2, %p : tensor<i64>, tensor<i64>
  }
  check.expect_eq_const %r0, dense<2> : tensor<i64>
  check.expect_serialized_eq %one, probe_id = "it", iter = 0 : tensor<i64>
  check.expect_serialized_eq %two, probe_id = "it", iter = 1 : tensor<i64>
  func.return
}"""
    p = tmp_path / "probe.mlir"
    p.write_text(text)
    res = run_file(p, "cpu")
    assert res.status == "pass", res.message
    p.write_text(text.replace('iter = 1', 'iter = 0'))  # %two is not iteration 0's value
    res = run_file(p, "cpu")
    assert res.status == "fail" and "@probe_iterations" in res.message
    p.write_text(text.replace('iter = 1', 'iter = 2'))  # never recorded
    assert run_file(p, "cpu").status == "fail"
