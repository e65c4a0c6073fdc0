"""The custom-call targets jaxlib registers for LAPACK on CPU, by kind.

jaxlib 0.10 registers ``lapack_<p><kind>_ffi`` for ``p`` in ``s``/``d``/``c``/``z``
(f32, f64, complex64, complex128) and the 15 kinds below (the real and complex
spellings of one routine, ``orgqr``/``ungqr``, count as one kind), plus the
dtype-generic ``tridiagonal_solve_perturbed_ffi``: 61 targets. The list is checked
against ``jaxlib.lapack.registrations()`` by the tests, so a target a new jaxlib adds
fails them until it is implemented here.

CUDA/ROCm targets JAX emits for the same functions (``cusolver_*``, ``cublas_*``,
``cu_lu_pivots_to_permutation``, ``hipsolver_*``...) are not implemented:
:func:`refusal` words the error.
"""

from __future__ import annotations

import numpy as np

PREFIXES = {"s": np.dtype(np.float32), "d": np.dtype(np.float64),
            "c": np.dtype(np.complex64), "z": np.dtype(np.complex128)}

# kind -> (real spelling, complex spelling)
KINDS: dict[str, tuple[str, str]] = {
    "trsm": ("trsm", "trsm"), "getrf": ("getrf", "getrf"), "geqrf": ("geqrf", "geqrf"),
    "geqp3": ("geqp3", "geqp3"), "orgqr": ("orgqr", "ungqr"), "ormqr": ("ormqr", "unmqr"),
    "potrf": ("potrf", "potrf"), "gesdd": ("gesdd", "gesdd"), "gesvd": ("gesvd", "gesvd"),
    "syevd": ("syevd", "heevd"), "geev": ("geev", "geev"), "sytrd": ("sytrd", "hetrd"),
    "gees": ("gees", "gees"), "gehrd": ("gehrd", "gehrd"), "gtsv": ("gtsv", "gtsv"),
}
PERTURBED = "tridiagonal_solve_perturbed_ffi"


def _names() -> dict[str, tuple[str, np.dtype | None]]:
    out: dict[str, tuple[str, np.dtype | None]] = {}
    for kind, (real, cplx) in KINDS.items():
        for p, dt in PREFIXES.items():
            out[f"lapack_{p}{real if p in 'sd' else cplx}_ffi"] = (kind, dt)
    out[PERTURBED] = ("perturbed", None)
    return out


TARGETS: dict[str, tuple[str, np.dtype | None]] = _names()
"""target name -> (kind, dtype; None for the dtype-generic one)."""

_GPU_PREFIXES = ("cusolver_", "cublas_", "cu_", "cusparse_", "hipsolver_", "hipblas_",
                 "hip_", "hipsparse_", "cu_lu_pivots", "hip_lu_pivots")


def is_gpu_target(target: str) -> bool:
    """True for the CUDA/ROCm linear-algebra targets JAX emits (``cusolver_*``...)."""
    return target.startswith(_GPU_PREFIXES) or target.endswith("_lu_pivots_to_permutation")


def refusal(target: str, backend: str) -> str | None:
    """The error message for ``target`` on ``backend`` when oxla cannot run it there,
    else None.

    ``lapack_*`` targets run on ``cpu`` and ``interpreter`` only; the GPU solver
    targets nowhere yet (they are what JAX emits when lowering for CUDA/ROCm).
    """
    if target in TARGETS and backend not in ("cpu", "interpreter"):
        return (f"not supported yet on {backend}: {target} (jaxlib's LAPACK custom call; "
                "oxla-lapack implements it for the cpu backend and the interpreter)")
    if is_gpu_target(target):
        gpu = "rocm" if target.startswith("hip") else "cuda"
        return (f"not supported yet on {gpu}: {target} (JAX's {gpu} solver custom call; "
                "lower for CPU to use oxla-lapack's LAPACK targets)")
    return None
