"""Every oxla message that suggests an install gives a command that works here.

oxla's distributions are not on a package index: a hint for one must be
``pip install -e extensions/<dir>`` naming a folder of this checkout that builds exactly
that distribution, or say that it is not written yet. The test walks the well-known
distributions, the lookup errors, ``oxla compile``'s per-suffix hints, and every
``pip install`` text in the sources.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest

from oxla import plugins
from oxla.errors import PluginError

ROOT = Path(__file__).resolve().parents[2]
PIP = re.compile(r"pip install (-e )?([\w./<>\[\]-]+)")


def _project_name(folder: str) -> str:
    with open(os.path.join(folder, "pyproject.toml"), "rb") as fh:
        return tomllib.load(fh)["project"]["name"]


def _check_hint(hint: str, dist: str) -> None:
    m = PIP.search(hint)
    if m is None:
        assert "not written yet" in hint, hint
        assert plugins.extension_folder(dist) is None
        return
    assert m.group(1), f"'{hint}' installs from a package index, where oxla is not"
    folder = m.group(2)
    assert os.path.isfile(os.path.join(folder, "pyproject.toml")), hint
    assert plugins.normalize_distribution(_project_name(folder)) == dist


@pytest.mark.parametrize("kind_name", sorted(plugins.KNOWN_DISTRIBUTIONS))
def test_known_distribution_hint_works(kind_name, monkeypatch):
    monkeypatch.chdir(ROOT)
    dist = plugins.KNOWN_DISTRIBUTIONS[kind_name]
    _check_hint(plugins.install_hint(dist), dist)


def test_hints_name_existing_folders_and_unwritten_ones():
    assert plugins.install_hint("oxla-frontend-onnx", str(ROOT)).endswith(
        "extensions/frontend_onnx")
    assert "not written yet" in plugins.install_hint("oxla-backend-tpu", str(ROOT))
    # outside the checkout the folder is given absolutely, so the command still works
    cwd = os.getcwd()
    try:
        os.chdir("/")
        assert plugins.install_hint("oxla-backend-cpu") == \
            f"pip install -e {ROOT / 'extensions' / 'backend_cpu'}"
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("kind,name", sorted(plugins.KNOWN_DISTRIBUTIONS))
def test_lookup_error_hint_works(kind, name, monkeypatch):
    monkeypatch.chdir(ROOT)
    registry = plugins.PluginRegistry()
    registry.register_builtins()
    err = registry.lookup_error(kind, name, ["interpreter"])
    assert isinstance(err, PluginError)
    text = err.render()
    _check_hint(text.split("installed: ")[1], plugins.KNOWN_DISTRIBUTIONS[(kind, name)])


def test_compile_suffix_hints_work(monkeypatch, tmp_path):
    from oxla.cli.compile_cmd import INSTALL_HINTS, resolve_frontend

    monkeypatch.chdir(ROOT)
    old = plugins.set_registry(plugins.PluginRegistry())
    try:
        plugins.get_registry().register_builtins()
        for suffix, frontend in INSTALL_HINTS.items():
            f = tmp_path / f"model{suffix}"
            f.write_bytes(b"x")
            with pytest.raises(PluginError) as info:
                resolve_frontend(str(f), None)
            _check_hint(" ".join(info.value.notes), f"oxla-frontend-{frontend}")
    finally:
        plugins.set_registry(old)


def test_every_pip_install_text_in_the_sources_works():
    """A literal ``pip install X`` in oxla's sources installs something real: a folder
    of this checkout (``-e``), or a third-party package some pyproject depends on."""
    deps: set[str] = set()
    for pp in [ROOT / "pyproject.toml", *ROOT.glob("extensions/*/pyproject.toml")]:
        text = pp.read_text()
        deps.update(m.lower() for m in re.findall(r'"([A-Za-z][\w.-]*)\s*[<>=!~\[";]', text))
    bad = []
    files = [*ROOT.glob("core/**/*.py"), *ROOT.glob("cli/**/*.py"),
             *ROOT.glob("extensions/*/oxla_*/**/*.py")]
    for path in files:
        for m in PIP.finditer(path.read_text()):
            target = m.group(2).rstrip(".,)")
            if target.startswith("-"):  # a template (pip install -e {path})
                continue
            if m.group(1):
                if "<" in target or (ROOT / target / "pyproject.toml").is_file():
                    continue
            elif not target.startswith("oxla") and target.lower() in deps:
                continue
            bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, "install hints that do not work:\n" + "\n".join(bad)
