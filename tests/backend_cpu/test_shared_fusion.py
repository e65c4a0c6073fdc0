"""A value read by several ops of one loop kernel at the kernel's own index is computed
once inside it (``oxla.lowering.fusion._share_in_kernel``), not materialized, and
JAX's threefry (an unrolled 5-trip ``while``, ``while_unroll``) becomes one loop. Every
case against the interpreter; the JAX cases also against JAX's own output."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(5)
ROT = (13, 15, 26, 6, 17, 29, 16, 24)


def _threefry_like(shape: tuple[int, ...], rounds: int) -> str:
    """``rounds`` threefry rounds on two u32 words (x0 += x1; x1 = rotl(x1, r) ^ x0):
    every intermediate word is read by two ops of the next round."""
    t = f"tensor<{'x'.join(map(str, shape))}xui32>"
    lines = []
    a, b = "%x0", "%x1"
    for j in range(rounds):
        r = ROT[j % len(ROT)]
        lines.append(f"""  %s{j} = stablehlo.add {a}, {b} : {t}
  %l{j} = stablehlo.constant dense<{r}> : {t}
  %h{j} = stablehlo.constant dense<{32 - r}> : {t}
  %p{j} = stablehlo.shift_left {b}, %l{j} : {t}
  %q{j} = stablehlo.shift_right_logical {b}, %h{j} : {t}
  %o{j} = stablehlo.or %p{j}, %q{j} : {t}
  %y{j} = stablehlo.xor %o{j}, %s{j} : {t}""")
        a, b = f"%s{j}", f"%y{j}"
    body = "\n".join(lines)
    return f"""func.func @main(%x0: {t}, %x1: {t}) -> {t} {{
{body}
  %r = stablehlo.xor {a}, {b} : {t}
  return %r : {t}
}}"""


@pytest.mark.parametrize("shape", [(1,), (1000,), (7, 13), (2, 3, 5), (4099,)])
@pytest.mark.parametrize("rounds", [1, 4, 20])
def test_threefry_rounds_are_one_loop(shape, rounds):
    x0 = RNG.integers(0, 2**32, shape, dtype=np.uint32)
    x1 = RNG.integers(0, 2**32, shape, dtype=np.uint32)
    exe, _ = run_both(_threefry_like(shape, rounds), [x0, x1])
    assert exe.stats["kernel_count"] == 1
    assert exe.stats["temp_bytes"] == 0


@pytest.mark.parametrize("dtype,et", [(np.float64, "f64"), (np.int8, "i8"),
                                      (np.float32, "f32")])
def test_shared_value_of_one_kernel_is_not_stored(dtype, et):
    t = f"tensor<33x17x{et}>"
    text = f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %s = stablehlo.multiply %x, %y : {t}
  %a = stablehlo.add %s, %x : {t}
  %m = stablehlo.maximum %s, %a : {t}
  %r = stablehlo.subtract %m, %s : {t}
  return %r : {t}
}}"""
    x = (RNG.standard_normal((33, 17)) * 5).astype(dtype)
    y = (RNG.standard_normal((33, 17)) * 5).astype(dtype)
    exe, _ = run_both(text, [x, y])
    assert exe.stats["kernel_count"] == 1
    assert exe.stats["temp_bytes"] == 0


def test_a_value_read_at_another_index_stays_materialized():
    """``%s`` (too large to recompute: 16 ops) is read at the output's index by ``add``
    and transposed by ``transpose``: computing it inside the kernel would need it at two
    indices, so it is stored."""
    t = "tensor<9x9xf32>"
    chain = "\n".join(f"  %c{i + 1} = stablehlo.multiply %c{i}, %y : {t}" for i in range(15))
    text = f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %c0 = stablehlo.multiply %x, %y : {t}
{chain}
  %s = stablehlo.tanh %c15 : {t}
  %st = stablehlo.transpose %s, dims = [1, 0] : ({t}) -> {t}
  %a = stablehlo.add %s, %st : {t}
  %r = stablehlo.multiply %a, %s : {t}
  return %r : {t}
}}"""
    x, y = (RNG.standard_normal((9, 9)).astype(np.float32) for _ in range(2))
    exe, got = run_both(text, [x, y], rtol=1e-6)
    assert exe.stats["kernel_count"] == 2
    s = np.tanh(x * y ** 16)
    np.testing.assert_allclose(got[0], (s + s.T) * s, rtol=1e-5, atol=1e-6)


def test_a_value_shared_by_two_kernels_stays_materialized():
    t = "tensor<5x6xf32>"
    chain = "\n".join(f"  %c{i + 1} = stablehlo.multiply %c{i}, %x : {t}" for i in range(15))
    text = f"""func.func @main(%x: {t}) -> ({t}, {t}) {{
  %c0 = stablehlo.multiply %x, %x : {t}
{chain}
  %s = stablehlo.exponential %c15 : {t}
  %a = stablehlo.add %s, %s : {t}
  %b = stablehlo.multiply %s, %x : {t}
  %c = stablehlo.sine %b : {t}
  return %a, %c : {t}, {t}
}}"""
    x = RNG.uniform(-1, 1, (5, 6)).astype(np.float32)
    exe, _ = run_both(text, [x], rtol=1e-5, atol=1e-6)
    # %a and %c are two results (two kernels) that both read %s (16 ops: not recomputed)
    assert exe.stats["kernel_count"] == 3


@pytest.mark.parametrize("shape", [(5,), (7, 13), (2, 3, 5), (1 << 14,)])
@pytest.mark.parametrize("kind", ["uniform", "bits8", "bits16", "bits32", "normal"])
def test_jax_random_matches_jax(shape, kind):
    jax = pytest.importorskip("jax")
    from oxla_backend_cpu.backend import CPUBackend

    from oxla.ir import parse_module
    from oxla.protocols import CompileOptions

    fns = {
        "uniform": lambda k: jax.random.uniform(jax.random.wrap_key_data(k), shape),
        "normal": lambda k: jax.random.normal(jax.random.wrap_key_data(k), shape),
        "bits8": lambda k: jax.random.bits(jax.random.wrap_key_data(k), shape, np.uint8),
        "bits16": lambda k: jax.random.bits(jax.random.wrap_key_data(k), shape, np.uint16),
        "bits32": lambda k: jax.random.bits(jax.random.wrap_key_data(k), shape, np.uint32),
    }
    key = np.array([7, 42], np.uint32)
    text = jax.jit(fns[kind]).lower(key).as_text()
    exe = CPUBackend().compile(parse_module(text, "rng.mlir"), CompileOptions())
    want = np.asarray(jax.jit(fns[kind])(key))
    got = np.asarray(exe(key)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    if kind == "normal":  # erf_inv: a few ulp apart from XLA's
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    else:
        np.testing.assert_array_equal(got, want)
    assert exe.stats["kernel_count"] == 1  # all of it one loop (was 5 loops per trip)
