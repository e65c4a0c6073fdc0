"""cuFFT for ``stablehlo.fft``: the optional library, the call's arguments (types, sizes, the inverse scale)
and the numpy semantics the simulated device runs, checked against the interpreter for
every fft type, ranks 1 to 3 and both precisions, end to end through the cuda backend
on the simulated device."""

from __future__ import annotations

import re

import numpy as np
import pytest
from oxla_backend_cuda import cufft
from oxla_codegen_llvm.gpu import fft as gfft

from tests.backend_cuda.conftest import check_against_interpreter, compile_cuda

CASES = [  # (type, operand type, result type, fft_length)
    ("FFT", "4x8xcomplex<f32>", "4x8xcomplex<f32>", [8]),
    ("IFFT", "2x3x5xcomplex<f64>", "2x3x5xcomplex<f64>", [3, 5]),
    ("RFFT", "3x6xf32", "3x4xcomplex<f32>", [6]),
    ("RFFT", "2x2x3x4xf64", "2x2x3x3xcomplex<f64>", [2, 3, 4]),
    ("IRFFT", "3x5xcomplex<f32>", "3x8xf32", [8]),
    ("IRFFT", "2x4x4xcomplex<f64>", "2x4x7xf64", [4, 7]),
]


def _program(kind: str, operand: str, result: str, length: list[int]) -> str:
    return f"""
func.func @main(%x: tensor<{operand}>) -> tensor<{result}> {{
  %y = stablehlo.fft %x, type = {kind}, length = {length}
      : (tensor<{operand}>) -> tensor<{result}>
  return %y : tensor<{result}>
}}"""


def _input(operand: str, rng) -> np.ndarray:
    dims, et = re.fullmatch(r"((?:\d+x)+)(.+)", operand).groups()
    shape = tuple(int(d) for d in dims.split("x")[:-1])
    if et.startswith("complex"):
        dt = np.complex128 if "f64" in et else np.complex64
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(np.float64 if et == "f64" else np.float32)


def test_library_is_optional_and_named():
    """cuFFT loads only at a GPU's first FFT; without the wheel the error names it."""
    cufft.load_library.cache_clear()
    try:
        lib = cufft.load_library()
    except cufft.OxlaError as exc:
        assert cufft.WHEEL in str(exc)
    else:
        assert lib.cufftPlanMany is not None and lib.cufftExecZ2D is not None
    assert set(cufft.EXEC) == set(cufft.TYPES)


def test_call_arguments():
    call = gfft.fft_call("IRFFT", "f32", (4, 8), 3, 10, 20, 30)
    assert (call.kind, call.direction) == ("c2r", gfft.INVERSE)
    assert call.in_bytes == 3 * 4 * 5 * 8 and call.out_bytes == 3 * 32 * 4
    assert call.scale == 1 / 32 and call.in_place_input == 30  # transformed from work
    fwd = gfft.fft_call("FFT", "f64", (5,), 2, 10, 20, 30)
    assert fwd.kind == "c2c" and fwd.scale == 1.0 and fwd.in_place_input == 10
    with pytest.raises(gfft.NotSupportedError, match="ranks 1 to 3"):
        gfft.fft_call("FFT", "f32", (2, 2, 2, 2), 1, 0, 0, 0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_fft_matches_interpreter_on_sim(sim, case):
    x = _input(case[1], np.random.default_rng(3))
    tol = 1e-12 if "f64" in case[1] else 2e-5
    check_against_interpreter(_program(*case), [x], rtol=tol, atol=tol * 10)
    assert sim.device.stats["ffts"] >= 1
    assert x.all()  # the operand is the caller's: never overwritten


def test_c2r_input_is_copied_first(sim):
    """cuFFT's C2R overwrites its input: the reference poisons the scratch copy, and the
    operand (here a program input read again after the fft) stays intact."""
    text = """
func.func @main(%x: tensor<4x3xcomplex<f32>>) -> (tensor<4x4xf32>, tensor<4x3xcomplex<f32>>) {
  %y = stablehlo.fft %x, type = IRFFT, length = [4] : (tensor<4x3xcomplex<f32>>) -> tensor<4x4xf32>
  %z = stablehlo.add %x, %x : tensor<4x3xcomplex<f32>>
  return %y, %z : tensor<4x4xf32>, tensor<4x3xcomplex<f32>>
}"""
    x = _input("4x3xcomplex<f32>", np.random.default_rng(4))
    check_against_interpreter(text, [x], rtol=2e-5, atol=2e-5)


def test_fft_steps_in_program():
    exe = compile_cuda(_program(*CASES[4]))
    steps = [s for s in exe.program.steps if s["op"] == "fft"]
    assert len(steps) == 1 and steps[0]["type"] == "IRFFT" and steps[0]["length"] == [8]
