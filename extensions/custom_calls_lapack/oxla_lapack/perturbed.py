"""``tridiagonal_solve_perturbed_ffi``: jax's ``lax.linalg.tridiagonal_solve(...,
perturb_singular=True)`` on CPU, Gaussian elimination with partial pivoting whose tiny
pivots are perturbed (jaxlib's ``SolveWithGaussianEliminationWithPivotingAndPerturb
Singular``, after TensorFlow's tridiagonal solver).

For a nonsingular system the result is jaxlib's to rounding (tests/lapack). For a
singular one both are finite, but jaxlib's exact perturbation rule (when a pivot counts
as tiny, and the ``max|U|`` it scales by) is not public and is not reproduced bit for
bit: here every final pivot of ``U`` smaller than ``eps * max|U|`` becomes
``eps * max|U|`` after the elimination, which agrees with jaxlib on most singular
systems tried and differs on some (a zero diagonal with zero off-diagonals in a row).
"""

from __future__ import annotations

import numpy as np


def solve_perturbed(dl: np.ndarray, d: np.ndarray, du: np.ndarray,
                    b: np.ndarray) -> np.ndarray:
    """Solves one tridiagonal system ``A x = b`` (``A[i, i-1] = dl[i]``, ``A[i, i] =
    d[i]``, ``A[i, i+1] = du[i]``; ``b`` of shape ``[n, k]``), perturbing pivots
    smaller than ``eps * max|U|`` to that size so a singular ``A`` gives a finite
    ``x``.

    Returns:
        ``x``, shape ``[n, k]``, dtype of ``b``.
    """
    n = d.shape[0]
    dt = b.dtype
    x = np.array(b, dtype=dt, copy=True)
    if n == 0:
        return x
    eps = np.finfo(dt).eps
    u = np.zeros((n, 3), dt)  # diagonal, superdiagonal, second superdiagonal of U
    u[0, 0] = d[0]
    if n > 1:
        u[0, 1] = du[0]
    for i in range(n - 1):
        if abs(u[i, 0]) >= abs(dl[i + 1]):  # no row interchange
            factor = dl[i + 1] / u[i, 0] if u[i, 0] != 0 else dt.type(0)
            u[i + 1, 0] = d[i + 1] - factor * u[i, 1]
            if i + 1 < n - 1:
                u[i + 1, 1] = du[i + 1]
            x[i + 1] -= factor * x[i]
        else:  # interchange rows i and i + 1
            factor = u[i, 0] / dl[i + 1]
            u[i, 0] = dl[i + 1]
            u[i + 1, 0] = u[i, 1] - factor * d[i + 1]
            u[i, 1] = d[i + 1]
            if i + 1 < n - 1:
                u[i + 1, 1] = -factor * du[i + 1]
                u[i, 2] = du[i + 1]
            xi = x[i].copy()
            x[i] = x[i + 1]
            x[i + 1] = xi - factor * x[i + 1]
    perturb = eps * np.abs(u).max()
    for i in range(n):
        if abs(u[i, 0]) < perturb or u[i, 0] == 0:
            u[i, 0] = perturb
    x[n - 1] /= u[n - 1, 0]
    if n > 1:
        x[n - 2] = (x[n - 2] - u[n - 2, 1] * x[n - 1]) / u[n - 2, 0]
    for i in range(n - 3, -1, -1):
        x[i] = (x[i] - u[i, 1] * x[i + 1] - u[i, 2] * x[i + 2]) / u[i, 0]
    return x
