"""Recognizes ONNX files by suffix, without importing onnx."""

from __future__ import annotations

import os


def looks_like_onnx(path: str | os.PathLike[str]) -> bool:
    """True for an existing file whose name ends in ``.onnx``."""
    name = os.fspath(path)
    return name.lower().endswith(".onnx") and os.path.isfile(name)
