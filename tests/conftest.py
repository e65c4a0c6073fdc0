"""Suite-wide settings and fixtures: compiled executables are cached in a temporary
directory, so tests never write into the user's cache (``~/.cache/oxla``); ``backend``
runs a test on each installed backend."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile

import pytest

if "OXLA_CACHE_DIR" not in os.environ:
    # Removed when the run ends: a suite run writes a few hundred MB of artifacts here.
    _cache_dir = tempfile.mkdtemp(prefix="oxla-test-cache-")
    os.environ["OXLA_CACHE_DIR"] = _cache_dir
    atexit.register(functools.partial(shutil.rmtree, _cache_dir, ignore_errors=True))


def _backends() -> list[str]:
    from oxla import plugins

    return ["interpreter"] + (["cpu"] if "cpu" in plugins.backends() else [])


@pytest.fixture(params=_backends())
def backend(request) -> str:
    """Each installed backend a test can compare: interpreter, and cpu when present."""
    return request.param
