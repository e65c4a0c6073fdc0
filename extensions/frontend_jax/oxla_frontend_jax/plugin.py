"""Hook implementations of oxla-frontend-jax; nothing here imports jax."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import CustomCallInfo, Frontend, FrontendInfo


def _make_frontend() -> Frontend:
    from oxla_frontend_jax.frontend import JaxFrontend

    return JaxFrontend()


def _detect(path) -> bool:
    from oxla_frontend_jax.detect import looks_like_jax_export

    return looks_like_jax_export(path)


def _shape_assertion(ctx, op, args):
    from oxla_frontend_jax.refine import shape_assertion_interpreter

    return shape_assertion_interpreter(ctx, op, args)


@hookimpl
def oxla_frontends() -> list[FrontendInfo]:
    return [
        FrontendInfo(
            name="jax",
            description="JAX functions (oxla_frontend_jax.jit) and jax.export artifacts",
            distribution_hint="oxla-frontend-jax",
            detect=_detect,
            factory=_make_frontend,
        )
    ]


@hookimpl
def oxla_custom_calls() -> list[CustomCallInfo]:
    # jax.export writes `shape_assertion` custom calls into shape-polymorphic modules
    return [CustomCallInfo(target="shape_assertion", backend="interpreter", fn=_shape_assertion)]
