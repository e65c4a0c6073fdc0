"""The CI sample of the TensorFlow API sweep (every family; ``scripts/tf_sweep.py``
runs all of it): each case through ``oxla_frontend_tf.compile(..., backend="cpu")``
against TensorFlow's eager result."""

from __future__ import annotations

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("oxla_frontend_tf")

import tf_sweep_run as run
from sweep_common import Result

from oxla import plugins

if "cpu" not in plugins.backends():
    pytest.skip("the sweep runs on the cpu backend (pip install -e extensions/backend_cpu)",
                allow_module_level=True)

SAMPLE = run.sample(run.all_cases(), every=7)


def _check(r: Result) -> None:
    if r.pending and r.status != "pass":
        pytest.xfail(f"{r.pending}: {r.reason}")
    if r.status == "excluded":  # TF's own jit_compile=True fails too: not oxla's to run
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.name} ({r.status}): {r.reason}"


def test_sample_covers_every_family():
    assert {c.family for c in SAMPLE} == {c.family for c in run.all_cases()}
    assert len(run.all_cases()) >= 100


def test_custom_call_targets_are_read_from_text():
    text = ('%0 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) : ...\n'
            '%1 = "stablehlo.custom_call"(%b) {call_target_name = "Sharding"} : ...\n'
            '%2 = stablehlo.custom_call @lapack_sgetrf_ffi(%c) : ...')
    assert run.custom_call_targets(text) == ["Sharding", "lapack_sgetrf_ffi"]


@pytest.mark.parametrize("case", SAMPLE, ids=lambda c: c.name)
def test_tf_function_matches_tensorflow(case):
    (r,) = run.run_cases([case], "cpu", max_variants=1)
    _check(r)
