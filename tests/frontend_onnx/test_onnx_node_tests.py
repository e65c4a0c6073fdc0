"""onnx's generated node tests: a sample with at least one test per op runs in CI on the
interpreter and the cpu backend, through ``oxla conformance --onnx-node-tests``, with
onnxruntime on the same tests in the same run. The full sweep is a command (README)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import need

need("onnxruntime")

SAMPLE = 230
"""Tests in the CI sample: one per op (197 ops with onnx 1.23), the rest spread evenly."""

FLOORS = {"interpreter": 185, "cpu": 185}
"""Measured on the sample (onnx 1.23.2): passes below this are a regression."""


def _oxla(*args: str) -> subprocess.CompletedProcess:
    exe = os.path.join(os.path.dirname(sys.executable), "oxla")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=900)


def test_sample_covers_every_op():
    from oxla_frontend_onnx.node_tests import op_of, select

    names = select(sample=SAMPLE)
    assert {op_of(n) for n in names} == {op_of(n) for n in select()}
    assert len(names) == SAMPLE


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_node_test_sample_against_onnxruntime(backend, tmp_path):
    from oxla import plugins

    if backend not in plugins.backends():
        pytest.skip(f"backend {backend} is not installed")
    out = tmp_path / "nt.json"
    r = _oxla("conformance", "--onnx-node-tests", "--backend", backend, "--compare",
              "onnxruntime", "--sample", str(SAMPLE), "-j", "2", "--json", str(out))
    assert r.returncode in (0, 1), r.stderr
    assert "onnxruntime:" in r.stdout and "failures by category" in r.stdout
    d = json.loads(out.read_text())
    ox, ort = d["counts"]["oxla"], d["counts"]["onnxruntime"]
    assert ox["total"] == ort["total"] == SAMPLE
    assert ox["pass"] >= FLOORS[backend], d["reasons"]["oxla"]
    assert ox["timeout"] == 0
    # what oxla does not run is refused by name, never a crash or an internal error
    for name, res in d["tests"]["oxla"].items():
        if res["status"] == "error":
            assert res["message"].split(":")[0] in (
                "NotSupportedError", "LoweringError", "FoldedError"), (name, res)


def test_flag_rules():
    r = _oxla("conformance", "--backend", "interpreter")
    assert r.returncode == 2 and "--onnx-node-tests" in r.stderr
    r = _oxla("conformance", "--onnx-node-tests", "tests")
    assert r.returncode == 2 and "takes no PATHS" in r.stderr
    from oxla_frontend_onnx.node_tests import select

    assert select(["test_nothing_like_this*"]) == []  # the CLI says "no ... matches"


def test_tolerances_and_dtypes_are_onnx_s():
    import numpy as np
    from oxla_frontend_onnx.node_tests import compare_outputs

    e = [np.array([1.0, 2.0], np.float32)]
    assert compare_outputs(e, [np.array([1.0005, 2.0], np.float32)], 1e-3, 1e-7) is None
    assert "mismatch" in compare_outputs(e, [np.array([1.01, 2.0], np.float32)], 1e-3, 1e-7)
    assert "dtype" in compare_outputs(e, [np.array([1.0, 2.0], np.float64)], 1e-3, 1e-7)
    assert compare_outputs([[np.ones(2)]], [[np.ones(2)]], 1e-3, 1e-7) is None
