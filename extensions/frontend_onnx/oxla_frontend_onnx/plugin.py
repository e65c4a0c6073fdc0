"""Hook implementations of oxla-frontend-onnx; nothing here imports onnx."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Frontend, FrontendInfo


def _make_frontend() -> Frontend:
    from oxla_frontend_onnx.frontend import OnnxFrontend

    return OnnxFrontend()


def _detect(path) -> bool:
    from oxla_frontend_onnx.detect import looks_like_onnx

    return looks_like_onnx(path)


@hookimpl
def oxla_frontends() -> list[FrontendInfo]:
    return [
        FrontendInfo(
            name="onnx",
            description="ONNX: .onnx files and ModelProto objects, opsets 7 and up",
            distribution_hint="oxla-frontend-onnx",
            detect=_detect,
            factory=_make_frontend,
        )
    ]
