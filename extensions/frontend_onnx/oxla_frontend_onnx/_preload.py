"""Imported once by the conformance forkserver: onnx, the importer and the generated
node tests, so every worker forked from it starts with them."""

from __future__ import annotations

from oxla_frontend_onnx import importer  # noqa: F401
from oxla_frontend_onnx.node_tests import cases

cases()
