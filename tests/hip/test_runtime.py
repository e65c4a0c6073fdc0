"""The hip runtime path on the simulated device (``OXLA_HIP_DEVICE=sim``): kernels as
host twins at the arch's wavefront size, rocBLAS GEMMs by their numpy semantics, graphs,
host-driven control flow, device arrays, artifacts with a code object per arch, the CLI
and ``oxla plugins``' reason without an AMD GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from oxla_backend_hip import device as devices
from oxla_codegen_llvm.gpu.arrays import DeviceArray

from oxla.artifact import read_manifest
from oxla.errors import OxlaError
from tests.hip.conftest import check_against_interpreter, compile_hip

MLP = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4xf32>) {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<4x16xf32>
  %3 = stablehlo.tanh %2 : tensor<4x16xf32>
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %4 = stablehlo.reduce(%3 init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<4x16xf32>, tensor<f32>) -> tensor<4xf32>
  return %3, %4 : tensor<4x16xf32>, tensor<4xf32>
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
      %w = stablehlo.add %v, %v : tensor<3xf32>
      stablehlo.return %j, %w : tensor<i32>, tensor<3xf32>
    }
  return %r#1 : tensor<3xf32>
}
"""


def _mlp_args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 16), (16,))]


@pytest.mark.parametrize("arch", ["gfx942", "gfx1100"])
def test_mlp_on_the_simulated_device(sim, arch):
    gemms = sim.device.stats["gemms"]
    exe = check_against_interpreter(MLP, _mlp_args(), rtol=1e-5, atol=1e-6, hip_arch=arch)
    assert sim.device.stats["gemms"] - gemms == 1  # the dot went to the (mock) rocBLAS
    assert sim.device.warp_size == {"gfx942": 64, "gfx1100": 32}[arch]
    assert exe.stats["graph_captures"] == 1 and exe.stats["graph_launches"] == 1
    exe(*_mlp_args())
    assert exe.stats["graph_captures"] == 1 and exe.stats["graph_launches"] == 2


def test_host_driven_while(sim):
    exe = check_against_interpreter(WHILE, [np.arange(3, dtype=np.float32),
                                            np.array(5, np.int32)])
    assert not exe.use_graphs


def test_device_arrays_and_dlpack(sim):
    exe = compile_hip(MLP)
    outs = exe.run_on_device(*_mlp_args())
    want = exe(*_mlp_args())
    for o, w in zip(outs, want):
        np.testing.assert_array_equal(o.numpy(), w)
        np.testing.assert_array_equal(np.from_dlpack(o), w)  # kDLCPU on the sim device
    x, w, b = _mlp_args()
    on_device = DeviceArray(sim, sim.upload(x), x.shape, x.dtype)  # read in place
    np.testing.assert_array_equal(exe(on_device, w, b)[0], want[0])


def test_artifact_holds_a_code_object_per_arch(sim, tmp_path):
    exe = compile_hip(MLP, hip_arch="gfx1100,gfx90a")
    path = tmp_path / "mlp.oxla"
    exe.save(path)
    manifest = read_manifest(str(path))
    assert manifest["backend"] == "hip" and manifest["archs"] == ["gfx1100", "gfx90a"]
    from oxla_backend_hip.backend import HIPBackend

    loaded = HIPBackend().load(path)
    assert loaded.image.hsacos == exe.image.hsacos
    for g, w in zip(loaded(*_mlp_args()), exe(*_mlp_args())):
        np.testing.assert_array_equal(g, w)


def test_without_a_device_running_says_why(monkeypatch):
    monkeypatch.setenv("OXLA_HIP_DEVICE", "auto")
    if devices.status()[0]:
        pytest.skip("an AMD GPU is present")
    exe = compile_hip(MLP)
    with pytest.raises(OxlaError, match="cannot run on hip: no AMD GPU"):
        exe(*_mlp_args())


def _oxla(*args: str, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if not k.startswith("OXLA_HIP")}
    e.update(env)
    return subprocess.run([sys.executable, "-m", "oxla.cli.main", *args], capture_output=True,
                          text=True, env=e, timeout=300)


def test_plugins_names_the_missing_runtime():
    out = _oxla("plugins", "--json", OXLA_HIP_RUNTIME="/nonexistent/libamdhip64.so")
    row = next(r for r in json.loads(out.stdout) if r["name"] == "hip" and r["kind"] == "backend")
    assert row["distribution"] == "oxla-backend-hip" and row["available"] is False
    assert row["reason"] == "no AMD GPU runtime: libamdhip64.so not found; compile-only"
    sim = _oxla("plugins", "--json", OXLA_HIP_DEVICE="sim")
    row = next(r for r in json.loads(sim.stdout) if r["name"] == "hip")
    assert row["available"] is True


def test_cli_compile_emit_and_run(tmp_path):
    src = tmp_path / "mlp.mlir"
    src.write_text(MLP)
    asm = _oxla("compile", "--backend", "hip", "--hip-arch", "gfx1100", "--emit", "asm", str(src))
    assert asm.returncode == 0, asm.stderr
    assert '.amdgcn_target "amdgcn-amd-amdhsa--gfx1100' in asm.stdout
    ll = _oxla("compile", "--backend", "hip", "--emit", "llvm", str(src))
    assert ll.returncode == 0 and "; oxla.simt kernel=" in ll.stdout
    bad = _oxla("compile", "--backend", "hip", "--hip-arch", "gfx803", str(src))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "error: unknown AMD GPU architecture 'gfx803'" in bad.stderr
    out = tmp_path / "mlp.oxla"
    ok = _oxla("compile", "--backend", "hip", str(src), "-o", str(out))
    assert ok.returncode == 0, ok.stderr
    assert read_manifest(str(out))["archs"] == ["gfx942"]  # the default without a GPU
    norun = _oxla("run", str(out), OXLA_HIP_RUNTIME="/nonexistent/libamdhip64.so")
    assert norun.returncode == 2 and "no AMD GPU runtime" in norun.stderr
    assert "Traceback" not in norun.stderr
