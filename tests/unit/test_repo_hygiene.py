"""Repository hygiene: ruff is clean, and no Python module grows past 800 lines."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 800
SKIP_DIRS = {".venv", "venv", ".git", "build", "dist", "node_modules", "__pycache__"}

LONG_DATA_TABLES: set[str] = set()
"""Modules that are pure data tables and may exceed the limit (paths from the root)."""


def _python_files() -> list[Path]:
    out = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if not SKIP_DIRS.intersection(rel.parts) and not rel.parts[0].startswith("."):
            out.append(path)
    return sorted(out)


def _ruff() -> list[str] | None:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if exe:
        return [exe]
    try:
        import ruff  # noqa: F401
    except ImportError:
        return None
    return [sys.executable, "-m", "ruff"]


def test_ruff_check_is_clean():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed")
    proc = subprocess.run(
        [*ruff, "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_module_over_800_lines():
    too_long = []
    for path in _python_files():
        rel = path.relative_to(ROOT).as_posix()
        n = sum(1 for _ in path.open(encoding="utf-8", errors="replace"))
        if n > MAX_LINES and rel not in LONG_DATA_TABLES:
            too_long.append(f"{rel}: {n} lines")
    assert not too_long, f"modules over {MAX_LINES} lines (split them):\n" + "\n".join(too_long)


def test_allow_list_entries_exist():
    missing = [p for p in LONG_DATA_TABLES if not (ROOT / p).is_file()]
    assert not missing, f"stale entries in LONG_DATA_TABLES: {missing}"
