"""Recognizes ``torch.export.save`` archives (and what merely looks like them) without torch."""

from __future__ import annotations

import os
import zipfile

SUFFIXES = (".pt2",)
"""File name endings that mark a ``torch.export.save`` archive."""

_EXPORT_MARKERS = ("archive_format", "serialized_exported_program")


def zip_names(path: str | os.PathLike[str]) -> list[str]:
    """The member names of a zip file, or ``[]`` when ``path`` is not a zip."""
    try:
        if not zipfile.is_zipfile(path):
            return []
        with zipfile.ZipFile(path) as zf:
            return zf.namelist()
    except OSError:
        return []


def classify(path: str | os.PathLike[str]) -> str:
    """What a file holds: ``"export"``, ``"torchscript"``, ``"state_dict"`` or ``"other"``.

    A torch.export archive is a zip with an ``archive_format`` or
    ``serialized_exported_program`` member; a TorchScript archive has ``constants.pkl`` and
    ``code/``; a ``torch.save`` file (state dict or pickled module) has ``data.pkl`` only.
    """
    names = zip_names(path)
    if any(n.rsplit("/", 1)[-1] in _EXPORT_MARKERS or "serialized_exported_program" in n
           for n in names):
        return "export"
    if any(n.endswith("constants.pkl") for n in names) and any("/code/" in n for n in names):
        return "torchscript"
    if any(n.endswith("data.pkl") for n in names):
        return "state_dict"
    return "other"


def looks_like_torch_export(path: str | os.PathLike[str]) -> bool:
    """True for ``.pt2`` files and for zips that hold a serialized ExportedProgram.

    TorchScript archives and ``torch.save`` files are claimed too (``.pt``/``.pth``), so
    that importing them gives the frontend's clear error instead of "no frontend".
    """
    name = os.fspath(path)
    if name.endswith(SUFFIXES):
        return True
    if not os.path.isfile(name):
        return False
    kind = classify(name)
    return kind == "export" or (kind in ("torchscript", "state_dict")
                                and name.endswith((".pt", ".pth", ".ts")))
