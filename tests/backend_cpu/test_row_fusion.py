"""Row fusion (:mod:`oxla_backend_cpu.rowfusion`): reductions over trailing dimensions and
their elementwise consumer in one kernel, checked against the interpreter on softmax,
layer norm and logsumexp patterns (NaN and infinite rows included), with the fused
plans' kernel counts and arena sizes, and patterns that must not be fused."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(11)
DT = {"f32": np.float32, "f64": np.float64, "f16": np.float16}


def _t(shape, et: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def _softmax(shape, et: str) -> str:
    rows, n = shape[:-1], len(shape)
    x, r, s = _t(shape, et), _t(rows, et), _t((), et)
    bd = list(range(n - 1))
    red = f"dimensions = [{n - 1}]"
    return f"""func.func @main(%x: {x}) -> {x} {{
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %ni = stablehlo.convert %ninf : (tensor<f32>) -> {s}
  %zero = stablehlo.constant dense<0.0> : {s}
  %m = stablehlo.reduce(%x init: %ni) applies stablehlo.maximum across {red}
    : ({x}, {s}) -> {r}
  %mb = stablehlo.broadcast_in_dim %m, dims = {bd} : ({r}) -> {x}
  %d = stablehlo.subtract %x, %mb : {x}
  %e = stablehlo.exponential %d : {x}
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across {red}
    : ({x}, {s}) -> {r}
  %sb = stablehlo.broadcast_in_dim %sum, dims = {bd} : ({r}) -> {x}
  %y = stablehlo.divide %e, %sb : {x}
  return %y : {x}
}}"""


def _layer_norm(shape, et: str, return_mean: bool = False) -> str:
    """JAX's lowering: mean and variance through ``[R, 1]`` broadcasts, scale and shift
    by ``[C]`` vectors."""
    rows, c = shape[:-1], shape[-1]
    n = len(shape)
    x, r, r1 = _t(shape, et), _t(rows, et), _t(rows + (1,), et)
    v, s = _t((c,), et), _t((), et)
    bd = list(range(n - 1))
    red = f"dimensions = [{n - 1}]"
    results = f"{x}, {r}" if return_mean else x
    ret = f"%y, %mean1 : {x}, {r}" if return_mean else f"%y : {x}"
    mean1 = (f"  %mean1 = stablehlo.reshape %mean : ({r1}) -> {r}\n" if return_mean else "")
    return f"""func.func @main(%x: {x}, %g: {v}, %b: {v}) -> ({results}) {{
  %zero = stablehlo.constant dense<0.0> : {s}
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across {red}
    : ({x}, {s}) -> {r}
  %sum1 = stablehlo.broadcast_in_dim %sum, dims = {bd} : ({r}) -> {r1}
  %cn = stablehlo.constant dense<{float(c)}> : {s}
  %cnb = stablehlo.broadcast_in_dim %cn, dims = [] : ({s}) -> {r1}
  %mean = stablehlo.divide %sum1, %cnb : {r1}
  %meanb = stablehlo.broadcast_in_dim %mean, dims = {bd + [n - 1]} : ({r1}) -> {x}
  %d = stablehlo.subtract %x, %meanb : {x}
  %sq = stablehlo.multiply %d, %d : {x}
  %ss = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across {red}
    : ({x}, {s}) -> {r}
  %ss1 = stablehlo.broadcast_in_dim %ss, dims = {bd} : ({r}) -> {r1}
  %var = stablehlo.divide %ss1, %cnb : {r1}
  %eps = stablehlo.constant dense<1.0e-05> : {s}
  %epsb = stablehlo.broadcast_in_dim %eps, dims = [] : ({s}) -> {r1}
  %ve = stablehlo.add %var, %epsb : {r1}
  %inv = stablehlo.rsqrt %ve : {r1}
  %invb = stablehlo.broadcast_in_dim %inv, dims = {bd + [n - 1]} : ({r1}) -> {x}
  %nrm = stablehlo.multiply %d, %invb : {x}
  %gb = stablehlo.broadcast_in_dim %g, dims = [{n - 1}] : ({v}) -> {x}
  %sc = stablehlo.multiply %nrm, %gb : {x}
  %bb = stablehlo.broadcast_in_dim %b, dims = [{n - 1}] : ({v}) -> {x}
  %y = stablehlo.add %sc, %bb : {x}
{mean1}  return {ret}
}}"""


def _special_rows(x: np.ndarray) -> np.ndarray:
    """Row 0 all -inf, row 1 one NaN, row 2 one +inf, row 3 one -inf (rows that exist)."""
    flat = x.reshape(-1, x.shape[-1])
    specials = [(slice(None), -np.inf), (0, np.nan), (-1, np.inf), (-1, -np.inf)]
    for row, (col, val) in enumerate(specials[:len(flat)]):
        flat[row, col] = val
    return x


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (3, 4, 33), (64, 1000), (300, 64)])
@pytest.mark.parametrize("et", ["f32", "f64", "f16"])
def test_softmax_is_one_kernel_without_temporaries(shape, et):
    x = _special_rows((RNG.standard_normal(shape) * 3).astype(DT[et]))
    tol = 2e-3 if et == "f16" else 1e-5
    exe, (y,) = run_both(_softmax(shape, et), [x], rtol=tol, atol=tol * 1e-2)
    assert exe.stats["kernel_count"] == 1
    assert exe.stats["temp_bytes"] == 0
    if len(x.reshape(-1, shape[-1])) > 4 and et != "f16":  # rows without specials sum to 1
        np.testing.assert_allclose(y.reshape(-1, shape[-1])[4:].astype(np.float64).sum(1),
                                   1.0, rtol=10 * tol)


@pytest.mark.parametrize("shape", [(4, 16), (2, 3, 64), (128, 1024), (7, 1)])
@pytest.mark.parametrize("et", ["f32", "f64"])
def test_layer_norm_is_one_kernel_without_temporaries(shape, et):
    x = _special_rows(RNG.standard_normal(shape).astype(DT[et]))
    g = RNG.standard_normal(shape[-1:]).astype(DT[et])
    b = RNG.standard_normal(shape[-1:]).astype(DT[et])
    exe, _ = run_both(_layer_norm(shape, et), [x, g, b], rtol=1e-4, atol=1e-5)
    assert exe.stats["kernel_count"] == 1
    assert exe.stats["temp_bytes"] == 0


def test_returned_row_mean_is_written_by_the_row_kernel():
    shape = (33, 40)
    x = _special_rows(RNG.standard_normal(shape).astype(np.float32))
    g, b = (RNG.standard_normal(40).astype(np.float32) for _ in range(2))
    exe, (_, mean) = run_both(_layer_norm(shape, "f32", return_mean=True), [x, g, b],
                              rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mean[4:], x[4:].astype(np.float64).mean(1), rtol=1e-5,
                               atol=1e-6)


LOGSUMEXP = """func.func @main(%x: tensor<{R}x{C}xf32>) -> tensor<{R}xf32> {{
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
    : (tensor<{R}x{C}xf32>, tensor<f32>) -> tensor<{R}xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<{R}xf32>) -> tensor<{R}x{C}xf32>
  %d = stablehlo.subtract %x, %mb : tensor<{R}x{C}xf32>
  %e = stablehlo.exponential %d : tensor<{R}x{C}xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
    : (tensor<{R}x{C}xf32>, tensor<f32>) -> tensor<{R}xf32>
  %l = stablehlo.log %s : tensor<{R}xf32>
  %y = stablehlo.add %l, %m : tensor<{R}xf32>
  return %y : tensor<{R}xf32>
}}"""


@pytest.mark.parametrize("r,c", [(1, 1), (9, 300), (1000, 100)])
def test_logsumexp_row_consumer(r, c):
    x = _special_rows((RNG.standard_normal((r, c)) * 5).astype(np.float32))
    exe, (y,) = run_both(LOGSUMEXP.format(R=r, C=c), [x], rtol=1e-5, atol=1e-6)
    assert exe.stats["kernel_count"] == 1 and exe.stats["temp_bytes"] == 0
    if r > 4:
        x64 = x[4:].astype(np.float64)
        want = np.log(np.exp(x64 - x64.max(1, keepdims=True)).sum(1)) + x64.max(1)
        np.testing.assert_allclose(y[4:], want, rtol=1e-5)


def test_several_trailing_dims_and_argmax_body():
    """A two-result reduce (max and its index, the argmax body) over the two trailing
    dimensions, its results read by the consumer and one of them returned."""
    text = """func.func @main(%x: tensor<6x5x8xf32>) -> (tensor<6x5x8xf32>, tensor<6xi32>) {
  %io = stablehlo.iota dim = 2 : tensor<6x5x8xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %m:2 = stablehlo.reduce(%x init: %ninf), (%io init: %z) across dimensions = [1, 2]
    : (tensor<6x5x8xf32>, tensor<6x5x8xi32>, tensor<f32>, tensor<i32>)
      -> (tensor<6xf32>, tensor<6xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%ai: tensor<i32>, %ci: tensor<i32>) {
      %gt = stablehlo.compare GT, %c, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %v = stablehlo.select %gt, %c, %a : tensor<i1>, tensor<f32>
      %i = stablehlo.select %gt, %ci, %ai : tensor<i1>, tensor<i32>
      stablehlo.return %v, %i : tensor<f32>, tensor<i32>
    }
  %mb = stablehlo.broadcast_in_dim %m#0, dims = [0] : (tensor<6xf32>) -> tensor<6x5x8xf32>
  %ib = stablehlo.broadcast_in_dim %m#1, dims = [0] : (tensor<6xi32>) -> tensor<6x5x8xi32>
  %if = stablehlo.convert %ib : (tensor<6x5x8xi32>) -> tensor<6x5x8xf32>
  %d = stablehlo.subtract %x, %mb : tensor<6x5x8xf32>
  %y = stablehlo.add %d, %if : tensor<6x5x8xf32>
  return %y, %m#1 : tensor<6x5x8xf32>, tensor<6xi32>
}"""
    x = _special_rows(RNG.standard_normal((6, 5, 8)).astype(np.float32))
    exe, _ = run_both(text, [x])
    assert exe.stats["kernel_count"] == 1 and exe.stats["temp_bytes"] == 0


def test_not_fused_when_a_row_value_is_read_at_another_row():
    """``x - reverse(max)``: row i reads row n-1-i's maximum, which the row kernel has not
    computed: the reduce stays a kernel of its own."""
    text = """func.func @main(%x: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1]
    : (tensor<16x32xf32>, tensor<f32>) -> tensor<16xf32>
  %r = stablehlo.reverse %m, dims = [0] : tensor<16xf32>
  %rb = stablehlo.broadcast_in_dim %r, dims = [0] : (tensor<16xf32>) -> tensor<16x32xf32>
  %y = stablehlo.subtract %x, %rb : tensor<16x32xf32>
  return %y : tensor<16x32xf32>
}"""
    x = RNG.standard_normal((16, 32)).astype(np.float32)
    exe, (y,) = run_both(text, [x])
    assert exe.stats["kernel_count"] == 2
    np.testing.assert_array_equal(y, x - x.max(1)[::-1, None])


def test_not_fused_when_the_row_value_has_another_reader():
    """The row sums feed both the scaled rows and a second, transposed use: two
    consumers, so the reduction is stored once and read by both."""
    text = """func.func @main(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
    : (tensor<8x8xf32>, tensor<f32>) -> tensor<8xf32>
  %a = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<8xf32>) -> tensor<8x8xf32>
  %b = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<8xf32>) -> tensor<8x8xf32>
  %y = stablehlo.divide %x, %a : tensor<8x8xf32>
  %w = stablehlo.multiply %x, %b : tensor<8x8xf32>
  return %y, %w : tensor<8x8xf32>, tensor<8x8xf32>
}"""
    x = RNG.standard_normal((8, 8)).astype(np.float32)
    exe, (y, w) = run_both(text, [x])
    assert exe.stats["kernel_count"] == 3
    np.testing.assert_allclose(w, x * x.sum(1)[None, :], rtol=1e-5)


def _row_kernel(text: str):
    from oxla_backend_cpu.policy import CPUPolicy
    from oxla_backend_cpu.rowfusion import RowKernel

    from oxla.ir import parse_module
    from oxla.lowering import fuse

    (k,) = [k for k in fuse(parse_module(text), CPUPolicy()).kernels if isinstance(k, RowKernel)]
    return k


def test_softmax_keeps_exp_in_the_output_row():
    """exp(x - max) is computed once per element: the sum's loop stores it in the output
    row and the division loads it back (RowKernel.stash)."""
    k = _row_kernel(_softmax((8, 16), "f32"))
    assert k.stash is not None and k.stash.owner_op.name == "stablehlo.exponential"
    assert k.stash_reduce is k.reduces[1]
    assert _row_kernel(_layer_norm((8, 16), "f32")).stash is None  # nothing expensive


def test_no_stash_when_the_consumer_reads_another_column():
    """``reverse(exp(x - max)) / sum``: column j reads element C-1-j, which the consumer
    may already have overwritten, so exp is recomputed."""
    text = _softmax((9, 33), "f32").replace(
        "%y = stablehlo.divide %e, %sb",
        "%er = stablehlo.reverse %e, dims = [1] : tensor<9x33xf32>\n"
        "  %y = stablehlo.divide %er, %sb")
    assert _row_kernel(text).stash is None
    x = _special_rows((RNG.standard_normal((9, 33)) * 3).astype(np.float32))
    exe, _ = run_both(text, [x], rtol=1e-5, atol=1e-7)
    assert exe.stats["kernel_count"] == 1


def _attention(n: int, consumer: str) -> str:
    """``softmax(a @ b) @ c`` (``c`` a vector) with the row kernel's consumer replaced by
    ``consumer`` (reads %s, the scores, %e = exp(%s - max) and %sb, the broadcast row
    sums); the small result cannot hold the temporaries."""
    t = f"tensor<{n}x{n}xf32>"
    r = f"tensor<{n}xf32>"
    return f"""func.func @main(%a: {t}, %b: {t}, %c: {r}) -> {r} {{
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : ({t}, {t}) -> {t}
  %m = stablehlo.reduce(%s init: %ninf) applies stablehlo.maximum across dimensions = [1]
    : ({t}, tensor<f32>) -> {r}
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : ({r}) -> {t}
  %d = stablehlo.subtract %s, %mb : {t}
  %e = stablehlo.exponential %d : {t}
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
    : ({t}, tensor<f32>) -> {r}
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0] : ({r}) -> {t}
{consumer}
  %y = stablehlo.dot_general %p, %c, contracting_dims = [1] x [0] : ({t}, {r}) -> {r}
  return %y : {r}
}}"""


@pytest.mark.parametrize("consumer,in_place", [
    ("  %p = stablehlo.divide %e, %sb : {t}", True),  # softmax: over the scores
    # reads the scores besides the stashed exp, which overwrites them: not in place
    ("  %q = stablehlo.divide %e, %sb : {t}\n  %p = stablehlo.multiply %q, %s : {t}", False),
    # reads other columns of the scores: not in place
    ("  %sr = stablehlo.reverse %s, dims = [1] : {t}\n"
     "  %p = stablehlo.subtract %sr, %mb : {t}", False),
])
def test_row_kernel_output_over_its_input(consumer, in_place):
    n = 96
    t = f"tensor<{n}x{n}xf32>"
    text = _attention(n, consumer.format(t=t))
    a, b = (RNG.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    c = RNG.standard_normal(n).astype(np.float32)
    exe, _ = run_both(text, [a, b, c], rtol=2e-4, atol=2e-4)
    assert exe.stats["temp_bytes"] == (1 if in_place else 2) * n * n * 4
    assert ("1 in place" in "\n".join(exe.stages)) == in_place
