"""Shared helpers: compile on cpu, run on both cpu and the interpreter, compare."""

from __future__ import annotations

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
