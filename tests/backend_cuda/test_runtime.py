"""The runtime path on the simulated device: buffers at their offsets, graphs captured
once and replayed, host-driven control flow, device arrays (CUDA array interface,
DLPack), inputs from a simulated producer, artifacts and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from oxla_backend_cuda import device as devices
from oxla_backend_cuda.sim import SimDevice, host_array

from oxla.errors import OxlaError
from tests.backend_cuda.conftest import check_against_interpreter, compile_cuda

MLP = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<4x16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4x16xf32>
  %3 = stablehlo.maximum %2, %z : tensor<4x16xf32>
  %4 = stablehlo.tanh %2 : tensor<4x16xf32>
  return %3, %4 : tensor<4x16xf32>, tensor<4x16xf32>
}
"""

WHILE = """
func.func @main(%x: tensor<3xf32>, %n: tensor<i32>) -> tensor<3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %j = stablehlo.add %i, %c1 : tensor<i32>
      %w = stablehlo.multiply %v, %v : tensor<3xf32>
      %u = stablehlo.add %w, %v : tensor<3xf32>
      stablehlo.return %j, %u : tensor<i32>, tensor<3xf32>
    }
  return %r#1 : tensor<3xf32>
}
"""


def _mlp_args(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in [(4, 8), (8, 16), (16,)]]


def test_mlp_runs_as_one_graph_replayed(sim):
    exe = check_against_interpreter(MLP, _mlp_args(), rtol=1e-5, atol=1e-6)
    assert exe.program.loop_free and exe.stats["gemms"] == 1 and exe.stats["gpu_kernels"] >= 1
    for seed in (1, 2):  # new values in the same input slots: the same graph
        check_against_interpreter  # noqa: B018 - (kept for symmetry of the loop below)
        got = exe(*_mlp_args(seed))
        x, w, b = _mlp_args(seed)
        np.testing.assert_allclose(got[0], np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    assert exe.stats["graph_captures"] == 1 and exe.stats["graph_launches"] == 3


def test_without_graphs_the_launch_list_runs_directly(sim):
    exe = check_against_interpreter(MLP, _mlp_args(), rtol=1e-5, atol=1e-6, cuda_graphs=False)
    assert exe.stats["graph_launches"] == 0


def test_while_is_host_driven_with_its_predicate_copied_back(sim):
    x = np.array([0.5, -0.25, 0.125], np.float32)
    exe = check_against_interpreter(WHILE, [x, np.array(3, np.int32)])
    assert not exe.program.loop_free and exe.stats["graph_launches"] == 0
    check_against_interpreter(WHILE, [x, np.array(0, np.int32)])


def test_device_results_and_simulated_producer_inputs(sim):
    exe = compile_cuda(MLP)
    x, w, b = _mlp_args()
    relu, th = exe.run_on_device(x, w, b)
    want = np.maximum(x @ w + b, 0)
    np.testing.assert_allclose(relu.numpy(), want, rtol=1e-5, atol=1e-6)
    cai = relu.__cuda_array_interface__
    assert cai["shape"] == (4, 16) and cai["typestr"] == "<f4" and cai["version"] == 3
    np.testing.assert_array_equal(np.from_dlpack(relu), relu.numpy())  # no copy: kDLCPU
    assert relu.__dlpack_device__() == (1, 0)

    class Producer:  # what a torch/cupy tensor offers, in simulated device memory
        def __init__(self, array):
            self.ptr = sim.upload(array)
            self.__cuda_array_interface__ = {"shape": array.shape, "typestr": array.dtype.str,
                                             "data": (self.ptr, False), "version": 3,
                                             "strides": None}

    px = Producer(x)
    copies = sim.device.stats["copies"]
    got = exe(px, w, b)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)
    # x read in place: only w and b copied in (and two results out)
    assert sim.device.stats["copies"] - copies == 4
    captures = exe.stats["graph_captures"]
    exe(px, w, b)
    assert exe.stats["graph_captures"] == captures  # the same addresses: the same graph
    with pytest.raises(Exception, match="shape"):
        exe(Producer(np.zeros((2, 2), np.float32)), w, b)
    sim.release(px.ptr)


def test_simulated_device_checks_every_pointer():
    dev = SimDevice()
    stream = dev.stream_create()
    p = dev.alloc(64, stream)
    dev.copy_to_device(p, np.arange(16, dtype=np.float32), stream)
    np.testing.assert_array_equal(host_array(dev, p, (16,), np.float32), np.arange(16))
    with pytest.raises(OxlaError, match="outside every allocation"):
        dev.copy_device(p + 32, p, 64, stream)
    dev.free(p, stream)
    assert dev.stats["bytes_in_use"] == 0
    with pytest.raises(OxlaError, match="no allocation"):
        dev.free(p, stream)


def test_artifact_round_trip(sim, tmp_path):
    import oxla

    exe = compile_cuda(MLP, cuda_arch="sm_80,sm_90")
    path = tmp_path / "mlp.oxla"
    exe.save(path)
    back = oxla.load(path)
    assert back.backend == "cuda" and sorted(back.image.cubins) == ["sm_80", "sm_90"]
    assert back.ptx == exe.ptx
    args = _mlp_args(5)
    for g, w in zip(back(*args), exe(*args)):
        np.testing.assert_array_equal(g, w)


def _cli(*args: str, env_device: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OXLA_CUDA_DEVICE"}
    if env_device:
        env["OXLA_CUDA_DEVICE"] = env_device
    return subprocess.run([sys.executable, "-m", "oxla.cli.main", *args], capture_output=True,
                          text=True, env=env)


def test_cli_compile_emit_and_run(tmp_path):
    src = tmp_path / "mlp.mlir"
    src.write_text(MLP)
    asm = _cli("compile", str(src), "--backend", "cuda", "--emit", "asm", env_device=None)
    assert asm.returncode == 0, asm.stderr
    assert ".visible .entry" in asm.stdout and ".target sm_90" in asm.stdout
    ll = _cli("compile", str(src), "--backend", "cuda", "--emit", "llvm", env_device=None)
    assert ll.returncode == 0 and "define" in ll.stdout
    out = tmp_path / "mlp.oxla"
    made = _cli("compile", str(src), "--backend", "cuda", "--cuda-arch", "sm_80,sm_90",
                "-o", str(out), env_device=None)
    assert made.returncode == 0, made.stderr
    inputs = []
    for i, a in enumerate(_mlp_args()):
        np.save(tmp_path / f"in{i}.npy", a)
        inputs += ["--input", str(tmp_path / f"in{i}.npy")]
    ran = _cli("run", str(out), *inputs, "--output", str(tmp_path / "o.npz"), env_device="sim")
    assert ran.returncode == 0, ran.stderr
    x, w, b = _mlp_args()
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["result0"], np.maximum(x @ w + b, 0),
                               rtol=1e-5, atol=1e-6)
    if not devices.driver_library_loads():
        no = _cli("run", str(out), *inputs, env_device=None)
        assert no.returncode == 2
        lines = no.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and \
            "no NVIDIA driver" in lines[0], no.stderr


def test_dlpack_capsules_release_what_they_hold(sim):
    import gc

    from oxla_backend_cuda import arrays

    exe = compile_cuda(MLP)
    relu, _ = exe.run_on_device(*_mlp_args())
    before = len(arrays._LIVE)  # noqa: SLF001 - the registry is what is checked
    capsule = relu.__dlpack__()
    assert len(arrays._LIVE) == before + 1  # noqa: SLF001
    del capsule  # never consumed: the capsule's destructor frees the tensor
    gc.collect()
    assert len(arrays._LIVE) == before  # noqa: SLF001
    view = np.from_dlpack(relu)  # consumed: numpy calls the deleter when done with it
    want = relu.numpy()
    del relu
    gc.collect()
    np.testing.assert_array_equal(view, want)  # the memory outlives the DeviceArray
    del view
    gc.collect()
    assert len(arrays._LIVE) == before  # noqa: SLF001
