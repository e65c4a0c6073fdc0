"""A conformance sample on ``--backend hip`` (the simulated device): files of
``../shared/conformance/stablehlo`` covering every kernel kind (loop fusions,
row/column/variadic reductions, reduce_window, scatter, select_and_scatter, sort,
gather, convolution, rocBLAS dots, rng, control flow), run by oxla's conformance runner,
so the files' own checks decide. Each compile makes and links the code objects of
``OXLA_HIP_ARCH`` and checks their descriptors against the launches; the simulated
device runs the host twins at the first arch's wavefront size. Two runs cover the three
archs: gfx942 (wave64), then gfx1100 (wave32) with gfx90a's code objects beside.

The full sweep: ``OXLA_HIP_DEVICE=sim oxla conformance ../shared/conformance/stablehlo
--backend hip`` (and ``scripts/hip_codeobjects.py`` for the code-object counts per arch).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.simt.test_conformance_sample import SAMPLE

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "stablehlo"
EXTRA = ["testdata/rng_bit_generator_uint32_4.mlir", "testdata/reduce_precision_float32.mlir"]


@pytest.mark.parametrize("archs", ["gfx942", "gfx1100,gfx90a"])
@pytest.mark.parametrize("name", SAMPLE + EXTRA)
def test_conformance_file_on_hip(monkeypatch, archs, name):
    from oxla.conformance import run_file

    if not ROOT.is_dir():
        pytest.skip("../shared/conformance is absent")
    path = ROOT / name
    if not path.exists():
        pytest.skip(f"{name} not in this conformance copy")
    monkeypatch.setenv("OXLA_HIP_DEVICE", "sim")
    monkeypatch.setenv("OXLA_HIP_ARCH", archs)
    res = run_file(path, "hip")
    msgs = [m for f in res.functions for m in f.messages]
    assert res.status == "pass", (res.message, msgs[:3])
