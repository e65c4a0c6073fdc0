"""Shared fixtures of the ONNX frontend tests. Outside CI they skip without onnx (or
onnxruntime, for the comparisons); under ``CI=true`` a missing package is an error."""

from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(module: str):
    """Imports ``module``; skips the test module when missing (fails under CI)."""
    if IN_CI:
        import importlib

        return importlib.import_module(module)
    return pytest.importorskip(module)


need("oxla_frontend_onnx")
need("onnx")
