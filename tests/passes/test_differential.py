"""Differential test: the interpreter gives the same results before and after the
default pipeline on a deterministic sample of the conformance programs (every 8th;
the full set runs with ``python bench/passes_differential.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "passes_differential.py"


def _load():
    spec = importlib.util.spec_from_file_location("passes_differential", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_default_pipeline_preserves_conformance_results():
    diff = _load()
    if not diff.ROOT.is_dir():
        pytest.skip("no ../shared/conformance checkout")
    stats = diff.check(diff.programs()[::8])
    assert not stats.mismatches, "\n".join(stats.mismatches)
    assert stats.run > 0
