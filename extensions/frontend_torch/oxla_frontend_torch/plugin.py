"""Hook implementations of oxla-frontend-torch; nothing here imports torch."""

from __future__ import annotations

from oxla.hookspecs import hookimpl
from oxla.protocols import Frontend, FrontendInfo


def _make_frontend() -> Frontend:
    from oxla_frontend_torch.frontend import TorchFrontend

    return TorchFrontend()


def _detect(path) -> bool:
    from oxla_frontend_torch.detect import looks_like_torch_export

    return looks_like_torch_export(path)


@hookimpl
def oxla_frontends() -> list[FrontendInfo]:
    return [
        FrontendInfo(
            name="torch",
            description="torch.export programs (.pt2) and nn.Modules with example inputs",
            distribution_hint="oxla-frontend-torch",
            detect=_detect,
            factory=_make_frontend,
        )
    ]
