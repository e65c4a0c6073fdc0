"""The demo kernel package (examples/kernels_demo) imported from the checkout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from oxla.plugins import PluginRegistry, PluginSource

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "kernels_demo"


def demo_modules():
    """``(oxla_kernels_demo.kernels, oxla_kernels_demo.plugin)`` from the checkout."""
    pytest.importorskip("oxla_kernels")
    if str(DEMO) not in sys.path:
        sys.path.insert(0, str(DEMO))
    from oxla_kernels_demo import kernels, plugin

    return kernels, plugin


def demo_registry():
    """A registry of the installed plugins plus the demo package's."""
    _, plugin = demo_modules()
    reg = PluginRegistry()
    reg.register_builtins()
    reg.load_entry_points()
    reg.register(plugin, PluginSource("oxla-kernels-demo", "0.1.0", "kernels_demo = x"))
    return reg
