"""The bounded CI run of the fuzzers in ``fuzz/`` (about a minute in all; the long runs
are ``fuzz/run_long.sh``): the atheris harnesses for the parser and the artifact
loader, and the differential random-program fuzzer (cpu against the interpreter)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import oxla

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
sys.path.insert(0, str(FUZZ))


def _engine() -> dict[str, str]:
    """Atheris when it is installed; CI must have it (the test extra installs it)."""
    try:
        import atheris  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("atheris is not installed (pip install -e .[test] installs it)")
        return {"OXLA_FUZZ_ENGINE": "random"}
    return {}


@pytest.mark.parametrize("harness,runs", [("fuzz_parser.py", 20000), ("fuzz_artifact.py", 3000)])
def test_harness_bounded_run_finds_nothing(harness, runs, tmp_path):
    env = {**os.environ, **_engine(), "OXLA_FUZZ_SCRATCH": str(tmp_path)}
    env.pop("OXLA_FUZZ_FINDINGS", None)
    # libFuzzer's rss is ru_maxrss, which a child inherits from this (large) test process
    # across fork and exec: bound the harness's own growth at 2 GiB above that
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 + 2048
    res = subprocess.run([sys.executable, str(FUZZ / harness), f"-runs={runs}", "-seed=1",
                          "-timeout=30", f"-rss_limit_mb={rss_mb}",
                          f"-artifact_prefix={tmp_path}/"],
                         capture_output=True, text=True, timeout=280, env=env, cwd=tmp_path)
    tail = "\n".join(res.stderr.splitlines()[-30:])
    assert res.returncode == 0, tail
    assert f"Done {runs} runs" in res.stderr, tail
    assert not list(tmp_path.glob("crash-*")), tail


@pytest.mark.skipif("cpu" not in oxla.plugins.backends(), reason="cpu backend not installed")
def test_random_programs_cpu_matches_interpreter():
    import progen

    stats, findings = progen.fuzz(300, 50, seed=11)
    assert stats["programs"] + stats["unsupported"] + stats.get("known", 0) == 300, stats
    assert stats["exact"] > 150 and stats["bounded"] > 20, stats
    assert not findings, json.dumps(findings[:3], indent=1)[:4000]


def test_generator_covers_families_types_and_empty_shapes():
    import numpy as np
    import progen

    from oxla.ir import parse_module, verify

    gen = progen.Generator(np.random.default_rng(3))
    progs = [gen.program() for _ in range(400)]
    verify(parse_module(progen.batch_module(progs)))
    ops = {o for p in progs for o in p.ops}
    assert {"add", "divide", "compare", "select", "clamp", "convert", "reshape", "transpose",
            "broadcast_in_dim", "slice", "reverse", "concatenate", "pad", "reduce",
            "dot_general", "exponential", "shift_left", "popcnt"} <= ops, ops
    types = {a.et for p in progs for a in p.args}
    assert types == set(progen.DTYPES), types
    assert any(0 in a.shape for p in progs for a in p.args)


def test_compare_rules():
    import numpy as np
    import progen

    a = np.array([1.0, np.nan, -0.0, 3.0], np.float32)
    assert progen.compare("exact", "f32", a, a.copy()) is None
    assert progen.compare("exact", "f32", a, np.array([1.0, np.nan, 0.0, 3.0], np.float32))
    b = a.copy()
    b[3] = np.nextafter(np.float32(3.0), np.float32(4.0))
    assert progen.compare("exact", "f32", a, b) is not None
    assert progen.compare("ulp:2", "f32", a, b) is None
    b[3] = 3.001
    assert progen.compare("ulp:2", "f32", a, b) is not None
