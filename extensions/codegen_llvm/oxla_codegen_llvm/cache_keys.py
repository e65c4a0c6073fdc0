"""What the backends' persistent compile caches share (the cpu's
:mod:`oxla_backend_cpu.cache`, the cuda's :mod:`oxla_backend_cuda.cache`): where
entries live, the installed versions and the source stamp that go into a key."""

from __future__ import annotations

import hashlib
import os
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
