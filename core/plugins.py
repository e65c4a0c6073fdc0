"""Plugin discovery and the registries of frontends, backends, passes and patterns.

Plugins are found through entry points in group ``oxla`` the first time a registry is
read, never at ``import oxla``. The built-ins (:mod:`oxla.builtin_plugin`) register
through the same hooks. Rules:

- ``OXLA_LOAD_PLUGINS=dist1,dist2`` loads only those distributions (the built-ins always
  load); set but empty, it loads no third-party plugin.
- A plugin that fails to import, or whose hook raises, is a :class:`PluginWarning`
  naming its distribution and the exception; it becomes a :class:`~oxla.errors.PluginError`
  only when the user selects a name it would have provided.
- Two plugins claiming the same frontend, backend, pass, custom call or CLI command name
  is a ``PluginError`` naming both distributions.

Tests build their own :class:`PluginRegistry`, or call :func:`reset` so the next use
rediscovers.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import threading
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import pluggy

from oxla import hookspecs
from oxla.errors import PluginError
from oxla.protocols import (
    DESCRIPTOR_TYPES,
    Backend,
    BackendInfo,
    CliCommandInfo,
    CustomCallInfo,
    Frontend,
    FrontendInfo,
    PassInfo,
    PathLike,
    PatternInfo,
)

ENV_LOAD_PLUGINS = "OXLA_LOAD_PLUGINS"

KNOWN_DISTRIBUTIONS: dict[tuple[str, str], str] = {
    ("backend", "cpu"): "oxla-backend-cpu",
    ("backend", "cuda"): "oxla-backend-cuda",
    ("backend", "hip"): "oxla-backend-hip",
    ("frontend", "torch"): "oxla-frontend-torch",
    ("frontend", "jax"): "oxla-frontend-jax",
    ("frontend", "tf"): "oxla-frontend-tf",
    ("frontend", "onnx"): "oxla-frontend-onnx",
}
"""Which distribution provides a well-known (kind, name): the hint in lookup errors."""

CHECKOUT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The folder above the ``oxla`` package: the repository root when oxla is installed
from a checkout (editable), where ``extensions/<kind>_<name>/`` hold the plugins."""


def extension_folder(distribution: str, root: str | None = None) -> str | None:
    """The checkout folder that builds ``distribution`` (``oxla-frontend-onnx`` ->
    ``ROOT/extensions/frontend_onnx``), or None when this checkout has none."""
    dist = normalize_distribution(distribution)
    if not dist.startswith("oxla-"):
        return None
    folder = os.path.join(root or CHECKOUT_ROOT, "extensions", dist[5:].replace("-", "_"))
    return folder if os.path.isfile(os.path.join(folder, "pyproject.toml")) else None


def install_hint(distribution: str, root: str | None = None) -> str:
    """How to get ``distribution`` for this installation.

    oxla's distributions are not published to a package index: for one this checkout
    builds the hint is ``pip install -e <its folder>`` (relative to the working directory
    when inside it, else absolute); for any other it says that it is not written yet.
    """
    folder = extension_folder(distribution, root)
    if folder is None:
        return (f"{distribution} is not written yet (this oxla checkout has no "
                f"extensions/{normalize_distribution(distribution)[5:].replace('-', '_')}/)")
    cwd = os.getcwd()
    inside = cwd != os.sep and os.path.commonpath([folder, cwd]) == cwd
    return f"pip install -e {os.path.relpath(folder) if inside else folder}"


class PluginWarning(UserWarning):
    """A plugin could not be loaded or misbehaved; oxla goes on without it."""


def normalize_distribution(name: str) -> str:
    """Returns the PEP 503 normal form of a distribution name (``Oxla_Backend.CPU`` ->
    ``oxla-backend-cpu``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class PluginSource:
    """Where a registered plugin comes from.

    Attributes:
        distribution: the distribution name (``oxla`` for the built-ins).
        version: its version.
        entry_point: the entry point text (``backend_cpu = oxla_backend_cpu.plugin``),
            or ``builtin``.
    """

    distribution: str
    version: str
    entry_point: str

    @property
    def entry_point_name(self) -> str:
        return self.entry_point.split("=", 1)[0].strip()


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that failed to import or whose hook failed."""

    source: PluginSource
    error: str

    def describe(self) -> str:
        return (
            f"plugin distribution '{self.source.distribution}' {self.source.version} "
            f"(entry point '{self.source.entry_point}') failed to load: {self.error}"
        )


@dataclass(frozen=True)
class PluginRecord:
    """One row of ``oxla plugins``: a descriptor and where it comes from."""

    name: str
    kind: str
    distribution: str
    version: str
    available: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def discover_entry_points() -> list[tuple[md.EntryPoint, str, str]]:
    """Returns ``(entry point, distribution, version)`` for each entry point in group
    ``oxla`` of the installed distributions."""
    found = []
    for ep in md.entry_points(group=hookspecs.PROJECT_NAME):
        dist = ep.dist
        name = dist.metadata["Name"] if dist is not None else ep.name
        found.append((ep, name, dist.version if dist is not None else "unknown"))
    return found


def _oxla_version() -> str:
    import oxla

    return oxla.__version__


class PluginRegistry:
    """A plugin manager plus the descriptor tables read from its hooks.

    A registry is filled by :meth:`register_builtins`, :meth:`load_entry_points` (or
    :meth:`load_entry_point` for single entry points), and :meth:`register`. Tables are
    computed on first read and recomputed after a registration.
    """

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.broken: list[BrokenPlugin] = []
        self.excluded: list[PluginSource] = []
        self._sources: dict[str, PluginSource] = {}
        self._tables: dict[str, list[tuple[Any, PluginSource]]] = {}
        self._instances: dict[str, Any] = {}
        self._lock = threading.RLock()

    # -- filling ------------------------------------------------------------------
    def register(self, plugin: object, source: PluginSource) -> None:
        """Registers a plugin object (usually a module with ``@hookimpl`` functions).

        Raises:
            PluginError: the object is not a valid plugin (a misspelt ``oxla_*`` hook).
        """
        with self._lock:
            if self.pm.is_registered(plugin):
                return
            name = f"{source.distribution}:{source.entry_point_name}"
            try:
                self.pm.register(plugin, name=name)
            except (ValueError, pluggy.PluginValidationError) as exc:
                raise PluginError(
                    f"plugin distribution '{source.distribution}' cannot be registered: {exc}"
                ) from exc
            self._sources[name] = source
            self._tables.clear()

    def register_builtins(self) -> None:
        """Registers :mod:`oxla.builtin_plugin` as distribution ``oxla``."""
        from oxla import builtin_plugin

        self.register(builtin_plugin, PluginSource("oxla", _oxla_version(), "builtin"))

    def load_entry_point(self, entry_point: md.EntryPoint, distribution: str, version: str) -> None:
        """Imports one entry point and registers it; a failure becomes a warning."""
        source = PluginSource(distribution, version, f"{entry_point.name} = {entry_point.value}")
        try:
            plugin = entry_point.load()
            self.register(plugin, source)
        except Exception as exc:  # a broken plugin must not break oxla
            self._mark_broken(source, exc)

    def load_entry_points(
        self,
        allowed: Iterable[str] | None = None,
        entry_points: Iterable[tuple[md.EntryPoint, str, str]] | None = None,
    ) -> None:
        """Loads plugins from entry points, by default every one in group ``oxla``.

        Args:
            allowed: distribution names to load; ``None`` reads ``OXLA_LOAD_PLUGINS``
                (unset: load all).
            entry_points: ``(entry point, distribution, version)`` triples to load
                instead of discovering them (for tests).
        """
        if allowed is None and ENV_LOAD_PLUGINS in os.environ:
            allowed = [d for d in os.environ[ENV_LOAD_PLUGINS].split(",") if d.strip()]
        wanted = None if allowed is None else {normalize_distribution(d) for d in allowed}
        seen: set[str] = set()
        for ep, dist_name, version in (
            discover_entry_points() if entry_points is None else entry_points
        ):
            seen.add(normalize_distribution(dist_name))
            if wanted is None or normalize_distribution(dist_name) in wanted:
                self.load_entry_point(ep, dist_name, version)
            else:
                self.excluded.append(PluginSource(dist_name, version, f"{ep.name} = {ep.value}"))
        for missing in sorted((wanted or set()) - seen - {"oxla"}):
            warnings.warn(
                f"{ENV_LOAD_PLUGINS} names '{missing}', which is not an installed oxla plugin",
                PluginWarning,
                stacklevel=2,
            )

    def _mark_broken(self, source: PluginSource, exc: BaseException) -> None:
        broken = BrokenPlugin(source, _error_text(exc))
        if broken not in self.broken:
            self.broken.append(broken)
            warnings.warn(broken.describe(), PluginWarning, stacklevel=3)

    # -- tables -------------------------------------------------------------------
    def _collect(self, hook_name: str) -> list[tuple[Any, PluginSource]]:
        """Calls one registry hook plugin by plugin; returns (descriptor, source) pairs."""
        with self._lock:
            if hook_name in self._tables:
                return self._tables[hook_name]
            expected = DESCRIPTOR_TYPES[hook_name]
            out: list[tuple[Any, PluginSource]] = []
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
                source = self._sources[impl.plugin_name]
                try:
                    result = impl.function()
                    items = list(result or [])
                    for item in items:
                        if not isinstance(item, expected):
                            raise TypeError(
                                f"{hook_name} returned {type(item).__name__}, "
                                f"expected {expected.__name__}"
                            )
                except Exception as exc:
                    self._mark_broken(source, exc)
                    continue
                out.extend((item, source) for item in items)
            self._tables[hook_name] = out
            return out

    def _unique(self, hook_name: str, kind: str, key: Any) -> dict[Any, Any]:
        """Returns descriptors by ``key(descriptor)``; a name claimed twice is an error."""
        table: dict[Any, Any] = {}
        owner: dict[Any, PluginSource] = {}
        for item, source in self._collect(hook_name):
            k = key(item)
            if k in table:
                first = owner[k].distribution
                label = k if isinstance(k, str) else "@".join(map(str, k))
                if first == source.distribution:
                    raise PluginError(f"{kind} '{label}' is declared twice by '{first}'")
                raise PluginError(
                    f"{kind} '{label}' is provided by two distributions: "
                    f"'{first}' and '{source.distribution}'",
                    notes=[f"uninstall one, or select plugins with {ENV_LOAD_PLUGINS}"],
                )
            table[k] = item
            owner[k] = source
        return table

    def source_of(self, hook_name: str, descriptor: Any) -> PluginSource:
        """Returns the plugin source that declared ``descriptor``."""
        for item, source in self._collect(hook_name):
            if item is descriptor:
                return source
        raise KeyError(descriptor)

    def backends(self) -> dict[str, BackendInfo]:
        return self._unique("oxla_backends", "backend", lambda b: b.name)

    def frontends(self) -> dict[str, FrontendInfo]:
        return self._unique("oxla_frontends", "frontend", lambda f: f.name)

    def passes(self) -> dict[str, PassInfo]:
        return self._unique("oxla_passes", "pass", lambda p: p.name)

    def patterns(self) -> list[PatternInfo]:
        return [p for p, _ in self._collect("oxla_patterns")]

    def custom_calls(self) -> dict[tuple[str, str], CustomCallInfo]:
        return self._unique("oxla_custom_calls", "custom call", lambda c: (c.target, c.backend))

    def cli_commands(self) -> dict[str, CliCommandInfo]:
        return self._unique("oxla_cli_commands", "command", lambda c: c.command.name)

    # -- lookups ------------------------------------------------------------------
    def lookup_error(self, kind: str, name: str, installed: Iterable[str]) -> PluginError:
        """Builds the error for an unknown name: what exists, and how to get more."""
        dist = KNOWN_DISTRIBUTIONS.get((kind, name))
        why = self.why_missing(kind, name)
        if why is not None:
            return PluginError(f"{kind} '{name}' is unavailable: {why}")
        msg = f"unknown {kind} '{name}'; installed: {', '.join(sorted(installed)) or 'none'}"
        if dist:
            hint = install_hint(dist)
            msg += f"; try: {hint}" if hint.startswith("pip ") else f"; {hint}"
        return PluginError(msg, notes=[b.describe() for b in self.broken])

    def why_missing(self, kind: str, name: str) -> str | None:
        """Why the well-known ``kind`` ``name`` (see :data:`KNOWN_DISTRIBUTIONS`) is not
        registered although its distribution is installed: it failed to load (with the
        exception), or ``OXLA_LOAD_PLUGINS`` left it out. None when not installed."""
        dist = KNOWN_DISTRIBUTIONS.get((kind, name))
        if dist is None:
            return None
        for b in self.broken:
            if normalize_distribution(b.source.distribution) == dist:
                return (f"plugin distribution '{b.source.distribution}' is installed but "
                        f"failed to load: {b.error}")
        for src in self.excluded:
            if normalize_distribution(src.distribution) == dist:
                return (f"plugin distribution '{src.distribution}' is installed but not "
                        f"loaded: {ENV_LOAD_PLUGINS}={os.environ.get(ENV_LOAD_PLUGINS, '')} "
                        "leaves it out")
        return None

    def instance(self, kind: str, info: BackendInfo | FrontendInfo, hook_name: str) -> Any:
        """Returns the (cached) object made by ``info.factory``.

        Raises:
            PluginError: the factory raised (a missing dependency, a broken install).
        """
        key = f"{kind}:{info.name}"
        with self._lock:
            if key not in self._instances:
                try:
                    self._instances[key] = info.factory()
                except Exception as exc:
                    dist = self.source_of(hook_name, info).distribution
                    raise PluginError(
                        f"{kind} '{info.name}' (distribution '{dist}') failed to load: "
                        f"{_error_text(exc)}"
                    ) from exc
            return self._instances[key]

    def get_backend(self, name: str, check_available: bool = True,
                    to_compile: bool = False) -> Backend:
        table = self.backends()
        if name not in table:
            raise self.lookup_error("backend", name, table)
        backend = self.instance("backend", table[name], "oxla_backends")
        if check_available:
            ok, reason = _availability(backend)
            if not ok and not (to_compile and _compiles_here(backend)):
                raise PluginError(f"backend '{name}' is unavailable: {reason}")
        return backend

    def get_frontend(self, name: str) -> Frontend:
        table = self.frontends()
        if name not in table:
            raise self.lookup_error("frontend", name, table)
        return self.instance("frontend", table[name], "oxla_frontends")

    # -- reporting ----------------------------------------------------------------
    def records(self) -> list[PluginRecord]:
        """Returns one record per descriptor and per broken plugin, for ``oxla plugins``."""
        rows: list[PluginRecord] = []

        def add(name: str, kind: str, source: PluginSource, ok: bool = True, why: str = ""):
            rows.append(PluginRecord(name, kind, source.distribution, source.version, ok, why))

        for kind, hook in (("backend", "oxla_backends"), ("frontend", "oxla_frontends")):
            for info in (self.backends() if kind == "backend" else self.frontends()).values():
                source = self.source_of(hook, info)
                try:
                    ok, why = _availability(self.instance(kind, info, hook))
                except PluginError as exc:
                    ok, why = False, exc.message
                add(info.name, kind, source, ok, why)
        for p in self.passes().values():
            add(p.name, "pass", self.source_of("oxla_passes", p))
        listed: set[tuple[str, str]] = set()
        for pat, source in self._collect("oxla_patterns"):
            name = pat.name or pat.root_op  # one row per pattern, not per root op
            if (name, source.distribution) not in listed:
                listed.add((name, source.distribution))
                add(name, "pattern", source)
        for c in self.custom_calls().values():
            add(f"{c.target}@{c.backend}", "custom_call", self.source_of("oxla_custom_calls", c))
        for cmd in self.cli_commands().values():
            add(str(cmd.command.name), "command", self.source_of("oxla_cli_commands", cmd))
        for b in self.broken:
            name, kind = _provides(b.source)
            add(name, kind, b.source, False, f"failed to load: {b.error}")
        for src in self.excluded:
            name, kind = _provides(src)
            add(name, kind, src, False, f"not loaded: {ENV_LOAD_PLUGINS} leaves it out")
        return rows


def _provides(source: PluginSource) -> tuple[str, str]:
    """``(name, kind)`` for a plugin that is not loaded: the well-known name its
    distribution provides (``torch``, ``frontend``), else its entry point, ``plugin``."""
    dist = normalize_distribution(source.distribution)
    for (kind, name), known in KNOWN_DISTRIBUTIONS.items():
        if known == dist:
            return name, kind
    return source.entry_point_name, "plugin"


def _compiles_here(backend: Any) -> bool:
    """``backend.compile_only()`` when defined: True for a backend that compiles on this
    machine although it cannot run here (a GPU backend without the GPU's driver)."""
    check = getattr(backend, "compile_only", None)
    try:
        return bool(check()) if check is not None else False
    except Exception:
        return False


def _availability(obj: Any) -> tuple[bool, str]:
    """Calls ``obj.available()`` when defined; an exception counts as unavailable."""
    check = getattr(obj, "available", None)
    if check is None:
        return True, ""
    try:
        ok, reason = check()
    except Exception as exc:
        return False, f"availability check failed: {_error_text(exc)}"
    return bool(ok), "" if ok else str(reason)


# -- the process-wide registry -------------------------------------------------------
_registry: PluginRegistry | None = None
_global_lock = threading.Lock()


def get_registry() -> PluginRegistry:
    """Returns the process-wide registry, discovering plugins on first call."""
    global _registry
    with _global_lock:
        if _registry is None:
            registry = PluginRegistry()
            registry.register_builtins()
            registry.load_entry_points()
            _registry = registry
        return _registry


def set_registry(registry: PluginRegistry | None) -> PluginRegistry | None:
    """Replaces the process-wide registry (for tests and embedders); returns the old one."""
    global _registry
    with _global_lock:
        old, _registry = _registry, registry
        return old


def reset() -> None:
    """Forgets the process-wide registry; the next use rediscovers plugins."""
    set_registry(None)


def get_plugin_manager() -> pluggy.PluginManager:
    """Returns the pluggy manager of the process-wide registry."""
    return get_registry().pm


def backends() -> dict[str, BackendInfo]:
    """Returns every installed backend by name.

    Raises:
        PluginError: two plugins claim one name.
    """
    return get_registry().backends()


def get_backend(name: str, check_available: bool = True, to_compile: bool = False) -> Backend:
    """Returns the backend called ``name``, made on first use and then cached.

    Args:
        name: e.g. ``"interpreter"``, ``"cpu"``.
        check_available: also require ``available()`` to be true.
        to_compile: it is wanted only to compile: a backend whose ``compile_only()``
            is true (it compiles here but cannot run: a GPU backend without its driver)
            is returned although ``available()`` is false.

    Raises:
        PluginError: unknown name (lists the installed ones and the distribution that
            would add it), its plugin failed to load, or it is unavailable here.
    """
    return get_registry().get_backend(name, check_available, to_compile)


def backend_to_compile(name: str) -> Backend:
    """:func:`get_backend`, or, when that says the backend is unavailable here, the
    backend itself if its ``compile_only()`` is true (it compiles without its device: a
    GPU backend on a machine without the GPU's driver).

    Raises:
        PluginError: as :func:`get_backend`, for a backend that cannot compile here.
    """
    try:
        return get_backend(name)
    except PluginError:
        backend = get_registry().get_backend(name, check_available=False, to_compile=True)
        if not _compiles_here(backend):
            raise
        return backend


def frontends() -> dict[str, FrontendInfo]:
    """Returns every installed frontend by name."""
    return get_registry().frontends()


def get_frontend(name: str) -> Frontend:
    """Returns the frontend called ``name``; raises ``PluginError`` like :func:`get_backend`."""
    return get_registry().get_frontend(name)


def detect_frontend(path: PathLike) -> str | None:
    """Returns the name of the first frontend whose ``detect(path)`` is true, or None."""
    for name, info in sorted(frontends().items()):
        if info.detect(path):
            return name
    return None


def passes() -> dict[str, PassInfo]:
    """Returns every registered pass by its pipeline name."""
    return get_registry().passes()


def patterns(root_op: str | None = None, backend: str | None = None,
             builtin: bool = True) -> list[PatternInfo]:
    """Returns rewrite patterns, highest benefit first.

    Args:
        root_op: only those rooted at this op.
        backend: only those for this backend (``PatternInfo.backends`` empty or naming it).
        builtin: False leaves out the core's own (distribution ``oxla``: canonicalize's).
    """
    reg = get_registry()
    pats = [p for p, source in reg._collect("oxla_patterns")
            if (root_op is None or p.root_op == root_op)
            and (backend is None or not p.backends or backend in p.backends)
            and (builtin or source.distribution != "oxla")]
    return sorted(pats, key=lambda p: -p.benefit)


def custom_calls(backend: str) -> dict[str, CustomCallInfo]:
    """Returns the custom-call implementations for one backend, by target name."""
    return {t: c for (t, b), c in get_registry().custom_calls().items() if b == backend}


def cli_commands() -> dict[str, CliCommandInfo]:
    """Returns the CLI commands plugins add, by command name."""
    return get_registry().cli_commands()


def why_missing(kind: str, name: str) -> str | None:
    """Why an installed well-known plugin (``frontend``, ``torch``) is not registered:
    failed to load or excluded by ``OXLA_LOAD_PLUGINS``; None when not installed."""
    return get_registry().why_missing(kind, name)


def broken_plugins() -> list[BrokenPlugin]:
    """Returns the plugins that failed to load in this process."""
    return list(get_registry().broken)


def plugin_records() -> list[PluginRecord]:
    """Returns the rows ``oxla plugins`` prints: name, kind, distribution, version,
    available, reason."""
    return get_registry().records()


BACKEND_PREFERENCE = ("cuda", "hip", "cpu", "interpreter")
"""Backends by speed, fastest first: the order a compile without a named backend tries."""


def available_backends(preference: Iterable[str] = BACKEND_PREFERENCE) -> list[str]:
    """The backends of ``preference`` that are installed and available here (plugin
    loaded, device present), in that order; possibly empty."""
    registry = get_registry()
    usable = []
    for name in preference:
        try:
            registry.get_backend(name)
        except PluginError:
            continue
        usable.append(name)
    return usable


def best_backend(preference: Iterable[str] = BACKEND_PREFERENCE) -> str:
    """Returns the first installed and available backend in ``preference``.

    Raises:
        PluginError: none of them is usable.
    """
    registry = get_registry()
    tried: list[str] = []
    for name in preference:
        try:
            registry.get_backend(name)
            return name
        except PluginError as exc:
            tried.append(exc.message)
    raise PluginError("no usable backend", notes=tried)


@dataclass(frozen=True)
class Coverage:
    """Which ops of the op table one backend has no rule for (``oxla plugins --coverage``).

    Attributes:
        backend: the backend's name.
        total: ops in the op table that need a rule: all but the structural ones
            (traits ``TERMINATOR`` and ``SYMBOL``: returns and functions, which every
            backend's lowering handles itself).
        missing: the op names it has no rule for, sorted; None when the backend does not
            declare its rules (:attr:`~oxla.protocols.BackendInfo.rules`).
    """

    backend: str
    total: int
    missing: tuple[str, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "ops": self.total,
                "covered": None if self.missing is None else self.total - len(self.missing),
                "missing": None if self.missing is None else list(self.missing)}


def coverage(backend: str | None = None) -> list[Coverage]:
    """Per installed backend (or only ``backend``), the op-table ops without a rule,
    computed from the backend's rule tables (:attr:`BackendInfo.rules`) and the op table.

    Raises:
        PluginError: ``backend`` is not installed (the message lists those that are).
    """
    from oxla.ir.opdef import SYMBOL, TERMINATOR, all_opdefs

    table = backends()
    if backend is not None and backend not in table:
        raise get_registry().lookup_error("backend", backend, table)
    ops = {n for n, d in all_opdefs().items() if not d.traits & {SYMBOL, TERMINATOR}}
    out = []
    for name in sorted(table) if backend is None else [backend]:
        info = table[name]
        if info.rules is None:
            out.append(Coverage(name, len(ops), None))
            continue
        out.append(Coverage(name, len(ops), tuple(sorted(ops - set(info.rules())))))
    return out
