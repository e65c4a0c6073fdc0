"""jaxlib's LAPACK custom calls, computed with scipy's LAPACK (``scipy.linalg.lapack``).

Every kernel follows the jaxlib 0.10 FFI handler of the same name: operands and
results as in ``jax._src.lax.linalg``'s CPU lowerings (shapes ``[*batch, m, n]``,
results that alias operands hold what LAPACK leaves in the overwritten buffer),
LAPACK's own conventions for pivots (1-based ``int32``), ``tau``, ``info`` (``int32``
per matrix: 0 ok, ``i > 0`` LAPACK's numerical failure, e.g. a singular ``U`` or a
non-positive-definite minor; never an exception), and the typed attributes as
characters (``uplo = 76 : ui8`` is ``'L'``). Batch dimensions are every dimension
before the matrix (or, for the tridiagonal solvers, vector) ones; each matrix is a
separate LAPACK call.

jaxlib's layouts (column-major matrices) only place buffers: the kernels here take
and give logical values, and scipy's wrappers hand LAPACK Fortran-ordered copies.
The routines are scipy's LAPACK, the library jaxlib itself binds on CPU, so results
agree with ``jax.jit`` on XLA:CPU to the last bits in most cases (tests:
``tests/lapack``).

Entry point: :func:`run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError
from oxla_lapack.targets import PREFIXES, TARGETS
from oxla_lapack.threads import threads_for

Kernel = Callable[..., None]
_IMPLS: dict[str, Kernel] = {}


def _kernel(kind: str) -> Callable[[Kernel], Kernel]:
    def deco(fn: Kernel) -> Kernel:
        _IMPLS[kind] = fn
        return fn

    return deco


class _Lapack:
    """scipy's LAPACK/BLAS routines of one dtype, by name without the prefix."""

    def __init__(self, dtype: np.dtype):
        self.dtype = np.dtype(dtype)
        self.prefix = next(p for p, d in PREFIXES.items() if d == self.dtype)
        self.complex = self.dtype.kind == "c"

    def __call__(self, name: str) -> Any:
        import scipy.linalg.lapack as lapack

        return getattr(lapack, self.prefix + name)

    def blas(self, name: str) -> Any:
        import scipy.linalg.blas as blas

        return getattr(blas, self.prefix + name)

    def fortran(self, a: np.ndarray) -> np.ndarray:
        """A Fortran-ordered copy of ``a`` LAPACK may overwrite in place."""
        return np.array(a, dtype=self.dtype, order="F", copy=True)


def _char(attrs: dict[str, Any], name: str, default: str) -> str:
    v = attrs.get(name)
    if v is None:
        return default
    return chr(int(v)) if not isinstance(v, str | bool) else str(v)


def run(target: str, attrs: dict[str, Any], args: list[np.ndarray],
        outs: list[np.ndarray]) -> None:
    """Computes ``target`` on ``args`` into the preallocated ``outs``.

    Args:
        target: a name from :data:`oxla_lapack.targets.TARGETS`.
        attrs: the call's typed attributes (:func:`oxla.ir.ffi.ffi_attributes`).
        args: the operands, logical values (any memory order), shapes ``[*batch, ...]``.
        outs: writable result arrays with the result shapes and dtypes, filled here.

    Raises:
        NotSupportedError: an unknown target, or a form jaxlib accepts that this
            implementation does not (named in the message).
    """
    entry = TARGETS.get(target)
    if entry is None:
        raise NotSupportedError(f"oxla-lapack has no kernel for custom call '{target}'")
    kind, dtype = entry
    lap = _Lapack(dtype if dtype is not None else args[-1].dtype)
    impl = _IMPLS[kind]
    core = 1 if kind in ("gtsv", "perturbed") else 2
    batch = args[0].shape[:args[0].ndim - core]
    dims = [max(1, x) for x in args[-1].shape[len(batch):]] + [1, 1]
    with threads_for(float(dims[0]) * dims[0] * dims[1]):
        for idx in np.ndindex(*batch):
            sub = idx + (Ellipsis,)
            impl(lap, attrs, [o[sub] for o in outs], *[np.asarray(a[sub]) for a in args])


@_kernel("getrf")
def _getrf(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    lu, piv, info = lap("getrf")(a)
    outs[0][...] = lu
    outs[1][...] = piv + 1  # scipy's wrapper gives 0-based pivots; jaxlib LAPACK's
    outs[2][...] = info


@_kernel("trsm")
def _trsm(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray, b: np.ndarray) -> None:
    trans = {"N": 0, "T": 1, "C": 2}[_char(attrs, "trans_x", "N")]
    x = lap.blas("trsm")(1.0, a, b, side=int(_char(attrs, "side", "L") == "R"),
                         lower=int(_char(attrs, "uplo", "L") == "L"), trans_a=trans,
                         diag=int(_char(attrs, "diag", "N") == "U"))
    outs[0][...] = x


@_kernel("potrf")
def _potrf(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    """jaxlib's potrf, and oxla's folded forms (:mod:`oxla_lapack.fold`)."""
    lower = _char(attrs, "uplo", "L") == "L"
    if attrs.get("oxla_hermitian_part"):  # (a + a^H) / 2, each component halved
        h = a + np.conj(a.T)
        if lap.complex:
            h.real /= 2
            h.imag /= 2
        else:
            h /= 2
        a = h
    c, info = lap("potrf")(a, lower=int(lower), clean=0)
    if attrs.get("oxla_nan_on_error") and info != 0:
        c = np.full_like(c, np.nan)
    if attrs.get("oxla_zero_other"):
        c = np.tril(c) if lower else np.triu(c)
    outs[0][...] = c
    outs[1][...] = info


@_kernel("geqrf")
def _geqrf(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    if 0 in a.shape:
        outs[0][...] = a
        return
    qr, tau, _, _ = lap("geqrf")(a)
    outs[0][...] = qr
    outs[1][...] = tau


@_kernel("orgqr")
def _orgqr(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray, tau: np.ndarray) -> None:
    if 0 in a.shape:
        outs[0][...] = a
        return
    q, _, _ = lap("ungqr" if lap.complex else "orgqr")(a, tau)
    outs[0][...] = q


@_kernel("ormqr")
def _ormqr(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray, tau: np.ndarray,
           c: np.ndarray) -> None:
    k = tau.shape[-1]
    side = "L" if attrs.get("left", True) else "R"
    trans = ("C" if lap.complex else "T") if attrs.get("transpose", False) else "N"
    fn = lap("unmqr" if lap.complex else "ormqr")
    if 0 in c.shape or k == 0:
        outs[0][...] = c
        return
    a = np.ascontiguousarray(a[:, :k])
    work = fn(side, trans, a, tau, c, -1)[1]
    cq, _, _ = fn(side, trans, a, tau, c, max(1, int(np.real(work[0]))))
    outs[0][...] = cq


@_kernel("geqp3")
def _geqp3(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray, jpvt: np.ndarray) -> None:
    if np.any(jpvt != 0):
        raise NotSupportedError("geqp3 with initial column pivots (a jpvt operand that "
                                "is not all zeros) is not supported by oxla-lapack")
    if 0 in a.shape:
        outs[0][...] = a
        outs[1][...] = np.arange(1, a.shape[1] + 1)
        return
    qr, piv, tau, _, _ = lap("geqp3")(a)
    outs[0][...] = qr
    outs[1][...] = piv
    outs[2][...] = tau


def _svd(name: str) -> Kernel:
    def svd(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
        mode = _char(attrs, "mode", "A")
        af = lap.fortran(a)
        compute_uv = mode != "N"
        u, s, vt, info = lap(name)(af, compute_uv=int(compute_uv),
                                   full_matrices=int(mode == "A"), overwrite_a=1)
        outs[0][...] = af
        outs[1][...] = s
        outs[4][...] = info
        if compute_uv:
            outs[2][...] = u
            outs[3][...] = vt
        else:
            outs[2][...] = 0
            outs[3][...] = 0

    return svd


_kernel("gesdd")(_svd("gesdd"))
_kernel("gesvd")(_svd("gesvd"))


@_kernel("syevd")
def _syevd(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    af = lap.fortran(a)
    vectors = _char(attrs, "mode", "V") == "V"
    w, v, info = lap("heevd" if lap.complex else "syevd")(
        af, compute_v=int(vectors), lower=int(_char(attrs, "uplo", "L") == "L"),
        overwrite_a=1)
    outs[0][...] = v if vectors else af
    outs[1][...] = w
    outs[2][...] = info


def _unpack_real_eigenvectors(wi: np.ndarray, v: np.ndarray, out: np.ndarray) -> None:
    """LAPACK's real storage of complex-conjugate eigenvector pairs (columns ``j``,
    ``j+1`` holding real and imaginary parts) as complex columns."""
    n = wi.shape[0]
    j = 0
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            out[:, j] = v[:, j] + 1j * v[:, j + 1]
            out[:, j + 1] = v[:, j] - 1j * v[:, j + 1]
            j += 2
        else:
            out[:, j] = v[:, j]
            j += 1


@_kernel("geev")
def _geev(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    left = _char(attrs, "compute_left", "N") == "V"
    right = _char(attrs, "compute_right", "V") == "V"
    info_out = outs[-1]
    vl_out, vr_out = outs[-3], outs[-2]
    if not np.isfinite(a).all():  # LAPACK's geev may not return on NaN/inf: jaxlib's -4
        for o in outs[:-1]:
            o[...] = np.nan
        info_out[...] = -4
        return
    got = lap("geev")(a, compute_vl=int(left), compute_vr=int(right))
    if lap.complex:
        w, vl, vr, info = got
        outs[0][...] = w
        if left:
            vl_out[...] = vl
        if right:
            vr_out[...] = vr
    else:
        wr, wi, vl, vr, info = got
        outs[0][...] = wr
        outs[1][...] = wi
        if left:
            _unpack_real_eigenvectors(wi, vl, vl_out)
        if right:
            _unpack_real_eigenvectors(wi, vr, vr_out)
    if not left:
        vl_out[...] = 0
    if not right:
        vr_out[...] = 0
    info_out[...] = info


@_kernel("gees")
def _gees(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    if _char(attrs, "sort", "N") != "N":
        raise NotSupportedError("gees with eigenvalue sorting is not supported (jax "
                                "does not emit it either)")
    vectors = _char(attrs, "mode", "V") == "V"
    got = lap("gees")(lambda *x: 0, a, compute_v=int(vectors), sort_t=0)
    if lap.complex:
        t, sdim, w, vs, _, info = got
        outs[2][...] = w
    else:
        t, sdim, wr, wi, vs, _, info = got
        outs[2][...] = wr
        outs[3][...] = wi
    outs[0][...] = t
    outs[1][...] = vs if vectors else 0
    outs[-2][...] = sdim
    outs[-1][...] = info


@_kernel("gehrd")
def _gehrd(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    n = a.shape[0]
    low = int(attrs.get("low", 1))
    high = int(attrs.get("high", n))
    if n == 0:
        outs[-1][...] = 0
        return
    ht, tau, info = lap("gehrd")(a, lo=low - 1, hi=high - 1)
    outs[0][...] = ht
    outs[1][...] = tau[: outs[1].shape[0]]
    outs[2][...] = info


@_kernel("sytrd")
def _sytrd(lap: _Lapack, attrs: dict, outs: list, a: np.ndarray) -> None:
    n = a.shape[0]
    if n <= 1:
        outs[0][...] = a
        outs[1][...] = np.real(np.diagonal(a))
        outs[-1][...] = 0
        return
    c, d, e, tau, info = lap("hetrd" if lap.complex else "sytrd")(
        a, lower=int(_char(attrs, "uplo", "L") == "L"))
    outs[0][...] = c
    outs[1][...] = d
    outs[2][...] = e
    outs[3][...] = tau
    outs[4][...] = info


@_kernel("gtsv")
def _gtsv(lap: _Lapack, attrs: dict, outs: list, dl: np.ndarray, d: np.ndarray,
          du: np.ndarray, b: np.ndarray) -> None:
    n = d.shape[0]
    outs[0][...] = dl
    outs[1][...] = d
    outs[2][...] = du
    if n == 0:
        outs[4][...] = 0
        return
    du2, d2, du1, x, info = lap("gtsv")(dl[1:], d, du[:-1], b)
    outs[0][1:] = du2
    outs[1][...] = d2
    outs[2][:-1] = du1
    outs[3][...] = x
    outs[4][...] = info


@_kernel("perturbed")
def _perturbed(lap: _Lapack, attrs: dict, outs: list, dl: np.ndarray, d: np.ndarray,
               du: np.ndarray, b: np.ndarray) -> None:
    from oxla_lapack.perturbed import solve_perturbed

    outs[0][...] = solve_perturbed(dl, d, du, b)
