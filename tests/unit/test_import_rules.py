"""Import discipline (issue #13): imports run one way, core <- lowering <- codegen <-
backend, read from the source with ``ast``.

1. ``oxla.lowering`` imports neither llvmlite nor any extension;
2. ``oxla_codegen_llvm`` imports no backend, and the core (``oxla``) imports no
   extension (a backend's MPI collectives are reached through its executables);
3. no module imports a module of its own distribution inside a function (the cycle it
   would hide is fixed instead); lazy imports of other distributions (torch, jax,
   llvmlite, the core from an extension) stay allowed, and so does the plugin entry
   module (``plugin.py``), whose job is to defer the backend's import to its use;
4. no import cycle inside a package, lazy imports included;
5. no module imports another module's private (``_name``) names, nor reads them off an
   imported module (ruff's ``TID251`` bans the private core modules across packages).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.import_graph import Package, cycles, load_package

ROOT = Path(__file__).resolve().parents[2]
CORE = ("oxla", ROOT / "core")
LOWERING = ("oxla.lowering", ROOT / "core" / "lowering")
CODEGEN = ("oxla_codegen_llvm", ROOT / "extensions" / "codegen_llvm" / "oxla_codegen_llvm")
BACKEND_CPU = ("oxla_backend_cpu", ROOT / "extensions" / "backend_cpu" / "oxla_backend_cpu")
DISCIPLINED = [LOWERING, CODEGEN, BACKEND_CPU]
"""Packages held to rules 3 and 5 (the core's other packages and the frontends are not
yet: see the README's layout section)."""
ALL_PACKAGES = DISCIPLINED + [
    (f"oxla_{d.name}", d / f"oxla_{d.name}") for d in sorted((ROOT / "extensions").iterdir())
    if (d / f"oxla_{d.name}").is_dir() and d.name.startswith("frontend_")]
ENTRY_MODULES = {"plugin.py"}


def _package(spec: tuple[str, Path]) -> Package:
    name, root = spec
    if not root.is_dir():
        pytest.skip(f"{root} is absent")
    return load_package(root, name)


def _top(module: str) -> str:
    return module.split(".")[0]


def banned_imports(pkg: Package, banned: tuple[str, ...]) -> list[str]:
    """``file:line: module`` for each import of a module under one of ``banned``."""
    return [f"{i.path.name}:{i.line}: {i.module}" for imps in pkg.imports.values()
            for i in imps if any(i.module == b or i.module.startswith(b + ".") or
                                 (b.endswith("_") and i.module.startswith(b))
                                 for b in banned)]


def lazy_own_imports(pkg: Package, distribution: str) -> list[str]:
    """Function-level imports of a module of ``distribution`` (outside entry modules)."""
    return [f"{i.path.name}:{i.line}: {i.module}" for imps in pkg.imports.values()
            for i in imps if i.in_function and i.path.name not in ENTRY_MODULES
            and (i.module == distribution or i.module.startswith(distribution + "."))]


def private_imports(pkg: Package, distribution: str) -> list[str]:
    """Private names taken from another module of ``distribution``: ``from m import
    _x``, or ``m._x`` on a module bound by ``import``/``from p import m``."""
    bad = []
    for path in pkg.files.values():
        tree = ast.parse(path.read_text())
        modules: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    _top(node.module) == distribution.split(".")[0]:
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{path.name}:{node.lineno}: {node.module}.{a.name}")
                    elif pkg.resolve(f"{node.module}.{a.name}") == f"{node.module}.{a.name}":
                        modules.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if _top(a.name) == distribution.split(".")[0] and a.asname:
                        modules.add(a.asname)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in modules and node.attr.startswith("_") and \
                    not node.attr.startswith("__"):
                bad.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
    return bad


def test_lowering_imports_no_llvmlite_and_no_extension():
    pkg = _package(LOWERING)
    assert banned_imports(pkg, ("llvmlite", "oxla_")) == []


def test_importing_lowering_loads_no_llvmlite_and_no_extension():
    code = ("import sys, oxla.lowering; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'llvmlite' "
            "or m.startswith('oxla_')); print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_codegen_llvm_imports_no_backend():
    pkg = _package(CODEGEN)
    assert banned_imports(pkg, ("oxla_backend_",)) == []


def test_core_imports_no_extension():
    pkg = _package(CORE)
    assert banned_imports(pkg, ("oxla_",)) == []


@pytest.mark.parametrize("spec", DISCIPLINED, ids=[s[0] for s in DISCIPLINED])
def test_no_function_level_import_of_own_distribution(spec):
    pkg = _package(spec)
    distribution = "oxla" if spec[0].startswith("oxla.") else spec[0]
    assert lazy_own_imports(pkg, distribution) == []


@pytest.mark.parametrize("spec", ALL_PACKAGES, ids=[s[0] for s in ALL_PACKAGES])
def test_no_import_cycle_inside_a_package(spec):
    pkg = _package(spec)
    assert cycles(pkg.edges(include_lazy=True)) == []


@pytest.mark.parametrize("spec", DISCIPLINED, ids=[s[0] for s in DISCIPLINED])
def test_no_private_name_taken_from_another_module(spec):
    pkg = _package(spec)
    assert private_imports(pkg, spec[0].split(".")[0]) == []


def test_rules_catch_violations(tmp_path):
    """Each checker flags a planted violation (the rules are not vacuous)."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("import llvmlite.ir\nfrom toy._p import _x\n"
                                   "def f():\n    from toy import b\n    return b._y\n")
    (tmp_path / "b.py").write_text("from toy import a\n")
    (tmp_path / "_p.py").write_text("_x = 1\n")
    pkg = load_package(tmp_path, "toy")
    assert banned_imports(pkg, ("llvmlite",)) == ["a.py:1: llvmlite.ir"]
    assert lazy_own_imports(pkg, "toy") == ["a.py:4: toy"]
    assert cycles(pkg.edges()) == [["toy.a", "toy.b"]]
    assert cycles(pkg.edges(include_lazy=False)) == []
    assert sorted(private_imports(pkg, "toy")) == ["a.py:2: toy._p._x", "a.py:5: b._y"]
