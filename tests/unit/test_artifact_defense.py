"""Damaged and crafted artifacts are refused with one line, fast and in bounded memory
(issue #20): a zip bomb, huge counts, random object code with recomputed checksums, a
manifest claiming smaller outputs than the code writes; and HMAC signatures."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import zipfile
import zlib

import numpy as np
import pytest

import oxla
from oxla.artifact import MANIFEST, MANIFEST_SUM, SIGNATURE, _manifest_digest, sign_artifact
from oxla.errors import OxlaError

ADD = """func.func @main(%a: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = stablehlo.add %a, %w : tensor<4xf32>
  %1 = stablehlo.multiply %0, %c : tensor<4xf32>
  return %1 : tensor<4xf32>
}
"""
TWO_DOTS = """func.func @main(%a: tensor<64x64xf32>, %w: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0]
    : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = stablehlo.dot_general %0, %w, contracting_dims = [1] x [0]
    : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}"""
needs_cpu = pytest.mark.skipif("cpu" not in oxla.plugins.backends(),
                               reason="cpu backend not installed")


def rewrite(src, dst, members=None, manifest_edit=None, extra=(), recompute=True):
    """Copies artifact ``src`` to ``dst`` replacing members and editing the manifest;
    with ``recompute`` the checksums, sizes and manifest digest are made to match, as a
    deliberate attacker would."""
    members = dict(members or {})
    with zipfile.ZipFile(src) as zin:
        data = {n: zin.read(n) for n in zin.namelist()}
    data.update(members)
    m = json.loads(data.pop(MANIFEST))
    data.pop(SIGNATURE, None)
    if recompute:
        m["sha256"] = {n: hashlib.sha256(d).hexdigest() for n, d in data.items()}
        m["sizes"] = {n: len(d) for n, d in data.items()}
    if manifest_edit:
        manifest_edit(m)
    if recompute:
        m[MANIFEST_SUM] = _manifest_digest(m)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        zout.writestr(MANIFEST, json.dumps(m))
        for n, d in data.items():
            zout.writestr(n, d)
        for info, d in extra:
            zout.writestr(info, d)


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    d = tmp_path_factory.mktemp("art")
    out = {}
    for backend in ("interpreter", "cpu"):
        if backend not in oxla.plugins.backends():
            continue
        opts = {"cache": False} if backend == "cpu" else {}
        exe = oxla.compile(ADD, backend=backend, **opts)
        exe.save(d / f"{backend}.oxla")
        out[backend] = d / f"{backend}.oxla"
    return d, out


def _raw_member(zout, name, raw, file_size):
    """Appends a member from an already deflated stream, its header declaring
    ``file_size`` (the CRC is left 0: a reader must refuse before it gets that far)."""
    zinfo = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    zinfo.compress_type = zipfile.ZIP_DEFLATED
    zinfo.file_size, zinfo.compress_size, zinfo.CRC = file_size, len(raw), 0
    zout.fp.seek(zout.start_dir)
    zout._didModify = True
    zinfo.header_offset = zout.fp.tell()
    zout.fp.write(zinfo.FileHeader(zip64=file_size > 0xFFFFFFFF))
    zout.fp.write(raw)
    zout.filelist.append(zinfo)
    zout.NameToInfo[name] = zinfo
    zout.start_dir = zout.fp.tell()


def _spaces_deflated(n_blocks, block=4 << 20):
    """A raw deflate stream of ``n_blocks * block`` spaces, built from one compressed
    block repeated (a full flush makes each copy independent of the one before)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = comp.compress(b" " * block) + comp.flush(zlib.Z_FULL_FLUSH)
    return chunk * n_blocks + b"\x03\x00"  # an empty final block


def _bomb(d, good):
    """A manifest that inflates to 3 GiB from a few MB."""
    path = d / "bomb.oxla"
    with zipfile.ZipFile(good) as zin:
        data = {n: zin.read(n) for n in zin.namelist() if n != MANIFEST}
    with zipfile.ZipFile(path, "w") as zout:
        for n, blob in data.items():
            zout.writestr(n, blob)
        _raw_member(zout, MANIFEST, _spaces_deflated(768), 768 << 22)
    assert path.stat().st_size < 8 << 20
    return path


def crafted(d, good, backend):
    """name -> (path, expected message fragment)."""
    cases = {}
    cases["bomb"] = (_bomb(d, good), "3221225472")

    big = d / f"{backend}-ratio.oxla"
    rewrite(good, big, manifest_edit=lambda m: m["sha256"].update({"program.bak": "0" * 64}))
    with zipfile.ZipFile(big, "a") as zout:  # 400 MiB from 400 KB, sizes declared honestly
        _raw_member(zout, "program.bak", _spaces_deflated(100), 100 << 22)
    cases["ratio"] = (big, "more than 200x")
    for label, value in (("huge", 3 * 10**8), ("text", "12"), ("float", 1.5),
                         ("negative", -1)):
        p = d / f"{backend}-count-{label}.oxla"
        rewrite(good, p, manifest_edit=lambda m, v=value: m.update(constants=v))
        cases[f"count-{label}"] = (p, "'constants'")
    p = d / f"{backend}-deflate.oxla"
    rewrite(good, p)
    with zipfile.ZipFile(p) as z:
        info = z.getinfo("module.mlir")
    with open(p, "r+b") as fh:  # damage module.mlir's deflate stream
        fh.seek(info.header_offset + 30 + len(info.filename) + 2)
        fh.write(b"\xff\xff\xff\xff")
    cases["deflate"] = (p, "corrupt")
    if backend != "cpu":
        return cases
    rng = np.random.default_rng(0)
    for label, code in (("random", rng.bytes(4096)),
                        ("elf-random", b"\x7fELF\x02\x01\x01" + rng.bytes(4089))):
        p = d / f"code-{label}.oxla"
        rewrite(good, p, {"program.o": code})
        cases[f"code-{label}"] = (p, "not valid object code")
    p = d / "short-output.oxla"
    rewrite(good, p, manifest_edit=lambda m: m["signature"].update(outputs=["tensor<1xf32>"]))
    cases["short-output"] = (p, "differs from the module's")
    two_dots = d / "two-dots.oxla"  # an intermediate in the arena (ADD needs none)
    oxla.compile(TWO_DOTS, backend="cpu", cache=False).save(two_dots)
    p = d / "small-arena.oxla"  # consistent checksums, an arena smaller than entry uses
    rewrite(two_dots, p, manifest_edit=lambda m: m["stats"].update(temp_bytes=1))
    cases["small-arena"] = (p, "the manifest gives temp_bytes 1, the object code's entry "
                               "uses 16384")
    p = d / "big-constant.oxla"
    hdr = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }"
    hdr = hdr.ljust(10 + 0x76 - 1) + b"\n"
    rewrite(good, p, {"constants/0.npy": hdr + b"\0" * 16},
            manifest_edit=lambda m: m.update(constants=1, constant_digests=[None]))
    cases["big-constant"] = (p, "constant")
    return cases


CHILD = textwrap.dedent("""
    import json, resource, sys, time
    import oxla
    from oxla.errors import OxlaError
    for name in oxla.plugins.backends():  # importing a backend (once per process: 1-3 s
        oxla.plugins.get_backend(name, check_available=False)  # (llvmlite) is not the loader's time
    out = {}
    for name, path in json.loads(sys.argv[1]).items():
        t0 = time.perf_counter()
        try:
            oxla.load(path)
            why = None
        except OxlaError as exc:
            why = exc.one_line()
        out[name] = [why, time.perf_counter() - t0]
    # VmHWM: the peak of this address space (ru_maxrss after fork+exec also counts the
    # parent's, pytest's, at the fork)
    try:
        hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")]
        out["maxrss_kib"] = int(hwm[0].split()[1])
    except (OSError, IndexError):
        out["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(out))
""")


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_crafted_artifacts_are_refused_fast_in_bounded_memory(artifacts, backend):
    d, good = artifacts
    if backend not in good:
        pytest.skip(f"{backend} backend not installed")
    cases = crafted(d, good[backend], backend)
    res = subprocess.run([sys.executable, "-c", CHILD,
                          json.dumps({k: str(p) for k, (p, _) in cases.items()})],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.strip().splitlines()[-1])
    for name, (_, fragment) in cases.items():
        why, seconds = got[name]
        assert why is not None, f"{name}: loaded"
        assert why.startswith("error: ") and "\n" not in why, why
        assert fragment in why, (name, why)
        assert seconds < 2.0, (name, seconds)
    # the whole child (python, numpy, llvmlite, every case) stays under 500 MB
    assert got["maxrss_kib"] < 500 * 1024, got["maxrss_kib"]
    for path, _ in cases.values():
        os.unlink(path)


def test_lying_zip_header_is_bounded(artifacts, tmp_path):
    """A header declaring the member's true small size over a stream that inflates to
    2 GiB: the reader stops at the declared size and refuses the member."""
    _, good = artifacts
    path = tmp_path / "lie.oxla"
    with zipfile.ZipFile(good["interpreter"]) as zin:
        data = {n: zin.read(n) for n in zin.namelist()}
    with zipfile.ZipFile(path, "w") as zout:
        for n, blob in data.items():
            if n != "module.mlir":
                zout.writestr(n, blob)
        _raw_member(zout, "module.mlir", _spaces_deflated(512), len(data["module.mlir"]))
    with pytest.raises(OxlaError, match="module.mlir"):
        oxla.load(path)


@needs_cpu
def test_signed_artifact_round_trip_and_refusals(artifacts, tmp_path):
    _, good = artifacts
    key, other = tmp_path / "key", tmp_path / "other"
    key.write_bytes(b"secret key 1\n")
    other.write_bytes(b"secret key 2")
    signed = tmp_path / "signed.oxla"
    signed.write_bytes(good["cpu"].read_bytes())
    sign_artifact(signed, b"secret key 1")
    x = np.arange(4, dtype=np.float32)
    want = (x + x) * np.array([1, 2, 3, 4], np.float32)
    np.testing.assert_array_equal(oxla.load(signed, require_signature=key)(x, x)[0], want)
    np.testing.assert_array_equal(oxla.load(signed, require_signature=b"secret key 1")(x, x)[0],
                                  want)
    with pytest.raises(OxlaError, match="does not match the key"):
        oxla.load(signed, require_signature=other)
    with pytest.raises(OxlaError, match="is not signed"):
        oxla.load(good["cpu"], require_signature=key)
    # a member changed after signing, checksums recomputed: the manifest changes too
    tampered = tmp_path / "tampered.oxla"
    rewrite(signed, tampered, {"program.ll": b"; nothing"})
    with zipfile.ZipFile(signed) as z, zipfile.ZipFile(tampered, "a") as t:
        t.writestr(SIGNATURE, z.read(SIGNATURE))
    with pytest.raises(OxlaError, match="does not match the key"):
        oxla.load(tampered, require_signature=key)
    with pytest.raises(OxlaError, match="is empty"):
        oxla.load(signed, require_signature=b"")
    # Only a signature catches an edit made consistently everywhere an unsigned artifact
    # records the output size (manifest and module.mlir; the object code keeps no record)
    with zipfile.ZipFile(signed) as z:
        mlir = z.read("module.mlir")
    both = tmp_path / "both.oxla"
    rewrite(signed, both, {"module.mlir": mlir.replace(b"tensor<4xf32> {", b"tensor<1xf32> {")},
            manifest_edit=lambda m: m["signature"].update(outputs=["tensor<1xf32>"]))
    with zipfile.ZipFile(signed) as z, zipfile.ZipFile(both, "a") as t:
        t.writestr(SIGNATURE, z.read(SIGNATURE))
    with pytest.raises(OxlaError, match="does not match the key"):
        oxla.load(both, require_signature=key)
