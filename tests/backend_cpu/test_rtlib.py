"""The installed runtime library (oxla_backend_cpu.rtlib): after the prebuild, a
compile with the cache off in a fresh process loads the runtime and the FFT passes
instead of building them; a corrupt or foreign file is not used (built instead, results
right); a missing directory or ``OXLA_RUNTIME_DIR=off`` works as before."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("oxla_backend_cpu")
from oxla_backend_cpu import prebuild, rtlib  # noqa: E402
from oxla_codegen_llvm import jit  # noqa: E402
from oxla_codegen_llvm.target import CPUTarget  # noqa: E402

import oxla  # noqa: E402

# an f32 GEMM (the cpu-gemm extension: loaded through the whole runtime, a superset)
DOT = """func.func @main(%a: tensor<96x256xf32>, %b: tensor<256x128xf32>) -> tensor<96x128xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<96x256xf32>, tensor<256x128xf32>) -> tensor<96x128xf32>
  return %0 : tensor<96x128xf32>
}"""
# a real FFT of 240 = 4*4*3*5 (real radix passes from the library)
FFT = """func.func @main(%a: tensor<4x240xf32>) -> tensor<4x121xcomplex<f32>> {
  %0 = stablehlo.fft %a, type = RFFT, length = [240] : (tensor<4x240xf32>) -> tensor<4x121xcomplex<f32>>
  return %0 : tensor<4x121xcomplex<f32>>
}"""

CHILD = r"""
import json, sys
import numpy as np
import oxla
from oxla_backend_cpu import fft_lib, rtlib
from oxla_codegen_llvm import jit
rng = np.random.default_rng(0)
a, b = rng.standard_normal((96, 256), np.float32), rng.standard_normal((256, 128), np.float32)
x = rng.standard_normal((4, 240), np.float32)
dot = oxla.compile(sys.argv[1], backend="cpu", cache=False)
fft = oxla.compile(sys.argv[2], backend="cpu", cache=False)
err = [float(np.abs(dot(a, b)[0] - a.astype(np.float64) @ b).max()),
       float(np.abs(fft(x)[0] - np.fft.rfft(x.astype(np.float64))).max())]
print(json.dumps({"stats": rtlib.STATS, "runtime_builds": jit.STATS["runtime_builds"],
                  "fft_builds": fft_lib.STATS["builds"], "err": err}))
"""


def _fft_passes() -> list[str]:
    """The library passes FFT's program calls, and one it does not (a second file)."""
    exe = oxla.compile(FFT, backend="cpu", cache=False)
    names = set(re.findall(r"oxla_pocketfft_pass_[a-z0-9]+_[sd]", exe._jit.ir_text))
    assert names and exe._jit.library_code, "the rfft program calls library passes"
    return sorted(names | {"oxla_pocketfft_pass_c7b_d"})


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A library prebuilt into a fresh directory (whole runtime, bare runtime, FFT's
    passes)."""
    d = tmp_path_factory.mktemp("rtlib")
    (d / "user.o").write_bytes(b"not ours")  # kept
    (d / ("0" * 64 + ".o")).write_bytes(rtlib.MAGIC + b"stale")  # removed
    paths = prebuild.build(str(d), quiet=True, fft_passes=_fft_passes())
    assert len(paths) >= 3 and all(os.path.exists(p) for p in paths)
    assert (d / "user.o").exists() and not (d / ("0" * 64 + ".o")).exists()
    (d / "user.o").unlink()
    return d


def _child(directory) -> dict:
    env = {**os.environ, "OXLA_RUNTIME_DIR": str(directory)}
    p = subprocess.run([sys.executable, "-c", CHILD, DOT, FFT], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _assert_right(out: dict) -> None:
    assert out["err"][0] < 1e-3 and out["err"][1] < 1e-3, out["err"]


def test_fresh_process_cache_off_loads_the_runtime(library):
    out = _child(library)
    _assert_right(out)
    assert out["runtime_builds"] == 0 and out["fft_builds"] == 0
    assert out["stats"]["runtime_hits"] >= 1 and out["stats"]["fft_hits"] >= 1
    assert out["stats"]["runtime_misses"] == 0 and out["stats"]["fft_misses"] == 0


def test_corrupt_and_foreign_files_are_not_used(library, tmp_path):
    """Every runtime file corrupted by one byte, every pass file replaced by another
    pass's intact file (a foreign key): all are built in the process, results right."""
    files = sorted(library.glob("*.o"))
    blobs = {p.name: p.read_bytes() for p in files}
    runtimes = [n for n, b in blobs.items() if b'"runtime"' in b[:4096]]
    passes = [n for n in blobs if n not in runtimes]
    assert runtimes and len(passes) >= 2
    for name in runtimes:
        b = bytearray(blobs[name])
        b[-100] ^= 0xFF
        (tmp_path / name).write_bytes(bytes(b))
    for name, other in zip(passes, passes[1:] + passes[:1]):
        (tmp_path / name).write_bytes(blobs[other])
    out = _child(tmp_path)
    _assert_right(out)
    assert out["runtime_builds"] >= 1 and out["stats"]["runtime_hits"] == 0
    assert out["fft_builds"] >= 1 and out["stats"]["fft_hits"] == 0


def test_missing_directory_and_off_build_in_memory(tmp_path, monkeypatch):
    for value in (str(tmp_path / "absent"), "off"):
        monkeypatch.setenv("OXLA_RUNTIME_DIR", value)
        monkeypatch.setattr(jit, "_RUNTIME", {})
        before = jit.STATS["runtime_builds"]
        exe = oxla.compile(DOT, backend="cpu", cache=False)
        assert jit.STATS["runtime_builds"] == before + 1
        a, b = np.ones((96, 256), np.float32), np.full((256, 128), 0.5, np.float32)
        np.testing.assert_allclose(exe(a, b)[0], 128.0)
    assert not (tmp_path / "absent").exists()


def test_header_must_be_the_key():
    host = CPUTarget.host()
    meta = rtlib.key_material(host, {"fft": "oxla_pocketfft_pass_r4f_s"})
    blob = rtlib.encode(meta, b"object")
    assert rtlib.decode(blob, meta) == b"object"
    other = {**meta, "features": meta["features"] + ",+madeup"}
    assert rtlib.file_key(other) != rtlib.file_key(meta)
    assert rtlib.decode(blob, other) is None  # another CPU's object
    assert rtlib.decode(blob[:-1] + b"X", meta) is None  # checksum
    assert rtlib.decode(b"junk", meta) is None


def test_prebuild_refuses_an_unwritable_directory_in_one_line(tmp_path, capsys):
    """A directory that cannot be made (a plain file stands in its way) is the user's
    setting: one ``error:`` line naming it, exit 2, nothing written; ``off`` likewise."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert prebuild.main(["--dir", str(blocker / "lib"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot write the cpu runtime library")
    assert str(blocker) in err[0]
    assert not (blocker.parent / "lib").exists()


def test_prebuild_with_the_library_off_is_one_error_line(monkeypatch, capsys):
    monkeypatch.setenv(rtlib.ENV, "off")
    assert prebuild.main(["--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "off" in err[0]
