"""One rule for errors (issue #20): every malformed input, argument or environment a user
can give any CLI command is exit 2 with one ``error:`` line and no traceback."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

import oxla
from oxla.artifact import MANIFEST_SUM, _manifest_digest
from oxla.cli.main import cli

ADD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
HAS_CPU = "cpu" in oxla.plugins.backends()
HAS_TORCH = "torch" in oxla.plugins.frontends()


def _recomputed(src, dst, members=None, edit=None):
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
            z.writestr(n, d)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Every file the table refers to, by name."""
    d = tmp_path_factory.mktemp("malformed")
    f = {}

    def text(name, content):
        (d / name).write_text(content)
        f[name] = str(d / name)

    def raw(name, content):
        (d / name).write_bytes(content)
        f[name] = str(d / name)

    text("add.mlir", ADD)
    text("empty.mlir", "")
    text("comments.mlir", "// nothing here\n// at all")
    text("nomain.mlir", ADD.replace("@main", "@f") + ADD.replace("@main", "@g"))
    text("syntax.mlir", ADD.replace("return %0", "return %0,"))
    text("unknown_op.mlir", ADD.replace("stablehlo.add", "stablehlo.addd"))
    text("mismatch.mlir", ADD.replace("%0 = stablehlo.add %a, %a : tensor<4xf32>",
                                      '%0 = "stablehlo.add"(%a, %a) : (tensor<4xf32>, '
                                      'tensor<4xf32>) -> tensor<5xf32>'))
    raw("binary.mlir", b"\x00\xff\xfe garbage \x80\x81")
    text("deep.mlir", "func.func @main(%a: " + "tuple<" * 3000 + "tensor<f32>" + ">" * 3000
         + ") -> () {\n  return\n}\n")
    text("unclosed.mlir", ADD.rsplit("}", 1)[0])
    text("hugedim.mlir", ADD.replace("tensor<4xf32>", "tensor<99999999999999999999xf32>"))
    text("dense.mlir", "func.func @main() -> tensor<2xf32> {\n  %0 = stablehlo.constant "
         "dense<[1.0, [2.0> : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    text("verify.mlir", ADD.replace("return %0 : tensor<4xf32>", "return %a, %0 : "
                                                                "tensor<4xf32>, tensor<4xf32>"))
    raw("garbage.pt2", bytes(range(256)) * 4)
    text("empty.key", "\n")
    text("key", "k1")
    text("other.key", "k2")
    (d / "adir").mkdir()
    f["adir"] = str(d / "adir")
    f["missing"] = str(d / "missing.mlir")
    exe = oxla.compile(ADD, backend="interpreter")
    exe.save(d / "interp.oxla")
    f["interp.oxla"] = str(d / "interp.oxla")
    raw("notzip.oxla", b"this is not a zip")
    raw("truncated.oxla", (d / "interp.oxla").read_bytes()[:300])
    _recomputed(d / "interp.oxla", d / "hip.oxla", edit=lambda m: m.update(backend="tpu"))
    f["hip.oxla"] = str(d / "hip.oxla")
    # a corrupt deflate stream in module.mlir
    blob = bytearray((d / "interp.oxla").read_bytes())
    with zipfile.ZipFile(d / "interp.oxla") as z:
        info = z.getinfo("module.mlir")
    at = info.header_offset + 30 + len(info.filename) + 1
    blob[at:at + 4] = b"\xff\xff\xff\xff"
    raw("deflate.oxla", bytes(blob))
    # a manifest declaring 20 MiB (from a 20 KB stream)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream = comp.compress(b" " * (20 << 20)) + comp.flush()
    with zipfile.ZipFile(d / "bigmanifest.oxla", "w") as z:
        zi = zipfile.ZipInfo("manifest.json", date_time=(2024, 1, 1, 0, 0, 0))
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.file_size, zi.compress_size, zi.CRC = 20 << 20, len(stream), 0
        zi.header_offset = z.fp.tell()
        z.fp.write(zi.FileHeader())
        z.fp.write(stream)
        z.filelist.append(zi)
        z.NameToInfo[zi.filename] = zi
        z.start_dir = z.fp.tell()
    f["bigmanifest.oxla"] = str(d / "bigmanifest.oxla")
    _recomputed(d / "interp.oxla", d / "count.oxla", edit=lambda m: m.update(constants="3"))
    f["count.oxla"] = str(d / "count.oxla")
    if HAS_CPU:
        oxla.compile(ADD, backend="cpu", cache=False).save(d / "cpu.oxla")
        f["cpu.oxla"] = str(d / "cpu.oxla")
        _recomputed(d / "cpu.oxla", d / "code.oxla",
                    {"program.o": np.random.default_rng(0).bytes(2048)})
        f["code.oxla"] = str(d / "code.oxla")
        _recomputed(d / "cpu.oxla", d / "short.oxla",
                    edit=lambda m: m["signature"].update(outputs=["tensor<2xf32>"]))
        f["short.oxla"] = str(d / "short.oxla")
        _recomputed(d / "cpu.oxla", d / "features.oxla",
                    edit=lambda m: m["cpu_features"].append("avx1024"))
        f["features.oxla"] = str(d / "features.oxla")
    np.save(d / "x.npy", np.ones(4, np.float32))
    f["x.npy"] = str(d / "x.npy")
    np.save(d / "x5.npy", np.ones(5, np.float32))
    f["x5.npy"] = str(d / "x5.npy")
    np.save(d / "xi.npy", np.ones(4, np.int32))
    f["xi.npy"] = str(d / "xi.npy")
    np.savez(d / "x.npz", a=np.ones(4, np.float32))
    f["x.npz"] = str(d / "x.npz")
    np.save(d / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    f["obj.npy"] = str(d / "obj.npy")
    raw("trunc.npy", (d / "x.npy").read_bytes()[:-6])
    text("text.npy", "not numpy")
    raw("hdr.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': 'zz'}\n")
    return f


# (id, argv with {name} placeholders, extra environment, needs)
CASES = [
    ("compile-empty", ["compile", "{empty.mlir}", "-o", "{out}"], {}, ""),
    ("compile-comments", ["compile", "{comments.mlir}", "-o", "{out}"], {}, ""),
    ("compile-nomain", ["compile", "{nomain.mlir}", "-o", "{out}"], {}, ""),
    ("compile-syntax", ["compile", "{syntax.mlir}", "-o", "{out}"], {}, ""),
    ("compile-unknown-op", ["compile", "{unknown_op.mlir}", "-o", "{out}"], {}, ""),
    ("compile-type-mismatch", ["compile", "{mismatch.mlir}", "-o", "{out}"], {}, ""),
    ("compile-binary", ["compile", "{binary.mlir}", "-o", "{out}"], {}, ""),
    ("compile-deep-tuple", ["compile", "{deep.mlir}", "-o", "{out}"], {}, ""),
    ("compile-unclosed", ["compile", "{unclosed.mlir}", "-o", "{out}"], {}, ""),
    ("compile-huge-dim", ["compile", "{hugedim.mlir}", "-o", "{out}"], {}, ""),
    ("compile-dense-early-end", ["compile", "{dense.mlir}", "-o", "{out}"], {}, ""),
    ("compile-verify", ["compile", "{verify.mlir}", "-o", "{out}"], {}, ""),
    ("compile-o-is-input", ["compile", "{add.mlir}", "-o", "{add.mlir}"], {}, ""),
    ("compile-emit-o-is-input", ["compile", "{add.mlir}", "--emit", "stablehlo", "-o",
                                 "{add.mlir}"], {}, ""),
    ("compile-bad-input-spec", ["compile", "{add.mlir}", "--input-spec", "4xq:f32", "-o",
                                "{out}"], {}, ""),
    ("compile-bad-spec-type", ["compile", "{add.mlir}", "--input-spec", "4:f99", "-o",
                               "{out}"], {}, ""),
    ("compile-unknown-backend", ["compile", "{add.mlir}", "--backend", "tpu"], {}, ""),
    ("compile-unknown-frontend", ["compile", "{add.mlir}", "--frontend", "mxnet"], {}, ""),
    ("compile-directory", ["compile", "{adir}"], {}, ""),
    ("compile-missing", ["compile", "{missing}"], {}, ""),
    ("compile-artifact", ["compile", "{interp.oxla}"], {}, ""),
    ("compile-bad-emit", ["compile", "{add.mlir}", "--emit", "bogus"], {}, ""),
    ("compile-missing-key", ["compile", "{add.mlir}", "-o", "{out}", "--sign-key-file",
                             "{missing}"], {}, ""),
    ("compile-empty-key", ["compile", "{add.mlir}", "-o", "{out}", "--sign-key-file",
                           "{empty.key}"], {}, ""),
    ("compile-empty-key-env", ["compile", "{add.mlir}", "-o", "{out}"],
     {"OXLA_SIGN_KEY": ""}, ""),
    ("compile-garbage-pt2", ["compile", "{garbage.pt2}"], {}, "torch"),
    ("compile-cpu-dynamic", ["compile", "{add.mlir}", "--backend", "cpu", "--input-spec",
                             "4:f32", "--input-spec", "4:f32", "-o", "{out}"], {}, "cpu"),
    ("run-missing", ["run", "{missing}"], {}, ""),
    ("run-directory", ["run", "{adir}"], {}, ""),
    ("run-not-zip", ["run", "{notzip.oxla}"], {}, ""),
    ("run-truncated", ["run", "{truncated.oxla}"], {}, ""),
    ("run-mlir", ["run", "{add.mlir}"], {}, ""),
    ("run-corrupt-deflate", ["run", "{deflate.oxla}", "--input", "{x.npy}"], {}, ""),
    ("run-manifest-too-big", ["run", "{bigmanifest.oxla}"], {}, ""),
    ("run-count-not-int", ["run", "{count.oxla}"], {}, ""),
    ("run-unknown-backend", ["run", "{hip.oxla}"], {}, ""),
    ("run-npz-input", ["run", "{interp.oxla}", "--input", "{x.npz}"], {}, ""),
    ("run-missing-input", ["run", "{interp.oxla}", "--input", "{missing}"], {}, ""),
    ("run-text-input", ["run", "{interp.oxla}", "--input", "{text.npy}"], {}, ""),
    ("run-truncated-npy", ["run", "{interp.oxla}", "--input", "{trunc.npy}"], {}, ""),
    ("run-bad-npy-header", ["run", "{interp.oxla}", "--input", "{hdr.npy}"], {}, ""),
    ("run-object-npy", ["run", "{interp.oxla}", "--input", "{obj.npy}"], {}, ""),
    ("run-wrong-shape", ["run", "{interp.oxla}", "--input", "{x5.npy}"], {}, ""),
    ("run-wrong-dtype", ["run", "{interp.oxla}", "--input", "{xi.npy}"], {}, ""),
    ("run-too-few", ["run", "{interp.oxla}"], {}, ""),
    ("run-too-many", ["run", "{interp.oxla}", "--input", "{x.npy}", "--input", "{x.npy}"],
     {}, ""),
    ("run-output-is-input", ["run", "{interp.oxla}", "--input", "{x.npy}", "--output",
                             "{x.npy}"], {}, ""),
    ("run-npy-output-for-artifact", ["run", "{interp.oxla}", "--input", "{x.npy}", "-o",
                                     "{interp.oxla}"], {}, ""),
    ("run-unsigned", ["run", "{interp.oxla}", "--input", "{x.npy}",
                      "--require-signature-key-file", "{key}"], {}, ""),
    ("run-unsigned-env", ["run", "{interp.oxla}", "--input", "{x.npy}"],
     {"OXLA_REQUIRE_SIGNATURE_KEY": "k1"}, ""),
    ("run-missing-key", ["run", "{interp.oxla}", "--require-signature-key-file",
                         "{missing}"], {}, ""),
    ("run-bad-max-bytes", ["run", "{interp.oxla}"], {"OXLA_ARTIFACT_MAX_BYTES": "lots"}, ""),
    ("run-over-max-bytes", ["run", "{interp.oxla}"], {"OXLA_ARTIFACT_MAX_BYTES": "10"}, ""),
    ("run-random-code", ["run", "{code.oxla}", "--input", "{x.npy}"], {}, "cpu"),
    ("run-short-output", ["run", "{short.oxla}", "--input", "{x.npy}"], {}, "cpu"),
    ("run-cpu-features", ["run", "{features.oxla}", "--input", "{x.npy}"], {}, "cpu"),
    ("run-bad-option", ["run", "{interp.oxla}", "--inptu", "{x.npy}"], {}, ""),
    ("opt-syntax", ["opt", "{syntax.mlir}"], {}, ""),
    ("opt-binary", ["opt", "{binary.mlir}"], {}, ""),
    ("opt-deep", ["opt", "{deep.mlir}"], {}, ""),
    ("opt-unknown-pass", ["opt", "{add.mlir}", "-p", "frobnicate"], {}, ""),
    ("opt-bad-pipeline", ["opt", "{add.mlir}", "-p", "canonicalize{max-iterations="], {}, ""),
    ("opt-o-is-input", ["opt", "{add.mlir}", "-o", "{add.mlir}"], {}, ""),
    ("opt-directory", ["opt", "{adir}"], {}, ""),
    ("interpret-syntax", ["interpret", "{syntax.mlir}"], {}, ""),
    ("interpret-binary", ["interpret", "{binary.mlir}"], {}, ""),
    ("interpret-missing", ["interpret", "{missing}"], {}, ""),
    ("conformance-missing", ["conformance", "{missing}"], {}, ""),
    ("conformance-jobs", ["conformance", "{add.mlir}", "--jobs", "0"], {}, ""),
    ("conformance-backend", ["conformance", "{add.mlir}", "--backend", "tpu"], {}, ""),
    ("plugins-bad-flag", ["plugins", "--jsn"], {}, ""),
    ("unknown-command", ["compiel", "{add.mlir}"], {}, ""),
]


def test_table_is_large_enough():
    assert len(CASES) >= 40
    assert {c[1][0] for c in CASES} >= {"compile", "run", "opt", "interpret", "conformance",
                                        "plugins"}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_is_one_line_exit_2(files, tmp_path, monkeypatch, case):
    name, argv, env, needs = case
    if needs == "cpu" and not HAS_CPU:
        pytest.skip("cpu backend not installed")
    if needs == "torch" and not HAS_TORCH:
        pytest.skip("torch frontend not installed")
    for k in ("OXLA_SIGN_KEY", "OXLA_REQUIRE_SIGNATURE_KEY", "OXLA_ARTIFACT_MAX_BYTES",
              "OXLA_NUM_THREADS", "OXLA_DEBUG"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    table = {**files, "out": str(tmp_path / "out.oxla")}
    args = [table[a[1:-1]] if a.startswith("{") and a.endswith("}") else a for a in argv]
    before = {p: open(p, "rb").read() for p in args if p in files.values()
              and os.path.isfile(p)}
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    err = res.stderr
    assert res.exit_code == 2, (name, res.exit_code, res.output)
    assert "Traceback" not in res.output, res.output
    errors = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(errors) == 1, (name, err)
    assert "internal error" not in err, err
    for p, content in before.items():  # no input was overwritten
        assert open(p, "rb").read() == content, p


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in (
    "compile-nomain", "run-corrupt-deflate", "run-npz-input", "compile-deep-tuple")],
    ids=lambda c: c[0])
def test_malformed_input_in_a_real_process(files, tmp_path, case):
    """The same in a separate process: what a shell sees (stderr, exit status)."""
    import subprocess
    import sys

    name, argv, env, _ = case
    table = {**files, "out": str(tmp_path / "out.oxla")}
    args = [table[a[1:-1]] if a.startswith("{") and a.endswith("}") else a for a in argv]
    res = subprocess.run([sys.executable, "-m", "oxla.cli.main", *args], capture_output=True,
                         text=True, timeout=120, env={**os.environ, **env})
    assert res.returncode == 2, (name, res.stderr)
    assert "Traceback" not in res.stderr
    assert len([ln for ln in res.stderr.splitlines() if "error:" in ln]) == 1, res.stderr
