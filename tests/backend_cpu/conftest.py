"""Shared helpers: compile on cpu, run on both cpu and the interpreter, compare."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
pytest.importorskip("oxla_backend_cpu")

from oxla.interpreter import InterpreterBackend  # noqa: E402
from oxla.ir import parse_module  # noqa: E402
from oxla.protocols import CompileOptions  # noqa: E402


def compile_cpu(text: str, **options):
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend().compile(parse_module(text, "test.mlir"), CompileOptions(**options))


def run_both(text: str, args: list, rtol: float = 1e-6, atol: float = 0.0):
    """Runs ``text`` on cpu and the interpreter; ints and bools must match bitwise."""
    exe = compile_cpu(text)
    got = exe(*args)
    want = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(g.dtype, np.floating) or "float" in g.dtype.name:  # + ml_dtypes
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True)
        elif np.issubdtype(g.dtype, np.complexfloating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return exe, got
