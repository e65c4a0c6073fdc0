"""Recognizes serialized ``jax.export`` artifacts by name or first bytes, without jax."""

from __future__ import annotations

import os

SUFFIXES = (".jaxexport", ".jax_export", ".jax")
"""File name endings that mark a serialized ``jax.export.Exported``."""

_MLIR_BYTECODE_MAGIC = b"ML\xefR"
_PEEK_BYTES = 1 << 16


def looks_like_jax_export(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` names a file written from ``Exported.serialize()``.

    The name decides when it ends in one of :data:`SUFFIXES`. Otherwise the file must
    be a flatbuffer (no zip, no text) that embeds an MLIR bytecode module in its first
    64 KiB, which is how ``jax.export`` serializes.
    """
    name = os.fspath(path)
    if name.endswith(SUFFIXES):
        return True
    if not os.path.isfile(name):
        return False
    try:
        with open(name, "rb") as fh:
            head = fh.read(_PEEK_BYTES)
    except OSError:
        return False
    if head[:2] == b"PK" or head.startswith(_MLIR_BYTECODE_MAGIC):
        return False
    return _MLIR_BYTECODE_MAGIC in head
