"""The f64/complex128 half of the LAPACK tests: ``jax_enable_x64`` is process-wide, so
``test_targets.py``, ``test_linalg.py`` and ``test_fold.py`` run again in a subprocess with
``JAX_ENABLE_X64=1`` (where they pick the 64-bit dtypes themselves)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.skipif(os.environ.get("JAX_ENABLE_X64") == "1", reason="already the x64 run")
def test_x64_half_in_a_subprocess():
    env = dict(os.environ, JAX_ENABLE_X64="1")
    files = [str(HERE / name) for name in ("test_targets.py", "test_linalg.py", "test_fold.py")]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files,
         "-k", "not x64"], env=env, capture_output=True, text=True, timeout=1200)
    tail = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, tail
    assert " passed" in tail, tail
