"""``stablehlo.custom_call`` on the cpu backend: native (C, compiled here with ``cc``)
and Python kernels registered through the ``oxla_custom_calls`` hook, checked against
numpy and against the interpreter running the same kernels; missing targets and
unsupported forms; artifacts and the compile cache."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from oxla import hookimpl, plugins
from oxla.errors import LoweringError, NotSupportedError, OxlaError
from oxla.interpreter import InterpreterBackend
from oxla.ir import parse_module
from oxla.plugins import PluginRegistry, PluginSource
from oxla.protocols import CustomCallInfo

from .conftest import compile_cpu

C_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
/* out0 = scale * (in0 + in1) over n f32 elements; scale and n from the opaque "s,n" */
void axpy_f32(void** outputs, const void** inputs, const char* opaque, size_t len) {
  const float* a = inputs[0]; const float* b = inputs[1]; float* o = outputs[0];
  float scale = 0.0f; long n = 0; size_t i = 0;
  for (; i < len && opaque[i] != ','; i++) scale = scale * 10 + (opaque[i] - '0');
  for (i++; i < len; i++) n = n * 10 + (opaque[i] - '0');
  for (long k = 0; k < n; k++) o[k] = scale * (a[k] + b[k]);
}
/* two results: row sums (f64) and row maxima (i32) of an i32[3,4] */
void row_stats(void** outputs, const void** inputs, const char* opaque, size_t len) {
  const int32_t* x = inputs[0]; double* sums = outputs[0]; int32_t* maxs = outputs[1];
  for (int r = 0; r < 3; r++) {
    double s = 0; int32_t m = x[4 * r];
    for (int c = 0; c < 4; c++) { s += x[4 * r + c]; if (x[4 * r + c] > m) m = x[4 * r + c]; }
    sums[r] = s; maxs[r] = m;
  }
}
"""


@pytest.fixture(scope="module")
def clib(tmp_path_factory):
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the native test kernels")
    d = tmp_path_factory.mktemp("cc")
    (d / "k.c").write_text(C_SOURCE)
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(d / "libk.so"), str(d / "k.c")],
                   check=True, capture_output=True)
    return ctypes.CDLL(str(d / "libk.so"))


@pytest.fixture
def register(monkeypatch, tmp_path):
    """Installs a registry with the built-ins, the cpu backend and the given custom calls
    (``register(*infos)``; call again to replace them) for one test."""
    import oxla_backend_cpu.plugin

    monkeypatch.setenv("OXLA_CACHE_DIR", str(tmp_path / "cache"))
    old = plugins.set_registry(None)

    def install(*infos: CustomCallInfo) -> PluginRegistry:
        class TestCalls:
            @hookimpl
            def oxla_custom_calls(self):
                return list(infos)

        registry = PluginRegistry()
        registry.register_builtins()
        registry.register(oxla_backend_cpu.plugin, PluginSource("oxla-backend-cpu", "0", "t"))
        registry.register(TestCalls(), PluginSource("oxla-test-custom-calls", "0", "test"))
        plugins.set_registry(registry)
        return registry

    yield install
    plugins.set_registry(old)


AXPY = """
func.func @main(%a: tensor<5xf32>, %b: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>) {
  %e = stablehlo.exponential %a : tensor<5xf32>
  %r = stablehlo.custom_call @axpy(%e, %b) {backend_config = "3,5"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  %s = stablehlo.multiply %r, %b : tensor<5xf32>
  return %r, %s : tensor<5xf32>, tensor<5xf32>
}
"""


def _axpy_interp(ctx, op, args):  # the interpreter's convention: fn(ctx, op, args)
    return [3 * (args[0] + args[1])]


def _ab():
    a = np.linspace(-1, 1, 5).astype(np.float32)
    return a, np.arange(5, dtype=np.float32)


@pytest.mark.parametrize("form", ["cdll", "int", "c_void_p"])
def test_native_kernel_matches_numpy_and_interpreter(clib, register, form):
    fn = {"cdll": clib.axpy_f32, "int": ctypes.cast(clib.axpy_f32, ctypes.c_void_p).value,
          "c_void_p": ctypes.cast(clib.axpy_f32, ctypes.c_void_p)}[form]
    register(CustomCallInfo("axpy", "cpu", fn), CustomCallInfo("axpy", "interpreter",
                                                                _axpy_interp))
    a, b = _ab()
    exe = compile_cpu(AXPY)
    r, s = exe(a, b)
    want = 3 * (np.exp(a) + b)
    np.testing.assert_allclose(r, want, rtol=1e-6)
    np.testing.assert_allclose(s, want * b, rtol=1e-6)
    ri, si = InterpreterBackend().compile(parse_module(AXPY))(a, b)
    np.testing.assert_allclose(r, ri, rtol=1e-6)
    np.testing.assert_allclose(s, si, rtol=1e-6)


def test_native_kernel_with_two_results_of_other_dtypes(clib, register):
    register(CustomCallInfo("row_stats", "cpu", clib.row_stats))
    text = """
func.func @main(%x: tensor<3x4xi32>) -> (tensor<3xf64>, tensor<3xi32>) {
  %y = stablehlo.negate %x : tensor<3x4xi32>
  %r:2 = stablehlo.custom_call @row_stats(%y) {api_version = 2 : i32} : (tensor<3x4xi32>) -> (tensor<3xf64>, tensor<3xi32>)
  return %r#0, %r#1 : tensor<3xf64>, tensor<3xi32>
}
"""
    x = np.arange(12, dtype=np.int32).reshape(3, 4) * 7 % 11
    sums, maxs = compile_cpu(text)(x)
    np.testing.assert_array_equal(sums, (-x).sum(1).astype(np.float64))
    np.testing.assert_array_equal(maxs, (-x).max(1))


def test_python_kernel_several_results_and_config(register):
    seen = []

    def kernel(x, y, backend_config):
        seen.append(backend_config)
        return x @ y, (x.sum() + y.sum()).astype(np.float64)

    register(CustomCallInfo("py_mm", "cpu", kernel))
    text = """
func.func @main(%x: tensor<2x3xf32>, %y: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<f64>) {
  %r:2 = stablehlo.custom_call @py_mm(%x, %y) {backend_config = "hello"} : (tensor<2x3xf32>, tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<f64>)
  %t = stablehlo.add %r#0, %r#0 : tensor<2x2xf32>
  return %t, %r#1 : tensor<2x2xf32>, tensor<f64>
}
"""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.standard_normal((3, 2)).astype(np.float32)
    t, s = compile_cpu(text)(x, y)
    np.testing.assert_allclose(t, 2 * (x @ y), rtol=1e-5)
    assert s.dtype == np.float64 and s.shape == ()
    np.testing.assert_allclose(s, float(x.sum()) + float(y.sum()), rtol=1e-5)
    assert seen == ["hello"]


def test_python_kernel_in_a_while_loop_runs_each_iteration(register):
    calls = []

    def step(x, backend_config):
        calls.append(x.copy())
        return x * 2

    register(CustomCallInfo("double", "cpu", step))
    text = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %n = stablehlo.constant dense<4> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %j = stablehlo.add %i, %c1 : tensor<i32>
      %w = stablehlo.custom_call @double(%v) : (tensor<3xf32>) -> tensor<3xf32>
      stablehlo.return %j, %w : tensor<i32>, tensor<3xf32>
    }
  return %r#1 : tensor<3xf32>
}
"""
    x = np.array([1, -2, 0.5], np.float32)
    (got,) = compile_cpu(text)(x)
    np.testing.assert_array_equal(got, x * 16)
    assert len(calls) == 4
    np.testing.assert_array_equal(calls[-1], x * 8)


def test_side_effecting_calls_without_results_run_in_program_order(register):
    log = []
    register(CustomCallInfo("log_a", "cpu", lambda x, backend_config: log.append(("a", x))),
             CustomCallInfo("log_b", "cpu",
                            lambda backend_config: log.append(("b", backend_config))))
    text = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  stablehlo.custom_call @log_b() {has_side_effect = true, backend_config = "first"} : () -> ()
  %y = stablehlo.sine %x : tensor<2xf32>
  stablehlo.custom_call @log_a(%y) {has_side_effect = true} : (tensor<2xf32>) -> ()
  stablehlo.custom_call @log_b() {has_side_effect = true, backend_config = "last"} : () -> ()
  %z = stablehlo.cosine %x : tensor<2xf32>
  return %z : tensor<2xf32>
}
"""
    x = np.array([0.25, 2.0], np.float32)
    exe = compile_cpu(text)
    (z,) = exe(x)
    np.testing.assert_allclose(z, np.cos(x), rtol=1e-6)
    assert [e[0] for e in log] == ["b", "a", "b"]
    assert log[0][1] == "first" and log[2][1] == "last"
    np.testing.assert_allclose(log[1][1], np.sin(x), rtol=1e-6)
    exe(x)
    assert len(log) == 6


def test_python_kernel_errors_are_raised_from_the_call(register):
    def bad(x, backend_config):
        raise ValueError("kernel says no")

    register(CustomCallInfo("bad", "cpu", bad),
             CustomCallInfo("wrong_shape", "cpu", lambda x, backend_config: x[:1]))
    for target, msg in (("bad", "kernel says no"), ("wrong_shape", r"expected float32\[3\]")):
        exe = compile_cpu(f"""
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {{
  %r = stablehlo.custom_call @{target}(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}}
""")
        with pytest.raises(OxlaError, match=msg) as info:
            exe(np.ones(3, np.float32))
        assert f"'{target}'" in str(info.value)
        # the error does not stick to the next call's result
        with pytest.raises(OxlaError):
            exe(np.ones(3, np.float32))


MISSING = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = stablehlo.custom_call @no_such_kernel(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %r : tensor<3xf32>
}
"""


def test_missing_target_is_a_lowering_error_saying_how_to_supply_one(register):
    register()
    with pytest.raises(LoweringError) as info:
        compile_cpu(MISSING)
    text = str(info.value)
    assert "'no_such_kernel'" in text and "cpu" in text and "test.mlir" in text
    assert "oxla_custom_calls" in text and "backend='cpu'" in text
    register(CustomCallInfo("no_such_kernel", "interpreter", _axpy_interp))
    with pytest.raises(LoweringError, match="implemented for backend.s. interpreter only"):
        compile_cpu(MISSING)


@pytest.mark.parametrize("attrs, types, why", [
    # a native target of a typed-FFI call is an XLA FFI handler (tests/custom_calls):
    # only element types the FFI has no code for are refused
    ("{api_version = 4 : i32}", "(tensor<3x!quant.uniform<i8:f32, 0.5:0>>) -> "
     "tensor<3x!quant.uniform<i8:f32, 0.5:0>>", "in a typed FFI call"),
    ("{api_version = 5 : i32}", "(tensor<3xf32>) -> tensor<3xf32>", "api_version 5"),
    ("{operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = "
     "[dense<0> : tensor<1xindex>]}", "(tensor<3x1xf32>) -> tensor<3xf32>", "layout"),
])
def test_unsupported_forms_are_rejected_by_name(register, attrs, types, why):
    import ctypes

    native = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_size_t)(lambda *a: None)
    register(CustomCallInfo("k", "cpu", native))
    arg = types[1:types.index(")")]
    ret = types.split("-> ")[1]
    text = f"""
func.func @main(%x: {arg}) -> {ret} {{
  %r = stablehlo.custom_call @k(%x) {attrs} : {types}
  return %r : {ret}
}}
"""
    with pytest.raises(NotSupportedError, match=why) as info:
        compile_cpu(text)
    assert "@k" in str(info.value) and "custom_call" in str(info.value)


def test_tuple_result_of_a_custom_call_is_rejected_by_name(register):
    register(CustomCallInfo("k", "cpu", lambda *xs, backend_config: xs[0]))
    text = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = stablehlo.custom_call @k(%x) : (tensor<3xf32>) -> tuple<tensor<3xf32>>
  %e = stablehlo.get_tuple_element %r[0] : (tuple<tensor<3xf32>>) -> tensor<3xf32>
  return %e : tensor<3xf32>
}
"""
    with pytest.raises(NotSupportedError, match="tuple") as info:
        compile_cpu(text)
    assert "@k" in str(info.value) and "custom_call" in str(info.value)


def test_native_artifact_reresolves_targets_on_load(clib, register, tmp_path):
    import oxla
    from oxla.artifact import read_manifest

    register(CustomCallInfo("axpy", "cpu", clib.axpy_f32))
    a, b = _ab()
    exe = compile_cpu(AXPY)
    path = tmp_path / "axpy.oxla"
    exe.save(path)
    assert read_manifest(path)["custom_calls"] == ["axpy"]
    r, s = oxla.load(path)(a, b)
    np.testing.assert_allclose(r, 3 * (np.exp(a) + b), rtol=1e-6)
    # now bound to a Python kernel: the same object code calls it
    register(CustomCallInfo("axpy", "cpu", lambda x, y, backend_config: -(x + y)))
    r, _ = oxla.load(path)(a, b)
    np.testing.assert_allclose(r, -(np.exp(a) + b), rtol=1e-6)
    register()
    with pytest.raises(LoweringError, match="'axpy'"):
        oxla.load(path)


def test_python_kernels_cannot_be_saved_or_cached(register, tmp_path):
    register(CustomCallInfo("axpy", "cpu", lambda x, y, backend_config: 3 * (x + y)))
    exe = compile_cpu(AXPY, cache=True)
    with pytest.raises(NotSupportedError, match="'axpy' are Python callables"):
        exe.save(tmp_path / "x.oxla")
    assert not list((tmp_path / "cache").glob("*.oxla"))  # not cached either
    a, b = _ab()
    np.testing.assert_allclose(exe(a, b)[0], 3 * (np.exp(a) + b), rtol=1e-6)


def test_cache_hit_binds_the_current_kernel(clib, register):
    register(CustomCallInfo("axpy", "cpu", clib.axpy_f32))
    a, b = _ab()
    first = compile_cpu(AXPY, cache=True)
    assert first.stats["cache"] == "miss"
    register(CustomCallInfo("axpy", "cpu", lambda x, y, backend_config: x - y))
    hit = compile_cpu(AXPY, cache=True)
    assert hit.stats["cache"] == "hit"
    np.testing.assert_allclose(hit(a, b)[0], np.exp(a) - b, rtol=1e-6)
    register()
    with pytest.raises(LoweringError, match="'axpy'"):
        compile_cpu(AXPY, cache=True)


def test_python_kernel_on_bool_complex_bf16_and_a_recomputed_iota(register):
    ml_dtypes = pytest.importorskip("ml_dtypes")

    def kernel(p, c, h, i, backend_config):
        return ~p, c * 1j, (h.astype(np.float32) * 2).astype(h.dtype), i + 1

    register(CustomCallInfo("k", "cpu", kernel))
    types = "tensor<3xi1>, tensor<2xcomplex<f32>>, tensor<2xbf16>, tensor<4xi32>"
    text = f"""
func.func @main(%p: tensor<3xi1>, %c: tensor<2xcomplex<f32>>, %h: tensor<2xbf16>) -> ({types}) {{
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %r:4 = stablehlo.custom_call @k(%p, %c, %h, %i) : ({types}) -> ({types})
  return %r#0, %r#1, %r#2, %r#3 : {types}
}}
"""
    p = np.array([True, False, True])
    c = np.array([1 + 2j, 3 - 1j], np.complex64)
    h = np.array([1.5, -2], ml_dtypes.bfloat16)
    got = compile_cpu(text)(p, c, h)
    np.testing.assert_array_equal(got[0], ~p)
    np.testing.assert_array_equal(got[1], c * 1j)
    assert got[2].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got[2].astype(np.float32), [3, -4])
    np.testing.assert_array_equal(got[3], np.arange(1, 5, dtype=np.int32))


def test_native_kernel_in_one_branch_of_an_if(clib, register):
    register(CustomCallInfo("axpy", "cpu", clib.axpy_f32))
    text = """
func.func @main(%p: tensor<i1>, %a: tensor<5xf32>, %b: tensor<5xf32>) -> tensor<5xf32> {
  %r = "stablehlo.if"(%p) ({
    %x = stablehlo.custom_call @axpy(%a, %b) {backend_config = "2,5"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
    stablehlo.return %x : tensor<5xf32>
  }, {
    %y = stablehlo.subtract %a, %b : tensor<5xf32>
    stablehlo.return %y : tensor<5xf32>
  }) : (tensor<i1>) -> tensor<5xf32>
  return %r : tensor<5xf32>
}
"""
    a, b = _ab()
    exe = compile_cpu(text)
    np.testing.assert_allclose(exe(np.array(True), a, b)[0], 2 * (a + b), rtol=1e-6)
    np.testing.assert_allclose(exe(np.array(False), a, b)[0], a - b, rtol=1e-6)


def test_tokens_order_calls_and_are_not_passed(register):
    log = []
    register(CustomCallInfo("emit", "cpu", lambda x, backend_config: log.append(x.copy())),
             CustomCallInfo("scale", "cpu", lambda x, backend_config: x * 10))
    text = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t0 = stablehlo.create_token : !stablehlo.token
  %t1 = stablehlo.custom_call @emit(%t0, %x) {has_side_effect = true} : (!stablehlo.token, tensor<2xf32>) -> !stablehlo.token
  %r:2 = stablehlo.custom_call @scale(%x, %t1) {has_side_effect = true} : (tensor<2xf32>, !stablehlo.token) -> (!stablehlo.token, tensor<2xf32>)
  return %r#1 : tensor<2xf32>
}
"""
    x = np.array([1.5, -1], np.float32)
    (got,) = compile_cpu(text)(x)
    np.testing.assert_array_equal(got, x * 10)
    assert len(log) == 1
    np.testing.assert_array_equal(log[0], x)


TYPED = """
func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<i32>) {
  %r:2 = stablehlo.custom_call @typed_k(%x) {backend_config = "", mhlo.backend_config =
      {scale = 3 : ui8, name = "s"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>],
      output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0],
      operand_index = 0, operand_tuple_indices = []>]}
      : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<i32>)
  %s:2 = stablehlo.custom_call @typed_k(%r#0) {backend_config = "", mhlo.backend_config =
      {scale = 5 : ui8, name = "t"}} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<i32>)
  return %s#0, %r#1 : tensor<2x3xf32>, tensor<i32>
}
"""


def test_python_kernel_gets_typed_ffi_attributes_per_call_site(register):
    """Two sites with one signature but different attributes: each is bound with its
    own decoded attributes; the kernel fills the result buffers in place (layouts and
    aliases are XLA placement hints, the kernel sees logical values)."""
    seen = []

    def kernel(x, backend_config, attributes, outputs):
        seen.append((backend_config, attributes))
        assert type(attributes["scale"]) is np.uint8
        outputs[0][...] = x * attributes["scale"]
        outputs[1][...] = len(attributes["name"]) + 40

    register(CustomCallInfo("typed_k", "cpu", kernel))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    r, n = compile_cpu(TYPED)(x)
    np.testing.assert_array_equal(r, x * 15)
    assert int(n) == 41
    assert sorted(a["scale"] for _, a in seen) == [3, 5] and seen[0][0] == ""
