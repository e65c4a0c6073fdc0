"""Regression tests for what the fuzzers found (issue #20), one per distinct bug."""

from __future__ import annotations

import hashlib
import json
import struct
import zipfile

import numpy as np
import pytest

import oxla
from oxla.artifact import MANIFEST_SUM, _manifest_digest
from oxla.errors import OxlaError, ParseError, VerifyError
from oxla.ir import parse_module, print_module, verify

needs_cpu = pytest.mark.skipif("cpu" not in oxla.plugins.backends(),
                               reason="cpu backend not installed")
ADD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


@pytest.mark.parametrize("text", [
    # dense literal without its closing '>' (ValueError from str.index)
    'func.func @main() -> () {\n  %0 = stablehlo.constant dense<[1.0, 2.0] : tensor<2xf32>',
    'func.func @main() -> () {\n  %0 = stablehlo.constant dense<"0x0000',
    # a nested literal that ends early (IndexError)
    'func.func @main() -> () {\n  %0 = stablehlo.constant dense<[1, [2> : tensor<2xf32>\n}',
    # dense_resource of a dynamic type (TypeError making its placeholder)
    "func.func @main() -> () {\n  %c = stablehlo.constant dense_resource<b> : "
    "tensor<2x?xi32>\n  return\n}",
])
def test_parser_findings_are_parse_errors(text):
    with pytest.raises(ParseError):
        parse_module(text)


def test_compare_with_an_opaque_enum_prints_generic_and_round_trips():
    text = """func.func @main(%a: tensor<2xi32>) -> tensor<2xi1> {
  %0 = "stablehlo.compare"(%a, %a) <{compare_type = #stablehl<ocomparison_type SIGNED>, comparison_direction = #stablehlo<comparison_direction LE>}> : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}"""
    m = parse_module(text)
    verify(m)
    printed = print_module(m)
    assert '"stablehlo.compare"' in printed
    assert print_module(parse_module(printed)) == printed


def test_printed_declaration_parses_back():
    """A body-less func prints (generic form) as ``({})``, which must parse back to a
    region without blocks, not to one empty block that fails the verifier."""
    m = parse_module("module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32>\n}")
    verify(m)
    for generic in (False, True):
        again = parse_module(print_module(m, generic=generic))
        verify(again)
        assert print_module(again, generic=generic) == print_module(m, generic=generic)


@pytest.mark.parametrize("op,et", [("sign", "ui32"), ("abs", "ui8"), ("sign", "i1")])
def test_sign_and_abs_refuse_unsigned_operands(op, et):
    """Spec (I1): signed integers, floats or complex; the cpu backend and the
    interpreter disagreed on sign(ui16) (found by the differential fuzzer)."""
    text = (f"func.func @main(%a: tensor<2x{et}>) -> tensor<2x{et}> {{\n"
            f"  %0 = stablehlo.{op} %a : tensor<2x{et}>\n  return %0 : tensor<2x{et}>\n}}")
    with pytest.raises(VerifyError, match="signed integers"):
        verify(parse_module(text))


def _rewrite(src, dst, members=None, edit=None, flag_bits=0):
    with zipfile.ZipFile(src) as z:
        data = {n: z.read(n) for n in z.namelist()}
    data.update(members or {})
    m = json.loads(data.pop("manifest.json"))
    m["sha256"] = {n: hashlib.sha256(d).hexdigest() for n, d in data.items()}
    m["sizes"] = {n: len(d) for n, d in data.items()}
    if edit:
        edit(m)
    m[MANIFEST_SUM] = _manifest_digest(m)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(m))
        for n, d in data.items():
            info = zipfile.ZipInfo(n)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    if flag_bits:  # set a general-purpose flag in every header (local and central)
        blob = bytearray(open(dst, "rb").read())
        for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            i = blob.find(sig)
            while i >= 0:
                blob[i + at] |= flag_bits
                i = blob.find(sig, i + 4)
        open(dst, "wb").write(bytes(blob))


def test_interpreter_artifact_with_non_utf8_module(tmp_path):
    oxla.compile(ADD).save(tmp_path / "a.oxla")
    _rewrite(tmp_path / "a.oxla", tmp_path / "b.oxla", {"module.mlir": b"\xff\xfe bad"})
    with pytest.raises(OxlaError, match="not UTF-8"):
        oxla.load(tmp_path / "b.oxla")


def test_encrypted_member_is_refused(tmp_path):
    oxla.compile(ADD).save(tmp_path / "a.oxla")
    _rewrite(tmp_path / "a.oxla", tmp_path / "b.oxla", flag_bits=0x1)
    with pytest.raises(OxlaError, match="encrypted"):
        oxla.load(tmp_path / "b.oxla")


@pytest.fixture(scope="module")
def cpu_artifact(tmp_path_factory):
    if "cpu" not in oxla.plugins.backends():
        pytest.skip("cpu backend not installed")
    path = tmp_path_factory.mktemp("cpu") / "cpu.oxla"
    m = ADD.replace("stablehlo.add %a, %a", "stablehlo.exponential %a")
    oxla.compile(m, backend="cpu", cache=False).save(path)
    return path


@needs_cpu
@pytest.mark.parametrize("edit,match", [
    (lambda m: m.update(stages=3), "stages"),
    (lambda m: m.update(cpu={"inputs": []}), "CPU name"),
    (lambda m: m.update(cpu_features="avx2"), "cpu_features"),
    (lambda m: m.update(constant_digests=7), "digests"),
    (lambda m: m.update(constants_omitted=["x"]), "constants_omitted"),
    (lambda m: m.update(stats=[1]), "stats"),
    (lambda m: m["stats"].update(temp_bytes=-5), "temp_bytes"),
    (lambda m: m.update(signature={"inputs": 5}), "signature"),
])
def test_cpu_manifest_entries_of_the_wrong_kind(cpu_artifact, tmp_path, edit, match):
    _rewrite(cpu_artifact, tmp_path / "b.oxla", edit=edit)
    with pytest.raises(OxlaError, match=match):
        oxla.load(tmp_path / "b.oxla")


@needs_cpu
def test_recipe_with_a_non_string_source(cpu_artifact, tmp_path):
    """``constant_recipes`` naming a dict as its source: was a TypeError (unhashable)."""
    from oxla_backend_cpu.executable import load_artifact

    _rewrite(cpu_artifact, tmp_path / "b.oxla",
             edit=lambda m: m.update(constant_recipes={"0": {"source": {"x": 1}}}))
    exe = load_artifact(tmp_path / "b.oxla", {"a" * 64: np.zeros(1, np.float32)})
    x = np.ones(4, np.float32)
    np.testing.assert_allclose(exe(x)[0], np.exp(x), rtol=1e-6)


@needs_cpu
def test_cpu_artifact_with_non_utf8_llvm_ir(cpu_artifact, tmp_path):
    _rewrite(cpu_artifact, tmp_path / "b.oxla", {"program.ll": b"; \xbc\xff"})
    with pytest.raises(OxlaError, match="not UTF-8"):
        oxla.load(tmp_path / "b.oxla")


def _sections(obj: bytes):
    shoff, = struct.unpack_from("<Q", obj, 40)
    shnum, = struct.unpack_from("<H", obj, 60)
    return shoff, [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + 64 * i) for i in range(shnum)]


def _mutations(obj: bytes) -> dict[str, bytes]:
    """program.o edits that passed the first checks and made LLVM assert or abort."""
    shoff, secs = _sections(obj)
    out = {}
    b = bytearray(obj)
    i = next(k for k, s in enumerate(secs) if s[1] == 1 and s[2] & 4 and s[5])  # code
    struct.pack_into("<Q", b, shoff + 64 * i + 48, 0)  # sh_addralign = 0
    out["alignment 0"] = bytes(b)
    st = next(s for s in secs if s[1] == 2)
    b = bytearray(obj)
    for k in range(1, st[5] // 24):  # every symbol's type: TLS
        at = st[4] + 24 * k + 4
        b[at] = (b[at] & 0xF0) | 6
    out["TLS symbols"] = bytes(b)
    rela = next(s for s in secs if s[1] == 4)
    b = bytearray(obj)
    r_info, = struct.unpack_from("<Q", b, rela[4] + 8)
    struct.pack_into("<Q", b, rela[4] + 8, (r_info & ~0xFFFFFFFF) | 10)  # R_X86_64_32
    out["32-bit relocation"] = bytes(b)
    b = bytearray(obj)
    struct.pack_into("<Q", b, shoff + 64 * 5 + 8, 0xB8)  # odd section flags
    out["section flags"] = bytes(b)
    b = bytearray(obj)
    ri = next(k for k, s in enumerate(secs) if s[1] == 4)
    struct.pack_into("<Q", b, shoff + 64 * ri + 32, secs[ri][5] - 14)  # partial entry
    out["relocation size"] = bytes(b)
    b = bytearray(obj)
    for k in range(1, st[5] // 24):  # a section symbol of no section
        at = st[4] + 24 * k
        if b[at + 4] & 0xF == 3:
            struct.pack_into("<H", b, at + 6, 0)
            break
    else:
        raise AssertionError("no section symbol in the object")
    out["section symbol of section 0"] = bytes(b)
    b = bytearray(obj)
    struct.pack_into("<H", b, 56, 25)  # e_phnum in a relocatable object
    out["program headers"] = bytes(b)
    b = bytearray(obj)
    struct.pack_into("<I", b, shoff + 64 * (len(secs) - 1), 0x2D8F9000)  # sh_name
    out["section name"] = bytes(b)
    return out


@needs_cpu
def test_object_code_llvm_would_crash_on_is_refused(cpu_artifact, tmp_path):
    from oxla_backend_cpu.objcheck import check_object

    with zipfile.ZipFile(cpu_artifact) as z:
        obj = z.read("program.o")
        triple = json.loads(z.read("manifest.json"))["target_triple"]
    if not triple.startswith("x86_64"):
        pytest.skip("the mutations are written for x86-64 objects")
    assert "entry" in check_object(obj, triple, need=("entry",))
    for what, bad in _mutations(obj).items():
        with pytest.raises(OxlaError, match="not valid object code"):
            check_object(bad, triple)
        _rewrite(cpu_artifact, tmp_path / "b.oxla", {"program.o": bad})
        with pytest.raises(OxlaError, match="not valid object code"):
            oxla.load(tmp_path / "b.oxla")  # before LLVM reads it: no abort
        del what


@needs_cpu
def test_concatenate_with_empty_result_compiles():
    """A concatenate of empty operands (alone, or fused into a reduce) compiles: its
    index rule had no operand to read from; found by fuzz/progen.py."""
    m = """func.func @main(%a: tensor<0x2xf32>, %b: tensor<0x2xf32>) -> tensor<0x2xf32> {
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<0x2xf32>, tensor<0x2xf32>) -> tensor<0x2xf32>
  return %0 : tensor<0x2xf32>
}"""
    exe = oxla.compile(m, backend="cpu", cache=False)
    z = np.zeros((0, 2), np.float32)
    assert exe(z, z)[0].shape == (0, 2)


@needs_cpu
def test_empty_concatenate_fused_into_reduce_matches_interpreter():
    m = """func.func @main(%a: tensor<0xf64>, %b: tensor<0xf64>) -> tensor<f64> {
  %0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<0xf64>, tensor<0xf64>) -> tensor<0xf64>
  %init = stablehlo.constant dense<-1.0e+300> : tensor<f64>
  %1 = stablehlo.reduce(%0 init: %init) applies stablehlo.maximum across dimensions = [0]
      : (tensor<0xf64>, tensor<f64>) -> tensor<f64>
  return %1 : tensor<f64>
}"""
    z = np.zeros((0,), np.float64)
    (got,) = oxla.compile(m, backend="cpu", cache=False)(z, z)
    (want,) = oxla.compile(m, backend="interpreter")(z, z)
    np.testing.assert_array_equal(got, want)


@needs_cpu
def test_power_one_half_is_ieee_pow_on_both_backends():
    """pow(-inf, 0.5) is +inf and pow(-0, 0.5) is +0 (IEEE-754 pow, spec "power"); the
    interpreter took numpy's sqrt shortcut (nan, -0); found by fuzz/progen.py."""
    m = """func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.power %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    a = np.array([-np.inf, -0.0, 4.0, -np.inf], np.float32)
    b = np.array([0.5, 0.5, 0.5, 2.0], np.float32)
    want = np.array([np.inf, 0.0, 2.0, np.inf], np.float32)
    for backend in ("interpreter", "cpu"):
        (got,) = oxla.compile(m, backend=backend, cache=False)(a, b)
        np.testing.assert_array_equal(got, want)
        assert not np.signbit(got).any(), backend
