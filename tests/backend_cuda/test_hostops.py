"""Host-staged ops of the cuda backend on the simulated device: collectives over an
in-process thread grid (one executable shared by several processes), ``partition_id``
never folded to 0, ``interpreter.probe`` records, and artifacts keeping them."""

from __future__ import annotations

import numpy as np
import pytest
from oxla_backend_cuda.backend import CUDABackend

import oxla
from tests.backend_cuda.conftest import compile_cuda

ALL_REDUCE = """
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<ui32>) {
  %r = "stablehlo.all_reduce"(%x) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {replica_groups = dense<[[0, 1, 2]]> : tensor<1x3xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %y = stablehlo.multiply %r, %two : tensor<4xf32>
  %id = stablehlo.replica_id : tensor<ui32>
  return %y, %id : tensor<4xf32>, tensor<ui32>
}"""

PERMUTE = """
func.func @main(%x: tensor<2xi32>) -> tensor<2xi32> {
  %p = stablehlo.partition_id : tensor<ui32>
  %b = stablehlo.broadcast_in_dim %p, dims = [] : (tensor<ui32>) -> tensor<2xui32>
  %c = stablehlo.convert %b : (tensor<2xui32>) -> tensor<2xi32>
  %s = stablehlo.add %x, %c : tensor<2xi32>
  %r = "stablehlo.collective_permute"(%s) {
    source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>,
    channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>
  } : (tensor<2xi32>) -> tensor<2xi32>
  return %r : tensor<2xi32>
}"""


def test_all_reduce_over_a_replica_grid(sim):
    exe = compile_cuda(ALL_REDUCE)
    assert sorted(s["name"] for s in exe.program.steps if s["op"] == "host") == [
        "stablehlo.all_reduce", "stablehlo.replica_id"]
    assert not exe.use_graphs  # host steps run between the device's steps
    xs = [np.array([1, 5, -2, 0], np.float32) * (i + 1) for i in range(3)]
    results, log = CUDABackend().run_parallel([[exe], [exe], [exe]], xs)
    assert log == []
    want = 2 * np.max(np.stack(xs), axis=0)
    for i in range(3):
        np.testing.assert_array_equal(results[2 * i], want)
        assert int(results[2 * i + 1]) == i
    # outside a grid: process (0, 0) of its own 1x1 grid
    alone = compile_cuda(ALL_REDUCE.replace("[[0, 1, 2]]> : tensor<1x3xi64>",
                                            "[[0]]> : tensor<1x1xi64>"))
    y, rid = alone(xs[1])
    np.testing.assert_array_equal(y, 2 * xs[1])
    assert int(rid) == 0


def test_partitions_permute_and_ids(sim):
    exe = compile_cuda(PERMUTE)
    results, _ = CUDABackend().run_parallel([[exe, exe]], [np.array([10, 20], np.int32)] * 2)
    np.testing.assert_array_equal(results[0], [11, 21])  # partition 1's value
    np.testing.assert_array_equal(results[1], [10, 20])


def test_probe_records_and_the_artifact_keeps_it(sim, tmp_path):
    exe = compile_cuda("""
func.func @main(%x: tensor<3xi64>) -> tensor<3xi64> {
  %y = stablehlo.add %x, %x : tensor<3xi64>
  %p = interpreter.probe %y, probe_id = "twice" : tensor<3xi64>
  %z = stablehlo.negate %p : tensor<3xi64>
  return %z : tensor<3xi64>
}""")
    x = np.array([1, -4, 7], np.int64)
    (z,) = exe(x)
    np.testing.assert_array_equal(z, -2 * x)
    assert list(exe.probes) == ["twice"]
    np.testing.assert_array_equal(exe.probes["twice"][0], 2 * x)
    exe.save(tmp_path / "probe.oxla")
    back = oxla.load(tmp_path / "probe.oxla")
    np.testing.assert_array_equal(back(x)[0], -2 * x)
    np.testing.assert_array_equal(back.probes["twice"][0], 2 * x)


@pytest.mark.parametrize("text,grid", [(ALL_REDUCE, (3, 1)), (PERMUTE, (1, 2))])
def test_an_artifact_keeps_its_collective_steps(sim, tmp_path, text, grid):
    """Each host op is kept as a function of its own (host_ops.mlir); the loaded
    executable runs on a grid as the compiled one does."""
    from oxla_codegen_llvm.gpu.program import HOST_OPS_MEMBER

    from oxla.artifact import read_members
    from oxla.ir.printer import print_op

    exe = compile_cuda(text)
    exe.save(tmp_path / "c.oxla")
    kept = read_members(tmp_path / "c.oxla", [HOST_OPS_MEMBER])[HOST_OPS_MEMBER].decode()
    assert kept.count("func.func @host") == len(exe.program.host_ops)
    back = oxla.load(tmp_path / "c.oxla")
    assert back.program.steps == exe.program.steps
    # the same ops: attributes, regions, types (operand names differ)
    assert [print_op(o, generic=True).split("(", 1)[1].split(")", 1)[1]
            for o in back.program.host_ops] == \
        [print_op(o, generic=True).split("(", 1)[1].split(")", 1)[1]
         for o in exe.program.host_ops]
    rng = np.random.default_rng(3)
    ins = [rng.integers(-9, 9, tuple(t.shape)).astype(np.dtype(t.element_type.dtype))
           for t in exe.signature.inputs]
    replicas, partitions = grid
    got, _ = CUDABackend().run_parallel([[back] * partitions] * replicas,
                                        ins * (replicas * partitions))
    want, _ = CUDABackend().run_parallel([[exe] * partitions] * replicas,
                                         ins * (replicas * partitions))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
