"""oxla-lapack's compiled handlers (``oxla_lapack.native``): the hot-path targets run as
native code on the cpu backend (no Python kernel), and a program using them is saved as
an ``.oxla`` artifact and loaded and run in a fresh process, matching ``jax.jit``.

Every target's results against jaxlib's kernels: ``test_targets.py`` (on cpu those run
through these handlers).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import oxla_frontend_jax as oj
import pytest
from oxla_lapack import native
from oxla_lapack.targets import TARGETS

needs_native = pytest.mark.skipif(not native.available() and os.environ.get("CI") != "true",
                                  reason="no C compiler or XLA FFI header here")


def _program(a, b):
    return (jnp.linalg.solve(a, b), jnp.linalg.cholesky(a), jnp.linalg.qr(a)[1],
            jnp.linalg.eigh(a)[0], jnp.linalg.svd(a, compute_uv=False))


def _inputs(dt=np.float32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 6, 6)).astype(dt)
    a = (x @ np.swapaxes(x, -1, -2) + 6 * np.eye(6, dtype=dt)).astype(dt)
    return a, rng.standard_normal((3, 6, 2)).astype(dt)


def test_native_kinds_cover_every_dtype():
    hot = {t for t, (kind, _) in TARGETS.items() if kind in native.NATIVE_KINDS}
    assert len(hot) == 4 * len(native.NATIVE_KINDS) == 28


@needs_native
def test_hot_paths_are_native_and_save_to_an_artifact(tmp_path):
    a, b = _inputs()
    f = oj.jit(_program, backend="cpu")
    got = f(a, b)
    ref = jax.jit(_program)(a, b)
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=0, atol=1e-4)
    exe = f.entries()[0].executable
    path = tmp_path / "linalg.oxla"
    exe.save(path)  # raises for a Python kernel: every target here is compiled
    np.savez(tmp_path / "io.npz", *[np.asarray(r) for r in ref], a=a, b=b)
    script = textwrap.dedent(f"""
        import numpy as np, oxla
        io = np.load({str(tmp_path / "io.npz")!r})
        outs = oxla.load({str(path)!r})(io["a"], io["b"])
        for i, o in enumerate(outs):
            np.testing.assert_allclose(o, io[f"arr_{{i}}"], rtol=0, atol=1e-4)
        print("ok", len(outs))
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["ok", "5"]


@needs_native
def test_singular_and_non_pd_report_info_natively():
    a = np.ones((2, 4, 4), np.float32)  # singular, and not positive definite
    f = oj.jit(lambda x: (jnp.linalg.cholesky(x), jnp.linalg.det(x)), backend="cpu")
    chol, det = f(a)
    rchol, rdet = jax.jit(lambda x: (jnp.linalg.cholesky(x), jnp.linalg.det(x)))(a)
    assert np.isnan(np.asarray(chol)).any()
    np.testing.assert_array_equal(np.asarray(chol), np.asarray(rchol))  # NaN where jax's
    np.testing.assert_allclose(np.asarray(det), np.asarray(rdet), atol=1e-5)
