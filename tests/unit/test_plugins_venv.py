"""The proof of the plugin architecture: real wheels, installed into a fresh venv.

The test plugin distributions under ``tests/plugins/`` are built as wheels and
pip-installed into a new virtual environment beside oxla; ``oxla plugins --json`` there
must list what they provide, and forget it after ``pip uninstall``. The fresh venv sees
the dependencies already installed in this interpreter's site-packages through a
``.pth`` file, so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "plugins"
DISTS = ["oxla_test_plugin", "oxla_test_broken", "oxla_test_dup"]

pytestmark = pytest.mark.slow


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.pop("OXLA_LOAD_PLUGINS", None)
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    env.update(extra)
    return env


def _run(*cmd: str | Path, check: bool = True, **env: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, env=_env(**env), timeout=300
    )
    if check and proc.returncode != 0:
        pytest.fail(f"{cmd} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv with oxla installed (editable) and the test plugin wheels built."""
    tmp = tmp_path_factory.mktemp("plugin-venv")
    src = tmp / "src"
    for dist in DISTS:  # build from copies: building writes build/ and egg-info dirs
        shutil.copytree(PLUGINS / dist, src / dist)
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip"]
    _run(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", wheels,
         *(src / d for d in DISTS))  # fmt: skip
    env_dir = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    outer = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib.stdout.strip(), "_oxla_outer_deps.pth").write_text("\n".join(sorted(outer)))
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", ROOT)
    found = {d: next(wheels.glob(f"{d}-*.whl")) for d in DISTS}
    return {"python": python, "oxla": bindir / "oxla", **found}


def _records(venv: dict[str, Path], **env: str) -> tuple[list[dict], str]:
    proc = _run(venv["oxla"], "plugins", "--json", **env)
    return json.loads(proc.stdout), proc.stderr


def _pip(venv: dict[str, Path], *args: str | Path) -> None:
    _run(venv["python"], "-m", "pip", *args)


def test_wheel_plugin_appears_after_install_and_goes_after_uninstall(venv):
    rows, _ = _records(venv)
    names = {(r["name"], r["kind"]) for r in rows}
    assert ("interpreter", "backend") in names
    assert ("testdummy", "backend") not in names

    _pip(venv, "install", "-q", "--no-deps", venv["oxla_test_plugin"])
    try:
        rows, _ = _records(venv)
        by_key = {(r["name"], r["kind"]): r for r in rows}
        assert by_key["testdummy", "backend"] == {
            "name": "testdummy",
            "kind": "backend",
            "distribution": "oxla-test-plugin",
            "version": "0.1.0",
            "available": False,
            "reason": "test plugin: no device",
        }
        assert ("test-noop", "pass") in by_key
        hello = _run(venv["oxla"], "test-hello", "venv")
        assert hello.stdout == "hello, venv, from oxla-test-plugin\n"

        # a broken plugin: a warning naming it, and everything else still works
        _pip(venv, "install", "-q", "--no-deps", venv["oxla_test_broken"])
        rows, stderr = _records(venv)
        assert "warning: plugin distribution 'oxla-test-broken' 0.0.1" in stderr
        assert "ImportError: oxla_test_broken needs libmissing.so" in stderr
        assert ("testdummy", "backend") in {(r["name"], r["kind"]) for r in rows}
        # Only the test distributions: the outer venv's editable extensions may show too.
        broken = [r for r in rows if r["kind"] == "plugin"
                  and r["distribution"].startswith("oxla-test")]
        assert [(r["distribution"], r["available"]) for r in broken] == [
            ("oxla-test-broken", False)
        ]
        # OXLA_LOAD_PLUGINS skips it: not imported, listed as left out
        rows, stderr = _records(venv, OXLA_LOAD_PLUGINS="oxla-test-plugin")
        assert "oxla-test-broken" not in stderr
        assert [(r["distribution"], r["available"], r["reason"]) for r in rows
                if r["kind"] == "plugin" and r["distribution"].startswith("oxla-test")] == [
            ("oxla-test-broken", False, "not loaded: OXLA_LOAD_PLUGINS leaves it out")]

        # a duplicate backend name: refused, naming both distributions
        _pip(venv, "install", "-q", "--no-deps", venv["oxla_test_dup"])
        proc = _run(venv["oxla"], "plugins", "--json", check=False)
        assert proc.returncode == 2
        error = next(line for line in proc.stderr.splitlines() if line.startswith("error:"))
        assert "backend 'testdummy' is provided by two distributions" in error
        assert "'oxla-test-plugin'" in error and "'oxla-test-dup'" in error
        _pip(venv, "uninstall", "-y", "-q", "oxla-test-dup", "oxla-test-broken")
    finally:
        _pip(venv, "uninstall", "-y", "-q", "oxla-test-plugin")

    rows, stderr = _records(venv)
    assert "testdummy" not in {r["name"] for r in rows}
    assert "oxla-test" not in stderr
