"""Helpers of the cuda backend's tests: compile with ``--backend cuda`` and run on the
simulated device (``OXLA_CUDA_DEVICE=sim``), compared with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
pytest.importorskip("oxla_backend_cuda")

from oxla.interpreter import InterpreterBackend  # noqa: E402
from oxla.ir import parse_module  # noqa: E402
from oxla.protocols import CompileOptions  # noqa: E402


@pytest.fixture
def sim(monkeypatch):
    """Selects the simulated device for the test; returns its runtime."""
    from oxla_backend_cuda.runtime import get_runtime

    monkeypatch.setenv("OXLA_CUDA_DEVICE", "sim")
    return get_runtime()


def compile_cuda(text: str, **extra):
    from oxla_backend_cuda.backend import CUDABackend

    return CUDABackend().compile(parse_module(text, "test.mlir"), CompileOptions(extra=extra))


def check_against_interpreter(text: str, args: list, rtol: float = 1e-6, atol: float = 0.0,
                              **extra):
    """Compiles ``text`` for cuda, runs it (on the device the environment chooses) and
    compares each result with the interpreter's. Returns the executable."""
    exe = compile_cuda(text, **extra)
    assert_like_interpreter(exe(*args), text, args, rtol, atol)
    return exe


def assert_like_interpreter(got: list, text: str, args: list, rtol: float = 1e-6,
                            atol: float = 0.0) -> None:
    """Each result in ``got`` has the interpreter's dtype and shape for ``text`` on
    ``args``, its values within ``rtol``/``atol`` (floats, NaNs equal) or equal."""
    want = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(g.dtype, np.inexact):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
