"""A conformance sample on the GPU kernels: files of ``../shared/conformance/stablehlo``
covering each kernel kind (loop fusions, row/column/variadic reductions, reduce_window,
scatter, select_and_scatter, sort, gather, convolution, dots, control flow), run on the
host twin through oxla's conformance runner, so the files' own checks decide. The full
sweep is ``python -m oxla_codegen_llvm.simt.sweep ../shared/conformance/stablehlo``."""

from __future__ import annotations

from pathlib import Path

import pytest
from oxla_codegen_llvm.simt import sweep

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "conformance" / "stablehlo"
SAMPLE = [
    "interpret/reduce.mlir", "interpret/reduce_window.mlir", "interpret/scatter.mlir",
    "interpret/select_and_scatter.mlir", "interpret/gather.mlir", "interpret/while.mlir",
    "interpret/convolution.mlir", "interpret/dot_general.mlir", "interpret/map.mlir",
    "interpret/pad.mlir", "interpret/concatenate.mlir", "interpret/transpose.mlir",
    "interpret/bitcast_convert.mlir", "interpret/iota.mlir", "interpret/sine.mlir",
    "interpret/power.mlir", "interpret/dynamic_slice.mlir", "interpret/optimization_barrier.mlir",
    "testdata/argmax_float32_4.mlir", "testdata/cumsum_float16_8_9.mlir",
    "testdata/sort_complex64_5_7.mlir", "testdata/sort_int32_100_int32_100.mlir",
    "testdata/reduce_max_bfloat16_2_3.mlir", "testdata/erf_float32_20_20_chlo.mlir",
]


@pytest.fixture(scope="module")
def twin_backend():
    if not ROOT.is_dir():
        pytest.skip("../shared/conformance is absent")
    sweep.install()
    return sweep.TwinBackend.name


@pytest.mark.parametrize("name", SAMPLE)
def test_conformance_file_on_twin(twin_backend, name):
    from oxla.conformance import run_file

    path = ROOT / name
    if not path.exists():
        pytest.skip(f"{name} not in this conformance copy")
    res = run_file(path, twin_backend)
    msgs = [m for f in res.functions for m in f.messages]
    assert res.status == "pass", (res.message, msgs[:3])
