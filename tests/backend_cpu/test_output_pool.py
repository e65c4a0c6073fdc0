"""Result memory reuse (:mod:`oxla_backend_cpu.outalloc`): a large result's block is
handed out again only once nothing refers to it; results the caller holds (or views of
them) are never overwritten by later calls."""

from __future__ import annotations

import threading

import numpy as np
from oxla_backend_cpu import outalloc

from tests.backend_cpu.conftest import compile_cpu

N = 1 << 19  # f32: 2 MiB, above outalloc.MIN_BYTES
TEXT = f"""func.func @main(%a: tensor<{N}xf32>, %s: tensor<f32>) -> tensor<{N}xf32> {{
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<{N}xf32>
  %0 = stablehlo.add %a, %b : tensor<{N}xf32>
  return %0 : tensor<{N}xf32>
}}"""


def _addr(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def test_dropped_result_memory_is_reused_and_held_results_are_kept():
    assert N * 4 >= outalloc.MIN_BYTES
    exe = compile_cpu(TEXT, cache=False)
    a = np.arange(N, dtype=np.float32)
    first = exe(a, np.float32(1))[0]
    addr = _addr(first)
    assert addr % outalloc.ALIGN == 0
    second = exe(a, np.float32(2))[0]  # `first` is held: another block
    assert _addr(second) != addr
    np.testing.assert_array_equal(first, a + 1)
    view = first[10:20]  # a view keeps the block busy after `first` is dropped
    del first
    third = exe(a, np.float32(3))[0]  # both blocks busy: plain np.empty memory
    assert _addr(third) not in (addr, _addr(second))
    np.testing.assert_array_equal(view, a[10:20] + 1)
    np.testing.assert_array_equal(second, a + 2)
    del view, third
    again = exe(a, np.float32(4))[0]  # the first block is free again
    assert _addr(again) == addr
    np.testing.assert_array_equal(again, a + 4)
    np.testing.assert_array_equal(second, a + 2)


def test_concurrent_calls_get_distinct_blocks():
    exe = compile_cpu(TEXT, cache=False)
    a = np.arange(N, dtype=np.float32)
    got: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(i: int) -> None:
        try:
            start.wait()
            for _ in range(20):
                y = exe(a, np.float32(i))[0]
                if not np.array_equal(y, a + i):
                    raise AssertionError(f"thread {i}: result overwritten")
            got[i] = y
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, y in got.items():
        np.testing.assert_array_equal(y, a + i)
    assert len({_addr(y) for y in got.values()}) == 4
