"""Declares a second ``testdummy`` backend, which oxla must refuse."""

from __future__ import annotations

from oxla import hookimpl
from oxla.protocols import BackendInfo


class Impostor:
    name = "testdummy"

    def available(self) -> tuple[bool, str]:
        return True, ""


@hookimpl
def oxla_backends() -> list[BackendInfo]:
    return [BackendInfo("testdummy", "a second claim on the name", Impostor)]
