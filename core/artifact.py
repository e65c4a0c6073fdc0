"""The ``.oxla`` artifact container: a zip with a JSON manifest, never pickle.

A backend's ``Executable.save`` writes its payload (optimized StableHLO text, native
code, constants) through :func:`write_artifact`; :func:`oxla.load` reads the manifest
to find the backend and calls that backend's ``load(path)``.

An artifact holds native code: load only artifacts you trust, as you would a shared
library. The reader still defends the host against damaged or crafted files: before
it decompresses anything it checks the zip's directory (member count, names, stored
and declared sizes, compression ratio, a total bound), so reading never allocates
more than the sizes it accepted (:data:`MAX_MANIFEST_BYTES` for the manifest, at most
:func:`max_total_bytes` in all); every member is checked against the SHA-256 the
manifest records for it. An optional HMAC-SHA256 signature (:func:`sign_artifact`,
:func:`verify_signature`) proves that an artifact was written by a holder of a key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import zipfile
import zlib
from typing import Any

from oxla.errors import OxlaError, int_setting

MANIFEST = "manifest.json"
SIGNATURE = "signature.hmac-sha256"
"""The member holding the hex HMAC-SHA256 of the manifest's bytes (see :func:`sign_artifact`)."""
FORMAT = "oxla-artifact"
FORMAT_VERSION = 1

STORE_UNCOMPRESSED_BYTES = 16 << 20
"""Members larger than this (bytes), and all ``.npy`` members, are stored uncompressed."""
MAX_MANIFEST_BYTES = 16 << 20
"""The largest manifest accepted (bytes, uncompressed)."""
MAX_MEMBERS = 1 << 16
"""The most members an artifact may hold (and so the most constants)."""
MAX_DEFLATE_RATIO = 200
"""A compressed member above 1 MiB may expand at most this many times (text and object
code compress 3-20x; a zip bomb 1000x)."""
_SMALL = 1 << 20
_HMAC_DOMAIN = b"oxla-artifact-signature-v1\0"


def max_total_bytes() -> int:
    """The largest total uncompressed size of an artifact's members: the environment's
    ``OXLA_ARTIFACT_MAX_BYTES`` (bytes), else 64 GiB.

    Raises:
        OxlaError: the variable is not a positive integer.
    """
    env = os.environ.get("OXLA_ARTIFACT_MAX_BYTES")
    if not env:
        return 64 << 30
    return int_setting("OXLA_ARTIFACT_MAX_BYTES", env)


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
    manifest["sizes"] = {n: len(d) for n, d in files.items()}
    manifest[MANIFEST_SUM] = _manifest_digest(manifest)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
        for name, data in sorted(files.items()):
            # Weights (.npy) barely compress and deflating hundreds of MB takes minutes.
            big = name.endswith(".npy") or len(data) > STORE_UNCOMPRESSED_BYTES
            zf.writestr(name, data, compress_type=zipfile.ZIP_STORED if big else None)


def _corrupt(path: str, why: str) -> OxlaError:
    return OxlaError(f"'{path}' is not a valid oxla artifact: {why}")


def _open(path: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError as exc:
        raise OxlaError(f"no such file: '{path}'") from exc
    except IsADirectoryError as exc:
        raise OxlaError(f"'{path}' is a directory, expected a .oxla file") from exc
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, UnicodeDecodeError,
            NotImplementedError, OverflowError) as exc:
        raise OxlaError(f"'{path}' is not an oxla artifact: {exc}") from exc


def check_container(zf: zipfile.ZipFile, path: str) -> dict[str, zipfile.ZipInfo]:
    """Checks an artifact's zip directory before anything is decompressed.

    Returns:
        member name -> its ``ZipInfo``.

    Raises:
        OxlaError: too many members, a repeated or odd name, an unknown compression, a
            stored member whose sizes differ, a member past the end of the file, a
            compressed member expanding more than :data:`MAX_DEFLATE_RATIO` times, a
            manifest above :data:`MAX_MANIFEST_BYTES`, or more than
            :func:`max_total_bytes` in all.
    """
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _corrupt(path, f"{len(infos)} members, at most {MAX_MEMBERS} are allowed")
    file_size = os.path.getsize(path)
    out: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        name = info.filename
        if name in out:
            raise _corrupt(path, f"member '{name}' appears twice")
        if info.flag_bits & 0x1:
            raise _corrupt(path, f"member '{name}' is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise _corrupt(path, f"member '{name}' uses compression {info.compress_type}")
        if info.header_offset + info.compress_size > file_size:
            raise _corrupt(path, f"member '{name}' extends past the end of the file")
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise _corrupt(path, f"stored member '{name}' declares {info.file_size} bytes "
                                 f"but holds {info.compress_size}")
        if (info.compress_type == zipfile.ZIP_DEFLATED and info.file_size > _SMALL
                and info.file_size > MAX_DEFLATE_RATIO * max(info.compress_size, 1)):
            raise _corrupt(path, f"member '{name}' would expand {info.compress_size} bytes "
                                 f"to {info.file_size} (more than {MAX_DEFLATE_RATIO}x)")
        total += info.file_size
        out[name] = info
    if MANIFEST not in out:
        raise OxlaError(f"'{path}' is not an oxla artifact: it has no {MANIFEST}")
    if out[MANIFEST].file_size > MAX_MANIFEST_BYTES:
        raise _corrupt(path, f"the manifest declares {out[MANIFEST].file_size} bytes, at "
                             f"most {MAX_MANIFEST_BYTES} are allowed")
    limit = max_total_bytes()
    if total > limit:
        raise _corrupt(path, f"its members expand to {total} bytes, more than the limit of "
                             f"{limit} (OXLA_ARTIFACT_MAX_BYTES)")
    return out


def _read(zf: zipfile.ZipFile, path: str, name: str) -> bytes:
    """One member's bytes: its declared size, inflated in bounded steps (``ZipFile.read``
    inflates up to 2 GiB in one step whatever the header declares)."""
    try:
        size = zf.getinfo(name).file_size
        parts = []
        with zf.open(name) as fh:
            left = size
            while left > 0:
                part = fh.read(min(left, 1 << 24))
                if not part:
                    raise EOFError(f"member '{name}' ended {left} bytes early")
                parts.append(part)
                left -= len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    except KeyError as exc:
        raise OxlaError(f"artifact '{path}' has no member '{name}'") from exc
    except zlib.error as exc:
        raise OxlaError(f"'{path}' is corrupt: member '{name}' is not a valid deflate "
                        f"stream ({exc})") from exc
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError,
            OverflowError) as exc:
        raise OxlaError(f"'{path}' is corrupt: member '{name}': {exc}") from exc


def _raw_manifest(zf: zipfile.ZipFile, path: str) -> tuple[dict[str, Any], bytes,
                                                          dict[str, zipfile.ZipInfo]]:
    infos = check_container(zf, path)
    raw = _read(zf, path, MANIFEST)
    try:
        manifest = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise OxlaError(f"'{path}' is not an oxla artifact: bad manifest: {exc}") from None
    _check_manifest(path, manifest, infos)
    return manifest, raw, infos


def _check_manifest(p: str, manifest: Any, infos: dict[str, zipfile.ZipInfo]) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise OxlaError(f"'{p}' is not an oxla artifact: bad manifest format")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise OxlaError(f"'{p}' has artifact format version "
                        f"{str(manifest.get('format_version'))[:40]}, expected {FORMAT_VERSION}")
    if MANIFEST_SUM in manifest and manifest[MANIFEST_SUM] != _manifest_digest(manifest):
        raise OxlaError(f"'{p}' is corrupt: the manifest was modified (checksum mismatch)")
    if not isinstance(manifest.get("backend"), str):
        raise OxlaError(f"'{p}' is not an oxla artifact: manifest names no backend")
    sums = manifest.get("sha256", {})
    if not isinstance(sums, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in sums.items()):
        raise _corrupt(p, "'sha256' in the manifest is not a map of names to digests")
    sizes = manifest.get("sizes")
    if sizes is not None:
        if not isinstance(sizes, dict):
            raise _corrupt(p, "'sizes' in the manifest is not a map of names to sizes")
        for name, n in sizes.items():
            info = infos.get(name)
            if info is not None and (type(n) is not int or n != info.file_size):
                raise OxlaError(f"'{p}' is corrupt: size and checksum mismatch in member "
                                f"'{name}' ({info.file_size} bytes, the manifest says "
                                f"{str(n)[:40]})")
    if "constants" in manifest:  # what a backend allocates by: checked for all
        manifest_int(p, manifest, "constants")
    for name in infos:
        if name not in (MANIFEST, SIGNATURE) and name not in sums:
            raise _corrupt(p, f"member '{name}' has no checksum in the manifest")


def manifest_int(path: str | os.PathLike[str], manifest: dict[str, Any], key: str,
                 default: int = 0, limit: int = MAX_MEMBERS) -> int:
    """A non-negative integer entry of the manifest, at most ``limit``.

    Raises:
        OxlaError: the entry is not an integer in ``[0, limit]``.
    """
    v = manifest.get(key, default)
    if type(v) is not int or not 0 <= v <= limit:
        raise _corrupt(os.fspath(path), f"manifest entry '{key}' is {str(v)[:40]!r}, "
                                        f"expected an integer in [0, {limit}]")
    return v


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Returns the manifest of an artifact, after the container checks.

    Raises:
        OxlaError: the file is missing, not a zip, fails :func:`check_container`, or
            has no valid oxla manifest.
    """
    p = os.fspath(path)
    with _open(p) as zf:
        return _raw_manifest(zf, p)[0]


def read_members(path: str | os.PathLike[str], names: list[str],
                 manifest: dict[str, Any] | None = None) -> dict[str, bytes]:
    """Reads members of an artifact, each checked against its SHA-256 in the manifest.

    Raises:
        OxlaError: a member is missing, damaged or differs from its checksum, or the
            container fails :func:`check_container`.
    """
    p = os.fspath(path)
    with _open(p) as zf:
        found, _, _ = _raw_manifest(zf, p)
        if manifest is not None and found != manifest:
            raise OxlaError(f"'{p}' changed while it was being read")
        sums = found.get("sha256", {})
        out = {}
        for name in names:
            if name not in sums:
                raise OxlaError(f"artifact '{p}' has no member '{name}'")
            data = _read(zf, p, name)
            if hashlib.sha256(data).hexdigest() != sums[name]:
                raise OxlaError(f"'{p}' is corrupt: checksum mismatch in member '{name}'")
            out[name] = data
        return out


def read_member(path: str | os.PathLike[str], name: str) -> bytes:
    """Returns the content of one member of an artifact (see :func:`read_members`).

    Raises:
        OxlaError: the member is missing or corrupt.
    """
    return read_members(path, [name])[name]


def load_key(source: str | os.PathLike[str] | bytes, what: str = "key") -> bytes:
    """A signing key: ``bytes`` as given, else the content of the file at ``source``
    (surrounding whitespace removed). Keys are never taken from a command line.

    Raises:
        OxlaError: the file cannot be read, or the key is empty.
    """
    if isinstance(source, bytes):
        key = source
    else:
        p = os.fspath(source)
        try:
            with open(p, "rb") as fh:
                key = fh.read(1 << 16).strip()
        except OSError as exc:
            raise OxlaError(f"cannot read the {what} file '{p}': "
                            f"{exc.strerror or exc}") from None
    if not key:
        raise OxlaError(f"the {what} is empty")
    return key


def key_from_env(var: str) -> bytes | None:
    """The key in environment variable ``var`` (UTF-8), or None when it is unset.

    Raises:
        OxlaError: the variable is set but empty.
    """
    value = os.environ.get(var)
    if value is None:
        return None
    return load_key(value.strip().encode(), f"key in {var}")


def _mac(key: bytes, raw_manifest: bytes) -> str:
    return hmac.new(key, _HMAC_DOMAIN + raw_manifest, hashlib.sha256).hexdigest()


def sign_artifact(path: str | os.PathLike[str], key: bytes) -> None:
    """Adds an HMAC-SHA256 signature to an artifact.

    The signature covers the manifest's exact bytes, and through the SHA-256 the
    manifest records for every member (all members must have one), every member.

    Raises:
        OxlaError: not a valid artifact, or it is signed already.
    """
    p = os.fspath(path)
    with _open(p) as zf:
        _, raw, infos = _raw_manifest(zf, p)
    if SIGNATURE in infos:
        raise OxlaError(f"'{p}' is signed already")
    with zipfile.ZipFile(p, "a") as zf:
        zf.writestr(SIGNATURE, _mac(load_key(key), raw))


def verify_signature(path: str | os.PathLike[str], key: bytes) -> None:
    """Checks an artifact's signature and every member against its checksum.

    Raises:
        OxlaError: no signature, a signature made with another key or over another
            manifest, or a member that differs from its checksum.
    """
    p = os.fspath(path)
    key = load_key(key)
    with _open(p) as zf:
        manifest, raw, infos = _raw_manifest(zf, p)
        if SIGNATURE not in infos:
            raise OxlaError(f"'{p}' is not signed, and a signature is required")
        if infos[SIGNATURE].file_size > 256:
            raise OxlaError(f"'{p}' has a malformed signature")
        got = _read(zf, p, SIGNATURE).decode("ascii", "replace").strip()
        if not hmac.compare_digest(got, _mac(key, raw)):
            raise OxlaError(f"'{p}' has a signature that does not match the key (a "
                            "different key, or the artifact was modified)")
        sums = manifest.get("sha256", {})
        for name in infos:
            if name in (MANIFEST, SIGNATURE):
                continue
            h = hashlib.sha256()
            try:
                with zf.open(name) as fh:
                    left = infos[name].file_size
                    while left > 0:
                        chunk = fh.read(min(left, 1 << 20))
                        if not chunk:
                            raise EOFError("ended early")
                        h.update(chunk)
                        left -= len(chunk)
            except (zlib.error, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                raise OxlaError(f"'{p}' is corrupt: member '{name}': {exc}") from exc
            if h.hexdigest() != sums.get(name):
                raise OxlaError(f"'{p}' is corrupt: checksum mismatch in member '{name}'")


MANIFEST_SUM = "manifest_sha256"
"""Manifest key holding the SHA-256 of the rest of the manifest (canonical JSON)."""


def _manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != MANIFEST_SUM}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
