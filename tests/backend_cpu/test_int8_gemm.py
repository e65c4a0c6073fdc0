"""8-bit integer dots on the integer GEMM (:mod:`oxla_backend_cpu.int8_gemm`), bit for
bit against the interpreter, on every instruction kind the host has (each selected with
``OXLA_CPU_INT8_GEMM``; a kind the CPU lacks is skipped): odd M/N/K, several k blocks,
extreme values, signed and unsigned operands, constant (packed at compile time) and
argument weights, both layouts of each operand, int32 wrap-around."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

ig = pytest.importorskip("oxla_backend_cpu.int8_gemm")
RNG = np.random.default_rng(21)
HOST = {i.name for i in ig.host_isas()}


@pytest.fixture(params=[i.name for i in ig.ISAS])
def isa(request, monkeypatch):
    if request.param not in HOST:
        pytest.skip(f"this CPU lacks {request.param} ({', '.join(ig.BY_NAME[request.param].features)})")
    monkeypatch.setenv(ig.ISA_ENV, request.param)
    return ig.BY_NAME[request.param]


def _t(shape, et):
    return f"tensor<{'x'.join(map(str, shape))}x{et}>"


def _dot(ls, rs, et, dims="contracting_dims = [1] x [0]", out=None, const=None):
    """A dot of ``ls`` x ``rs`` operands of type ``et`` to i32; ``const``: the rhs as a
    constant of these values instead of an argument."""
    ots = _t(out, "i32")
    args = f"%a: {_t(ls, et)}" + ("" if const is not None else f", %b: {_t(rs, et)}")
    body = ""
    if const is not None:
        vals = ", ".join(str(int(v)) for v in const.reshape(-1))
        body = f"  %b = stablehlo.constant dense<[{vals}]> : {_t((const.size,), et)}\n" \
               f"  %br = stablehlo.reshape %b : ({_t((const.size,), et)}) -> {_t(rs, et)}\n"
    b = "%br" if const is not None else "%b"
    return f"""func.func @main({args}) -> {ots} {{
{body}  %r = stablehlo.dot_general %a, {b}, {dims} : ({_t(ls, et)}, {_t(rs, et)}) -> {ots}
  return %r : {ots}
}}
"""


def _ints(shape, et):
    if et == "ui8":
        return RNG.integers(0, 256, shape).astype(np.uint8)
    return RNG.integers(-128, 128, shape).astype(np.int8)


def _check(text, args, isa):
    """Runs on both engines; the integer GEMM must have run, except for an unsigned rhs
    on ``vnni512`` (``vpdpbusd`` takes signed weights): the f32 GEMMs then."""
    unsigned = args[-1].dtype == np.uint8 if "%b" in text.split("{")[0] else \
        args[0].dtype == np.uint8
    exe = compile_cpu(text)
    if isa.signed_rhs_only and unsigned:
        assert "oxla_igemm_" not in exe.llvm_ir
    else:
        assert isa.driver in exe.llvm_ir
    run_both(text, args)


@pytest.mark.parametrize("et", ["i8", "ui8"])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (7, 5, 3), (9, 1027, 50), (17, 2051, 97),
                                   (8, 64, 48)])
def test_argument_weights(isa, et, m, k, n):
    a, b = _ints((m, k), et), _ints((k, n), et)
    _check(_dot((m, k), (k, n), et, out=(m, n)), [a, b], isa)


@pytest.mark.parametrize("et", ["i8", "ui8"])
@pytest.mark.parametrize("m,k,n", [(5, 3, 2), (16, 1030, 49), (33, 77, 200)])
def test_constant_weights_packed_at_compile_time(isa, et, m, k, n):
    a, w = _ints((m, k), et), _ints((k, n), et)
    _check(_dot((m, k), (k, n), et, out=(m, n), const=w), [a], isa)


@pytest.mark.parametrize("et", ["i8", "ui8"])
def test_extreme_values(isa, et):
    lo, hi = (0, 255) if et == "ui8" else (-128, 127)
    a, b = _ints((10, 1500), et), _ints((1500, 20), et)
    a[0], a[1], b[:, 0], b[:, 1] = lo, hi, lo, hi
    _check(_dot((10, 1500), (1500, 20), et, out=(10, 20)), [a, b], isa)
    _check(_dot((10, 1500), (1500, 20), et, out=(10, 20), const=b), [a], isa)


def test_transposed_operands(isa):
    a, b = _ints((37, 9), "i8"), _ints((23, 37), "i8")  # lhs [K, M], rhs [N, K]
    dims = "contracting_dims = [0] x [1]"
    _check(_dot((37, 9), (23, 37), "i8", dims, out=(9, 23)), [a, b], isa)
    _check(_dot((37, 9), (23, 37), "i8", dims, out=(9, 23), const=b), [a], isa)


def test_int32_wraparound(isa):
    k = 140000  # 140000 * 16384 > 2^31: the i32 result wraps as the spec's arithmetic
    a = np.full((2, k), -128, np.int8)
    b = np.full((k, 3), -128, np.int8)
    _check(_dot((2, k), (k, 3), "i8", out=(2, 3)), [a, b], isa)


def test_packing_matches_the_layout():
    w = RNG.integers(-128, 128, (6, 50)).astype(np.int8)
    vnni = ig.BY_NAME["vnni512"]
    raw = ig.pack_int8_weights(w, vnni, a_signed=True)
    panels = raw[:2 * 2 * 48 * 4].view(np.int8).reshape(2, 2, 48, 4)  # [panel, kg, nr, G]
    assert panels[1, 1, 1, 1] == w[5, 49] and panels[0, 0, 3, 2] == w[2, 3]
    assert panels[1, 1, 2:, :].max() == 0 and panels[:, 1, :, 2:].max() == 0  # padding
    corr = raw[2 * 2 * 48 * 4:].view(np.int32)
    assert np.array_equal(corr[:50], -128 * w.astype(np.int32).sum(0)) and not corr[50:].any()
