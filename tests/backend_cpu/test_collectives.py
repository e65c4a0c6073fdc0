"""Collectives on the cpu backend: grids of compiled programs (``run_parallel``) against
the interpreter's ``interpreter.run_parallel``, calls outside a grid, errors, artifacts,
and the conformance files that use process grids."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from oxla.errors import OxlaError
from oxla.interpreter import Context, run_function
from oxla.interpreter.registry import TOKEN
from oxla.ir import func_name, func_type, parse_module
from tests.backend_cpu.conftest import compile_cpu

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu.collectives_runtime import run_parallel  # noqa: E402

GRID_FILES = ["partition_id", "all_gather", "all_reduce", "collective_permute", "outfeed",
              "send_recv", "reduce_scatter", "all_to_all", "collective_reduce"]
INTERPRET_DIR = Path("/work/shared/conformance/stablehlo/interpret")


def region(op: str, t: str) -> str:
    return f"""({{
      ^bb0(%a: tensor<{t}>, %b: tensor<{t}>):
        %s = {op} %a, %b : tensor<{t}>
        stablehlo.return %s : tensor<{t}>
    }})"""


def interpret_grid(text: str, grid: list[list[str]], args: list) -> list:
    """The interpreter's ``interpreter.run_parallel`` of ``grid`` over ``args``."""
    m = parse_module(text, "programs.mlir")
    funcs = {func_name(f): func_type(f) for f in m.functions}
    ins = [t for row in grid for n in row for t in funcs[n].inputs]
    outs = [t for row in grid for n in row for t in funcs[n].results]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    names = ", ".join("[" + ", ".join(f"@{n}" for n in row) + "]" for row in grid)
    main = f"""
func.func @main({params}) -> ({", ".join(map(str, outs))}) {{
  %r:{len(outs)} = "interpreter.run_parallel"({", ".join(f"%a{i}" for i in range(len(ins)))})
      {{programs = [{names}]}}
      : ({", ".join(map(str, ins))}) -> ({", ".join(map(str, outs))})
  func.return {", ".join(f"%r#{i}" for i in range(len(outs)))} : {", ".join(map(str, outs))}
}}"""
    full = parse_module(text + main, "oracle.mlir")
    ctx = Context(module=full)
    return run_function(full, "main", list(args), ctx)


def program(text: str, name: str):
    """``name`` of ``text`` compiled on cpu as its own module's entry."""
    from oxla.conformance_grid import program_module

    return compile_cpu(str_module(program_module(parse_module(text, "p.mlir"), name)))


def str_module(m) -> str:
    from oxla.ir import print_module

    return print_module(m)


def check_grid(text: str, grid: list[list[str]], args: list) -> list:
    """Runs ``grid`` compiled on cpu and on the interpreter; results must be equal."""
    exes = {n: program(text, n) for row in grid for n in row}
    got, _ = run_parallel([[exes[n] for n in row] for row in grid], args, timeout=20)
    want = interpret_grid(text, grid, args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w is TOKEN:
            assert g is TOKEN
            continue
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    return got


def test_all_reduce_regions_and_process_group_modes():
    """max (f32) and multiply (i32) bodies as native combiners; channel 0 groups by
    replica, channel 1 by replica and partition, use_global_device_ids by flat id."""
    text = f"""
func.func @p(%x: tensor<2x3xf32>, %y: tensor<5xi32>) -> (tensor<2x3xf32>, tensor<5xi32>,
                                                          tensor<2x3xf32>) {{
  %m = "stablehlo.all_reduce"(%x) {region("stablehlo.maximum", "f32")} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>}}
      : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %p = "stablehlo.all_reduce"(%y) {region("stablehlo.multiply", "i32")} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>}}
      : (tensor<5xi32>) -> tensor<5xi32>
  %g = "stablehlo.all_reduce"(%x) {region("stablehlo.add", "f32")} {{
      replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>,
      use_global_device_ids}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %m, %p, %g : tensor<2x3xf32>, tensor<5xi32>, tensor<2x3xf32>
}}"""
    rng = np.random.default_rng(0)
    args = []
    for _ in range(4):
        args += [rng.standard_normal((2, 3)).astype(np.float32),
                 rng.integers(-4, 5, 5).astype(np.int32)]
    got = check_grid(text, [["p", "p"], ["p", "p"]], args)
    xs = args[0::2]
    np.testing.assert_array_equal(got[0], np.maximum(xs[0], xs[2]))  # replicas 0, 1 of p 0
    np.testing.assert_array_equal(got[2], xs[0] + xs[3])  # flat ids 0 and 3


@pytest.mark.parametrize("t,body", [("bf16", "add"), ("f16", "multiply"),
                                    ("complex<f32>", "add"), ("ui8", "add"), ("i1", "or")])
def test_all_reduce_element_types(t, body):
    """Small floats (f32 compute, rounded to storage), complex, wrapping ui8, and i1 bytes
    through the combiner; cross-replica-sum on the same operand."""
    tt = f"tensor<3x{t}>"
    sum_ = ("" if t == "i1" else
            f"""%c = "stablehlo.cross-replica-sum"(%x) {{replica_groups = dense<[[0, 1, 2]]>
      : tensor<1x3xi64>}} : ({tt}) -> {tt}""")
    text = f"""
func.func @p(%x: {tt}) -> ({tt}{"" if t == "i1" else ", " + tt}) {{
  %s = "stablehlo.all_reduce"(%x) {region("stablehlo." + body, t)} {{
      replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>}} : ({tt}) -> {tt}
  {sum_}
  func.return %s{"" if t == "i1" else ", %c"} : {tt}{"" if t == "i1" else ", " + tt}
}}"""
    from oxla.ir import parse_type

    dt = parse_type(tt).element_type.dtype
    rng = np.random.default_rng(2)
    if t == "i1":
        args = [rng.integers(0, 2, 3).astype(bool) for _ in range(3)]
    elif t == "ui8":
        args = [rng.integers(100, 256, 3).astype(dt) for _ in range(3)]
    else:
        args = [(rng.standard_normal(3) + (1j * rng.standard_normal(3) if "complex" in t
                                           else 0)).astype(dt) for _ in range(3)]
    check_grid(text, [["p"], ["p"], ["p"]], args)


def test_all_gather_reduce_scatter_all_to_all():
    text = f"""
func.func @p(%x: tensor<4x2xi64>) -> (tensor<4x4xi64>, tensor<2x2xi64>, tensor<8x1xi64>) {{
  %g = "stablehlo.all_gather"(%x) {{all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>,
      use_global_device_ids}}
      : (tensor<4x2xi64>) -> tensor<4x4xi64>
  %s = "stablehlo.reduce_scatter"(%x) {region("stablehlo.add", "i64")} {{
      scatter_dimension = 0 : i64, replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>}}
      : (tensor<4x2xi64>) -> tensor<2x2xi64>
  %t = "stablehlo.all_to_all"(%x) {{split_dimension = 1 : i64, concat_dimension = 0 : i64,
      split_count = 2 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 2, type = 0>}}
      : (tensor<4x2xi64>) -> tensor<8x1xi64>
  func.return %g, %s, %t : tensor<4x4xi64>, tensor<2x2xi64>, tensor<8x1xi64>
}}"""
    args = [np.arange(8, dtype=np.int64).reshape(4, 2) * (i + 1) for i in range(4)]
    check_grid(text, [["p", "p"], ["p", "p"]], args)


def test_permute_broadcast_reduce_and_ids_in_fused_code():
    """Ids feed arithmetic that fusion computes (they must not fold to 0); a process
    outside collective_broadcast's groups and a non-root of collective_reduce get 0."""
    text = f"""
func.func @p(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
                                     tensor<3xf32>) {{
  %r = stablehlo.replica_id : tensor<ui32>
  %q = stablehlo.partition_id : tensor<ui32>
  %rf = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
  %qf = stablehlo.convert %q : (tensor<ui32>) -> tensor<f32>
  %ten = stablehlo.constant dense<10.0> : tensor<f32>
  %id = stablehlo.add %qf, %ten : tensor<f32>
  %k = stablehlo.multiply %rf, %id : tensor<f32>
  %kb = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %y = stablehlo.add %x, %kb : tensor<3xf32>
  %c = "stablehlo.collective_permute"(%y) {{
      source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>}}
      : (tensor<3xf32>) -> tensor<3xf32>
  %b = "stablehlo.collective_broadcast"(%y) {{
      replica_groups = dense<[[2, 0]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>}}
      : (tensor<3xf32>) -> tensor<3xf32>
  %d = "stablehlo.collective_reduce"(%y) {region("stablehlo.add", "f32")} {{
      replica_groups = dense<[[1, 2]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 0, type = 0>}}
      : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y, %c, %b, %d : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}}"""
    args = [np.full(3, i + 0.5, np.float32) for i in range(6)]
    got = check_grid(text, [["p", "p"], ["p", "p"], ["p", "p"]], args)
    np.testing.assert_array_equal(got[4 * 5], args[5] + 2 * 11)  # %y of replica 2, part 1


def test_loop_of_collectives_and_unused_results_keep_processes_in_step():
    """An all_reduce in a while body runs once per iteration on every process; an
    all_reduce whose result @p never uses still meets @q's, which returns it."""
    body = f"""
  %first = "stablehlo.all_reduce"(%x) {region("stablehlo.add", "i32")} {{
      replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>}}
      : (tensor<4xi32>) -> tensor<4xi32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%i = %i0, %v = %x) : tensor<i32>, tensor<4xi32>
    cond {{
      %n = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }} do {{
      %s = "stablehlo.all_reduce"(%v) {region("stablehlo.add", "i32")} {{
          replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>}}
          : (tensor<4xi32>) -> tensor<4xi32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %ob = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<i32>) -> tensor<4xi32>
      %s1 = stablehlo.subtract %s, %ob : tensor<4xi32>
      stablehlo.return %i1, %s1 : tensor<i32>, tensor<4xi32>
    }}"""
    text = f"""
func.func @p(%x: tensor<4xi32>) -> tensor<4xi32> {{
  {body}
  func.return %w#1 : tensor<4xi32>
}}
func.func @q(%x: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {{
  {body}
  func.return %w#1, %first : tensor<4xi32>, tensor<4xi32>
}}"""
    args = [np.arange(4, dtype=np.int32) + i for i in range(3)]
    got = check_grid(text, [["p"], ["q"], ["p"]], args)
    want = sum(args)
    np.testing.assert_array_equal(got[2], want)  # @q's %first
    for _ in range(2):
        want = 3 * (want - 1)
    for g in got[:2] + got[3:]:
        np.testing.assert_array_equal(g, want - 1)


def test_send_recv_between_partitions_and_tokens():
    """Point-to-point with source_target_pairs (partition ids on a 1x3 grid); tokens pass
    through arguments and results; two sends on one channel arrive in program order."""
    text = """
func.func @snd(%x: tensor<2xf64>, %t: !stablehlo.token) -> !stablehlo.token {
  %t1 = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = dense<[[0, 2]]> : tensor<1x2xi64>}
      : (tensor<2xf64>, !stablehlo.token) -> !stablehlo.token
  %two = stablehlo.constant dense<2.0> : tensor<2xf64>
  %y = stablehlo.multiply %x, %two : tensor<2xf64>
  %t2 = "stablehlo.send"(%y, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = dense<[[0, 2]]> : tensor<1x2xi64>}
      : (tensor<2xf64>, !stablehlo.token) -> !stablehlo.token
  %t3 = stablehlo.after_all %t1, %t2 : !stablehlo.token
  func.return %t3 : !stablehlo.token
}
func.func @rcv(%x: tensor<2xf64>, %t: !stablehlo.token)
    -> (tensor<2xf64>, tensor<2xf64>, !stablehlo.token) {
  %a:2 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = dense<[[0, 2]]> : tensor<1x2xi64>}
      : (!stablehlo.token) -> (tensor<2xf64>, !stablehlo.token)
  %b:2 = "stablehlo.recv"(%a#1) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
      source_target_pairs = dense<[[0, 2]]> : tensor<1x2xi64>}
      : (!stablehlo.token) -> (tensor<2xf64>, !stablehlo.token)
  %s = stablehlo.add %b#0, %x : tensor<2xf64>
  func.return %a#0, %s, %b#1 : tensor<2xf64>, tensor<2xf64>, !stablehlo.token
}"""
    x = [np.array([1.5, -2.0]), np.array([7.0, 8.0]), np.array([0.25, 0.5])]
    got = check_grid(text, [["snd", "rcv", "rcv"]], [x[0], TOKEN, x[1], TOKEN, x[2], TOKEN])
    np.testing.assert_array_equal(got[4], x[0])  # partition 2 received from 0
    np.testing.assert_array_equal(got[5], 2 * x[0] + x[2])
    np.testing.assert_array_equal(got[1], np.zeros(2))  # partition 1 is no target


def test_outside_a_grid_is_one_process():
    """Called directly: process (0, 0) of a 1x1 grid; outfeed goes to the runtime's log,
    infeed reads runtime.infeed, and a recv with nothing sent raises."""
    exe = compile_cpu(f"""
func.func @main(%x: tensor<3xf32>, %t: !stablehlo.token)
    -> (tensor<3xf32>, tensor<ui32>, tensor<2xi8>, !stablehlo.token) {{
  %s = "stablehlo.all_reduce"(%x) {region("stablehlo.add", "f32")} {{
      replica_groups = dense<> : tensor<0x0xi64>}} : (tensor<3xf32>) -> tensor<3xf32>
  %r = stablehlo.replica_id : tensor<ui32>
  %o = "stablehlo.outfeed"(%s, %t) : (tensor<3xf32>, !stablehlo.token) -> !stablehlo.token
  %i:2 = "stablehlo.infeed"(%o) : (!stablehlo.token) -> (tensor<2xi8>, !stablehlo.token)
  func.return %s, %r, %i#0, %i#1 : tensor<3xf32>, tensor<ui32>, tensor<2xi8>,
      !stablehlo.token
}}""")
    x = np.array([1.0, 2.0, 3.0], np.float32)
    exe.runtime.infeed = lambda: [np.array([5, -6], np.int8)]
    s, r, i, t = exe(x, TOKEN)
    np.testing.assert_array_equal(s, x)
    assert r == 0 and r.dtype == np.uint32 and t is TOKEN
    np.testing.assert_array_equal(i, [5, -6])
    assert len(exe.runtime.outfeed_log) == 1
    np.testing.assert_array_equal(exe.runtime.outfeed_log[0][0], x)
    exe.runtime.infeed = None
    with pytest.raises(OxlaError, match="no infeed"):
        exe(x, TOKEN)

    lone = compile_cpu("""
func.func @main(%t: !stablehlo.token) -> tensor<2xi32> {
  %a:2 = "stablehlo.recv"(%t) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>,
      is_host_transfer = true} : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  func.return %a#0 : tensor<2xi32>
}""")
    with pytest.raises(OxlaError, match="nothing was sent"):
        lone(TOKEN)


def test_bad_groups_and_peer_failures_raise_instead_of_hanging():
    text = f"""
func.func @p(%x: tensor<2xi32>) -> tensor<2xi32> {{
  %s = "stablehlo.all_reduce"(%x) {region("stablehlo.add", "i32")} {{
      replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>}}
      : (tensor<2xi32>) -> tensor<2xi32>
  func.return %s : tensor<2xi32>
}}"""
    exe = program(text, "p")
    x = np.ones(2, np.int32)
    with pytest.raises(OxlaError, match=r"replica_groups name replicas \[2\]"):
        run_parallel([[exe], [exe]], [x, x], timeout=20)
    with pytest.raises(OxlaError, match="grid has 1 replicas"):
        exe(x)
    with pytest.raises(OxlaError, match="arguments"):
        run_parallel([[exe], [exe]], [x], timeout=20)


def test_a_failing_process_wakes_the_others_and_its_error_is_raised():
    """Process 1 reads an empty infeed while process 0 waits for it at an all_reduce:
    the run raises the infeed error, not the waiting process's."""
    text = f"""
func.func @reader(%x: tensor<2xi32>, %t: !stablehlo.token) -> tensor<2xi32> {{
  %i:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %y = stablehlo.add %x, %i#0 : tensor<2xi32>
  %s = "stablehlo.all_reduce"(%y) {region("stablehlo.add", "i32")} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<2xi32>) -> tensor<2xi32>
  func.return %s : tensor<2xi32>
}}
func.func @waiter(%x: tensor<2xi32>, %t: !stablehlo.token) -> tensor<2xi32> {{
  %s = "stablehlo.all_reduce"(%x) {region("stablehlo.add", "i32")} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}} : (tensor<2xi32>) -> tensor<2xi32>
  func.return %s : tensor<2xi32>
}}"""
    grid = [[program(text, "waiter")], [program(text, "reader")]]
    x = np.array([1, 2], np.int32)
    with pytest.raises(OxlaError, match="infeed") as info:
        run_parallel(grid, [x, TOKEN, x, TOKEN], timeout=60)
    assert "another process failed" not in str(info.value)
    got, _ = run_parallel(grid, [x, TOKEN, x, TOKEN], infeed=[[np.array([10, 20], np.int32)]],
                          timeout=20)
    np.testing.assert_array_equal(got[0], [12, 24])
    np.testing.assert_array_equal(got[1], [12, 24])


def test_outfeed_in_a_grid_is_logged_per_process_in_program_order():
    text = """
func.func @p(%x: tensor<2xf32>, %t: !stablehlo.token) -> !stablehlo.token {
  %r = stablehlo.replica_id : tensor<ui32>
  %o1 = "stablehlo.outfeed"(%x, %r, %t)
      : (tensor<2xf32>, tensor<ui32>, !stablehlo.token) -> !stablehlo.token
  %y = stablehlo.negate %x : tensor<2xf32>
  %o2 = "stablehlo.outfeed"(%y, %t) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  %o = stablehlo.after_all %o1, %o2 : !stablehlo.token
  func.return %o : !stablehlo.token
}"""
    exe = program(text, "p")
    xs = [np.array([1.0, 2.0], np.float32), np.array([3.0, 4.0], np.float32)]
    got, log = run_parallel([[exe], [exe]], [xs[0], TOKEN, xs[1], TOKEN], timeout=20)
    assert got == [TOKEN, TOKEN]
    for r in range(2):
        mine = [v for p, v in log if p == (r, 0)]
        assert len(mine) == 2
        np.testing.assert_array_equal(mine[0][0], xs[r])
        assert mine[0][1] == r
        np.testing.assert_array_equal(mine[1][0], -xs[r])


def test_artifact_round_trip_keeps_the_runtime(tmp_path):
    """Descriptors and combiners travel in the object code: a loaded artifact whose
    stored StableHLO elides a large constant still runs its all_reduce."""
    import oxla

    w = np.arange(1024, dtype=np.int64) * 7 % 1000
    text = f"""
func.func @main(%x: tensor<1024xi64>) -> tensor<1024xi64> {{
  %w = stablehlo.constant dense<{w.tolist()}> : tensor<1024xi64>
  %y = stablehlo.add %x, %w : tensor<1024xi64>
  %s = "stablehlo.all_reduce"(%y) {region("stablehlo.maximum", "i64")} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}}
      : (tensor<1024xi64>) -> tensor<1024xi64>
  func.return %s : tensor<1024xi64>
}}"""
    path = tmp_path / "ar.oxla"
    compile_cpu(text).save(path)
    exe = oxla.load(path)
    assert "__elided__" in exe.module_text
    rng = np.random.default_rng(1)
    a, b = rng.integers(-500, 500, 1024), rng.integers(-500, 500, 1024)
    got, _ = run_parallel([[exe], [exe]], [a, b], timeout=20)
    np.testing.assert_array_equal(got[0], np.maximum(a + w, b + w))
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.skipif(not INTERPRET_DIR.is_dir(), reason="conformance files not available")
@pytest.mark.parametrize("name", GRID_FILES)
def test_grid_conformance_files_pass_on_cpu(name, tmp_path, monkeypatch):
    from oxla.conformance import run_file

    monkeypatch.setenv("OXLA_CACHE_DIR", os.environ.get("OXLA_CACHE_DIR", str(tmp_path)))
    res = run_file(INTERPRET_DIR / f"{name}.mlir", "cpu")
    assert res.status == "pass", (res.message, [(f.name, f.messages) for f in res.functions])
