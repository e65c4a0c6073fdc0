"""Helpers of the hip backend's tests: compile with ``--backend hip`` (code objects need
``ld.lld``: Debian's lld-16, which ``scripts/test`` installs under CI) and run on the
simulated device (``OXLA_HIP_DEVICE=sim``), compared with the interpreter."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("llvmlite")
pytest.importorskip("oxla_backend_hip")
pytest.importorskip("msgpack")

from oxla_codegen_llvm.simt.amdgpu import lld_path  # noqa: E402

from oxla.ir import parse_module  # noqa: E402
from oxla.protocols import CompileOptions  # noqa: E402
from tests.backend_cuda.conftest import assert_like_interpreter  # noqa: E402

if lld_path() is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("ld.lld is missing under CI=true (scripts/test installs lld-16)")
    pytest.skip("ld.lld is not installed (apt-get install lld-16)", allow_module_level=True)


@pytest.fixture
def sim(monkeypatch):
    """Selects the simulated device for the test; returns its runtime."""
    from oxla_backend_hip.runtime import get_runtime

    monkeypatch.setenv("OXLA_HIP_DEVICE", "sim")
    return get_runtime()


def compile_hip(text: str, **extra):
    from oxla_backend_hip.backend import HIPBackend

    return HIPBackend().compile(parse_module(text, "test.mlir"), CompileOptions(extra=extra))


def check_against_interpreter(text: str, args: list, rtol: float = 1e-6, atol: float = 0.0,
                              **extra):
    """Compiles ``text`` for hip, runs it (on the device the environment chooses) and
    compares each result with the interpreter's. Returns the executable."""
    exe = compile_hip(text, **extra)
    assert_like_interpreter(exe(*args), text, args, rtol, atol)
    return exe
