"""Hook implementations of oxla-frontend-tf; nothing here imports tensorflow."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Frontend, FrontendInfo


def _make_frontend() -> Frontend:
    from oxla_frontend_tf.frontend import TFFrontend

    return TFFrontend()


def _detect(path) -> bool:
    from oxla_frontend_tf.detect import looks_like_saved_model

    return looks_like_saved_model(path)


@hookimpl
def oxla_frontends() -> list[FrontendInfo]:
    return [
        FrontendInfo(
            name="tf",
            description="TensorFlow: tf.function, Keras models and SavedModel directories",
            distribution_hint="oxla-frontend-tf",
            detect=_detect,
            factory=_make_frontend,
        )
    ]
