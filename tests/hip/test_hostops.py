"""Host-staged ops on the hip backend's simulated device: the grid runner shared with
cuda (:class:`oxla_codegen_llvm.gpu.backend.GPUBackend.run_parallel`) runs collectives
and partition ids over an in-process thread grid."""

from __future__ import annotations

import numpy as np
from oxla_backend_hip.backend import HIPBackend

from tests.backend_cuda.test_hostops import ALL_REDUCE, PERMUTE
from tests.hip.conftest import compile_hip


def test_all_reduce_over_a_replica_grid(sim):
    exe = compile_hip(ALL_REDUCE)
    xs = [np.array([1, 5, -2, 0], np.float32) * (i + 1) for i in range(3)]
    results, log = HIPBackend().run_parallel([[exe], [exe], [exe]], xs)
    assert log == []
    want = 2 * np.max(np.stack(xs), axis=0)
    for i in range(3):
        np.testing.assert_array_equal(results[2 * i], want)
        assert int(results[2 * i + 1]) == i


def test_partitions_permute_and_ids(sim):
    exe = compile_hip(PERMUTE)
    results, _ = HIPBackend().run_parallel([[exe, exe]], [np.array([10, 20], np.int32)] * 2)
    np.testing.assert_array_equal(results[0], [11, 21])
    np.testing.assert_array_equal(results[1], [10, 20])
