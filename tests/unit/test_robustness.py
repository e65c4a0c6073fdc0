"""Bad input from a user gets a clear OxlaError (or one CLI `error:` line, exit 2),
never an internal error or a silent wrong answer (found by a new-user trial)."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

import oxla
from oxla.cli.main import cli
from oxla.errors import OxlaError, ParseError

ADD = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def _rewrite_manifest(src, dst, edit):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "manifest.json":
                m = json.loads(data)
                edit(m)
                data = json.dumps(m).encode()
            zout.writestr(item, data)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_edited_manifest_is_refused(tmp_path, backend):
    if backend not in oxla.plugins.backends():
        pytest.skip(f"{backend} backend not installed")
    exe = oxla.compile(ADD, backend=backend, cache=False) if backend == "cpu" else \
        oxla.compile(ADD, backend=backend)
    good, bad = tmp_path / "good.oxla", tmp_path / "bad.oxla"
    exe.save(good)
    np.testing.assert_array_equal(oxla.load(good)(np.ones(4, np.float32))[0], 2.0)

    def widen(m):
        if "signature" in m:
            m["signature"]["inputs"] = ["tensor<8xf32>"]
        else:
            m["entry"] = "other"

    _rewrite_manifest(good, bad, widen)
    with pytest.raises(OxlaError, match="manifest was modified"):
        oxla.load(bad)


def test_swapped_member_is_refused(tmp_path):
    exe = oxla.compile(ADD, backend="interpreter")
    good, bad = tmp_path / "good.oxla", tmp_path / "bad.oxla"
    exe.save(good)
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "module.mlir":
                data = data.replace(b"stablehlo.add", b"stablehlo.subtract")
            zout.writestr(item, data)
    with pytest.raises(OxlaError, match="checksum mismatch"):
        oxla.load(bad)


def test_compile_reads_a_path_given_as_str(tmp_path):
    path = tmp_path / "add.mlir"
    path.write_text(ADD)
    exe = oxla.compile(str(path))
    np.testing.assert_array_equal(exe(np.ones(4, np.float32))[0], 2.0)


@pytest.mark.parametrize("program", [None, 123, {"w": 1}])
def test_compile_rejects_what_it_cannot_read(program):
    with pytest.raises(OxlaError, match="oxla.compile takes"):
        oxla.compile(program)


def test_oversized_dimension_and_constant_are_parse_errors():
    with pytest.raises(ParseError, match="dimension size .* is too large") as e:
        oxla.ir.parse_module(
            "func.func @main(%a: tensor<99999999999999999999xf32>) -> tensor<1xf32> {\n"
            "  return %a : tensor<1xf32>\n}\n")
    assert e.value.loc.line == 1
    with pytest.raises(ParseError, match="constants are limited"):
        oxla.ir.parse_module(
            "func.func @main() -> tensor<100000000000xf32> {\n"
            "  %0 = stablehlo.constant dense<1.0> : tensor<100000000000xf32>\n"
            "  return %0 : tensor<100000000000xf32>\n}\n")


def test_cli_file_errors_are_one_line_user_errors(tmp_path):
    runner = CliRunner()
    binary = tmp_path / "bin.mlir"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    add = tmp_path / "add.mlir"
    add.write_text(ADD)
    cases = [
        (["compile", str(binary), "-o", str(tmp_path / "b.oxla")], "not UTF-8"),
        (["compile", str(add), "-o", str(tmp_path / "missing" / "x.oxla")],
         "no such file or directory"),
        (["run", str(tmp_path), "--input", str(add)], "is a directory"),
        (["conformance", str(tmp_path / "empty_dir_does_not_exist_yet")], None),
    ]
    (tmp_path / "empty").mkdir()
    cases[-1] = (["conformance", str(tmp_path / "empty")], "no .mlir test files")
    for args, text in cases:
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert "internal error" not in result.output
        assert text in result.output, (args, result.output)
