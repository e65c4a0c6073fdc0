"""Process grid, collectives, send/recv, async and infeed/outfeed (spec "Parallel
execution", "Collective ops" and the op sections); expected values worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.errors import InterpreterError
from oxla.interpreter import Context, run_function
from oxla.interpreter.rules import collectives
from oxla.interpreter.rules.io import outfeed_log
from oxla.ir import parse_module

ADD = """({
      ^bb0(%a: tensor<i64>, %b: tensor<i64>):
        %s = stablehlo.add %a, %b : tensor<i64>
        stablehlo.return %s : tensor<i64>
    })"""


def run(text: str, ctx: Context | None = None):
    m = parse_module(text, "test.mlir")
    ctx = ctx or Context(module=m)
    ctx.module = m
    out = run_function(m, "main", [], ctx)
    assert not ctx.failures, [str(f) for f in ctx.failures]
    return out, ctx


def parallel(body: str, sig: str, programs: str, inputs: list[str], in_types: list[str],
             out_types: list[str]) -> list[np.ndarray]:
    consts = "\n".join(f"    %i{k} = stablehlo.constant dense<{v}> : {t}"
                       for k, (v, t) in enumerate(zip(inputs, in_types)))
    names = ", ".join(f"%i{k}" for k in range(len(inputs)))
    text = f"""
module {{
  func.func @f{sig} {{
{body}
  }}
  func.func @main() -> ({", ".join(out_types)}) {{
{consts}
    %r:{len(out_types)} = "interpreter.run_parallel"({names}) {{programs = {programs}}}
        : ({", ".join(in_types)}) -> ({", ".join(out_types)})
    return {", ".join(f"%r#{k}" for k in range(len(out_types)))} : {", ".join(out_types)}
  }}
}}"""
    return run(text)[0]


def test_all_reduce_cross_replica_sums_in_group_order():
    body = f"""    %r = "stablehlo.all_reduce"(%x) {ADD} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    }} : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f], [@f]]",
                 ["[1, 2]", "[5, 6]"], ["tensor<2xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [6, 8] and r[1].tolist() == [6, 8]


def test_all_reduce_singleton_groups_is_identity():
    body = f"""    %r = "stablehlo.all_reduce"(%x) {ADD} {{
      replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>
    }} : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f], [@f]]",
                 ["[1, 2]", "[5, 6]"], ["tensor<2xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [1, 2] and r[1].tolist() == [5, 6]


def test_all_reduce_flattened_ids_across_partitions():
    # 1 replica x 2 partitions; flattened ids 0, 1 are (0, 0), (0, 1).
    body = f"""    %r = "stablehlo.all_reduce"(%x) {ADD} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
      use_global_device_ids
    }} : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f, @f]]",
                 ["[1, 2]", "[10, 20]"], ["tensor<2xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [11, 22] and r[1].tolist() == [11, 22]


def test_all_reduce_negative_zero_sum_stays_negative_zero():
    body = """    %r = "stablehlo.all_reduce"(%x) ({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
    }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<1xf32>) -> tensor<1xf32>
    return %r : tensor<1xf32>"""
    r = parallel(body, "(%x: tensor<1xf32>) -> tensor<1xf32>", "[[@f], [@f]]",
                 ["[-0.0]", "[-0.0]"], ["tensor<1xf32>"] * 2, ["tensor<1xf32>"] * 2)
    assert r[0][0] == 0 and np.signbit(r[0][0])


def test_all_gather_concatenates_in_group_order():
    body = """    %r = "stablehlo.all_gather"(%x) {
      all_gather_dim = 1 : i64, replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>
    } : (tensor<1x2xi64>) -> tensor<1x4xi64>
    return %r : tensor<1x4xi64>"""
    r = parallel(body, "(%x: tensor<1x2xi64>) -> tensor<1x4xi64>", "[[@f], [@f]]",
                 ["[[1, 2]]", "[[3, 4]]"], ["tensor<1x2xi64>"] * 2, ["tensor<1x4xi64>"] * 2)
    assert r[0].tolist() == [[3, 4, 1, 2]] and r[1].tolist() == [[3, 4, 1, 2]]


def test_all_to_all_spec_example():
    body = """    %r = "stablehlo.all_to_all"(%x) {
      split_dimension = 1 : i64, concat_dimension = 0 : i64, split_count = 2 : i64,
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<2x4xi64>) -> tensor<4x2xi64>
    return %r : tensor<4x2xi64>"""
    r = parallel(body, "(%x: tensor<2x4xi64>) -> tensor<4x2xi64>", "[[@f], [@f]]",
                 ["[[1, 2, 3, 4], [5, 6, 7, 8]]", "[[9, 10, 11, 12], [13, 14, 15, 16]]"],
                 ["tensor<2x4xi64>"] * 2, ["tensor<4x2xi64>"] * 2)
    assert r[0].tolist() == [[1, 2], [5, 6], [9, 10], [13, 14]]
    assert r[1].tolist() == [[3, 4], [7, 8], [11, 12], [15, 16]]


def test_reduce_scatter_splits_the_sum():
    body = f"""    %r = "stablehlo.reduce_scatter"(%x) {ADD} {{
      scatter_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    }} : (tensor<4xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<4xi64>) -> tensor<2xi64>", "[[@f], [@f]]",
                 ["[1, 2, 3, 4]", "[5, 6, 7, 8]"], ["tensor<4xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [6, 8] and r[1].tolist() == [10, 12]


def test_collective_permute_non_targets_get_zeros():
    body = """    %r = "stablehlo.collective_permute"(%x) {
      source_target_pairs = dense<[[0, 1], [1, 2]]> : tensor<2x2xi64>
    } : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f], [@f], [@f]]",
                 ["[1, 2]", "[3, 4]", "[5, 6]"], ["tensor<2xi64>"] * 3, ["tensor<2xi64>"] * 3)
    assert [x.tolist() for x in r] == [[0, 0], [1, 2], [3, 4]]


def test_collective_broadcast_from_first_of_group():
    body = """    %r = "stablehlo.collective_broadcast"(%x) {
      replica_groups = dense<[[1, 0]]> : tensor<1x2xi64>
    } : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f], [@f], [@f]]",
                 ["[1, 2]", "[3, 4]", "[5, 6]"], ["tensor<2xi64>"] * 3, ["tensor<2xi64>"] * 3)
    assert [x.tolist() for x in r] == [[3, 4], [3, 4], [0, 0]]


def test_collective_reduce_root_gets_sum_others_zeros():
    body = f"""    %r = "stablehlo.collective_reduce"(%x) {ADD} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    }} : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<2xi64>) -> tensor<2xi64>", "[[@f], [@f]]",
                 ["[1, 2]", "[5, 6]"], ["tensor<2xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [6, 8] and r[1].tolist() == [0, 0]


def test_cross_replica_sum():
    body = """    %r = "stablehlo.cross-replica-sum"(%x) {
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    } : (tensor<i32>) -> tensor<i32>
    return %r : tensor<i32>"""
    r = parallel(body, "(%x: tensor<i32>) -> tensor<i32>", "[[@f], [@f]]",
                 ["2147483647", "1"], ["tensor<i32>"] * 2, ["tensor<i32>"] * 2)
    assert int(r[0]) == -2147483648  # wraps


def test_replica_and_partition_ids_in_a_2x2_grid():
    body = """    %r = stablehlo.replica_id : tensor<ui32>
    %p = stablehlo.partition_id : tensor<ui32>
    return %r, %p : tensor<ui32>, tensor<ui32>"""
    r = parallel(body, "() -> (tensor<ui32>, tensor<ui32>)", "[[@f, @f], [@f, @f]]",
                 [], [], ["tensor<ui32>"] * 8)
    assert [int(x) for x in r] == [0, 0, 0, 1, 1, 0, 1, 1]


def test_ids_outside_a_grid_are_zero():
    out, _ = run("""
func.func @main() -> (tensor<ui32>, tensor<ui32>) {
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  return %r, %p : tensor<ui32>, tensor<ui32>
}""")
    assert int(out[0]) == 0 and int(out[1]) == 0 and out[0].dtype == np.uint32


def test_send_recv_between_processes_in_order():
    text = """
module {
  func.func @s(%x: tensor<2xi64>, %t: !stablehlo.token) -> !stablehlo.token {
    %a = "stablehlo.send"(%x, %t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 2>, is_host_transfer = true
    } : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    %c = stablehlo.constant dense<[7, 8]> : tensor<2xi64>
    %b = "stablehlo.send"(%c, %a) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 2>, is_host_transfer = true
    } : (tensor<2xi64>, !stablehlo.token) -> !stablehlo.token
    return %b : !stablehlo.token
  }
  func.func @r(%t: !stablehlo.token) -> (tensor<2xi64>, tensor<2xi64>) {
    %v, %t1 = "stablehlo.recv"(%t) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    %w, %t2 = "stablehlo.recv"(%t1) {
      channel_handle = #stablehlo.channel_handle<handle = 3, type = 3>, is_host_transfer = true
    } : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    return %v, %w : tensor<2xi64>, tensor<2xi64>
  }
  func.func @main() -> (tensor<2xi64>, tensor<2xi64>) {
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %t = stablehlo.after_all : !stablehlo.token
    %r:3 = "interpreter.run_parallel"(%x, %t, %t) {programs = [[@s], [@r]]}
        : (tensor<2xi64>, !stablehlo.token, !stablehlo.token)
        -> (!stablehlo.token, tensor<2xi64>, tensor<2xi64>)
    return %r#1, %r#2 : tensor<2xi64>, tensor<2xi64>
  }
}"""
    out, _ = run(text)
    assert out[0].tolist() == [1, 2] and out[1].tolist() == [7, 8]


def test_recv_with_nothing_sent_outside_a_grid_is_an_error():
    with pytest.raises(InterpreterError, match="nothing was sent"):
        run("""
func.func @main() -> tensor<2xi64> {
  %t = stablehlo.after_all : !stablehlo.token
  %v, %t1 = "stablehlo.recv"(%t) {
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 3>, is_host_transfer = true
  } : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
  return %v : tensor<2xi64>
}""")


def test_failure_in_one_process_does_not_hang_the_others(monkeypatch):
    monkeypatch.setattr(collectives, "RENDEZVOUS_TIMEOUT", 5.0)
    text = f"""
module {{
  func.func @ok(%x: tensor<2xi64>) -> tensor<2xi64> {{
    %r = "stablehlo.all_reduce"(%x) {ADD} {{
      replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
    }} : (tensor<2xi64>) -> tensor<2xi64>
    return %r : tensor<2xi64>
  }}
  func.func @bad(%x: tensor<2xi64>) -> tensor<2xi64> {{
    %t = stablehlo.after_all : !stablehlo.token
    %v, %t1 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi64>, !stablehlo.token)
    return %v : tensor<2xi64>
  }}
  func.func @main() -> (tensor<2xi64>, tensor<2xi64>) {{
    %x = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
    %r:2 = "interpreter.run_parallel"(%x, %x) {{programs = [[@ok], [@bad]]}}
        : (tensor<2xi64>, tensor<2xi64>) -> (tensor<2xi64>, tensor<2xi64>)
    return %r#0, %r#1 : tensor<2xi64>, tensor<2xi64>
  }}
}}"""
    with pytest.raises(InterpreterError, match="no infeed"):
        run(text)


def test_async_start_done_wraps_a_collective():
    body = """    %f = "stablehlo.async_start"(%x) ({
      %g = "stablehlo.all_gather"(%x) {
        all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>
      } : (tensor<1xi64>) -> tensor<2xi64>
      "stablehlo.return"(%g) : (tensor<2xi64>) -> ()
    }) : (tensor<1xi64>) -> !stablehlo.future<tensor<2xi64>>
    %r = "stablehlo.async_done"(%f) : (!stablehlo.future<tensor<2xi64>>) -> tensor<2xi64>
    return %r : tensor<2xi64>"""
    r = parallel(body, "(%x: tensor<1xi64>) -> tensor<2xi64>", "[[@f], [@f]]",
                 ["[4]", "[9]"], ["tensor<1xi64>"] * 2, ["tensor<2xi64>"] * 2)
    assert r[0].tolist() == [4, 9] and r[1].tolist() == [4, 9]


INFEED = """
func.func @main() -> tensor<2xi32> {
  %t = stablehlo.after_all : !stablehlo.token
  %v, %t1 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
  %t2 = "stablehlo.outfeed"(%v, %t1) : (tensor<2xi32>, !stablehlo.token) -> !stablehlo.token
  return %v : tensor<2xi32>
}"""


def test_infeed_hook_and_outfeed_log():
    ctx = Context(infeed=lambda: [np.array([3, 4], np.int32)])
    out, ctx = run(INFEED, ctx)
    assert out[0].tolist() == [3, 4]
    assert [v[0].tolist() for v in outfeed_log(ctx)] == [[3, 4]]


def test_outfeed_hook_receives_values():
    seen = []
    ctx = Context(infeed=lambda: [np.array([1, 2], np.int32)], outfeed=seen.append)
    run(INFEED, ctx)
    assert [v[0].tolist() for v in seen] == [[1, 2]]


def test_infeed_without_a_source_is_an_error():
    with pytest.raises(InterpreterError, match="no infeed"):
        run(INFEED)


def test_run_parallel_infeed_functions_feed_the_processes():
    text = """
module {
  func.func @feed() -> tensor<2xi32> {
    %c = stablehlo.constant dense<[5, 6]> : tensor<2xi32>
    return %c : tensor<2xi32>
  }
  func.func @f(%t: !stablehlo.token) -> tensor<2xi32> {
    %v, %t1 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xi32>, !stablehlo.token)
    return %v : tensor<2xi32>
  }
  func.func @main() -> tensor<2xi32> {
    %t = stablehlo.after_all : !stablehlo.token
    %r = "interpreter.run_parallel"(%t) {programs = [[@f]], infeed = [@feed]}
        : (!stablehlo.token) -> tensor<2xi32>
    return %r : tensor<2xi32>
  }
}"""
    out, _ = run(text)
    assert out[0].tolist() == [5, 6]
