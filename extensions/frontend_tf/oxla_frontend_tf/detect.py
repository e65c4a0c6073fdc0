"""Recognizes SavedModel directories by their ``saved_model.pb``, without tensorflow."""

from __future__ import annotations

import os

SAVED_MODEL_PB = "saved_model.pb"
"""The graph file every SavedModel directory holds."""


def saved_model_dir(path: str | os.PathLike[str]) -> str | None:
    """The SavedModel directory ``path`` names (the directory, or its ``saved_model.pb``),
    or None when it is not one."""
    name = os.fspath(path)
    if os.path.isdir(name):
        return name if os.path.isfile(os.path.join(name, SAVED_MODEL_PB)) else None
    if os.path.basename(name) == SAVED_MODEL_PB and os.path.isfile(name):
        return os.path.dirname(name) or "."
    return None


def looks_like_saved_model(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a SavedModel directory or its ``saved_model.pb``."""
    return saved_model_dir(path) is not None
