"""``oxla compile`` of a SavedModel prints nothing from TensorFlow's C++ logging (absl
preamble, oneDNN notice), and a file that is no SavedModel is refused before
TensorFlow is imported. Each case runs ``oxla`` in a fresh process: the logs are
written to file descriptor 2 at ``import tensorflow``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("oxla_frontend_tf")
tf = pytest.importorskip("tensorflow")


class _Relu(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32)])
    def __call__(self, x):
        return {"y": tf.nn.relu(x) * 2.0}


def _oxla(*args: str, debug: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OXLA_DEBUG", "TF_CPP_MIN_LOG_LEVEL")}
    cmd = [sys.executable, "-m", "oxla.cli.main", *(["--debug"] if debug else []), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_saved_model_compile_prints_no_tf_logs(tmp_path):
    saved = tmp_path / "saved"
    tf.saved_model.save(_Relu(), str(saved))
    loud = _oxla("compile", str(saved), "-o", str(tmp_path / "b.oxla"), debug=True)
    assert loud.returncode == 0, loud.stderr
    if not loud.stderr:
        pytest.skip("this TensorFlow build logs nothing at import: nothing to hide")
    quiet = _oxla("compile", str(saved), "-o", str(tmp_path / "a.oxla"))
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""


def test_not_a_saved_model_is_one_line(tmp_path):
    model = tmp_path / "cnn.pt2"
    model.write_bytes(b"PK\x03\x04")
    result = _oxla("compile", str(model), "--frontend", "tf")
    assert result.returncode == 2
    assert result.stderr == (f"error: '{model}' is not a SavedModel directory "
                             "(no saved_model.pb in it)\n")
