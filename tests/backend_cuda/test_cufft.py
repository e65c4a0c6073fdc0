"""cuFFT for ``stablehlo.fft``: the optional library, the call's arguments (types, sizes, the inverse scale)
and the numpy semantics the simulated device runs, checked against the interpreter for
every fft type, ranks 1 to 3 and both precisions, end to end through the cuda backend
on the simulated device."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

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


FAKE_FFT = Path(__file__).parents[1] / "data" / "fake_fft.c"
VENDOR_CASES = [("FFT", "f32", (8,)), ("IFFT", "f64", (3, 5)), ("RFFT", "f32", (6,)),
                ("RFFT", "f64", (2, 3, 4)), ("IRFFT", "f32", (8,)), ("IRFFT", "f64", (4, 7))]


@pytest.fixture(scope="session")
def fake_fft_library(tmp_path_factory) -> Path:
    """``tests/data/fake_fft.c`` built as ``lib/libhipfft.so`` (it also has cuFFT's entry
    points): a direct-DFT stand-in for the vendor FFT libraries, on host memory."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the FFT libraries' stand-in")
    lib = tmp_path_factory.mktemp("fakefft") / "lib"
    lib.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib / "libhipfft.so"),
                    str(FAKE_FFT), "-lm"], check=True)
    return lib / "libhipfft.so"


def check_vendor_fft(fft: gfft.VendorFft, lib: ctypes.CDLL, stream) -> None:
    """Runs every fft type (ranks 1-3, both precisions, batch 2) through ``fft``, a
    :class:`~oxla_codegen_llvm.gpu.fft.VendorFft` over the stand-in library, on numpy
    buffers as "device" memory, and compares with numpy's FFT: the plan's sizes and
    type, the entry point, the c2r scratch copy and the inverse scale must all be right
    for the numbers to agree."""
    rng = np.random.default_rng(0)
    keep = []

    def copy(dst, src, nbytes, _stream):
        ctypes.memmove(dst, src, nbytes)

    def scale(ptr, count, factor, dtype, handle):
        assert handle == stream_value
        ct = ctypes.c_double if dtype == "f64" else ctypes.c_float
        arr = np.ctypeslib.as_array((ct * count).from_address(ptr))
        arr *= factor

    stream_value = stream.value if isinstance(stream, ctypes.c_void_p) else int(stream)
    fft._copy, fft._scale = copy, scale
    for kind, dt, n in VENDOR_CASES:
        real = np.float64 if dt == "f64" else np.float32
        cplx = np.complex128 if dt == "f64" else np.complex64
        batch, axes = 2, tuple(range(1, len(n) + 1))
        if kind == "RFFT":
            x = rng.standard_normal((batch, *n)).astype(real)
            want = np.fft.rfftn(x, axes=axes)
        elif kind == "IRFFT":
            x = np.fft.rfftn(rng.standard_normal((batch, *n)), axes=axes).astype(cplx)
            want = np.fft.irfftn(x, s=n, axes=axes)
        else:
            x = (rng.standard_normal((batch, *n)) + 1j * rng.standard_normal((batch, *n))).astype(cplx)
            want = np.fft.fftn(x, axes=axes) if kind == "FFT" else np.fft.ifftn(x, axes=axes)
        out = np.zeros(want.shape, want.real.dtype if kind == "IRFFT" else cplx)
        work = np.zeros_like(x)
        keep += [x, out, work]
        call = gfft.fft_call(kind, dt, n, batch, x.ctypes.data, out.ctypes.data, work.ctypes.data)
        x0 = x.copy()
        fft.run(call, stream)
        tol = 1e-12 if dt == "f64" else 2e-5
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol * np.abs(want).max(),
                                   err_msg=f"{kind} {dt} {n}")
        np.testing.assert_array_equal(x, x0)  # a c2r input is transformed from `work`
    assert ctypes.c_void_p.in_dll(lib, "fake_last_stream").value == (stream_value or None)
    plans = len(fft._plans)
    fft.run(gfft.fft_call("FFT", "f32", (8,), 2, keep[0].ctypes.data, keep[1].ctypes.data,
                          keep[2].ctypes.data), stream)
    assert len(fft._plans) == plans  # one plan per distinct transform
    fft.close()
    assert ctypes.c_int.in_dll(lib, "fake_destroyed").value >= plans


def test_cufft_calls_on_stand_in_library(fake_fft_library):
    """cuFFT's int plan handles and entry points (``cufft.ABI``) through the shared
    :class:`~oxla_codegen_llvm.gpu.fft.VendorFft`, against the stand-in."""
    lib = gfft.bind_fft(ctypes.CDLL(str(fake_fft_library)), cufft.ABI)
    check_vendor_fft(gfft.VendorFft(lib, cufft.ABI, None, None), lib, 0x1234)


def test_vendor_fft_errors_name_the_call(fake_fft_library):
    lib = gfft.bind_fft(ctypes.CDLL(str(fake_fft_library)), cufft.ABI)
    fft = gfft.VendorFft(lib, cufft.ABI, None, None)
    bad = gfft.FftCall(kind="c2c", dtype="f32", direction=-1, n=(0,), batch=1, src=0, dst=0,
                       work=0, in_bytes=0, out_bytes=0)
    with pytest.raises(cufft.OxlaError, match="cufftPlanMany failed with cufftResult 4"):
        fft.run(bad, 0)
