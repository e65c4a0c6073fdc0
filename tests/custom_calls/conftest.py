"""Fixtures of the custom-call SDK tests: the demo kernel package registered in-process
(test_demo_package installs it for real into a fresh venv)."""

from __future__ import annotations

import pytest

from oxla import plugins
from oxla.plugins import PluginRegistry, PluginSource
from tests.custom_calls.demo_pkg import demo_modules


@pytest.fixture
def demo():
    """The demo's kernels module, with its plugin registered (and the previous registry
    restored afterwards)."""
    kernels, plugin = demo_modules()
    reg = PluginRegistry()
    reg.register_builtins()
    reg.load_entry_points()
    reg.register(plugin, PluginSource("oxla-kernels-demo", "0.1.0", "kernels_demo = x"))
    old = plugins.set_registry(reg)
    yield kernels
    plugins.set_registry(old)
