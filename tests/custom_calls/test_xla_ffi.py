"""XLA FFI on the cpu backend: a C++ handler built against jaxlib's ``xla/ffi/api/ffi.h``
(typed attributes: f32 scalar, i64 scalar, string, i64 array) runs unchanged in a
``jax.ffi.ffi_call`` program lowered by JAX and compiled by oxla, and agrees with JAX's
own execution of the same handler."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import oxla
from oxla import hookimpl, plugins
from oxla.errors import OxlaError
from oxla.plugins import PluginRegistry, PluginSource
from oxla.protocols import CustomCallInfo

jax = pytest.importorskip("jax")
pytest.importorskip("oxla_backend_cpu")
SRC = Path(__file__).with_name("data") / "ffi_affine.cc"
TARGET = "oxla_test_affine"


@pytest.fixture(scope="module")
def handler(tmp_path_factory):
    """The handler library, built with the system C++ compiler, registered in JAX."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    lib = tmp_path_factory.mktemp("ffi") / "libaffine.so"
    res = subprocess.run([cxx, "-std=c++17", "-O2", "-shared", "-fPIC",
                          f"-I{jax.ffi.include_dir()}", str(SRC), "-o", str(lib)],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    so = ctypes.CDLL(str(lib))
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(so.OxlaTestAffine),
                                platform="cpu")
    return so


@pytest.fixture
def registered(handler):
    class Plugin:
        @hookimpl
        def oxla_custom_calls(self):
            return [CustomCallInfo(TARGET, "cpu", handler.OxlaTestAffine)]

    reg = PluginRegistry()
    reg.register_builtins()
    reg.load_entry_points()
    reg.register(Plugin(), PluginSource("oxla-test-ffi", "0.1", "ffi = x"))
    old = plugins.set_registry(reg)
    yield handler
    plugins.set_registry(old)


def _fn(mode: str):
    def f(x, b):
        return jax.ffi.ffi_call(TARGET, jax.ShapeDtypeStruct(x.shape, x.dtype))(
            x, b, scale=np.float32(2.5), offset=np.int64(3), mode=mode,
            shift=np.array([1], np.int64))
    return f


def _inputs():
    rng = np.random.default_rng(0)
    return (rng.standard_normal((3, 5, 8), dtype=np.float32),
            rng.standard_normal(8, dtype=np.float32))


def test_jax_ffi_call_runs_the_same_handler_in_oxla(registered, tmp_path):
    x, b = _inputs()
    f = jax.jit(_fn("bias"))
    text = f.lower(x, b).as_text()
    assert "mhlo.backend_config = {" in text or "api_version = 4" in text
    want = np.asarray(f(x, b))
    exe = oxla.compile(text, backend="cpu", cache=False)
    got = exe(x, b)[0]
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, x * 2.5 + 3)  # the string and array attributes count
    exe.save(tmp_path / "ffi.oxla")  # the site (attributes included) survives an artifact
    np.testing.assert_array_equal(oxla.load(tmp_path / "ffi.oxla")(x, b)[0], want)


def test_api_version_4_dictionary_backend_config(registered):
    x, b = _inputs()
    t, bt = "tensor<3x5x8xf32>", "tensor<8xf32>"
    text = (f"func.func @main(%x: {t}, %b: {bt}) -> {t} {{\n"
            f"  %0 = stablehlo.custom_call @{TARGET}(%x, %b) {{api_version = 4 : i32, "
            'backend_config = {mode = "plain", offset = -1 : i64, scale = 0.5 : f32, '
            f"shift = array<i64>}}}} : ({t}, {bt}) -> {t}\n  return %0 : {t}\n}}\n")
    got = oxla.compile(text, backend="cpu", cache=False)(x, b)[0]
    np.testing.assert_array_equal(got, x * np.float32(0.5) + np.float32(-1))


def test_a_handler_error_is_raised_naming_the_target(registered):
    x, b = _inputs()
    text = jax.jit(_fn("nonsense")).lower(x, b).as_text()
    exe = oxla.compile(text, backend="cpu", cache=False)
    with pytest.raises(OxlaError, match=f"'{TARGET}'.*mode must be bias or plain"):
        exe(x, b)
    np.testing.assert_array_equal(  # the next call is clean
        oxla.compile(jax.jit(_fn("plain")).lower(x, b).as_text(), backend="cpu",
                     cache=False)(x, b)[0], x * np.float32(2.5) + np.float32(3))
