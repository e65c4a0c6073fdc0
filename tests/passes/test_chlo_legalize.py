"""``chlo-legalize-to-stablehlo``: every CHLO op decomposes (no ``chlo.`` op left), and
the decomposed program's interpreter result matches the interpreter's direct CHLO rule
(the oracle) on edge values, within the accuracy of XLA's decompositions."""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from oxla.interpreter import Context, run_function
from oxla.ir import parse_module, split_input_file
from oxla.passes import run_pipeline

pytest.importorskip("scipy")

PASS = "chlo-legalize-to-stablehlo{strict=true}"
ROOT = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "stablehlo"

EDGE = [
    np.nan,
    np.inf,
    -np.inf,
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    -0.5,
    2.5,
    -2.5,
    3.0,
    -3.0,
    -4.0,
    1e-6,
    -1e-6,
    7.3,
    -7.3,
    20.0,
    -20.0,
    120.0,
    1e10,
    -1e10,
    0.999,
    -0.999,
]


def _mlir_type(dt: str, n: int) -> str:
    return f"tensor<{n}x{dt}>"


def _both(text: str, args: list[np.ndarray]) -> tuple[list, list]:
    """(direct CHLO result, result after the pass) of ``@main`` on ``args``."""
    direct = run_function(parse_module(text), "main", args, Context())
    m = parse_module(text)
    run_pipeline(m, PASS, verify_each=True)
    assert "chlo." not in str(m), str(m)
    return direct, run_function(m, "main", args, Context())


def _unary(op: str, dt: str, xs) -> tuple[np.ndarray, np.ndarray]:
    t = _mlir_type(dt, len(xs))
    text = (
        f"func.func @main(%x: {t}) -> {t} {{\n  %0 = chlo.{op} %x : {t} -> {t}\n"
        f"  return %0 : {t}\n}}"
    )
    x = np.asarray(xs, dtype={"f32": np.float32, "f64": np.float64}[dt])
    (d,), (a,) = _both(text, [x])
    return np.asarray(d, np.float64), np.asarray(a, np.float64)


def _close(d: np.ndarray, a: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    assert np.array_equal(np.isnan(d), np.isnan(a)), (d, a)
    fin = np.isfinite(d)
    assert np.array_equal(d[~fin & ~np.isnan(d)], a[~fin & ~np.isnan(d)]), (d, a)
    np.testing.assert_allclose(a[fin], d[fin], rtol=rtol, atol=atol)


# (op, domain filter, rtol for f32, rtol for f64, atol)
UNARY = [
    ("erf", None, 2e-6, 1e-14, 0.0),
    ("erfc", None, 2e-5, 1e-13, 1e-30),
    ("erf_inv", lambda x: np.abs(x) <= 1, 2e-6, 1e-13, 0.0),
    ("lgamma", lambda x: np.abs(x) < 1e9, 2e-5, 1e-12, 1e-6),
    ("digamma", lambda x: np.abs(x) < 1e9, 2e-5, 1e-11, 1e-6),
    ("bessel_i1e", None, 2e-6, 1e-13, 0.0),
    ("sinh", lambda x: np.abs(x) < 80, 2e-6, 1e-14, 0.0),
    ("cosh", lambda x: np.abs(x) < 80, 2e-6, 1e-14, 0.0),
    ("asin", None, 2e-6, 1e-14, 0.0),
    ("acos", None, 2e-6, 1e-14, 0.0),
    ("atan", None, 2e-6, 1e-14, 0.0),
    ("asinh", None, 2e-6, 1e-14, 0.0),
    ("acosh", None, 2e-6, 1e-14, 0.0),
    ("atanh", None, 2e-6, 1e-14, 1e-12),
]


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("op,keep,rtol32,rtol64,atol", UNARY, ids=[u[0] for u in UNARY])
def test_unary_edge_values(op, keep, rtol32, rtol64, atol, dt):
    xs = np.asarray(EDGE)
    if keep is not None:
        with np.errstate(invalid="ignore"):
            xs = xs[keep(xs) | np.isnan(xs)]
    d, a = _unary(op, dt, list(xs))
    _close(d, a, rtol32 if dt == "f32" else rtol64, atol)


def test_lgamma_digamma_poles_and_bf16():
    d, a = _unary("lgamma", "f64", [0.0, -1.0, -2.0, -50.0, np.inf, -np.inf])
    assert np.all(a == np.inf) and np.all(d == np.inf)
    d, a = _unary("digamma", "f64", [0.0, -1.0, -2.0, -50.0])
    assert np.all(np.isnan(a)) and np.all(np.isnan(d))
    t = "tensor<4xbf16>"
    text = (
        f"func.func @main(%x: {t}) -> {t} {{\n  %0 = chlo.lgamma %x : {t} -> {t}\n"
        f"  return %0 : {t}\n}}"
    )
    from ml_dtypes import bfloat16

    (d,), (a,) = _both(text, [np.asarray([0.5, 3.0, -2.5, 10.0], dtype=bfloat16)])
    np.testing.assert_allclose(np.float64(a), np.float64(d), rtol=1e-2)


def _binary(op: str, dt: str, xs, ys) -> tuple[np.ndarray, np.ndarray]:
    t = _mlir_type(dt, len(xs))
    text = (
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f"  %0 = chlo.{op} %x, %y : {t}, {t} -> {t}\n  return %0 : {t}\n}}"
    )
    npdt = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[dt]
    (d,), (a,) = _both(text, [np.asarray(xs, npdt), np.asarray(ys, npdt)])
    return np.asarray(d), np.asarray(a)


@pytest.mark.parametrize("dt", ["f16", "f32", "f64"])
def test_next_after_bitwise(dt):
    v = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 3.5, -3.5]
    xs = [a for a in v for _ in v]
    ys = [b for _ in v for b in v]
    d, a = _binary("next_after", dt, xs, ys)
    assert np.array_equal(np.isnan(d), np.isnan(a))
    ok = ~np.isnan(d)
    assert np.array_equal(d[ok].view(f"u{d.itemsize}"), a[ok].view(f"u{a.itemsize}"))


def test_zeta_polygamma():
    xs = [2.0, 3.0, 4.5, 1.0, 0.5, 2.0, 3.0, 2.0]
    qs = [1.0, 2.5, 0.3, 2.0, 2.0, -1.0, -2.5, 100.0]
    d, a = _binary("zeta", "f64", xs, qs)
    _close(np.float64(d), np.float64(a), 1e-10)
    ns = [0.0, 1.0, 2.0, 3.0, 1.5, -1.0, 1.0, 2.0]
    ys = [2.5, 0.7, 3.0, 10.0, 2.0, 2.0, -0.5, 1e-3]
    d, a = _binary("polygamma", "f64", ns, ys)
    _close(np.float64(d), np.float64(a), 1e-9)


@pytest.mark.parametrize("ty", ["i8", "ui8", "i32", "ui32", "i64", "ui64"])
def test_mulhi_bitwise(ty):
    dt = np.dtype(
        ty.replace("ui", "uint").replace("i", "int") if ty[0] == "i" else ty.replace("ui", "uint")
    )
    info = np.iinfo(dt)
    vals = np.asarray(
        [0, 1, 2, 3, info.max, info.min, info.max // 3, info.min // 3 + 1, info.max - 1], dtype=dt
    )
    xs = np.repeat(vals, len(vals))
    ys = np.tile(vals, len(vals))
    t = f"tensor<{len(xs)}x{ty}>"
    text = (
        f"func.func @main(%x: {t}, %y: {t}) -> {t} {{\n"
        f'  %0 = "chlo.mulhi"(%x, %y) : ({t}, {t}) -> {t}\n  return %0 : {t}\n}}'
    )
    (d,), (a,) = _both(text, [xs, ys])
    assert np.array_equal(d, a)


def test_top_k_total_order():
    t = "tensor<2x6xf32>"
    text = (
        f"func.func @main(%x: {t}) -> (tensor<2x4xf32>, tensor<2x4xi32>) {{\n"
        f"  %v, %i = chlo.top_k(%x, k = 4) : {t} -> (tensor<2x4xf32>, tensor<2x4xi32>)\n"
        f"  return %v, %i : tensor<2x4xf32>, tensor<2x4xi32>\n}}"
    )
    x = np.asarray(
        [[1.0, np.nan, -0.0, 0.0, np.inf, 1.0], [-np.inf, 2.0, 2.0, -1.0, 5.0, -0.0]], np.float32
    )
    d, a = _both(text, [x])
    assert np.array_equal(d[1], a[1])
    assert np.array_equal(d[0].view(np.uint32), a[0].view(np.uint32))


def _chlo_programs() -> list[tuple[str, str]]:
    files = subprocess.run(
        [
            "grep",
            "-l",
            r"chlo\.",
            *map(str, sorted((ROOT / "testdata").glob("*.mlir"))),
            *map(str, sorted((ROOT / "interpret" / "chlo").glob("*.mlir"))),
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    out = []
    for f in files:
        text = Path(f).read_text()
        if "/interpret/" in f:
            out += [
                (f"{Path(f).name}#{i}", c)
                for i, (c, _) in enumerate(split_input_file(text))
                if "chlo." in c
            ]
        else:
            out.append((Path(f).name, text))
    return out


def _run(text: str, name: str, legalize: bool):
    m = parse_module(text, name)
    if legalize:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_pipeline(m, PASS, verify_each=True)
        assert "chlo." not in str(m)
    ctx = Context(module=m)
    res = run_function(m, None, [], ctx)
    return res, len(ctx.failures)


def test_conformance_chlo_files_pass_after_legalization():
    """Each conformance program using CHLO: after the pass, integer results are bitwise
    equal and no more of the file's own checks fail than on the direct CHLO rules."""
    if not ROOT.is_dir():
        pytest.skip("no ../shared/conformance checkout")
    progs = _chlo_programs()
    assert len(progs) >= 90
    bad = []
    for name, text in progs:
        before, fb = _run(text, name, False)
        after, fa = _run(text, name, True)
        for x, y in zip(before, after):
            x, y = np.asarray(x), np.asarray(y)
            if x.dtype.kind in "biu" and not np.array_equal(x, y):
                bad.append(f"{name}: integer results differ")
        if fa > fb:
            bad.append(f"{name}: {fa} failed checks after, {fb} before")
    assert not bad, "\n".join(bad)
