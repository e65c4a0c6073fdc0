"""The import graph of a package, read from its source with ``ast`` (nothing is imported):
what the import-discipline tests (``test_import_rules.py``) check."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Import:
    """One imported module (or ``module.name``), where, and whether inside a function."""

    module: str
    names: tuple[str, ...]
    path: Path
    line: int
    in_function: bool


@dataclass
class Package:
    """The modules of one import package, by dotted name."""

    name: str
    files: dict[str, Path] = field(default_factory=dict)
    imports: dict[str, list[Import]] = field(default_factory=dict)

    def resolve(self, dotted: str) -> str | None:
        """The module of this package that ``dotted`` names (or lies in), else None."""
        while dotted:
            if dotted in self.files:
                return dotted
            dotted = dotted.rpartition(".")[0]
        return None

    def edges(self, include_lazy: bool = True) -> dict[str, set[str]]:
        """Module -> the modules of this package it imports."""
        out: dict[str, set[str]] = {m: set() for m in self.files}
        for mod, imps in self.imports.items():
            for imp in imps:
                if imp.in_function and not include_lazy:
                    continue
                targets = [f"{imp.module}.{n}" for n in imp.names] or [imp.module]
                for t in targets:
                    r = self.resolve(t)
                    if r is not None and r != mod:
                        out[mod].add(r)
        return out


def load_package(root: Path, name: str) -> Package:
    """Reads every ``.py`` file under ``root`` (the folder of import package ``name``)."""
    pkg = Package(name)
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = [name, *rel.parts]
        if parts[-1] == "__init__":
            parts.pop()
        pkg.files[".".join(parts)] = path
    for mod, path in pkg.files.items():
        pkg.imports[mod] = _imports(path, mod, path.name == "__init__.py")
    return pkg


def _imports(path: Path, mod: str, is_init: bool) -> list[Import]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef
                                               | ast.Lambda)
            if isinstance(child, ast.Import):
                for a in child.names:
                    out.append(Import(a.name, (), path, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the package of this module
                    pkg = mod.split(".") if is_init else mod.split(".")[:-1]
                    pkg = pkg[:len(pkg) - (child.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                out.append(Import(base, tuple(a.name for a in child.names), path,
                                  child.lineno, in_function))
            visit(child, inside)

    visit(tree, False)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(found)
