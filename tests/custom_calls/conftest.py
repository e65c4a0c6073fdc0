"""Fixtures of the custom-call SDK tests: the demo kernel package registered in-process
(test_demo_package installs it for real into a fresh venv)."""

from __future__ import annotations

import pytest

from oxla import plugins
from tests.custom_calls.demo_pkg import demo_modules, demo_registry


@pytest.fixture
def demo():
    """The demo's kernels module, with its plugin registered (and the previous registry
    restored afterwards)."""
    kernels, _ = demo_modules()
    old = plugins.set_registry(demo_registry())
    yield kernels
    plugins.set_registry(old)
