"""Every compiling backend against the reference interpreter, through one fixture.

``backend`` is parametrized over the installed backends other than the interpreter (the
oracle): a new backend's distribution, once installed, runs every test here. One that is
installed but not available on this machine (no device) skips with its reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from oxla import plugins
from oxla.interpreter import InterpreterBackend
from oxla.ir import parse_module
from oxla.protocols import CompileOptions


def _compiling_backends() -> list[str]:
    return sorted(name for name in plugins.backends() if name != "interpreter")


@pytest.fixture(params=_compiling_backends() or ["none"])
def backend(request) -> str:
    name = request.param
    if name == "none":
        pytest.skip("no compiling backend is installed")
    b = plugins.get_backend(name, check_available=False)
    ok, why = b.available() if hasattr(b, "available") else (True, "")
    if not ok:
        pytest.skip(f"backend {name}: {why}")
    return name


def compile_on(backend: str, text: str, **options):
    """Compiles ``text`` (file ``test.mlir``) on ``backend`` with ``options``."""
    return plugins.get_backend(backend).compile(parse_module(text, "test.mlir"),
                                                CompileOptions(**options))


def run_both(backend: str, text: str, args: list, rtol: float = 1e-6, atol: float = 0.0):
    """Runs ``text`` on ``backend`` and the interpreter; ints and bools must match
    bitwise. Returns (executable, outputs)."""
    exe = compile_on(backend, text)
    got = exe(*args)
    want = InterpreterBackend().compile(parse_module(text, "test.mlir"))(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(g.dtype, np.floating) or "float" in g.dtype.name:  # + ml_dtypes
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True)
        elif np.issubdtype(g.dtype, np.complexfloating):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)
    return exe, got
