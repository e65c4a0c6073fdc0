"""oxla-lapack: jaxlib's LAPACK custom-call targets (``lapack_*_ffi``) for oxla's cpu
backend and interpreter, so programs JAX lowers for CPU (``jnp.linalg``,
``jax.scipy.linalg``, ``jax.lax.linalg``) compile, whichever frontend brought them.

The cpu backend calls them as Python host kernels (one call per custom call, numpy
arrays over the program's buffers, scipy's LAPACK per matrix); see
:mod:`oxla_lapack.kernels` and :mod:`oxla_lapack.targets`.
"""

from __future__ import annotations

from oxla_lapack.targets import TARGETS, refusal

__all__ = ["TARGETS", "refusal"]
