"""The CI sample of the JAX API sweep (every family; ``scripts/jax_sweep.py`` runs all
of it): each case through ``oxla_frontend_jax.jit(f, backend="cpu")`` against
``jax.jit`` on XLA:CPU. The f64/c128/int64 variants run in one child process with
``jax_enable_x64`` (process-wide in JAX). A case marked pending (another issue's
work) is an expected failure while it fails. Each sampled case runs every dtype of its
own on its first input shape."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")

import jax_sweep_run as run
from sweep_common import X64_DTYPES, Result

from oxla import plugins

if "cpu" not in plugins.backends():
    pytest.skip("the sweep runs on the cpu backend (pip install -e extensions/backend_cpu)",
                allow_module_level=True)

SAMPLE = run.sample(run.all_cases(), every=10)
NARROW = [c for c in SAMPLE if any(d not in X64_DTYPES for d in c.dtypes)]
WIDE = [c for c in SAMPLE if any(d in X64_DTYPES for d in c.dtypes)]


def _check(r: Result) -> None:
    if r.pending and r.status != "pass":
        pytest.xfail(f"{r.pending}: {r.reason}")
    assert r.status == "pass", f"{r.name} ({r.status}): {r.reason}"


def test_sample_covers_every_family():
    assert {c.family for c in SAMPLE} == {c.family for c in run.all_cases()}
    assert len(run.all_cases()) >= 300


@pytest.mark.parametrize("case", NARROW, ids=lambda c: c.name)
def test_jax_function_matches_xla(case):
    (r,) = run.run_cases([case], "cpu", x64=False, max_variants=1)
    _check(r)


@pytest.fixture(scope="module")
def x64_results(tmp_path_factory) -> dict[str, Result]:
    out = tmp_path_factory.mktemp("jax-sweep") / "x64.json"
    results = run.run_x64_subprocess([c.name for c in WIDE], "cpu", out, timeout=900,
                                     max_variants=1)
    return {r.name: r for r in results}


@pytest.mark.parametrize("case", WIDE, ids=lambda c: c.name)
def test_jax_function_matches_xla_x64(case, x64_results):
    _check(x64_results[case.name])
