"""cuBLAS: the library loads without a driver, the GEMM arguments of the plan's dots
(column-major, C^T = B^T A^T), and the numpy semantics the simulated device runs,
checked against column-major numpy and against the interpreter for every dot_general
layout of the conformance suite."""

from __future__ import annotations

import glob
import itertools
import os

import numpy as np
import pytest
from oxla_backend_cuda import cublas

from tests.backend_cuda.conftest import check_against_interpreter

CONFORMANCE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared",
                           "conformance", "stablehlo")


def test_library_symbols_resolve_without_a_driver():
    lib = cublas.load_library()
    for name in cublas.SYMBOLS:
        assert getattr(lib, name) is not None
    assert cublas.version() == 13


class _Memory:
    """Host blocks addressed by their addresses (what the simulated device has)."""

    def __init__(self, *arrays):
        self.arrays = [np.ascontiguousarray(a) for a in arrays]

    def view(self, ptr: int, nbytes: int) -> np.ndarray:
        for a in self.arrays:
            base = a.ctypes.data
            if base <= ptr and ptr + nbytes <= base + a.nbytes:
                return a.reshape(-1).view(np.uint8)[ptr - base:ptr - base + nbytes]
        raise AssertionError(f"{nbytes} bytes at {ptr:#x} are outside every array")


@pytest.mark.parametrize("ta,tb", list(itertools.product((0, 1), repeat=2)))
def test_reference_is_column_major_gemm_with_leading_dims(ta, tb):
    rng = np.random.default_rng(1)
    m, n, k, batch, pad = 3, 5, 4, 2, 2
    # stored column-major with leading dimension ld = rows + pad, batches stride apart
    def stored(rows, cols):
        ld = rows + pad
        full = rng.standard_normal((batch, cols, ld)).astype(np.float64)  # [b][col][row]
        return full, ld, cols * ld, full[:, :, :rows].transpose(0, 2, 1)  # logical [b,r,c]
    a_mem, lda, sa, a_log = stored(*((m, k) if ta == 0 else (k, m)))
    b_mem, ldb, sb, b_log = stored(*((k, n) if tb == 0 else (n, k)))
    c_mem = np.full((batch, n, m + pad), np.nan)
    op_a = a_log if ta == 0 else a_log.transpose(0, 2, 1)
    op_b = b_log if tb == 0 else b_log.transpose(0, 2, 1)
    mem = _Memory(a_mem, b_mem, c_mem)
    a_mem, b_mem, c_mem = mem.arrays
    call = cublas.GemmCall(ta, tb, m, n, k, a_mem.ctypes.data, lda, sa, b_mem.ctypes.data,
                           ldb, sb, c_mem.ctypes.data, m + pad, n * (m + pad), batch, "f64")
    cublas.gemm_reference(call, mem.view)
    got = c_mem[:, :, :m].transpose(0, 2, 1)
    np.testing.assert_allclose(got, op_a @ op_b, rtol=1e-12)
    assert np.isnan(c_mem[:, :, m:]).all()  # beta = 0 never reads C, padding untouched


@pytest.mark.parametrize("tl,tr", list(itertools.product((False, True), repeat=2)))
def test_dot_call_is_transposed_product(tl, tr):
    rng = np.random.default_rng(2)
    b, m, n, k = 3, 4, 5, 6
    lhs = rng.standard_normal((b, k, m) if tl else (b, m, k)).astype(np.float32)
    rhs = rng.standard_normal((b, n, k) if tr else (b, k, n)).astype(np.float32)
    out = np.zeros((b, m, n), np.float32)
    mem = _Memory(lhs, rhs, out)
    lhs, rhs, out = mem.arrays
    call = cublas.dot_call(b, m, n, k, tl, tr, "f32", lhs.ctypes.data, rhs.ctypes.data,
                           out.ctypes.data)
    assert (call.m, call.n, call.k) == (n, m, k)  # C^T = B^T A^T
    cublas.gemm_reference(call, mem.view)
    want = (lhs.transpose(0, 2, 1) if tl else lhs) @ (rhs.transpose(0, 2, 1) if tr else rhs)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def _conformance_layouts() -> list[tuple]:
    from oxla.ir import parse_module

    files = [f for f in glob.glob(os.path.join(CONFORMANCE, "**", "*.mlir"), recursive=True)
             if "dot_general" in open(f).read()]
    layouts = set()
    for f in files:
        for op in parse_module(open(f).read(), f).walk():
            if op.name == "stablehlo.dot_general":
                d = op.attr("dot_dimension_numbers")
                layouts.add((tuple(s if s is not None else 2 for s in op.operands[0].type.shape),
                             tuple(s if s is not None else 2 for s in op.operands[1].type.shape),
                             *(tuple(d.get(k, ())) for k in (
                                 "lhs_batching_dimensions", "rhs_batching_dimensions",
                                 "lhs_contracting_dimensions", "rhs_contracting_dimensions"))))
    return sorted(layouts, key=str)


def _dot_program(ls, rs, lb, rb, lc, rc, et: str) -> str:
    free_l = [d for d in range(len(ls)) if d not in lb + lc]
    free_r = [d for d in range(len(rs)) if d not in rb + rc]
    out = [ls[d] for d in lb] + [ls[d] for d in free_l] + [rs[d] for d in free_r]
    t = lambda s: f"tensor<{'x'.join(map(str, s)) + 'x' if s else ''}{et}>"  # noqa: E731
    lst = lambda x: "[" + ", ".join(map(str, x)) + "]"  # noqa: E731
    batching = f"batching_dims = {lst(lb)} x {lst(rb)}, " if lb else ""
    return f"""
func.func @main(%a: {t(ls)}, %b: {t(rs)}) -> {t(out)} {{
  %0 = stablehlo.dot_general %a, %b, {batching}contracting_dims = {lst(lc)} x {lst(rc)} : ({t(ls)}, {t(rs)}) -> {t(out)}
  return %0 : {t(out)}
}}
"""


def test_every_conformance_dot_layout_matches_the_interpreter(sim):
    if not os.path.isdir(CONFORMANCE):
        pytest.skip("../shared/conformance is absent")
    layouts = _conformance_layouts()
    assert len(layouts) >= 15  # 21 today: batch dims, contracting on either side, vectors
    rng = np.random.default_rng(3)
    gemms = 0
    for i, (ls, rs, lb, rb, lc, rc) in enumerate(layouts):
        et = "f64" if i % 4 == 0 else "f32"
        dt = np.float64 if et == "f64" else np.float32
        args = [rng.standard_normal(ls).astype(dt), rng.standard_normal(rs).astype(dt)]
        exe = check_against_interpreter(_dot_program(ls, rs, lb, rb, lc, rc, et), args,
                                        rtol=1e-5 if et == "f32" else 1e-12, atol=1e-6)
        gemms += exe.stats["gemms"]
    assert gemms == len(layouts)  # every one through the GEMM call
    assert sim.device.stats["gemms"] >= len(layouts)
