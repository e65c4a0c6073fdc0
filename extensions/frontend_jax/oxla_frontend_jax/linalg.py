"""Linear algebra in JAX programs: the custom calls jaxlib's lowerings emit.

On CPU, ``jnp.linalg`` and ``jax.scipy.linalg`` lower to jaxlib's LAPACK custom calls
(``lapack_sgetrf_ffi``, ...), which oxla-lapack (a dependency of this frontend)
implements for the cpu backend and the interpreter. For CUDA/ROCm, JAX emits
``cusolver_*``/``cublas_*``/``hipsolver_*`` targets that no oxla backend runs yet.
:func:`check_targets` words the refusal before a backend is asked.
"""

from __future__ import annotations

from oxla.errors import NotSupportedError
from oxla.ir import Module
from oxla.ir import attributes as A


def check_targets(module: Module, backend: str | None) -> None:
    """Refuses a program whose linear-algebra custom calls ``backend`` cannot run.

    Raises:
        NotSupportedError: ``not supported yet on <backend>: <target>`` for a LAPACK
            target on a backend other than cpu/interpreter, ``not supported yet on
            cuda: <target>`` for JAX's GPU solver targets (any backend), with the
            call's location.
    """
    try:
        from oxla_lapack.targets import refusal
    except ImportError:  # oxla-lapack missing: the backend's own error names the target
        return
    for op in module.walk():
        if op.name != "stablehlo.custom_call":
            continue
        target = str(A.to_python(op.attributes.get("call_target_name")))
        why = refusal(target, backend or "cpu")  # no backend named: the GPU ones only
        if why is not None:
            raise NotSupportedError(why, op.loc)
