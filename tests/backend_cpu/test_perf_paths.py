"""The fast paths of the cpu backend against numpy / the interpreter: GEMMs split into
row or column blocks on oxla's threads, vectorized and parallel reductions, the
vectorizable exp, memory-aware scheduling and in-place buffer reuse."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both, ulps

RNG = np.random.default_rng(7)


def _dot_text(lhs, rhs, out, dims: str) -> str:
    t = lambda s: f"tensor<{'x'.join(map(str, s))}xf32>"  # noqa: E731
    return f"""func.func @main(%a: {t(lhs)}, %b: {t(rhs)}) -> {t(out)} {{
  %0 = stablehlo.dot_general %a, %b, {dims} : ({t(lhs)}, {t(rhs)}) -> {t(out)}
  return %0 : {t(out)}
}}"""


@pytest.mark.parametrize("m,n,k,trans_a,trans_b", [
    (512, 512, 256, False, False),   # row blocks
    (64, 1024, 1024, False, False),  # skinny: column blocks
    (64, 1024, 1024, True, True),    # column blocks, transposed operands
    (700, 300, 200, True, False),    # row blocks, uneven last block
    (33, 17, 5, False, True),        # one small call
])
def test_gemm_blocks_match_numpy(m, n, k, trans_a, trans_b):
    from oxla_backend_cpu.blas import FLOPS_PER_THREAD, row_blocks

    a = RNG.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = RNG.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    dims = f"contracting_dims = [{0 if trans_a else 1}] x [{1 if trans_b else 0}]"
    exe = compile_cpu(_dot_text(a.shape, b.shape, (m, n), dims), cache=False)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b)
    np.testing.assert_allclose(exe(a, b)[0], want, rtol=1e-4, atol=1e-3 * np.sqrt(k))
    if 2 * m * n * k >= 4 * FLOPS_PER_THREAD:
        assert row_blocks(1, max(m, n), 2.0 * m * n * k) > 1


def test_batched_gemm_matches_numpy():
    a = RNG.standard_normal((6, 96, 64)).astype(np.float32)
    b = RNG.standard_normal((6, 64, 80)).astype(np.float32)
    text = _dot_text(a.shape, b.shape, (6, 96, 80),
                     "batching_dims = [0] x [0], contracting_dims = [2] x [1]")
    exe = compile_cpu(text, cache=False)
    np.testing.assert_allclose(exe(a, b)[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    run_both(text, [a, b], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("op,ref", [("exponential", np.exp), ("tanh", np.tanh)])
def test_vector_exp_and_tanh_within_two_ulp(op, ref):
    n = 1 << 16
    x = np.concatenate([RNG.uniform(-110, 95, n), RNG.uniform(-1, 1, n),
                        RNG.standard_normal(n) * 5,
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229, -87.3,
                         -103.9, -104.5, 1e-30, -1e-30, 0.625, -0.625, 0.6249, 9.0]])
    x = x.astype(np.float32)
    text = f"""func.func @main(%a: tensor<{x.size}xf32>) -> tensor<{x.size}xf32> {{
  %0 = stablehlo.{op} %a : tensor<{x.size}xf32>
  return %0 : tensor<{x.size}xf32>
}}"""
    got = compile_cpu(text, cache=False)(x)[0]
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    assert ulps(got, want).max() <= 2
    assert np.signbit(got[x.size - 15]) == (op == "tanh")  # tanh(-0) = -0, exp(-0) = 1


@pytest.mark.parametrize("body,shape,dims", [
    ("add", (300, 1000), [1]),      # vectorized, rows in parallel
    ("maximum", (257, 999), [1]),
    ("add", (64, 40, 30), [1, 2]),  # several reduced dims, innermost last
    ("add", (500, 70), [0]),        # not the innermost: sequential order
    ("multiply", (9, 1000), [1]),
])
def test_vectorized_and_parallel_reduce_matches_interpreter(body, shape, dims):
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    out = [s for d, s in enumerate(shape) if d not in dims]
    to = f"tensor<{'x'.join(map(str, out))}xf32>"
    init = "0xFF800000" if body == "maximum" else ("1.0" if body == "multiply" else "0.0")
    text = f"""func.func @main(%a: {t}) -> {to} {{
  %c = stablehlo.constant dense<{init}> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %c) applies stablehlo.{body} across dimensions = {dims}
    : ({t}, tensor<f32>) -> {to}
  return %0 : {to}
}}"""
    x = RNG.standard_normal(shape).astype(np.float32)
    if body == "multiply":
        x = (1 + x * 1e-3).astype(np.float32)
    run_both(text, [x], rtol=2e-5, atol=2e-4)


SOFTMAX = """func.func @main(%x: tensor<128x300xf32>) -> tensor<128x300xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
    : (tensor<128x300xf32>, tensor<f32>) -> tensor<128xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<128xf32>) -> tensor<128x300xf32>
  %d = stablehlo.subtract %x, %mb : tensor<128x300xf32>
  %e = stablehlo.exponential %d : tensor<128x300xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
    : (tensor<128x300xf32>, tensor<f32>) -> tensor<128xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<128xf32>) -> tensor<128x300xf32>
  %y = stablehlo.divide %e, %sb : tensor<128x300xf32>
  return %y : tensor<128x300xf32>
}"""


def test_softmax_recomputes_exp_instead_of_storing_it():
    x = (RNG.standard_normal((128, 300)) * 4).astype(np.float32)
    exe, (y,) = run_both(SOFTMAX, [x], rtol=1e-5, atol=1e-7)
    # exp(x - max) is recomputed by its users, never stored; the two row reductions and
    # the division are one row kernel (rowfusion), so the row sums stay in registers
    assert exe.stats["temp_bytes"] == 0
    assert exe.stats["kernel_count"] == 1
    np.testing.assert_allclose(y.sum(1), 1.0, rtol=1e-5)


def _mm(x: str, y: str, out: str, n: int = 128) -> str:
    t = f"tensor<{n}x{n}xf32>"
    return (f"  %{out} = stablehlo.dot_general %{x}, %{y}, contracting_dims = [1] x [0]"
            f" : ({t}, {t}) -> {t}\n")


def _row_sum(x: str, out: str, n: int = 128) -> str:
    return (f"  %{out} = stablehlo.reduce(%{x} init: %z) applies stablehlo.add across "
            f"dimensions = [1] : (tensor<{n}x{n}xf32>, tensor<f32>) -> tensor<{n}xf32>\n")


def test_in_place_reuse_only_for_same_index_reads():
    t = "tensor<128x128xf32>"
    body = (_mm("a", "b", "0") + f"  %1 = stablehlo.exponential %0 : {t}\n"
            f"  %2 = stablehlo.negate %1 : {t}\n" + _mm("2", "b", "3")
            + f"  %4 = stablehlo.transpose %3, dims = [1, 0] : ({t}) -> {t}\n"
            f"  %5 = stablehlo.negate %4 : {t}\n" + _mm("5", "b", "6") + _row_sum("6", "7"))
    text = (f"func.func @main(%a: {t}, %b: {t}) -> tensor<128xf32> {{\n"
            f"  %z = stablehlo.constant dense<0.0> : tensor<f32>\n{body}"
            f"  return %7 : tensor<128xf32>\n}}")
    a = (RNG.standard_normal((128, 128)) * 0.01).astype(np.float32)
    b = (RNG.standard_normal((128, 128)) * 0.1).astype(np.float32)
    exe, _ = run_both(text, [a, b], rtol=1e-4, atol=1e-4)
    stages = "\n".join(exe.stages)
    # negate(exp(%0)) writes over %0; negate(transpose(%3)) must not write over %3
    assert "(1 in place," in stages
    assert exe.stats["temp_bytes"] == 2 * 128 * 128 * 4


def test_scheduler_interleaves_producers_and_consumers():
    t = "tensor<128x128xf32>"
    body = "".join(_mm("a", w, f"p{i}") for i, w in enumerate(("b", "c", "d")))
    body += "".join(_row_sum(f"p{i}", f"s{i}") for i in range(3))
    r = "tensor<128xf32>"
    body += f"  %u = stablehlo.add %s0, %s1 : {r}\n  %v = stablehlo.add %u, %s2 : {r}\n"
    text = (f"func.func @main(%a: {t}, %b: {t}, %c: {t}, %d: {t}) -> {r} {{\n"
            f"  %z = stablehlo.constant dense<0.0> : tensor<f32>\n{body}"
            f"  return %v : {r}\n}}")
    args = [RNG.standard_normal((128, 128)).astype(np.float32) for _ in range(4)]
    exe, _ = run_both(text, args, rtol=1e-4, atol=1e-3)
    # program order keeps the three products alive together (3 x 64 KB); the schedule
    # reduces each one right after its product: one product and the small sums
    assert exe.stats["temp_bytes"] <= 64 * 1024 + 3 * 512
    moved = re.search(r"(\d+) of \d+ kernels moved", "\n".join(exe.stages))
    assert moved and int(moved.group(1)) > 0


def test_worker_pool_concurrent_calls_and_shutdown(monkeypatch):
    import gc
    import threading

    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    text = """func.func @main(%a: tensor<2048x256xf32>) -> tensor<2048x256xf32> {
  %0 = stablehlo.exponential %a : tensor<2048x256xf32>
  %1 = stablehlo.add %0, %a : tensor<2048x256xf32>
  return %1 : tensor<2048x256xf32>
}"""
    exe = compile_cpu(text, cache=False)
    assert exe._jit.address("oxla_pool_shutdown")  # the runtime object is loaded
    x = RNG.standard_normal((2048, 256)).astype(np.float32)
    want = np.exp(x.astype(np.float64)) + x
    bad: list[int] = []

    def run(e) -> None:
        for _ in range(20):  # the pool, or spawned threads when another call holds it
            if not np.allclose(e(x)[0], want, rtol=1e-6, atol=1e-6):
                bad.append(1)

    threads = [threading.Thread(target=run, args=(exe,)) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad
    del exe, threads
    gc.collect()  # joins the workers before the code is freed; a crash would end pytest
    again = compile_cpu(text, cache=False)
    np.testing.assert_allclose(again(x)[0], want, rtol=1e-6, atol=1e-6)
