"""Random-number rules (spec ``rng``, ``rng_bit_generator``): the spec's example,
Random123 known-answer vectors for the two block ciphers, and XLA's bits via JAX when
JAX is installed."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.interpreter.rules.rng import philox4x32, threefry2x32
from oxla.ir import parse_module


def rbg(alg: str, state, shape: tuple[int, ...], ty: str):
    n = len(state)
    dims = "".join(f"{d}x" for d in shape)
    st = ", ".join(str(int(s)) for s in state)
    text = f"""func.func @main() -> (tensor<{n}xui64>, tensor<{dims}{ty}>) {{
      %s = stablehlo.constant dense<[{st}]> : tensor<{n}xui64>
      %a, %b = stablehlo.rng_bit_generator %s, algorithm = {alg}
        : (tensor<{n}xui64>) -> (tensor<{n}xui64>, tensor<{dims}{ty}>)
      return %a, %b : tensor<{n}xui64>, tensor<{dims}{ty}> }}"""
    m = parse_module(text, "test.mlir")
    return run_function(m, "main", [], Context(module=m))


def test_three_fry_spec_example():
    state, out = rbg("THREE_FRY", [1, 2], (2, 2), "ui64")
    np.testing.assert_array_equal(state, [1, 6])
    np.testing.assert_array_equal(out, np.array(
        [[9236835810183407956, 16087790271692313299],
         [18212823393184779219, 2658481902456610144]], np.uint64))


def test_threefry2x32_known_answers():
    z = np.zeros(1, np.uint32)
    assert [int(v[0]) for v in threefry2x32(z, z, 0, 0)] == [0x6B200159, 0x99BA4EFE]
    x = threefry2x32(np.array([0x243F6A88], np.uint32), np.array([0x85A308D3], np.uint32),
                     0x13198A2E, 0x03707344)
    assert [int(v[0]) for v in x] == [0xC4923A9C, 0x483DF7A0]


def test_philox4x32_known_answer():
    z = np.zeros(1, np.uint32)
    assert [int(v[0]) for v in philox4x32([z, z, z, z], 0, 0)] == [
        0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


def test_state_advances_by_blocks():
    # THREE_FRY 32-bit: the first even dimension is halved -> 3 x 2 blocks.
    state, _ = rbg("THREE_FRY", [7, 10], (3, 4), "ui32")
    np.testing.assert_array_equal(state, [7, 16])
    # PHILOX, 3-word state: 10 u32 words need 3 blocks of 4; the counter carries.
    state, _ = rbg("PHILOX", [7, 2**64 - 2, 5], (10,), "ui32")
    np.testing.assert_array_equal(state, np.array([7, 1, 6], np.uint64))
    # PHILOX, 2-word state: counter is (state[1], state[0]); only its low word returns.
    state, _ = rbg("PHILOX", [7, 3], (4,), "ui64")
    np.testing.assert_array_equal(state, [7, 5])


def test_outputs_are_deterministic_and_typed():
    for ty, dt in (("i32", np.int32), ("ui8", np.uint8), ("f32", np.float32)):
        _, a = rbg("DEFAULT", [1, 2], (5,), ty)
        _, b = rbg("DEFAULT", [1, 2], (5,), ty)
        assert a.dtype == dt and a.shape == (5,)
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_rng_uniform_in_range_and_deterministic():
    text = """func.func @main() -> tensor<1000xf32> {
      %a = stablehlo.constant dense<2.0> : tensor<f32>
      %b = stablehlo.constant dense<3.0> : tensor<f32>
      %s = stablehlo.constant dense<[1000]> : tensor<1xi64>
      %r = stablehlo.rng %a, %b, %s, distribution = UNIFORM
        : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<1000xf32>
      return %r : tensor<1000xf32> }"""
    m = parse_module(text, "test.mlir")
    (r1,) = run_function(m, "main", [], Context(module=m))
    (r2,) = run_function(m, "main", [], Context(module=m))
    assert r1.dtype == np.float32 and (r1 >= 2).all() and (r1 < 3).all()
    np.testing.assert_array_equal(r1, r2)


_SHAPES = ((2, 2), (7,), (3, 5), (1,), (4, 3, 2), (5, 3))


@pytest.mark.parametrize("alg", ["THREE_FRY", "PHILOX", "DEFAULT"])
def test_bits_match_xla_through_jax(alg):
    jax = pytest.importorskip("jax")
    from jax import lax

    was_x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        _compare_with_jax(jax, lax, alg)
    finally:  # a process-wide flag: left on, later JAX tests trace in float64
        jax.config.update("jax_enable_x64", was_x64)


def _compare_with_jax(jax, lax, alg: str) -> None:
    algs = {"THREE_FRY": lax.RandomAlgorithm.RNG_THREE_FRY,
            "PHILOX": lax.RandomAlgorithm.RNG_PHILOX,
            "DEFAULT": lax.RandomAlgorithm.RNG_DEFAULT}
    states = [[1, 2], [2**64 - 16, 2**64 - 2]]
    if alg != "THREE_FRY":
        states.append([5, 2**64 - 1, 7])
    for state in states:
        for ty, dt in (("ui32", np.uint32), ("ui64", np.uint64), ("i32", np.int32),
                       ("i64", np.int64)):
            for shape in _SHAPES:
                key = jax.numpy.asarray(np.array(state, np.uint64))
                try:
                    js, jo = lax.rng_bit_generator(key, shape, dtype=dt, algorithm=algs[alg])
                except Exception:  # dtypes JAX does not offer for this algorithm
                    continue
                os_, oo = rbg(alg, state, shape, ty)
                np.testing.assert_array_equal(np.asarray(js), os_)
                np.testing.assert_array_equal(np.asarray(jo), oo)
