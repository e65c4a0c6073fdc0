"""Shared helpers: compile on cpu, run on both cpu and the interpreter, compare."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
pytest.importorskip("oxla_backend_cpu")

from oxla.ir import parse_module  # noqa: E402
from oxla.protocols import CompileOptions  # noqa: E402
from tests.differential.conftest import run_both as run_on  # noqa: E402


def compile_cpu(text: str, **options):
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend().compile(parse_module(text, "test.mlir"), CompileOptions(**options))


def run_both(text: str, args: list, rtol: float = 1e-6, atol: float = 0.0):
    """Runs ``text`` on cpu and the interpreter; ints and bools must match bitwise."""
    return run_on("cpu", text, args, rtol, atol)


def ulps(got: np.ndarray, want64: np.ndarray) -> np.ndarray:
    """Distance in f32 units in the last place between ``got`` (f32) and ``want64``
    rounded to f32, per element (NaN vs NaN: 0; NaN vs a number: 2**40)."""
    with np.errstate(over="ignore"):
        want = want64.astype(np.float32)
    g = got.view(np.int32).astype(np.int64)
    w = want.view(np.int32).astype(np.int64)
    g = np.where(g < 0, -(g & 0x7FFFFFFF), g)
    w = np.where(w < 0, -(w & 0x7FFFFFFF), w)
    d = np.abs(g - w)
    d[np.isnan(got) & np.isnan(want)] = 0
    d[np.isnan(got) != np.isnan(want)] = 1 << 40
    return d
