"""TensorFlow's XLA-internal linear-algebra custom calls (``@Qr``,
``@ProductOfElementaryHouseholderReflectors``, ``@Eigh``) run as oxla-lapack's LAPACK
targets (``oxla_frontend_tf.xla_linalg``), on cpu and the interpreter, against eager TF.

QR and eigenvectors are unique up to signs: compared through ``|Q|``, ``|R|``, ``Q R``
and ``V diag(w) V^H``. Tolerance 1e-4 (f32) / 1e-10 (f64) of the largest magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
otf = pytest.importorskip("oxla_frontend_tf")
pytest.importorskip("oxla_lapack")

from oxla_frontend_tf.xla_linalg import map_xla_linalg_calls  # noqa: E402


def _qr(a):
    q, r = tf.linalg.qr(a)
    return q @ r, tf.abs(q), tf.abs(r)


def _qr_full(a):
    q, r = tf.linalg.qr(a, full_matrices=True)
    return tf.abs(q), tf.abs(r)


def _eigh(a):
    w, v = tf.linalg.eigh(a)
    return w, v @ tf.linalg.diag(tf.cast(w, v.dtype)) @ tf.linalg.adjoint(v)


def _inputs(name, dt):
    rng = np.random.default_rng(3)
    if name == "eigh":
        x = rng.standard_normal((2, 4, 4)).astype(dt)
        return [x @ np.swapaxes(x, -1, -2) + 4 * np.eye(4, dtype=dt)]
    if name == "solve":
        return [rng.standard_normal((4, 4)).astype(dt) + 4 * np.eye(4, dtype=dt),
                rng.standard_normal((4, 2)).astype(dt)]
    return [rng.standard_normal((2, 5, 3)).astype(dt)]


FNS = {"qr": _qr, "qr_full": _qr_full, "eigh": _eigh, "solve": tf.linalg.solve}


@pytest.mark.parametrize("backend", ["cpu", "interpreter"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FNS))
def test_xla_linalg_calls_match_tensorflow(name, dt, backend):
    fn = FNS[name]
    xs = _inputs(name, dt)
    got = otf.compile(fn, xs, backend=backend)(*xs)
    ref = fn(*[tf.constant(x) for x in xs])
    got = got if isinstance(got, tuple | list) else [got]
    ref = ref if isinstance(ref, tuple | list) else [ref]
    tol = 1e-4 if dt == np.float32 else 1e-10
    for g, r in zip(got, ref, strict=True):
        r = np.asarray(r)
        np.testing.assert_allclose(np.asarray(g), r, rtol=0,
                                   atol=tol * max(1.0, float(np.abs(r).max())))


def test_unmapped_element_type_is_refused():
    from oxla.errors import NotSupportedError
    from oxla.ir import parse_module

    m = parse_module("""
func.func @main(%a: tensor<4x4xf16>) -> tensor<4x4xf16> {
  %0 = stablehlo.custom_call @Qr(%a) : (tensor<4x4xf16>) -> tuple<tensor<4x4xf16>, tensor<4xf16>>
  %1 = stablehlo.get_tuple_element %0[0] : (tuple<tensor<4x4xf16>, tensor<4xf16>>) -> tensor<4x4xf16>
  return %1 : tensor<4x4xf16>
}""")
    with pytest.raises(NotSupportedError, match="LAPACK takes f32, f64"):
        map_xla_linalg_calls(m)
