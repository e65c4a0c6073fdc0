"""Batches of small f32 GEMMs (attention) run oxla's microkernel with ``B`` packed at
run time (:mod:`oxla_backend_cpu.batched_gemm`): results against numpy in float64 for
each operand layout, edge tiles, thread splits, and the AVX2 tile."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oxla

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu import batched_gemm as bg  # noqa: E402
from oxla_backend_cpu import packed_gemm as pg  # noqa: E402

needs_simd = pytest.mark.skipif(pg.host_lanes() == 0, reason="host has no AVX2+FMA")


def _t(shape) -> str:
    return "tensor<" + "x".join(map(str, shape)) + "xf32>"


def _run(batch: int, m: int, k: int, n: int, trans_a: bool, trans_b: bool,
         expect: bool = True) -> None:
    rng = np.random.default_rng(batch * 1000 + m + k + n)
    a_shape = (batch, k, m) if trans_a else (batch, m, k)
    b_shape = (batch, n, k) if trans_b else (batch, k, n)
    x = rng.standard_normal(a_shape).astype(np.float32)
    y = rng.standard_normal(b_shape).astype(np.float32)
    lc, rc = (1 if trans_a else 2), (2 if trans_b else 1)
    out = (batch, m, n)
    text = f"""
func.func @main(%x: {_t(a_shape)}, %y: {_t(b_shape)}) -> {_t(out)} {{
  %r = stablehlo.dot_general %x, %y, batching_dims = [0] x [0],
      contracting_dims = [{lc}] x [{rc}] : ({_t(a_shape)}, {_t(b_shape)}) -> {_t(out)}
  return %r : {_t(out)}
}}"""
    exe = oxla.compile(text, backend="cpu")
    assert (bg.DRIVER in exe.llvm_ir) == expect
    got = exe(x, y)
    got = got[0] if isinstance(got, list | tuple) else got
    xa = np.swapaxes(x, 1, 2) if trans_a else x
    ya = np.swapaxes(y, 1, 2) if trans_b else y
    ref = np.matmul(xa.astype(np.float64), ya.astype(np.float64))
    tol = 4 * k * np.finfo(np.float32).eps * np.abs(x).max() * np.abs(y).max()
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


@needs_simd
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False),
                                             (True, True)])
def test_layouts_against_float64(trans_a: bool, trans_b: bool) -> None:
    _run(3, 37, 29, 50, trans_a, trans_b)


@needs_simd
@pytest.mark.parametrize("shape", [(12, 128, 64, 128), (4, 128, 128, 64), (2, 16, 1, 33)])
def test_attention_shapes(shape) -> None:
    _run(*shape, False, True)
    _run(*shape, False, False)


@needs_simd
def test_threads_split_the_batch(monkeypatch) -> None:
    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    _run(7, 64, 96, 80, False, True)


@needs_simd
def test_large_b_or_few_rows_go_to_blas() -> None:
    _run(2, 64, 1024, 96, False, False, expect=False)  # B: 384 KiB > 256 KiB
    _run(2, 64, 512, 64, False, False)  # 128 KiB: from malloc
    _run(2, pg.MIN_ROWS - 1, 32, 32, False, False, expect=False)


@needs_simd
def test_avx2_tile_standalone() -> None:
    """The 6x16 tile (AVX2) built alone, run on this host (AVX2 is a subset)."""
    import llvmlite.ir as ir
    from oxla_backend_cpu.parallel import HOST_RUNTIME
    from oxla_codegen_llvm.jit import compile_ir
    from oxla_codegen_llvm.target import CPUTarget

    module = ir.Module("t")
    bg.define_batched_driver(module, 8, *bg.tile_shape(8), name="go")
    jit = compile_ir(str(module), CPUTarget.host(), runtime=HOST_RUNTIME)
    ctypes.c_int64.from_address(jit.global_address("oxla_num_threads")).value = 2
    go = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 4)(jit.address("go"))
    rng = np.random.default_rng(8)
    batch, m, k, n = 5, 23, 19, 37
    a = rng.standard_normal((batch, m, k)).astype(np.float32)
    b = rng.standard_normal((batch, n, k)).astype(np.float32)
    c = np.full((batch, m, n), np.nan, np.float32)
    desc = np.array([batch, m, n, k, k, 1, 1, k, 1, 2], np.int64)
    try:
        go(desc.ctypes.data, a.ctypes.data, b.ctypes.data, c.ctypes.data)
    finally:  # no pool worker may stay parked in code freed with the engine
        ctypes.CFUNCTYPE(None)(jit.address("oxla_pool_shutdown"))()
    ref = np.matmul(a.astype(np.float64), np.swapaxes(b, 1, 2))
    np.testing.assert_allclose(c, ref, rtol=0, atol=1e-4)


@needs_simd
@settings(max_examples=25, deadline=None)
@given(batch=st.integers(2, 5), m=st.integers(pg.MIN_ROWS, 60), k=st.integers(1, 100),
       n=st.integers(2, 80), trans_a=st.booleans(), trans_b=st.booleans())
def test_random_shapes_and_layouts(batch, m, k, n, trans_a, trans_b) -> None:
    from oxla_backend_cpu.linalg import SMALL_DOT_MACS  # smaller: an inline loop

    expect = bg.fits(m, n, k, bg.tile_shape(pg.host_lanes())[1]) and \
        batch * m * k * n > SMALL_DOT_MACS
    _run(batch, m, k, n, trans_a, trans_b, expect=expect)


def _run_one(m: int, k: int, n: int, trans_a: bool, trans_b: bool, expect: bool) -> None:
    rng = np.random.default_rng(m + k + n)
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    x = rng.standard_normal(a_shape).astype(np.float32)
    y = rng.standard_normal(b_shape).astype(np.float32)
    text = f"""
func.func @main(%x: {_t(a_shape)}, %y: {_t(b_shape)}) -> {_t((m, n))} {{
  %r = stablehlo.dot_general %x, %y, contracting_dims = [{0 if trans_a else 1}] x
      [{1 if trans_b else 0}] : ({_t(a_shape)}, {_t(b_shape)}) -> {_t((m, n))}
  return %r : {_t((m, n))}
}}"""
    exe = oxla.compile(text, backend="cpu")
    assert (bg.DRIVER in exe.llvm_ir) == expect
    got = exe(x, y)
    got = got[0] if isinstance(got, list | tuple) else got
    ref = (x.T if trans_a else x).astype(np.float64) @ (y.T if trans_b else y)
    tol = 4 * k * np.finfo(np.float32).eps * np.abs(x).max() * np.abs(y).max()
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


@needs_simd
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (False, True), (True, False)])
def test_narrow_gemm_split_into_row_blocks(trans_a, trans_b, monkeypatch) -> None:
    """One GEMM with a run-time ``B`` of 30 columns runs on the microkernel, its rows
    split into blocks among 3 threads (uneven edges); 16 columns (half a panel) stay in
    BLAS."""
    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    m, k = 997, 300
    assert bg.row_blocks(1, m, 30, k) > 3
    _run_one(m, k, 30, trans_a, trans_b, expect=True)
    _run_one(m, k, 16, trans_a, trans_b, expect=False)


@needs_simd
def test_batch_items_split_into_row_blocks(monkeypatch) -> None:
    """A batch of 2 tall GEMMs: row blocks of each item among threads."""
    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    assert bg.row_blocks(2, 1000, 100, 64) > 1
    _run(2, 1000, 64, 100, False, True)
    _run(2, 1000, 64, 100, True, False)
