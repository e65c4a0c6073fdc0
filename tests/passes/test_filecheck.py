"""Golden tests: ``oxla opt`` on each ``filecheck/*.mlir`` piped to FileCheck.

The first line of each file names its pipeline: ``// PIPELINE: canonicalize``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILES = sorted((Path(__file__).parent / "filecheck").glob("*.mlir"))
FILECHECK = shutil.which("filecheck") or str(Path(sys.executable).parent / "filecheck")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_filecheck(path: Path) -> None:
    pipeline = path.read_text().splitlines()[0].removeprefix("// PIPELINE:").strip()
    opt = subprocess.run(
        [sys.executable, "-m", "oxla.cli.main", "opt", str(path), "-p", pipeline],
        capture_output=True,
        text=True,
        check=False,
    )
    assert opt.returncode == 0, opt.stderr
    check = subprocess.run(
        [FILECHECK, str(path)], input=opt.stdout, capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr + "\n" + opt.stdout
