"""Dots with a constant f32 rhs run oxla's packed-weight microkernel
(:mod:`oxla_backend_cpu.packed_gemm`): results against numpy in float64, edge tiles,
operand layouts, thread splits, and both tile shapes (AVX-512 and AVX2)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oxla

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu import packed_gemm as pg  # noqa: E402

needs_simd = pytest.mark.skipif(pg.host_lanes() == 0, reason="host has no AVX2+FMA")


def _dense(a: np.ndarray) -> str:
    if a.ndim == 1:
        return "[" + ",".join(repr(float(v)) for v in a) + "]"
    return "[" + ",".join(_dense(r) for r in a) + "]"


def _program(x_shape, w, contracting, out_shape) -> str:
    t = lambda s: "tensor<" + "x".join(map(str, s)) + "xf32>"  # noqa: E731
    lc, rc = contracting
    return f"""
func.func @main(%x: {t(x_shape)}) -> {t(out_shape)} {{
  %w = stablehlo.constant dense<{_dense(w)}> : {t(w.shape)}
  %y = stablehlo.dot_general %x, %w, contracting_dims = [{lc}] x [{rc}] :
      ({t(x_shape)}, {t(w.shape)}) -> {t(out_shape)}
  return %y : {t(out_shape)}
}}"""


def _check(x: np.ndarray, w: np.ndarray, contracting, expect_packed: bool = True) -> None:
    lc, rc = contracting
    ref = np.tensordot(x.astype(np.float64), w.astype(np.float64), axes=([lc], [rc]))
    exe = oxla.compile(_program(x.shape, w, contracting, ref.shape), backend="cpu")
    assert (pg.DRIVER in exe.llvm_ir) == expect_packed
    y = exe(x)
    y = y[0] if isinstance(y, list | tuple) else y
    k = x.shape[lc]
    tol = 4 * k * np.finfo(np.float32).eps * np.abs(x).max() * np.abs(w).max()
    np.testing.assert_allclose(y, ref, rtol=0, atol=tol)


@needs_simd
@pytest.mark.parametrize("m,k,n", [(16, 300, 2), (37, 70, 49), (64, 96, 200), (100, 33, 7),
                                   (20, 1100, 60)])  # k past one KC block
def test_row_major_lhs_against_float64(m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m + k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    _check(x, w, (1, 0))


@needs_simd
def test_weights_stored_out_by_in_and_batched_rows() -> None:
    """torch's ``nn.Linear`` layout: ``x[B, S, K] . W[N, K]`` contracting K with K."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 24, 40)).astype(np.float32)
    w = rng.standard_normal((53, 40)).astype(np.float32)
    _check(x, w, (2, 1))


@needs_simd
def test_transposed_lhs() -> None:
    """``x`` stored ``[K, M]``: the kernel reads it with strides ``(1, M)``."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((30, 50)).astype(np.float32)
    w = rng.standard_normal((30, 61)).astype(np.float32)
    _check(x, w, (0, 0))


@needs_simd
def test_one_row_goes_to_blas() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((pg.MIN_CONST_ROWS - 1, 20)).astype(np.float32)
    w = rng.standard_normal((20, 30)).astype(np.float32)
    _check(x, w, (1, 0), expect_packed=False)


@needs_simd
@pytest.mark.parametrize("m,k,n", [(2, 512, 256), (5, 128, 1024), (8, 256, 10), (8, 256, 256),
                                   (15, 40, 97)])
def test_a_few_rows_with_a_constant_weight_are_packed(m: int, k: int, n: int) -> None:
    """A small batch through ``nn.Linear``: one row tile, or from 2 rows with a large
    weight (:func:`~oxla_backend_cpu.packed_gemm.const_min_rows`), takes the packed
    kernel, not BLAS, which packs the weight on every call; rows past ``m`` are never
    stored."""
    rng = np.random.default_rng(m * k + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    assert m >= pg.const_min_rows(k, n, pg.blas_rows())
    _check(x, w, (1, 0))


@needs_simd
def test_few_rows_with_a_small_weight_go_to_blas() -> None:
    """Fewer rows than a tile and a small weight: BLAS (the tile would be mostly
    padding)."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((pg.blas_rows() - 1, 256)).astype(np.float32)
    w = rng.standard_normal((256, 256)).astype(np.float32)
    _check(x, w, (1, 0), expect_packed=False)


@needs_simd
def test_threads_split_rows_and_panels(monkeypatch) -> None:
    """Three threads over 4 panels: row parts and panel parts both cut the work."""
    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    rng = np.random.default_rng(4)
    _, nr = pg.tile_shape(pg.host_lanes())
    x = rng.standard_normal((300, 256)).astype(np.float32)
    w = rng.standard_normal((256, 4 * nr - 5)).astype(np.float32)
    _check(x, w, (1, 0))


def _parallel_flags(llvm_ir: str) -> list[int]:
    """The ``parallel`` word of each packed GEMM descriptor in ``llvm_ir``."""
    import re

    words = len(pg.DESC_FIELDS)
    rows = re.findall(rf"\.desc = internal constant \[{words} x i64\] \[([^\]]*)\]",
                      llvm_ir)
    return [int(r.split(",")[pg.DESC_FIELDS.index("parallel")].split()[-1]) for r in rows]


@needs_simd
@pytest.mark.parametrize("threads", ["2", "3"])
@pytest.mark.parametrize("m,k,n,split", [(64, 256, 256, True), (67, 320, 203, True),
                                         (37, 1024, 256, True), (16, 64, 64, False)])
def test_small_transformer_gemms_split_over_threads(monkeypatch, threads, m, k, n,
                                                    split) -> None:
    """A 64-token layer's GEMMs (64x256 . 256x256: 8 MFLOP, two threads' worth of
    :data:`~oxla_backend_cpu.packed_gemm.PACKED_FLOPS_PER_THREAD`) run on the pool's
    threads, odd sizes included (a ViT's 37x1024 . 1024x256: 5 row tiles, 6 panels, split
    by panels); a tiny one stays on the calling thread. Results against float64."""
    monkeypatch.setenv("OXLA_NUM_THREADS", threads)
    rng = np.random.default_rng(m * n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    assert (2.0 * m * n * k >= 2 * pg.PACKED_FLOPS_PER_THREAD) == split
    _check(x, w, (1, 0))
    ref = np.zeros((m, n))
    exe = oxla.compile(_program(x.shape, w, (1, 0), ref.shape), backend="cpu")
    assert _parallel_flags(exe.llvm_ir) == [int(split)]


def test_pack_weights_layout() -> None:
    w = np.arange(3 * 7, dtype=np.float32).reshape(3, 7)
    p = pg.pack_weights(w, 4)
    assert p.shape == (2, 3, 4)
    np.testing.assert_array_equal(p[0], w[:, :4])
    np.testing.assert_array_equal(p[1, :, :3], w[:, 4:])
    assert not p[1, :, 3].any()


@needs_simd
@pytest.mark.parametrize("lanes", [16, 8])
def test_driver_blocks_and_tiles(monkeypatch, lanes: int) -> None:
    """The driver built standalone for both tile shapes with tiny ``KC``/``MC`` blocks,
    so one call crosses row blocks, ``k`` blocks (accumulating into ``C``) and edge
    tiles; AVX2's tile runs on an AVX-512 host too."""
    import llvmlite.ir as ir
    from oxla_backend_cpu.parallel import HOST_RUNTIME
    from oxla_codegen_llvm.jit import compile_ir
    from oxla_codegen_llvm.target import CPUTarget

    if lanes == 16 and pg.host_lanes() != 16:
        pytest.skip("host has no AVX-512")
    monkeypatch.setattr(pg, "KC", 24)
    monkeypatch.setattr(pg, "MC_TILES", 2)
    mr, nr = pg.tile_shape(lanes)
    module = ir.Module("t")
    pg.define_driver(module, lanes, mr, nr, name="go")
    jit = compile_ir(str(module), CPUTarget.host(), runtime=HOST_RUNTIME)
    ctypes.c_int64.from_address(jit.global_address("oxla_num_threads")).value = 2
    go = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(jit.address("go"))
    rng = np.random.default_rng(lanes)
    m, k, n = 5 * mr + 3, 61, 3 * nr + 1
    a = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    bp = pg.pack_weights(w, nr)
    c = np.full((m, n), np.nan, np.float32)
    desc = np.array([m, n, k, k, 1, 1], np.int64)
    try:
        go(desc.ctypes.data, a.ctypes.data, bp.ctypes.data, c.ctypes.data)
    finally:  # no pool worker may stay parked in code freed with the engine
        ctypes.CFUNCTYPE(None)(jit.address("oxla_pool_shutdown"))()
    np.testing.assert_allclose(c, a.astype(np.float64) @ w, rtol=0, atol=1e-4)


@needs_simd
def test_cache_entry_stores_the_recipe_not_the_packed_weights(tmp_path, monkeypatch) -> None:
    """A compile-cache entry records packed weights as "pack this module constant", so
    the entry holds no copy of them and a hit rebuilds them (same results)."""
    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 128)).astype(np.float32)
    w = rng.standard_normal((128, 96)).astype(np.float32)
    text = _program(x.shape, w, (1, 0), (32, 96))
    first = oxla.compile(text, backend="cpu")
    assert first.stats["cache"] == "miss" and pg.DRIVER in first.llvm_ir
    from oxla.artifact import read_manifest

    entries = list(tmp_path.glob("*.oxla"))
    assert len(entries) == 1 and entries[0].stat().st_size < w.nbytes
    recipes = read_manifest(entries[0])["constant_recipes"]
    assert [r["kind"] for r in recipes.values()] == ["pack_weights"]
    again = oxla.compile(text, backend="cpu")
    assert again.stats["cache"] == "hit"
    np.testing.assert_array_equal(again(x), first(x))


@needs_simd
def test_avx2_tiles_through_the_whole_compile(monkeypatch) -> None:
    """With the host taken for an AVX2 machine (8 lanes), constant weights pack into
    16-column panels and the 6x16 kernels run; same results (AVX2 is a subset of this
    host's features when it has AVX-512)."""
    from oxla_codegen_llvm import jit

    monkeypatch.setattr(pg, "host_lanes", lambda: 8)
    monkeypatch.setattr(jit, "_RUNTIME", {})  # the runtime object holds the tile shape
    monkeypatch.setenv("OXLA_RUNTIME_DIR", "off")  # the installed one holds the host's
    monkeypatch.setattr(pg, "_PACKED", pg.weakref.WeakKeyDictionary())
    rng = np.random.default_rng(9)
    x = rng.standard_normal((45, 70)).astype(np.float32)
    w = rng.standard_normal((70, 37)).astype(np.float32)
    ref = x.astype(np.float64) @ w
    exe = oxla.compile(_program(x.shape, w, (1, 0), ref.shape), backend="cpu", cache=False)
    assert pg.DRIVER in exe.llvm_ir
    assert any(c.nbytes == 70 * 48 * 4 for c in exe.constants)  # 3 panels of 16 columns
    np.testing.assert_allclose(exe(x)[0], ref, rtol=0, atol=1e-4)


@needs_simd
def test_concurrent_calls_of_one_executable() -> None:
    """Four threads call one executable with a packed-weight GEMM at once (the pool
    serves one call, the others start their own threads): every result is right."""
    import threading

    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 64, 96)).astype(np.float32)
    w = rng.standard_normal((96, 80)).astype(np.float32)
    exe = oxla.compile(_program(x.shape, w, (2, 0), (4, 64, 80)), backend="cpu")
    ref = x.astype(np.float64) @ w
    errors: list[float] = []

    def work(seed: int) -> None:
        for i in range(20):
            xi = x * (seed + i)
            errors.append(float(np.abs(exe(xi)[0] - ref * (seed + i)).max()
                                / (np.abs(ref).max() * (seed + i))))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 80 and max(errors) < 1e-5


@needs_simd
@settings(max_examples=25, deadline=None)
@given(m=st.integers(pg.MIN_ROWS, 70), k=st.integers(1, 1100), n=st.integers(2, 110),
       trans_w=st.booleans(), seed=st.integers(0, 2**16))
def test_random_shapes_against_float64(m: int, k: int, n: int, trans_w: bool,
                                       seed: int) -> None:
    """Random GEMM shapes with a constant rhs stored either way, ``k`` past one
    ``KC`` block (accumulation into C) included."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k) if trans_w else (k, n)).astype(np.float32)
    from oxla_backend_cpu.linalg import SMALL_DOT_MACS  # smaller: an inline loop

    _check(x, w, (1, 1 if trans_w else 0), expect_packed=m * k * n > SMALL_DOT_MACS)


@needs_simd
def test_one_square_weight_read_both_ways() -> None:
    """``x . W`` and ``x . W^T`` of one constant: two packings, not one reused."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 40)).astype(np.float32)
    w = rng.standard_normal((40, 40)).astype(np.float32)
    t, o = "tensor<32x40xf32>", "tensor<40x40xf32>"
    text = f"""
func.func @main(%x: {t}) -> ({t}, {t}) {{
  %w = stablehlo.constant dense<{_dense(w)}> : {o}
  %a = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : ({t}, {o}) -> {t}
  %b = stablehlo.dot_general %x, %w, contracting_dims = [1] x [1] : ({t}, {o}) -> {t}
  return %a, %b : {t}, {t}
}}"""
    exe = oxla.compile(text, backend="cpu")
    assert exe.llvm_ir.count(f"call void @{pg.DRIVER}") == 2
    a, b = exe(x)
    np.testing.assert_allclose(a, x.astype(np.float64) @ w, rtol=0, atol=1e-4)
    np.testing.assert_allclose(b, x.astype(np.float64) @ w.T, rtol=0, atol=1e-4)
