"""The compile cache's key: module text with large constants elided plus the digests of
those constants' bytes (weights hashed, never printed); a hit takes equal run-time
constants from the module. Also: the parallel runtime is a separate object that travels
with artifacts."""

from __future__ import annotations

import hashlib
import zipfile

import numpy as np
import pytest

from oxla.interpreter import InterpreterBackend
from oxla.ir import parse_module
from oxla.ir.dense import encode_hex
from oxla.protocols import CompileOptions

pytest.importorskip("oxla_backend_cpu")

RNG = np.random.default_rng(7)


def _text(w: np.ndarray, b: np.ndarray) -> str:
    """``x @ w + b`` with ``w`` (64x64 f32, 16 KB: a run-time constant, read as it is:
    one row of ``x``, no packed copy) and ``b`` (64 f32, 256 bytes: printed into the
    key) as constants."""
    return f"""
func.func @main(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {{
  %w = stablehlo.constant dense<"{encode_hex(w)}"> : tensor<64x64xf32>
  %b = stablehlo.constant dense<"{encode_hex(b)}"> : tensor<64xf32>
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<1x64xf32>, tensor<64x64xf32>) -> tensor<1x64xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<1x64xf32>
  %2 = stablehlo.add %0, %1 : tensor<1x64xf32>
  return %2 : tensor<1x64xf32>
}}
"""


W = RNG.standard_normal((64, 64)).astype(np.float32)
B = RNG.standard_normal(64).astype(np.float32)
X = RNG.standard_normal((1, 64)).astype(np.float32)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("OXLA_CACHE_DIR", str(d))
    return d


def _compile(text: str):
    from oxla_backend_cpu.backend import CPUBackend

    return CPUBackend().compile(parse_module(text, "test.mlir"), CompileOptions())


def _want(text: str) -> np.ndarray:
    return np.asarray(InterpreterBackend().compile(parse_module(text))(X)[0])


def test_same_module_hits_and_changed_constants_miss(cache_dir):
    base = _text(W, B)
    first = _compile(base)
    assert first.stats["cache"] == "miss"
    second = _compile(base)
    assert second.stats["cache"] == "hit"
    np.testing.assert_array_equal(second(X)[0], first(X)[0])
    np.testing.assert_allclose(second(X)[0], _want(base), rtol=1e-5, atol=1e-5)

    w2 = W.copy()
    w2[63, 63] += 1.0  # one element of the hashed (elided) constant
    changed_w = _text(w2, B)
    exe = _compile(changed_w)
    assert exe.stats["cache"] == "miss"
    np.testing.assert_allclose(exe(X)[0], _want(changed_w), rtol=1e-5, atol=1e-5)

    b2 = B.copy()
    b2[0] = -b2[0]  # the small constant, printed into the key's text
    changed_b = _text(W, b2)
    exe = _compile(changed_b)
    assert exe.stats["cache"] == "miss"
    np.testing.assert_allclose(exe(X)[0], _want(changed_b), rtol=1e-5, atol=1e-5)

    # each variant now hits its own entry and computes with its own weights
    for text in (base, changed_w, changed_b):
        exe = _compile(text)
        assert exe.stats["cache"] == "hit"
        np.testing.assert_allclose(exe(X)[0], _want(text), rtol=1e-5, atol=1e-5)
    assert len(list(cache_dir.glob("*.oxla"))) == 3


def test_module_key_hashes_elided_constants_in_order():
    from oxla_backend_cpu import cache
    from oxla_codegen_llvm import CPUTarget

    target = CPUTarget.host()
    opts = CompileOptions()
    key, known = cache.module_key(parse_module(_text(W, B)), opts, target)
    # only the 16 KB weight is elided (B is exactly ELIDE_BYTES); its digest is that
    # of its raw bytes, and the array given is the module's own
    assert list(known) == [hashlib.sha256(W.tobytes()).hexdigest()]
    np.testing.assert_array_equal(next(iter(known.values())), W)
    assert cache.module_key(parse_module(_text(W, B)), opts, target)[0] == key
    # the same bytes under another shape or element type are another key
    w_t = np.ascontiguousarray(W.T)
    assert cache.module_key(parse_module(_text(w_t, B)), opts, target)[0] != key
    # digests enter the key in print order: swapping two elided constants changes it
    two = """
func.func @main() -> (tensor<128xf32>, tensor<128xf32>) {
  %a = stablehlo.constant dense<"A"> : tensor<128xf32>
  %b = stablehlo.constant dense<"B"> : tensor<128xf32>
  return %a, %b : tensor<128xf32>, tensor<128xf32>
}"""
    u, v = np.zeros(128, np.float32), np.ones(128, np.float32)

    def key_of(first, second):
        text = two.replace('"A"', f'"{encode_hex(first)}"').replace('"B"',
                                                                    f'"{encode_hex(second)}"')
        return cache.module_key(parse_module(text), opts, target)[0]

    assert key_of(u, v) != key_of(v, u)
    assert key_of(u, v) == key_of(u.copy(), v.copy())


def test_hit_takes_weights_from_the_module(cache_dir):
    from oxla_backend_cpu import cache
    from oxla_codegen_llvm import CPUTarget

    text = _text(W, B)
    first = _compile(text)
    assert len(first.constants) == 1
    module = parse_module(text)
    key, known = cache.module_key(module, CompileOptions(), CPUTarget.host())
    hit = cache.lookup(key, known)
    assert hit is not None
    (w_module,) = known.values()
    assert np.shares_memory(hit.constants[0], w_module)  # not read back from the entry
    np.testing.assert_array_equal(hit(X)[0], first(X)[0])
    # an artifact written by save() holds the weights; given the module's arrays, loading
    # takes them from there, else reads (and checks) them from the file
    from oxla_backend_cpu.executable import load_artifact

    path = cache_dir.parent / "full.oxla"
    first.save(path)
    assert np.shares_memory(load_artifact(path, known).constants[0], w_module)
    plain = load_artifact(path)
    assert not np.shares_memory(plain.constants[0], w_module)
    np.testing.assert_array_equal(plain(X)[0], first(X)[0])


def test_entries_record_module_weights_by_digest_only(cache_dir, tmp_path):
    import oxla
    from oxla.errors import OxlaError

    text = _text(W, B)
    exe = _compile(text)
    (entry,) = cache_dir.glob("*.oxla")
    with zipfile.ZipFile(entry) as zf:
        names = zf.namelist()
        # the shared runtime's object code travels with every entry that calls it
        runtime = sum(i.compress_size for i in zf.infolist() if i.filename == "runtime.o")
    assert not [n for n in names if n.startswith("constants/")], names
    assert entry.stat().st_size - runtime < W.nbytes  # the weights are not in the entry
    with pytest.raises(OxlaError, match="by digest only"):
        oxla.load(entry)  # an entry is read back only with its module
    hit = _compile(text)
    assert hit.stats["cache"] == "hit"
    np.testing.assert_allclose(hit(X)[0], _want(text), rtol=1e-5, atol=1e-5)
    # exe.save still writes every constant: a saved artifact stands alone
    path = tmp_path / "alone.oxla"
    exe.save(path)
    np.testing.assert_array_equal(oxla.load(path)(X)[0], exe(X)[0])


def test_parallel_runtime_is_its_own_object_and_travels_with_artifacts(tmp_path,
                                                                       monkeypatch):
    import oxla

    monkeypatch.setenv("OXLA_NUM_THREADS", "3")
    text = """func.func @main(%a: tensor<1024x256xf32>) -> tensor<1024x256xf32> {
  %0 = stablehlo.exponential %a : tensor<1024x256xf32>
  return %0 : tensor<1024x256xf32>
}"""
    from oxla_backend_cpu.backend import CPUBackend

    exe = CPUBackend().compile(parse_module(text), CompileOptions(cache=False))
    assert exe._jit.runtime_code, "a parallel program loads the runtime object"
    assert "define void @oxla_parallel_for" not in exe.llvm_ir  # declared only
    a = RNG.standard_normal((1024, 256)).astype(np.float32)
    want = np.exp(a.astype(np.float64))
    np.testing.assert_allclose(exe(a)[0], want, rtol=1e-6)
    path = tmp_path / "p.oxla"
    exe.save(path)
    with zipfile.ZipFile(path) as zf:
        assert "runtime.o" in zf.namelist()
    loaded = oxla.load(path)
    np.testing.assert_allclose(loaded(a)[0], want, rtol=1e-6)
    # two executables in one process each have their own pool and thread count
    other = CPUBackend().compile(parse_module(text), CompileOptions(cache=False))
    np.testing.assert_array_equal(other(a)[0], loaded(a)[0])
