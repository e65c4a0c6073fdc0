"""Library row kernels (:mod:`oxla_backend_cpu.rowlib`): softmax row kernels call the
runtime's ``oxla_softmax_rows_f32`` instead of emitting their loops. Checked against the
interpreter (NaN and infinite rows, row lengths that are not a multiple of the vector
step, several row dimensions, in place over the input), against the emitted kernel, and
on forms that must keep the emitted kernel."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both
from tests.backend_cpu.test_row_fusion import _attention, _special_rows

RNG = np.random.default_rng(23)
SOFTMAX = "oxla_softmax_rows_f32"


def _t(shape, et: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{et}>"


def _jax_softmax(shape, et: str = "f32") -> str:
    """``jax.nn.softmax(x, axis=-1)`` as jax lowers it: ``max(-inf, max(x))`` (its
    ``initial``) and broadcasts through a unit dimension."""
    rows, n = shape[:-1], len(shape)
    x, r, r1, s = _t(shape, et), _t(rows, et), _t(rows + (1,), et), _t((), et)
    bd = list(range(n - 1))
    return f"""func.func @main(%x: {x}) -> {x} {{
  %ninf = stablehlo.constant dense<0xFF800000> : {s}
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [{n - 1}]
    : ({x}, {s}) -> {r}
  %ninf2 = stablehlo.constant dense<0xFF800000> : {s}
  %nb = stablehlo.broadcast_in_dim %ninf2, dims = [] : ({s}) -> {r}
  %mm = stablehlo.maximum %nb, %m : {r}
  %m1 = stablehlo.broadcast_in_dim %mm, dims = {bd} : ({r}) -> {r1}
  %mb = stablehlo.broadcast_in_dim %m1, dims = {bd + [n - 1]} : ({r1}) -> {x}
  %d = stablehlo.subtract %x, %mb : {x}
  %e = stablehlo.exponential %d : {x}
  %zero = stablehlo.constant dense<0.0> : {s}
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [{n - 1}]
    : ({x}, {s}) -> {r}
  %s1 = stablehlo.broadcast_in_dim %sum, dims = {bd} : ({r}) -> {r1}
  %sb = stablehlo.broadcast_in_dim %s1, dims = {bd + [n - 1]} : ({r1}) -> {x}
  %y = stablehlo.divide %e, %sb : {x}
  return %y : {x}
}}"""


def _uses_library(exe) -> bool:
    return f"@{SOFTMAX}(" in exe._jit.ir_text


@pytest.mark.parametrize("shape", [(1, 3), (5, 7), (3, 4, 33), (64, 1000), (300, 64),
                                   (2, 3, 5, 129)])
def test_jax_softmax_calls_the_library_kernel(shape):
    x = _special_rows((RNG.standard_normal(shape) * 3).astype(np.float32))
    exe, (y,) = run_both(_jax_softmax(shape), [x], rtol=1e-5, atol=1e-7)
    assert _uses_library(exe)
    assert exe.stats["kernel_count"] == 1 and exe.stats["temp_bytes"] == 0
    rest = y.reshape(-1, shape[-1])[4:].astype(np.float64)
    np.testing.assert_allclose(rest.sum(1), 1.0, rtol=1e-5)


def test_same_results_as_the_emitted_kernel(monkeypatch):
    """The library kernel is the emitted kernel's IR with the row length a parameter:
    the same values up to the order of the row sum."""
    from oxla_backend_cpu import rowlib

    text = _jax_softmax((48, 1024))
    x = _special_rows((RNG.standard_normal((48, 1024)) * 4).astype(np.float32))
    lib = compile_cpu(text, cache=False)
    (got,) = lib(x)
    monkeypatch.setattr(rowlib, "match_softmax", lambda k: None)
    emitted = compile_cpu(text, cache=False)
    (want,) = emitted(x)
    assert _uses_library(lib) and not _uses_library(emitted)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=0, equal_nan=True)


def test_torch_softmax_form_and_convert_init():
    """torch's ``_softmax`` lowering: ``max(x)`` broadcast directly; the init through a
    same-type ``convert``."""
    t, r = _t((17, 40)), _t((17,))
    text = f"""func.func @main(%x: {t}) -> {t} {{
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %ni = stablehlo.convert %ninf : (tensor<f32>) -> tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ni) applies stablehlo.maximum across dimensions = [1]
    : ({t}, tensor<f32>) -> {r}
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : ({r}) -> {t}
  %d = stablehlo.subtract %x, %mb : {t}
  %e = stablehlo.exponential %d : {t}
  %sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1]
    : ({t}, tensor<f32>) -> {r}
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0] : ({r}) -> {t}
  %y = stablehlo.divide %e, %sb : {t}
  return %y : {t}
}}"""
    x = _special_rows(RNG.standard_normal((17, 40)).astype(np.float32))
    exe, _ = run_both(text, [x], rtol=1e-5, atol=1e-7)
    assert _uses_library(exe)


def test_in_place_over_the_scores():
    """``softmax(a @ b) @ c``: the row kernel's output takes the scores' bytes, so the
    library kernel gets one pointer twice (its in-place variant)."""
    n = 96
    text = _attention(n, f"  %p = stablehlo.divide %e, %sb : tensor<{n}x{n}xf32>")
    a, b = (RNG.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    c = RNG.standard_normal(n).astype(np.float32)
    exe, _ = run_both(text, [a, b, c], rtol=2e-4, atol=2e-4)
    assert _uses_library(exe)
    assert "1 in place" in "\n".join(exe.stages)


@pytest.mark.parametrize("change", [
    # another dtype: emitted
    ("f32", "f64"),
    # log_softmax's consumer
    ("%y = stablehlo.divide %e, %sb : {x}", "%y = stablehlo.subtract %d, %sb : {x}"),
    # the max's init is not -inf
    ("%ninf = stablehlo.constant dense<0xFF800000>", "%ninf = stablehlo.constant dense<1.0>"),
    # exp of something else than x - max
    ("%d = stablehlo.subtract %x, %mb : {x}", "%d = stablehlo.add %x, %mb : {x}"),
    # the sum's init is not 0
    ("%zero = stablehlo.constant dense<0.0>", "%zero = stablehlo.constant dense<1.0>"),
    # max(c, m) with c finite is not m
    ("%ninf2 = stablehlo.constant dense<0xFF800000>", "%ninf2 = stablehlo.constant dense<0.5>"),
])
def test_other_forms_keep_the_emitted_kernel(change):
    shape = (6, 37)
    old, new = (c.format(x=_t(shape)) for c in change)
    text = _jax_softmax(shape)
    assert old in text
    text = text.replace(old, new)
    dt = np.float64 if "f64" in new else np.float32
    x = _special_rows((RNG.standard_normal(shape) * 3).astype(dt))
    exe, _ = run_both(text, [x], rtol=1e-5, atol=1e-6)
    assert not _uses_library(exe)


LAYER_NORM = "oxla_layer_norm_rows_f32"


def _torch_layer_norm(shape, swap: bool = False, **edits: str) -> str:
    """torch's ``native_layer_norm`` lowering (statistics on ``[R]``, no unit dims);
    ``swap`` writes every commutative ``+``/``*`` the other way round; ``edits``
    replace lines by their result name."""
    rows, n = shape[:-1], len(shape)
    x, r, v, s = _t(shape), _t(rows), _t(shape[-1:]), _t(())
    keep, last = list(range(n - 1)), [n - 1]

    def op(name, a, b, t):
        return f"stablehlo.{name} {b}, {a} : {t}" if swap else f"stablehlo.{name} {a}, {b} : {t}"

    lines = {
        "zero": f"stablehlo.constant dense<0.0> : {s}",
        "sum": f"stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = "
               f"{last} : ({x}, {s}) -> {r}",
        "nc": f"stablehlo.constant dense<{float(shape[-1])}> : {r}",
        "mean": f"stablehlo.divide %sum, %nc : {r}",
        "mb": f"stablehlo.broadcast_in_dim %mean, dims = {keep} : ({r}) -> {x}",
        "c": f"stablehlo.subtract %x, %mb : {x}",
        "cc": op("multiply", "%c", "%c", x),
        "ss": f"stablehlo.reduce(%cc init: %zero) applies stablehlo.add across dimensions = "
              f"{last} : ({x}, {s}) -> {r}",
        "var": f"stablehlo.divide %ss, %nc : {r}",
        "eps": f"stablehlo.constant dense<1.0e-05> : {r}",
        "ve": op("add", "%var", "%eps", r),
        "rstd": f"stablehlo.rsqrt %ve : {r}",
        "rb": f"stablehlo.broadcast_in_dim %rstd, dims = {keep} : ({r}) -> {x}",
        "y0": op("multiply", "%c", "%rb", x),
        "gb": f"stablehlo.broadcast_in_dim %g, dims = {last} : ({v}) -> {x}",
        "y1": op("multiply", "%y0", "%gb", x),
        "bb": f"stablehlo.broadcast_in_dim %b, dims = {last} : ({v}) -> {x}",
        "y": op("add", "%y1", "%bb", x),
    }
    lines.update(edits)
    body = "\n".join(f"  %{k} = {e}" for k, e in lines.items())
    return f"""func.func @main(%x: {x}, %g: {v}, %b: {v}) -> {x} {{
{body}
  return %y : {x}
}}"""


def _norm_args(shape):
    x = _special_rows((RNG.standard_normal(shape) * 2 + 1).astype(np.float32))
    g, b = (RNG.standard_normal(shape[-1:]).astype(np.float32) for _ in range(2))
    return [x, g, b]


@pytest.mark.parametrize("shape", [(4, 16), (2, 3, 64), (128, 1024), (7, 3), (5, 131)])
def test_jax_layer_norm_calls_the_library_kernel(shape):
    from tests.backend_cpu.test_row_fusion import _layer_norm

    exe, _ = run_both(_layer_norm(shape, "f32"), _norm_args(shape), rtol=1e-4, atol=1e-5)
    assert f"@{LAYER_NORM}(" in exe._jit.ir_text
    assert exe.stats["kernel_count"] == 1 and exe.stats["temp_bytes"] == 0


@pytest.mark.parametrize("swap", [False, True])
def test_torch_layer_norm_in_either_operand_order(swap):
    shape = (9, 70)
    exe, _ = run_both(_torch_layer_norm(shape, swap), _norm_args(shape), rtol=1e-4, atol=1e-5)
    assert f"@{LAYER_NORM}(" in exe._jit.ir_text


def test_layer_norm_same_results_as_the_emitted_kernel(monkeypatch):
    from oxla_backend_cpu import rowlib

    shape = (40, 1024)
    text, args = _torch_layer_norm(shape), _norm_args(shape)
    (got,) = compile_cpu(text, cache=False)(*args)
    monkeypatch.setattr(rowlib, "match_layer_norm", lambda k: None)
    emitted = compile_cpu(text, cache=False)
    assert f"@{LAYER_NORM}(" not in emitted._jit.ir_text
    (want,) = emitted(*args)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("edits", [
    # flax's association: (x - mean) * (rstd * g)
    {"rg": "stablehlo.multiply %rb, %gb : tensor<6x45xf32>",
     "y1": "stablehlo.multiply %c, %rg : tensor<6x45xf32>"},
    # unbiased variance: another divisor
    {"nc1": "stablehlo.constant dense<44.0> : tensor<6xf32>",
     "var": "stablehlo.divide %ss, %nc1 : tensor<6xf32>"},
    # a product where the bias is added
    {"y": "stablehlo.multiply %y1, %bb : tensor<6x45xf32>"},
    # the gain read at another column
    {"gr": "stablehlo.reverse %g, dims = [0] : tensor<45xf32>",
     "gb": "stablehlo.broadcast_in_dim %gr, dims = [1] : (tensor<45xf32>) -> tensor<6x45xf32>"},
    # sqrt instead of rsqrt
    {"rstd": "stablehlo.sqrt %ve : tensor<6xf32>"},
])
def test_other_norm_forms_keep_the_emitted_kernel(edits):
    shape = (6, 45)
    base = _torch_layer_norm(shape)
    order = [ln.split(" = ")[0].strip()[1:] for ln in base.splitlines()[1:-2]]
    # keep each edit's new names before their first use
    text = _torch_layer_norm(shape, **{k: v for k, v in edits.items() if k in order})
    extra = {k: v for k, v in edits.items() if k not in order}
    for k, v in extra.items():
        first = min(order.index(o) for o, e in edits.items() if o in order and f"%{k}" in e)
        anchor = f"  %{order[first]} = "
        text = text.replace(anchor, f"  %{k} = {v}\n{anchor}", 1)
    exe, _ = run_both(text, _norm_args(shape), rtol=1e-4, atol=1e-5)
    assert f"@{LAYER_NORM}(" not in exe._jit.ir_text
