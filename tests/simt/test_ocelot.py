"""The NVPTX lowering itself, run: sm_35 PTX of the GPU kernels through gpuocelot's PTX
emulator (address spaces, parameter passing, special registers, shared memory and
barriers), compared with the interpreter. Skips where ``../shared`` is absent."""

from __future__ import annotations

import numpy as np

from tests.simt.conftest import on_ocelot
from tests.simt.test_model import ELEMENTWISE, _xy
from tests.simt.test_ops import CONV, MISC, POOL
from tests.simt.test_reduce import ARGMAX, _sum
from tests.simt.test_scatter_sort import ADD, IDX, REPLACE, SORT, _scatter


def test_elementwise_on_gpuocelot():
    got, want, _ = on_ocelot(ELEMENTWISE, _xy())
    np.testing.assert_array_equal(got[0], want[0])


def test_row_and_column_reductions_on_gpuocelot():
    """Shared memory (the dynamic .extern array), bar.sync between tree steps, several
    blocks (ctaid), the 2-D block of the column kernel."""
    rng = np.random.default_rng(5)
    for shape, dims in (((6, 300), [1]), ((200, 20), [0])):
        x = rng.standard_normal(shape).astype(np.float32)
        got, want, kernels = on_ocelot(_sum(shape, dims), [x])
        assert kernels[0].shared_bytes > 0
        np.testing.assert_allclose(got[0], want[0], rtol=2e-6, atol=1e-6)


def test_argmax_on_gpuocelot():
    x = np.random.default_rng(4).standard_normal((5, 70)).astype(np.float32)
    x[2, 10] = x[2, 50] = 9.0
    got, want, _ = on_ocelot(ARGMAX, [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_scatter_sort_window_on_gpuocelot():
    """Atomic adds (atom.global.add.f32), the bitonic sort's 21 barrier-separated steps,
    a pooling window."""
    x = np.arange(15, dtype=np.float32).reshape(5, 3)
    u = np.arange(12, dtype=np.float32).reshape(4, 3)
    got, want, _ = on_ocelot(_scatter(ADD.format(et="f32")), [x, IDX, u])
    np.testing.assert_array_equal(got[0], want[0])
    rng = np.random.default_rng(0)
    k = rng.integers(0, 6, (3, 37)).astype(np.float32)
    v = np.arange(3 * 37, dtype=np.int32).reshape(3, 37)
    got, want, _ = on_ocelot(SORT.replace("{dir}", "LT"), [k, v])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    p = rng.standard_normal((2, 7, 9)).astype(np.float32)
    got, want, _ = on_ocelot(POOL, [p])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_tiled_transpose_on_gpuocelot():
    text = """
func.func @main(%x: tensor<40x50xf32>) -> tensor<50x40xf32> {
  %r = stablehlo.transpose %x, dims = [1, 0] : (tensor<40x50xf32>) -> tensor<50x40xf32>
  return %r : tensor<50x40xf32>
}
"""
    x = np.arange(2000, dtype=np.float32).reshape(40, 50)
    got, want, kernels = on_ocelot(text, [x])
    assert kernels[0].block == (32, 8, 1)
    np.testing.assert_array_equal(got[0], want[0])


def test_per_element_op_kernels_on_gpuocelot():
    """The per-element kinds: direct convolution, an integer loop dot, map /
    optimization_barrier / real_dynamic_slice / bitcast_convert, rng_bit_generator
    (64-bit integer arithmetic of PHILOX), serial scatter, select_and_scatter."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 7, 6, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 6)).astype(np.float32)
    progs = [(CONV, [x, w]),
             (MISC, [rng.standard_normal(6).astype(np.float32),
                     rng.standard_normal(6).astype(np.float32),
                     np.array([1], np.int64), np.array([2], np.int64)]),
             (_scatter(REPLACE.format(et="f32")),
              [np.zeros((5, 3), np.float32), IDX, np.arange(12, dtype=np.float32).reshape(4, 3)])]
    words = 3
    progs.append((f"""
func.func @main(%s: tensor<{words}xui64>) -> (tensor<{words}xui64>, tensor<9xui32>) {{
  %ns, %bits = stablehlo.rng_bit_generator %s, algorithm = PHILOX
      : (tensor<{words}xui64>) -> (tensor<{words}xui64>, tensor<9xui32>)
  return %ns, %bits : tensor<{words}xui64>, tensor<9xui32>
}}
""", [np.array([0x1234567890ABCDEF, 0xFFFFFFFFFFFFFFF0, 7], np.uint64)]))
    for text, args in progs:
        got, want, _ = on_ocelot(text, args)
        for g, wv in zip(got, want):
            np.testing.assert_array_equal(g, wv)
