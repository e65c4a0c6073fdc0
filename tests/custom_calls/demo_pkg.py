"""The demo kernel package (examples/kernels_demo) imported from the checkout."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "kernels_demo"


def demo_modules():
    """``(oxla_kernels_demo.kernels, oxla_kernels_demo.plugin)`` from the checkout."""
    pytest.importorskip("oxla_kernels")
    if str(DEMO) not in sys.path:
        sys.path.insert(0, str(DEMO))
    from oxla_kernels_demo import kernels, plugin

    return kernels, plugin
