"""cpu ``fft`` replays pocketfft (XLA's and scipy's FFT): its results equal the
interpreter's (scipy.fft in the operand's precision) bit for bit, so the conformance
files' 3-ULP checks against XLA hold (Bluestein lengths included), at every length:
short lines straight-line, longer ones (complex and real) in loop form."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu

sfft = pytest.importorskip("scipy.fft")
P = pytest.importorskip("oxla_backend_cpu.pocketfft")

RNG = np.random.default_rng(17)
LENGTHS = list(range(1, 34)) + [40, 45, 48, 49, 51, 53, 64, 77, 89, 96, 101, 121, 128, 169,
                                 211]  # 89, 101, 211: Bluestein (complex; 211 real too)


def _cplx(shape, dt):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


@pytest.mark.parametrize("rt,ct", [(np.float32, np.complex64), (np.float64, np.complex128)])
def test_model_matches_scipy_bitwise(rt, ct):
    """The numpy replay of the plans equals scipy.fft exactly, every kind and length."""
    for n in LENGTHS:
        x = _cplx((5, n), ct)
        np.testing.assert_array_equal(P.reference(x, "FFT", (n,)), sfft.fft(x), err_msg=n)
        np.testing.assert_array_equal(P.reference(x, "IFFT", (n,)), sfft.ifft(x), err_msg=n)
        xr = RNG.standard_normal((5, n)).astype(rt)
        np.testing.assert_array_equal(P.reference(xr, "RFFT", (n,)), sfft.rfft(xr), err_msg=n)
        h = sfft.rfft(RNG.standard_normal((5, n))).astype(ct)
        np.testing.assert_array_equal(P.reference(h, "IRFFT", (n,)), sfft.irfft(h, n),
                                      err_msg=n)


def test_plan_choice():
    assert P.cfft_factors(16) == [2, 8] and P.rfft_factors(32) == [2, 4, 4]
    assert P.cfft_factors(33) == [3, 11] and P.rfft_factors(17) == [17]
    assert P.good_size_cmplx(101) == 105 and P.good_size_cmplx(177) == 180
    # pocketfft's cost model: 53 and 51 stay direct, 89 goes Bluestein unless real
    assert not P.uses_bluestein(53) and not P.uses_bluestein(51)
    assert P.uses_bluestein(89) and not P.uses_bluestein(89, real=True)
    assert P.uses_bluestein(211, real=True)


def _fft_text(kind, xt, yt, length, shape):
    out = list(shape)
    if kind == "RFFT":
        out[-1] = length[-1] // 2 + 1
    if kind == "IRFFT":
        out[-1] = length[-1]
    ts = "x".join(map(str, shape)) + "x" + xt
    to = "x".join(map(str, out)) + "x" + yt
    return f"""
func.func @main(%x: tensor<{ts}>) -> tensor<{to}> {{
  %r = stablehlo.fft %x, type = {kind}, length = {list(length)} : (tensor<{ts}>) -> tensor<{to}>
  return %r : tensor<{to}>
}}"""


CASES = [
    ("RFFT", "f32", "complex<f32>", [17], (3, 4, 17)),
    ("RFFT", "f64", "complex<f64>", [17], (2, 17)),
    ("IRFFT", "complex<f64>", "f64", [33], (3, 17)),
    ("IRFFT", "complex<f32>", "f32", [15, 16, 32], (2, 15, 16, 17)),
    ("FFT", "complex<f32>", "complex<f32>", [16, 12], (2, 16, 12)),
    ("IFFT", "complex<f64>", "complex<f64>", [7, 13], (7, 13)),
    ("IFFT", "complex<f32>", "complex<f32>", [1, 22], (3, 1, 22)),
    ("RFFT", "f32", "complex<f32>", [6, 10], (2, 6, 10)),
    ("FFT", "complex<f64>", "complex<f64>", [11], (4, 11)),
    ("FFT", "complex<f32>", "complex<f32>", [101], (2, 101)),  # Bluestein
    ("IFFT", "complex<f64>", "complex<f64>", [89], (2, 89)),  # Bluestein
    ("RFFT", "f32", "complex<f32>", [53], (3, 53)),
]


@pytest.mark.parametrize("kind,xt,yt,length,shape", CASES)
def test_cpu_fft_bitwise_equals_interpreter(kind, xt, yt, length, shape):
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text = _fft_text(kind, xt, yt, length, shape)
    dt = {"f32": np.float32, "f64": np.float64, "complex<f32>": np.complex64,
          "complex<f64>": np.complex128}[xt]
    x = RNG.standard_normal(shape).astype(dt) if xt in ("f32", "f64") else _cplx(shape, dt)
    got = compile_cpu(text)(x)[0]
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(x)[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def _real_and_half(n, rt, ct, rows=3):
    x = RNG.standard_normal((rows, n)).astype(rt)
    h = sfft.rfft(RNG.standard_normal((rows, n))).astype(ct)
    return x, h


def _check_rfft_pair(n, rt, ct, rows=3, reference=True):
    """cpu RFFT and IRFFT of length ``n``: bit for bit scipy.fft (= the numpy replay,
    :func:`pocketfft.reference`), and within rounding of numpy's f64 FFT."""
    xt, yt = ("f32", "complex<f32>") if rt == np.float32 else ("f64", "complex<f64>")
    x, h = _real_and_half(n, rt, ct, rows)
    got = compile_cpu(_fft_text("RFFT", xt, yt, [n], (rows, n)))(x)[0]
    np.testing.assert_array_equal(got, sfft.rfft(x), err_msg=f"rfft {n}")
    back = compile_cpu(_fft_text("IRFFT", yt, xt, [n], (rows, n // 2 + 1)))(h)[0]
    np.testing.assert_array_equal(back, sfft.irfft(h, n), err_msg=f"irfft {n}")
    if reference:
        np.testing.assert_array_equal(got, P.reference(x, "RFFT", (n,)))
        np.testing.assert_array_equal(back, P.reference(h, "IRFFT", (n,)))
    eps = np.finfo(rt).eps * 16 * max(1.0, np.log2(n))  # outputs ~sqrt(n) and ~1
    np.testing.assert_allclose(got, np.fft.rfft(x.astype(np.float64)), rtol=0,
                               atol=eps * np.sqrt(n))
    np.testing.assert_allclose(back, np.fft.irfft(h.astype(np.complex128), n), rtol=0,
                               atol=eps)


# lengths: tiny and straight-line (1..13, 13 the generic pass), loop form from there:
# 2^k*3^j (864, 1296), odd composites (375 = 3*5^3, 1001 = 7*11*13: generic passes),
# primes direct (97, 53*2) and Bluestein (211, 4099), 16384 (7 radix-4 passes)
RLENGTHS = [1, 2, 3, 5, 7, 11, 13, 97, 106, 211, 375, 864, 1001, 1296, 4099, 16384]


@pytest.mark.parametrize("rt,ct", [(np.float32, np.complex64), (np.float64, np.complex128)])
@pytest.mark.parametrize("n", RLENGTHS)
def test_real_lines_any_length_bitwise(n, rt, ct):
    from oxla_backend_cpu.fft_pocket import looped

    assert looped(n, True) == (P.work(n, True) > 6000)
    _check_rfft_pair(n, rt, ct, reference=n <= 1296)


def test_loop_form_equals_scipy_at_every_small_length(monkeypatch):
    """With every line in loop form (the threshold at 0), each radix pass, the generic
    passes (primes 7..31) and n = 1 give scipy's bits, forward and backward."""
    import oxla_backend_cpu.fft_pocket as FP

    monkeypatch.setattr(FP, "LOOP_WORK", -1)
    for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 15, 17, 20, 25, 30, 31, 49, 60, 77):
        assert FP.looped(n, True) and FP.looped(n, False)
        _check_rfft_pair(n, np.float32, np.complex64, rows=2, reference=False)
        x = _cplx((2, n), np.complex128)
        text = _fft_text("IFFT", "complex<f64>", "complex<f64>", [n], (2, n))
        np.testing.assert_array_equal(compile_cpu(text)(x)[0], sfft.ifft(x), err_msg=n)
    x = _cplx((2, 1, 6), np.complex64)  # n = 1 scaled (1/6 lands on the first axis)
    text = _fft_text("IFFT", "complex<f32>", "complex<f32>", [1, 6], (2, 1, 6))
    np.testing.assert_array_equal(compile_cpu(text)(x)[0], sfft.ifftn(x, axes=(1, 2)))


@pytest.mark.parametrize("kind,length,shape", [
    ("RFFT", [12, 1000], (2, 12, 1000)),
    ("IRFFT", [12, 1000], (2, 12, 501)),
    ("RFFT", [3, 5, 600], (3, 5, 600)),
    ("IRFFT", [4, 6, 999], (4, 6, 500)),
])
def test_multidim_real_loop_form_bitwise(kind, length, shape):
    """rfftn/irfftn whose last axis is a loop-form real line: scipy.fft's bits."""
    axes = tuple(range(len(shape) - len(length), len(shape)))
    if kind == "RFFT":
        x = RNG.standard_normal(shape).astype(np.float32)
        got = compile_cpu(_fft_text(kind, "f32", "complex<f32>", length, shape))(x)[0]
        want = sfft.rfftn(x, axes=axes)
    else:
        x = sfft.rfftn(RNG.standard_normal(shape[:-1] + (length[-1],)), axes=axes)
        x = x.astype(np.complex128)
        got = compile_cpu(_fft_text(kind, "complex<f64>", "f64", length, shape))(x)[0]
        want = sfft.irfftn(x, length, axes=axes)
    np.testing.assert_array_equal(got, want)


def test_loop_form_code_does_not_grow_with_the_prime():
    """The generic passes' l and j loops are emitted as loops: a prime line's function
    grows far slower than the prime (was O(p^2) straight-line; the complex pass keeps
    one O(p) sum per butterfly)."""
    import llvmlite.ir as ir
    import oxla_backend_cpu.fft_pocket as FP

    sizes = {}
    for p, real in ((97, True), (269, True), (47, False), (109, False)):
        assert FP.looped(p, real) and not P.uses_bluestein(p, real)
        m = ir.Module("m")
        FP._line_fn(m, "r" if real else "c", p, True, 1.0, FP.F32, np.float32)
        sizes[p] = sum(len(b.instructions) for f in m.functions for b in f.blocks)
    assert sizes[269] < 1.5 * sizes[97] and sizes[109] < 1.5 * sizes[47], sizes


def test_straight_line_lengths_stay_small():
    """Lines not in loop form are unrolled: each stays within MAX_OPS scalar ops."""
    from oxla_backend_cpu.fft_pocket import looped

    for real in (True, False):
        short = [n for n in range(1, 600) if not looped(n, real)]
        assert short[:3] == [1, 2, 3] and len(short) > 20
        assert all(P.op_count(n, real) <= P.MAX_OPS for n in short)


def test_long_lines_compile_in_reasonable_code():
    """n = 1024 (38150 scalar ops per line) is replayed bit for bit through a shared
    per-line function in loop form, as is 2048 (past the straight-line limit)."""
    for n in (1024, 2048):
        text = _fft_text("FFT", "complex<f32>", "complex<f32>", [n], (3, n))
        x = _cplx((3, n), np.complex64)
        np.testing.assert_array_equal(compile_cpu(text)(x)[0], sfft.fft(x))


def test_fft_length_other_than_the_trailing_dims_is_not_supported():
    """No DFT fallback: an fft whose trailing dims differ from fft_length (XLA rejects
    it; the spec leaves complex FFT shapes open) raises instead of guessing."""
    from oxla.errors import NotSupportedError

    text = """
func.func @main(%x: tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>> {
  %r = stablehlo.fft %x, type = FFT, length = [4] : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>
  return %r : tensor<2x8xcomplex<f32>>
}"""
    with pytest.raises(NotSupportedError, match="fft_length"):
        compile_cpu(text)


def test_fixed_radix_passes_are_shared_functions():
    """A length's passes of one radix, and other lengths' in the same module, call one
    function of (ido, l1) per radix and direction: n = 1024 real (five radix-4
    passes) and 4096 call the library's forward radix-4 pass (declared, not defined
    in the program); complex 1024 (2, 8, 8, 8) the library's pass8 and its one pass2
    defined in the module (a pass called once is specialized there)."""
    import llvmlite.ir as ir
    import oxla_backend_cpu.fft_pocket as FP

    m = ir.Module("m")
    for kind, n in (("r", 1024), ("r", 4096), ("c", 1024)):
        FP._line_fn(m, kind, n, True, 1.0, FP.F32, np.float32)
    passes = {f.name: f.is_declaration for f in m.functions if "pass_" in f.name}
    assert passes == {"oxla_pocketfft_pass_c8f_s": True, "oxla_pocketfft_pass_r4f_s": True,
                      "oxla_pocketfft_ipass_c2f_s": False}, passes


def _rfft_text(n: int, rows: int = 2) -> str:
    return _fft_text("RFFT", "f32", "complex<f32>", [n], (rows, n))


def test_library_passes_are_compiled_once_per_process(monkeypatch):
    """Programs share the library's pass objects: a second program calling the same
    passes generates no pass code (rfft 1024 and 4096: radix-4 forward only), and the
    object is loaded next to the program (its results still scipy's bits)."""
    import oxla_backend_cpu.fft_lib as L

    compile_cpu(_rfft_text(1024))
    built = []
    real = L.module_text
    monkeypatch.setattr(L, "module_text", lambda *a: built.append(a[0]) or real(*a))
    x = RNG.standard_normal((2, 4096)).astype(np.float32)
    exe = compile_cpu(_rfft_text(4096))
    np.testing.assert_array_equal(exe(x)[0], sfft.rfft(x))
    assert built == []
    assert len(exe._jit.library_code) == 1


def test_library_objects_persist_in_the_store(monkeypatch):
    """With a store (the compile cache's runtime object store), a pass object is saved
    once and a fresh process (an empty in-memory table) reads it back without
    generating the pass's IR again; without one nothing is stored."""
    import oxla_backend_cpu.fft_lib as L
    from oxla_codegen_llvm import CPUTarget

    class Store(dict):
        def load(self, key):
            return self.get(key)

        def save(self, key, obj):
            self[key] = obj

    host, name = CPUTarget.host(), L.pass_symbol("c3b", True)
    monkeypatch.setattr(L, "_OBJECTS", {})
    store = Store()
    (obj,) = L.library_objects([name], host, store)
    assert list(store.values()) == [obj] and next(iter(store)).startswith("fft-")
    monkeypatch.setattr(L, "_OBJECTS", {})
    monkeypatch.setattr(L, "module_text", lambda *a: pytest.fail("IR generated again"))
    assert L.library_objects([name], host, store) == (obj,)


def test_library_pass_symbols_are_checked():
    """Only the library's passes have symbols: a wrong radix or name raises."""
    from oxla_backend_cpu.fft_lib import declared, parse_symbol, pass_symbol

    from oxla.errors import LoweringError

    assert parse_symbol(pass_symbol("c11b", True)) == (False, 11, False, True)
    assert parse_symbol(pass_symbol("r5f", False)) == (True, 5, True, False)
    for bad in ("oxla_pocketfft_pass_r7f_s", "oxla_pocketfft_pass_c6f_d", "sgemm"):
        with pytest.raises(LoweringError, match="not an FFT pass"):
            parse_symbol(bad)
    assert declared('declare void @"oxla_pocketfft_pass_c4b_d"(ptr %".1")\n'
                    'define void @"oxla_pocketfft_pass_c8b_d"(ptr %".1")\n') == (
                        "oxla_pocketfft_pass_c4b_d",)


def test_artifact_carries_the_library_passes(tmp_path):
    """A saved program holds the pass objects it calls (``lib/<i>.o``) and loads with
    them: the same bits after the round trip."""
    import zipfile

    from oxla_backend_cpu.executable import load_artifact

    x = RNG.standard_normal((3, 1024)).astype(np.float32)
    exe = compile_cpu(_rfft_text(1024, 3))
    path = tmp_path / "rfft.oxla"
    exe.save(path)
    if zipfile.is_zipfile(path):
        assert "lib/0.o" in zipfile.ZipFile(path).namelist()
    back = load_artifact(path)
    assert len(back._jit.library_code) == 1
    np.testing.assert_array_equal(back(x)[0], sfft.rfft(x))


def test_passes_past_the_library_argument_range_stay_in_the_program():
    """A real line of 2^18 (nine radix-4 passes): the forward pass with l1 = 65536 is
    past the library's argument range and is defined in the program, the others call
    the library; scipy's bits either way."""
    import llvmlite.ir as ir
    import oxla_backend_cpu.fft_pocket as FP
    from oxla_backend_cpu.fft_lib import ARG_LIMIT

    n = 1 << 18
    m = ir.Module("m")
    FP._line_fn(m, "r", n, True, 1.0, FP.F32, np.float32)
    passes = {f.name: f.is_declaration for f in m.functions if "pass_" in f.name}
    assert n // 4 >= ARG_LIMIT
    assert passes == {"oxla_pocketfft_pass_r4f_s": True,
                      "oxla_pocketfft_ipass_r4f_s": False}, passes
    x = RNG.standard_normal((1, n)).astype(np.float32)
    np.testing.assert_array_equal(compile_cpu(_rfft_text(n, 1))(x)[0], sfft.rfft(x))


@pytest.mark.parametrize("kind,xt,yt,shape,n", [
    ("RFFT", "f32", "complex<f32>", (2, 3, 1000), 1000),
    ("IRFFT", "complex<f64>", "f64", (2, 3, 501), 1000),
    ("IRFFT", "complex<f32>", "f32", (4, 6), 11),
])
def test_one_axis_real_transforms_without_scratch_match_the_interpreter(kind, xt, yt, shape,
                                                                        n):
    """1-D RFFT writes its halfcomplex lines straight to the result and IRFFT reads
    them straight from the operand (batch dims kept, IRFFT's DC/Nyquist imaginary
    parts ignored): the interpreter's bits."""
    from oxla.interpreter import InterpreterBackend
    from oxla.ir import parse_module

    text = _fft_text(kind, xt, yt, [n], shape)
    dt = {"f32": np.float32, "complex<f32>": np.complex64, "complex<f64>": np.complex128}[xt]
    x = RNG.standard_normal(shape).astype(dt) if xt == "f32" else _cplx(shape, dt)
    got = compile_cpu(text)(x)[0]
    want = np.asarray(InterpreterBackend().compile(parse_module(text, "t.mlir"))(x)[0])
    np.testing.assert_array_equal(got, want)
