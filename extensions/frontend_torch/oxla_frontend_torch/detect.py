"""Recognizes ``torch.export.save`` archives (and what merely looks like them) without torch."""

from __future__ import annotations

import os
import re
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


_TYPE_FIELD = re.compile(r'\\?"type\\?": \\?"([A-Za-z_][\w.]*\.[A-Za-z_]\w*)')


def pytree_type_names(path: str | os.PathLike[str]) -> list[str]:
    """The dotted pytree type names (``transformers.modeling_outputs.CausalLMOutput``) the
    tree specs of a ``torch.export.save`` archive name, read from its ``models/*.json``
    members as text (nothing is executed); ``[]`` when the file is not such an archive."""
    found: list[str] = []
    try:
        with zipfile.ZipFile(path) as zf:
            for n in zf.namelist():
                if "/models/" in f"/{n}" and n.endswith(".json"):
                    text = zf.read(n).decode("utf-8", "replace")
                    found += [m for m in _TYPE_FIELD.findall(text) if m not in found]
    except (OSError, zipfile.BadZipFile):
        return []
    return found
