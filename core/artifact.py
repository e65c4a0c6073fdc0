"""The ``.oxla`` artifact container: a zip with a JSON manifest, never pickle.

A backend's ``Executable.save`` writes its payload (optimized StableHLO text, native
code, constants) through :func:`write_artifact`; :func:`oxla.load` reads the manifest
to find the backend and calls that backend's ``load(path)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from typing import Any

from oxla.errors import OxlaError

MANIFEST = "manifest.json"
FORMAT = "oxla-artifact"
FORMAT_VERSION = 1


STORE_UNCOMPRESSED_BYTES = 16 << 20
"""Members larger than this (bytes), and all ``.npy`` members, are stored uncompressed."""


def write_artifact(
    path: str | os.PathLike[str],
    backend: str,
    files: dict[str, bytes],
    meta: dict[str, Any] | None = None,
) -> None:
    """Writes an artifact.

    Args:
        path: destination, conventionally ``*.oxla``.
        backend: the name of the backend that can load it.
        files: member name -> content, e.g. ``{"module.mlir": b"...", "kernel.o": b"..."}``.
        meta: extra JSON-serializable manifest entries (backend-specific).
    """
    import oxla

    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "backend": backend,
        "oxla_version": oxla.__version__,
        "files": sorted(files),
        **(meta or {}),
    }
    manifest.setdefault("sha256", {n: hashlib.sha256(d).hexdigest() for n, d in files.items()})
    manifest[MANIFEST_SUM] = _manifest_digest(manifest)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
        for name, data in sorted(files.items()):
            # Weights (.npy) barely compress and deflating hundreds of MB takes minutes.
            big = name.endswith(".npy") or len(data) > STORE_UNCOMPRESSED_BYTES
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED if big else None)


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Returns the manifest of an artifact.

    Raises:
        OxlaError: the file is missing, not a zip, or has no valid oxla manifest.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read(MANIFEST))
    except FileNotFoundError as exc:
        raise OxlaError(f"no such file: '{os.fspath(path)}'") from exc
    except IsADirectoryError as exc:
        raise OxlaError(f"'{os.fspath(path)}' is a directory, expected a .oxla file") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise OxlaError(f"'{os.fspath(path)}' is not a readable oxla artifact: {exc}") from exc
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as exc:
        raise OxlaError(f"'{os.fspath(path)}' is not an oxla artifact: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise OxlaError(f"'{os.fspath(path)}' is not an oxla artifact: bad manifest format")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise OxlaError(
            f"'{os.fspath(path)}' has artifact format version {manifest.get('format_version')}, "
            f"expected {FORMAT_VERSION}"
        )
    if MANIFEST_SUM in manifest and manifest[MANIFEST_SUM] != _manifest_digest(manifest):
        raise OxlaError(f"'{os.fspath(path)}' is corrupt: the manifest was modified "
                        "(checksum mismatch)")
    if not isinstance(manifest.get("backend"), str):
        raise OxlaError(f"'{os.fspath(path)}' is not an oxla artifact: manifest names no backend")
    return manifest


def read_member(path: str | os.PathLike[str], name: str) -> bytes:
    """Returns the content of one member of an artifact.

    Raises:
        OxlaError: the member is missing.
    """
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read(MANIFEST))
            data = zf.read(name)
    except KeyError as exc:
        raise OxlaError(f"artifact '{os.fspath(path)}' has no member '{name}'") from exc
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise OxlaError(f"'{os.fspath(path)}' is corrupt: {exc}") from exc
    want = (manifest.get("sha256") or {}).get(name) if isinstance(manifest, dict) else None
    if want is not None and hashlib.sha256(data).hexdigest() != want:
        raise OxlaError(f"'{os.fspath(path)}' is corrupt: checksum mismatch in member '{name}'")
    return data


MANIFEST_SUM = "manifest_sha256"
"""Manifest key holding the SHA-256 of the rest of the manifest (canonical JSON)."""


def _manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != MANIFEST_SUM}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
