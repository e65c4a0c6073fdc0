"""``pip install -e extensions/backend_hip`` into a fresh venv beside the core is all it
takes for ``oxla plugins`` to list ``hip`` (the README's install line).

The fresh venv sees this interpreter's third-party packages (numpy, llvmlite, msgpack,
click...) through a ``.pth`` file naming a folder of links to them, oxla's own
distributions left out, so nothing is downloaded and hip is absent until installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(*cmd, **env: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items()
         if k not in ("VIRTUAL_ENV", "PYTHONPATH", "OXLA_LOAD_PLUGINS")}
    e.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1", **env)
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=e,
                          timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _third_party(dest: Path) -> None:
    """Links to this interpreter's site-packages entries, oxla's own left out."""
    dest.mkdir()
    for lib in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for entry in Path(lib).iterdir():
            name = entry.name.lower()
            if name.startswith(("oxla", "__editable__", "_oxla")) or name.endswith(".pth") \
                    or (dest / entry.name).exists():
                continue
            (dest / entry.name).symlink_to(entry)


def test_installing_the_extension_lists_hip(tmp_path):
    env_dir = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", env_dir)
    python, oxla = env_dir / "bin" / "python", env_dir / "bin" / "oxla"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    _third_party(tmp_path / "deps")
    Path(purelib.stdout.strip(), "_oxla_deps.pth").write_text(str(tmp_path / "deps"))
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
           "--no-build-isolation"]
    _run(*pip, "-e", ROOT, "-e", ROOT / "extensions" / "codegen_llvm")

    def rows() -> dict[tuple[str, str], dict]:
        out = _run(oxla, "plugins", "--json", OXLA_HIP_RUNTIME="/nonexistent/libamdhip64.so")
        return {(r["name"], r["kind"]): r for r in json.loads(out.stdout)}

    assert ("hip", "backend") not in rows()
    _run(*pip, "-e", ROOT / "extensions" / "backend_hip")
    row = rows()["hip", "backend"]
    assert row["distribution"] == "oxla-backend-hip" and row["available"] is False
    assert row["reason"] == "no AMD GPU runtime: libamdhip64.so not found; compile-only"
    sim = _run(oxla, "plugins", "--json", OXLA_HIP_DEVICE="sim").stdout
    assert any(r["name"] == "hip" and r["available"] for r in json.loads(sim))
