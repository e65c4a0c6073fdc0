"""The cuda plugin: listed with its reason without a driver, compile-only there, never
the default backend without a GPU, available on the simulated device."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from oxla_backend_cuda import device as devices

from oxla import plugins
from oxla.errors import OxlaError, PluginError
from tests.backend_cuda.conftest import compile_cuda

ADD = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

no_driver = pytest.mark.skipif(devices.driver_library_loads(),
                               reason="an NVIDIA driver is present")


def _env_without_device(monkeypatch) -> None:
    monkeypatch.delenv("OXLA_CUDA_DEVICE", raising=False)


@no_driver
def test_plugins_lists_cuda_with_the_reason(monkeypatch):
    _env_without_device(monkeypatch)
    env = {k: v for k, v in __import__("os").environ.items() if k != "OXLA_CUDA_DEVICE"}
    out = subprocess.run([sys.executable, "-m", "oxla.cli.main", "plugins", "--json"],
                         capture_output=True, text=True, env=env, check=True).stdout
    row = next(r for r in json.loads(out) if r["name"] == "cuda" and r["kind"] == "backend")
    assert row["distribution"] == "oxla-backend-cuda"
    assert row["available"] is False
    assert row["reason"] == "no NVIDIA driver: libcuda.so.1 not found; compile-only"


@no_driver
def test_never_the_default_without_a_gpu_but_compiles_when_named(monkeypatch):
    _env_without_device(monkeypatch)
    assert "cuda" not in plugins.available_backends()
    assert plugins.best_backend() != "cuda"
    with pytest.raises(PluginError, match="no NVIDIA driver"):
        plugins.get_backend("cuda")  # to run (oxla run, oxla.load)
    import oxla

    exe = oxla.compile(ADD, backend="cuda")  # to compile: no driver needed
    assert exe.backend == "cuda" and ".entry" in exe.ptx
    with pytest.raises(OxlaError, match="no NVIDIA driver: libcuda.so.1 not found"):
        exe(np.ones(4, np.float32), np.ones(4, np.float32))


def test_simulated_device_is_available_when_asked_for(monkeypatch):
    monkeypatch.setenv("OXLA_CUDA_DEVICE", "sim")
    assert plugins.get_backend("cuda").available() == (True, "")
    monkeypatch.setenv("OXLA_CUDA_DEVICE", "gpu7")
    ok, why = plugins.get_backend("cuda", check_available=False).available()
    assert not ok and "OXLA_CUDA_DEVICE must be 'auto', 'sim' or a device number" in why


def test_arch_choice():
    from oxla_backend_cuda.nvjit import parse_archs

    assert parse_archs("sm_80,sm_90") == ("sm_80", "sm_90")
    assert parse_archs(None) == ("sm_90",)
    with pytest.raises(OxlaError, match="unknown CUDA arch 'sm_75'"):
        parse_archs("sm_75")
    exe = compile_cuda(ADD, cuda_arch="sm_80,sm_90")
    assert sorted(exe.image.cubins) == ["sm_80", "sm_90"]
    assert ".target sm_80" in exe.ptx  # the oldest: PTX JITs forward
    for cubin in exe.image.cubins.values():
        assert cubin[:4] == b"\x7fELF"


@no_driver
def test_driver_device_says_there_is_no_driver():
    from oxla_backend_cuda.driver import DriverDevice

    with pytest.raises(OxlaError, match="no NVIDIA driver"):
        DriverDevice(0)
