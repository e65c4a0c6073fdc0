"""What the backends' persistent compile caches share (the cpu's
:mod:`oxla_backend_cpu.cache`, the cuda's :mod:`oxla_backend_cuda.cache`): where
entries live, the installed versions and the source stamps that go into a key."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from functools import cache
from importlib import metadata
from types import ModuleType

ENV = "OXLA_CACHE_DIR"


def cache_dir(backend: str) -> str:
    """``$OXLA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/oxla/<backend>`` (default
    ``~/.cache``); not created here."""
    env = os.environ.get(ENV)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "oxla", backend)


@cache
def dist_versions(dists: tuple[str, ...]) -> dict[str, str]:
    """Each distribution's installed version (``"unknown"`` when not installed)."""
    out = {}
    for dist in dists:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def source_stamp(packages: Iterable[ModuleType]) -> str:
    """A SHA-256 of the ``.py`` files' names, sizes and mtimes in each package's
    directory, so an editable install whose code changed without a version bump never
    hits stale entries."""
    h = hashlib.sha256()
    for pkg in packages:
        d = os.path.dirname(pkg.__file__ or "")
        for name in sorted(os.listdir(d)):
            if name.endswith(".py"):
                st = os.stat(os.path.join(d, name))
                h.update(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def patterns_stamp(backend: str) -> str:
    """A SHA-256 of the plugin rewrite patterns that run for ``backend``
    (``plugin-patterns{backend=...}``): their names and the source stamp of each one's
    package, so installing, removing or editing a plugin's pattern never hits an entry
    compiled without it (or with its old code)."""
    from oxla import plugins
    from oxla.passes.overrides import disabled_overrides

    h = hashlib.sha256()
    packages: dict[str, ModuleType] = {}
    off = disabled_overrides()
    for p in plugins.patterns(backend=backend, builtin=False):
        if p.name in off:  # $OXLA_DISABLE_OVERRIDES leaves it out of the pipeline
            continue
        h.update(f"{p.name}:{p.root_op}:{p.benefit};".encode())
        for fn in (p.fn, p.replace):
            module = sys.modules.get(getattr(fn, "__module__", "") or "")
            if module is not None:
                top = sys.modules.get(module.__name__.split(".")[0], module)
                packages[top.__name__] = top
    h.update(source_stamp(packages[k] for k in sorted(packages)).encode())
    return h.hexdigest()
