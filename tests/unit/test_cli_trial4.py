"""CLI problems found by the session-4 new-user trial: an object-array input, a ``.npy``
output path for several results, an artifact given to ``compile``, a closed pipe, an
input in the other byte order."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from click.testing import CliRunner

from oxla.cli.main import cli

TWO = """func.func @main(%a: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = stablehlo.add %a, %a : tensor<2x2xf32>
  return %0, %a : tensor<2x2xf32>, tensor<2x2xf32>
}
"""


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _artifact(tmp_path):
    src = tmp_path / "two.mlir"
    src.write_text(TWO)
    art = tmp_path / "two.oxla"
    assert run("compile", src, "--backend", "interpreter", "-o", art).exit_code == 0
    np.save(tmp_path / "x.npy", np.ones((2, 2), np.float32))
    return art


def test_object_array_input_names_the_object_dtype(tmp_path):
    art = _artifact(tmp_path)
    np.save(tmp_path / "obj.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    result = run("run", art, "-i", tmp_path / "obj.npy")
    assert result.exit_code == 2
    assert "holds an object array" in result.stderr and "no .npy header" not in result.stderr


def test_npy_output_for_two_results_is_refused_before_running(tmp_path):
    art = _artifact(tmp_path)
    out = tmp_path / "two.npy"
    result = run("run", art, "-i", tmp_path / "x.npy", "-o", out)
    assert result.exit_code == 2 and not out.exists()
    assert "has 2 results" in result.stderr and "two.npz" in result.stderr
    ok = run("run", art, "-i", tmp_path / "x.npy", "-o", tmp_path / "two.npz")
    assert ok.exit_code == 0
    with np.load(tmp_path / "two.npz") as z:
        np.testing.assert_array_equal(z["result0"], np.full((2, 2), 2, np.float32))


def test_compile_of_an_artifact_says_to_run_it(tmp_path):
    art = _artifact(tmp_path)
    result = run("compile", art)
    assert result.exit_code == 2
    assert "already a compiled artifact" in result.stderr and "oxla run" in result.stderr


def test_closed_pipe_is_not_an_internal_error():
    """``oxla plugins | head -0``: the reader is gone before anything is written, so the
    first write fails with EPIPE (Python ignores SIGPIPE)."""
    cmd = [sys.executable, "-c", "from oxla.cli.main import main; main()", "plugins"]
    producer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    producer.stdout.close()  # no reader left
    err = producer.stderr.read().decode()
    producer.wait(timeout=60)
    assert "internal error" not in err and "Traceback" not in err, err


def test_other_byte_order_input_says_how_to_convert():
    import pytest

    import oxla
    from oxla.errors import RuntimeInputError

    exe = oxla.compile("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                       "  return %a : tensor<2xf32>\n}", backend="interpreter")
    with pytest.raises(RuntimeInputError, match=r"pass x.astype\('<f4'\)"):
        exe(np.ones(2, ">f4"))
