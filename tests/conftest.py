"""Suite-wide settings and fixtures: compiled executables are cached in a temporary
directory, so tests never write into the user's cache (``~/.cache/oxla``); ``backend``
runs a test on each installed backend."""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("OXLA_CACHE_DIR", tempfile.mkdtemp(prefix="oxla-test-cache-"))


def _backends() -> list[str]:
    from oxla import plugins

    return ["interpreter"] + (["cpu"] if "cpu" in plugins.backends() else [])


@pytest.fixture(params=_backends())
def backend(request) -> str:
    """Each installed backend a test can compare: interpreter, and cpu when present."""
    return request.param
