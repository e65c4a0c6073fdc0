"""Shared fixtures of the IR tests: where the conformance files are (skip when absent)."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path | None:
    """``$OXLA_SHARED``, else ``../shared`` next to the repository, else None."""
    env = os.environ.get("OXLA_SHARED")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared", REPO / "shared"]:
        if (cand / "conformance" / "stablehlo").is_dir():
            return cand
    return None


@cache
def conformance_chunks() -> list[tuple[str, str, int]]:
    """Every ``// -----`` chunk with code of every conformance file: (path, text, offset)."""
    from oxla.ir import split_input_file

    root = shared_dir()
    if root is None:
        return []
    out = []
    for f in sorted((root / "conformance" / "stablehlo").rglob("*.mlir")):
        text = f.read_text()
        for chunk, off in split_input_file(text):
            if any(ln.strip() and not ln.strip().startswith("//") for ln in chunk.splitlines()):
                out.append((str(f), chunk, off))
    return out


@pytest.fixture
def chunks() -> list[tuple[str, str, int]]:
    got = conformance_chunks()
    if not got:
        pytest.skip("conformance files not found (set OXLA_SHARED)")
    return got
