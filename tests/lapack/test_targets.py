"""Every jaxlib LAPACK target, called raw (``jax.ffi.ffi_call``, as jax's lowerings call
it), on the interpreter and the cpu backend against jaxlib's own kernel under
``jax.jit``: every result, the buffers LAPACK overwrites included.

f32/complex64 here; f64/complex128 in ``test_x64.py`` (a subprocess with
``jax_enable_x64``). Tolerance: 1e-4 (f32) / 1e-10 (f64) of the largest magnitude of
each result; integer results (pivots, info) exactly.
"""

from __future__ import annotations

import jax
import numpy as np
import oxla_frontend_jax as oj
import pytest
from oxla_lapack.targets import PERTURBED, TARGETS, refusal

from .cases import cases

X64 = bool(jax.config.jax_enable_x64)
DTYPES = ["float64", "complex128"] if X64 else ["float32", "complex64"]
# each test compiles one program calling the target on an unbatched and a batched input
PAIRS = [p for dt in DTYPES for p in zip(cases(dt, ()), cases(dt, (2,)), strict=True)]


def test_every_jaxlib_target_is_implemented():
    """The list is jaxlib's: a target a new jaxlib registers fails here until added."""
    from jaxlib import lapack

    registered = {name for name, _, api in lapack.registrations()["cpu"] if api == 1}
    assert registered == set(TARGETS), (sorted(registered - set(TARGETS)),
                                        sorted(set(TARGETS) - registered))
    assert len(TARGETS) == 61


def test_refusals_name_target_and_backend():
    assert refusal("lapack_sgetrf_ffi", "cpu") is None
    assert refusal("lapack_sgetrf_ffi", "cuda") == (
        "not supported yet on cuda: lapack_sgetrf_ffi (jaxlib's LAPACK custom call; "
        "oxla-lapack implements it for the cpu backend and the interpreter)")
    assert refusal("cusolver_getrf_ffi", "cpu").startswith(
        "not supported yet on cuda: cusolver_getrf_ffi")
    assert refusal("cu_lu_pivots_to_permutation", "cuda").startswith(
        "not supported yet on cuda:")
    assert refusal("hipsolver_potrf_ffi", "hip").startswith("not supported yet on rocm:")
    assert refusal("my_kernel", "cuda") is None


def _tol(dt: np.dtype) -> float:
    return 1e-4 if dt in (np.float32, np.complex64) else 1e-10


def _compare(got, ref, case) -> None:
    assert len(got) == len(ref)
    for j, (g, e) in enumerate(zip(got, ref)):
        g, e = np.asarray(g), np.asarray(e)
        assert g.shape == e.shape and g.dtype == e.dtype, (j, g.dtype, e.dtype)
        if j in case.unspecified:
            continue
        if e.dtype.kind in "iu":
            np.testing.assert_array_equal(g, e, err_msg=f"{case.name} result {j}")
            continue
        finite = np.isfinite(e)
        scale = max(1.0, float(np.abs(e[finite]).max())) if finite.any() else 1.0
        np.testing.assert_allclose(g, e, rtol=0, atol=_tol(e.dtype) * scale,
                                   equal_nan=True, err_msg=f"{case.name} result {j}")


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name.rsplit("-", 1)[0])
def test_target_matches_jaxlib(pair, backend):
    c0, c1 = pair
    f0, f1 = c0.fn(), c1.fn()
    n0 = len(c0.args)

    def f(*args):
        return (*f0(*args[:n0]), *f1(*args[n0:]))

    args = [*c0.args, *c1.args]
    ref = jax.jit(f)(*args)
    got = oj.jit(f, backend=backend)(*args)
    k = len(c0.outs)
    for case, g, r in ((c0, got[:k], ref[:k]), (c1, got[k:], ref[k:])):
        if case.target == PERTURBED and "singular" in case.name:
            # both finite; jaxlib's exact perturbation rule is not reproduced (module
            # doc of oxla_lapack.perturbed): a singular system's values may differ
            assert np.isfinite(np.asarray(g[0])).all() and np.isfinite(np.asarray(r[0])).all()
            continue
        _compare(g, r, case)


def test_jit_refuses_lapack_on_other_backends_and_gpu_solver_targets():
    """``jax.export`` for CUDA gives the cusolver targets: refused by name on cpu; a
    LAPACK call on a backend other than cpu/interpreter likewise."""
    import jax.numpy as jnp

    from oxla.errors import NotSupportedError
    from oxla.ir import parse_module

    exp = jax.export.export(jax.jit(jnp.linalg.cholesky), platforms=["cuda"])(
        jax.ShapeDtypeStruct((3, 3), np.float32))
    text = exp.mlir_module()
    assert "cusolver" in text or "cu_" in text
    with pytest.raises(NotSupportedError, match="not supported yet on cuda: cu"):
        oj.compile_exported(exp, backend="cpu")
    from oxla_frontend_jax.linalg import check_targets

    lowered = jax.jit(jnp.linalg.inv).lower(np.eye(3, dtype=np.float32)).as_text()
    with pytest.raises(NotSupportedError, match="not supported yet on cuda: lapack_sgetrf_ffi"):
        check_targets(parse_module(lowered), "cuda")
    check_targets(parse_module(lowered), "cpu")
