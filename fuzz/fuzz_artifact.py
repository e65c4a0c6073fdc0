"""Fuzz harness: the artifact loader (``oxla.load``) on damaged and crafted artifacts.

Seeds are small artifacts compiled at start (interpreter, and cpu when installed: a
cpu artifact holds this machine's object code, so none is kept in the repository).
Each input picks a seed and a mutation: raw bytes of the zip edited, the manifest's
JSON edited (checksums recomputed as an attacker would, or left stale), a member
replaced, or the input itself taken as the file. ``oxla.load`` must load it or raise
an :class:`oxla.errors.OxlaError`; a loaded artifact is not called (well-formed but
altered machine code may do anything, see the README). Anything else is a bug.

Run: ``python fuzz/fuzz_artifact.py -runs=100000``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import tempfile
import zipfile

try:
    import atheris
except ImportError:
    atheris = None

if atheris is not None:
    with atheris.instrument_imports(include=["oxla", "oxla_backend_cpu"]):
        import oxla
        import oxla.artifact  # noqa: F401
        try:
            import oxla_backend_cpu.executable  # noqa: F401
            import oxla_backend_cpu.objcheck  # noqa: F401
        except ImportError:
            pass
import oxla
from oxla.errors import OxlaError

PROGRAM = """func.func @main(%a: tensor<4xf32>, %b: tensor<2x2xi32>) -> (tensor<4xf32>, tensor<2x2xi32>) {
  %w = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = stablehlo.multiply %a, %w : tensor<4xf32>
  %1 = stablehlo.add %b, %b : tensor<2x2xi32>
  return %0, %1 : tensor<4xf32>, tensor<2x2xi32>
}
"""
_DIR = tempfile.mkdtemp(prefix="oxla-fuzz-artifact-", dir=os.environ.get(
    "OXLA_FUZZ_SCRATCH") or ("/dev/shm" if os.path.isdir("/dev/shm") else None))
_PATH = os.path.join(_DIR, "input.oxla")


def _seeds() -> list[bytes]:
    out = []
    for backend in ("interpreter", "cpu"):
        if backend not in oxla.plugins.backends():
            continue
        opts = {"cache": False} if backend == "cpu" else {}
        path = os.path.join(_DIR, f"seed-{backend}.oxla")
        oxla.compile(PROGRAM, backend=backend, **opts).save(path)
        with open(path, "rb") as fh:
            out.append(fh.read())
    return out


SEEDS = _seeds()
_VALUES = [None, True, 0, -1, 1, 2**31, 2**63, 3 * 10**8, 1.5, "", "x", "12", [], {},
           [None], ["tensor<1xf32>"], {"inputs": [], "outputs": []}, "tensor<?xf32>",
           "x86_64-unknown-linux-gnu", [0, 1, 2], {"0": {"source": "0" * 64}}]


def _members(blob: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _pack(members: dict[str, bytes], manifest: dict, recompute: bool) -> bytes:
    from oxla.artifact import MANIFEST_SUM, _manifest_digest

    files = {n: d for n, d in members.items() if n != "manifest.json"}
    if recompute:
        manifest["sha256"] = {n: hashlib.sha256(d).hexdigest() for n, d in files.items()}
        manifest["sizes"] = {n: len(d) for n, d in files.items()}
        manifest[MANIFEST_SUM] = _manifest_digest(manifest)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for n, d in files.items():
            zf.writestr(n, d)
    return buf.getvalue()


def _edit(fdp, value, depth: int = 0):
    """A random change somewhere inside a JSON value."""
    if isinstance(value, dict) and value and depth < 4 and fdp.ConsumeBool():
        key = sorted(value)[fdp.ConsumeIntInRange(0, len(value) - 1)]
        value[key] = _edit(fdp, value[key], depth + 1)
        return value
    if isinstance(value, list) and value and depth < 4 and fdp.ConsumeBool():
        i = fdp.ConsumeIntInRange(0, len(value) - 1)
        value[i] = _edit(fdp, value[i], depth + 1)
        return value
    choice = fdp.ConsumeIntInRange(0, len(_VALUES) + 1)
    if choice == len(_VALUES):
        return fdp.ConsumeUnicodeNoSurrogates(40)
    if choice == len(_VALUES) + 1:
        return fdp.ConsumeInt(8)
    v = _VALUES[choice]
    return json.loads(json.dumps(v))


def craft(data: bytes) -> bytes:
    """The artifact bytes an input stands for (see the module docstring)."""
    fdp = atheris.FuzzedDataProvider(data) if atheris is not None else _Provider(data)
    if not SEEDS:
        return data
    seed = SEEDS[fdp.ConsumeIntInRange(0, len(SEEDS) - 1)]
    how = fdp.ConsumeIntInRange(0, 3)
    if how == 0:  # raw bytes of the zip edited
        b = bytearray(seed)
        for _ in range(fdp.ConsumeIntInRange(1, 8)):
            i = fdp.ConsumeIntInRange(0, len(b) - 1)
            b[i] = fdp.ConsumeIntInRange(0, 255)
        if fdp.ConsumeBool():
            del b[fdp.ConsumeIntInRange(0, len(b)):]
        return bytes(b)
    members = _members(seed)
    manifest = json.loads(members["manifest.json"])
    if how == 1:  # manifest edited
        for _ in range(fdp.ConsumeIntInRange(1, 3)):
            manifest = _edit(fdp, manifest)
        if not isinstance(manifest, dict):
            manifest = {"format": "oxla-artifact", "format_version": 1, "x": manifest}
        return _pack(members, manifest, fdp.ConsumeBool())
    if how == 2:  # a member replaced or damaged, checksums recomputed
        names = sorted(n for n in members if n != "manifest.json")
        name = names[fdp.ConsumeIntInRange(0, len(names) - 1)]
        blob = bytearray(members[name])
        if fdp.ConsumeBool() or not blob:
            blob = bytearray(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096)))
        else:
            for _ in range(fdp.ConsumeIntInRange(1, 16)):
                i = fdp.ConsumeIntInRange(0, len(blob) - 1)
                blob[i] = fdp.ConsumeIntInRange(0, 255)
        members[name] = bytes(blob)
        return _pack(members, manifest, True)
    return fdp.ConsumeBytes(1 << 16)


class _Provider:
    """A minimal stand-in for atheris.FuzzedDataProvider (random-mutation engine)."""

    def __init__(self, data: bytes):
        self.data, self.i = data, 0

    def _byte(self) -> int:
        b = self.data[self.i] if self.i < len(self.data) else 0
        self.i += 1
        return b

    def ConsumeIntInRange(self, lo: int, hi: int) -> int:  # noqa: N802
        v = int.from_bytes(bytes(self._byte() for _ in range(4)), "little")
        return lo + v % (hi - lo + 1) if hi >= lo else lo

    def ConsumeBool(self) -> bool:  # noqa: N802
        return bool(self._byte() & 1)

    def ConsumeInt(self, n: int) -> int:  # noqa: N802
        return int.from_bytes(bytes(self._byte() for _ in range(n)), "little", signed=True)

    def ConsumeBytes(self, n: int) -> bytes:  # noqa: N802
        out = self.data[self.i:self.i + n]
        self.i += n
        return out

    def ConsumeUnicodeNoSurrogates(self, n: int) -> str:  # noqa: N802
        return self.ConsumeBytes(n).decode("utf-8", "replace")


def one_input(data: bytes) -> None:
    """Loads the crafted artifact; only an OxlaError may come out."""
    blob = craft(data)
    with open(_PATH, "wb") as fh:
        fh.write(blob)
    try:
        oxla.load(_PATH)
    except OxlaError:
        pass


if __name__ == "__main__":
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from harness import collecting, run

    sys.exit(run(collecting(one_input, "artifact"), "artifact", sys.argv[1:]))
