"""In-process tests of the plugin registry: discovery rules, errors, lookups.

Each test builds its own :class:`PluginRegistry`; the process-wide one is only
touched through ``set_registry``/``reset`` and restored afterwards. The real
install-into-a-fresh-venv proof is in ``test_plugins_venv.py``.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import warnings
from pathlib import Path

import pytest

import oxla
from oxla import hookimpl, plugins
from oxla.artifact import read_manifest, write_artifact
from oxla.errors import OxlaError, PluginError
from oxla.plugins import PluginRegistry, PluginSource, PluginWarning
from oxla.protocols import BackendInfo, CompileOptions, FrontendInfo, PassInfo, PatternInfo

PLUGINS_DIR = Path(__file__).resolve().parents[1] / "plugins"


class FakeBackend:
    def __init__(self, name: str, ok: bool = True) -> None:
        self.name = name
        self.ok = ok
        self.compiled: list[tuple[object, CompileOptions]] = []
        self.loaded: list[str] = []

    def available(self) -> tuple[bool, str]:
        return (True, "") if self.ok else (False, "fake: no device")

    def compile(self, module, options):
        self.compiled.append((module, options))
        return ("executable", module)

    def load(self, path):
        self.loaded.append(str(path))
        return ("loaded", str(path))


class BackendPlugin:
    """A plugin object declaring one fake backend (and remembering the instance)."""

    def __init__(self, name: str, ok: bool = True) -> None:
        self.backend = FakeBackend(name, ok)

    @hookimpl
    def oxla_backends(self):
        return [BackendInfo(self.backend.name, "fake", lambda: self.backend)]


def source(dist: str) -> PluginSource:
    return PluginSource(dist, "1.0", f"{dist.replace('-', '_')} = {dist.replace('-', '_')}")


def make_registry(*plugins_and_dists: tuple[object, str]) -> PluginRegistry:
    registry = PluginRegistry()
    registry.register_builtins()
    for plugin, dist in plugins_and_dists:
        registry.register(plugin, source(dist))
    return registry


@pytest.fixture
def global_registry():
    """Installs a registry as the process-wide one for one test, then forgets it."""
    old = plugins.set_registry(None)

    def install(registry: PluginRegistry) -> PluginRegistry:
        plugins.set_registry(registry)
        return registry

    yield install
    plugins.set_registry(old)


def test_builtin_interpreter_is_registered_through_the_hooks():
    registry = make_registry()
    assert "interpreter" in registry.backends()
    assert registry.source_of("oxla_backends", registry.backends()["interpreter"]).distribution == (
        "oxla"
    )
    rows = {(r.name, r.kind): r for r in registry.records()}
    row = rows["interpreter", "backend"]
    assert row.distribution == "oxla" and row.version == oxla.__version__
    assert isinstance(row.available, bool)
    assert row.available or row.reason  # an unavailable built-in says why


def test_entry_point_plugin_is_loaded_and_listed(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS_DIR / "oxla_test_plugin"))
    ep = md.EntryPoint("test_plugin", "oxla_test_plugin.plugin", "oxla")
    registry = make_registry()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        registry.load_entry_points(allowed=None, entry_points=[(ep, "oxla-test-plugin", "0.1.0")])
    assert set(registry.backends()) == {"interpreter", "testdummy"}
    assert "test-noop" in registry.passes()
    assert "test-hello" in registry.cli_commands()
    rows = {(r.name, r.kind): r for r in registry.records()}
    dummy = rows["testdummy", "backend"]
    assert (dummy.distribution, dummy.version) == ("oxla-test-plugin", "0.1.0")
    assert (dummy.available, dummy.reason) == (False, "test plugin: no device")
    assert rows["test_identity@interpreter", "custom_call"].available
    with pytest.raises(PluginError, match="backend 'testdummy' is unavailable: test plugin"):
        registry.get_backend("testdummy")
    assert registry.get_backend("testdummy", check_available=False).name == "testdummy"


def test_broken_plugin_is_a_warning_naming_its_distribution():
    ep = md.EntryPoint("backend_cpu", "oxla_no_such_module_xyz.plugin", "oxla")
    registry = make_registry()
    with pytest.warns(PluginWarning, match="'oxla-backend-cpu' 2.0 .*ModuleNotFoundError"):
        registry.load_entry_points(entry_points=[(ep, "oxla-backend-cpu", "2.0")])
    assert "interpreter" in registry.backends()
    # listed as the backend it would have provided, unavailable with the reason
    rows = [r for r in registry.records() if r.distribution == "oxla-backend-cpu"]
    assert [(r.name, r.kind, r.available) for r in rows] == [("cpu", "backend", False)]
    assert "ModuleNotFoundError" in rows[0].reason
    # selecting what it would have provided is the error, and says why
    with pytest.raises(PluginError, match=r"backend 'cpu' is unavailable: .*'oxla-backend-cpu'"):
        registry.get_backend("cpu")


def test_failing_hook_is_a_warning_and_the_rest_still_works():
    class Bad:
        @hookimpl
        def oxla_backends(self):
            raise RuntimeError("boom")

    class WrongType:
        @hookimpl
        def oxla_passes(self):
            return ["not a PassInfo"]

    registry = make_registry((Bad(), "oxla-bad"), (WrongType(), "oxla-wrong"))
    with pytest.warns(PluginWarning) as record:
        assert "interpreter" in registry.backends()
        assert "not a PassInfo" not in registry.passes()
    text = "\n".join(str(w.message) for w in record)
    assert "'oxla-bad'" in text and "RuntimeError: boom" in text
    assert "'oxla-wrong'" in text and "expected PassInfo" in text


def test_duplicate_backend_names_both_distributions():
    registry = make_registry((BackendPlugin("gpu0"), "oxla-a"), (BackendPlugin("gpu0"), "oxla-b"))
    with pytest.raises(PluginError) as info:
        registry.backends()
    assert info.value.message == (
        "backend 'gpu0' is provided by two distributions: 'oxla-a' and 'oxla-b'"
    )


def test_duplicate_pass_and_frontend_names_are_refused():
    class P:
        @hookimpl
        def oxla_passes(self):
            return [PassInfo("my-pass", object)]

        @hookimpl
        def oxla_frontends(self):
            return [FrontendInfo("onnx", "", "oxla-frontend-onnx", lambda p: False, object)]

    registry = make_registry((P(), "oxla-p1"), (P(), "oxla-p2"))
    with pytest.raises(PluginError, match="pass 'my-pass' is provided by .*'oxla-p1' and 'oxla-p2'"):
        registry.passes()
    with pytest.raises(PluginError, match="frontend 'onnx' is provided by"):
        registry.frontends()


def test_unknown_backend_lists_installed_and_hints_distribution():
    registry = make_registry((BackendPlugin("cpu"), "oxla-backend-cpu"))
    with pytest.raises(PluginError) as info:
        registry.get_backend("hip")
    assert re.fullmatch(  # this checkout builds oxla-backend-hip: the hint installs it
        r"error: unknown backend 'hip'; installed: cpu, interpreter; "
        r"try: pip install -e (\S*/)?extensions/backend_hip", info.value.one_line())
    with pytest.raises(PluginError, match=r"^error: unknown frontend 'xyz'; installed: stablehlo$"):
        registry.get_frontend("xyz")


def test_factory_failure_is_a_plugin_error_at_selection():
    class P:
        @hookimpl
        def oxla_backends(self):
            def factory():
                raise ImportError("no llvmlite")

            return [BackendInfo("cpu", "", factory)]

    registry = make_registry((P(), "oxla-backend-cpu"))
    with pytest.raises(PluginError, match="'cpu' .*'oxla-backend-cpu'.* ImportError: no llvmlite"):
        registry.get_backend("cpu")
    row = next(r for r in registry.records() if r.name == "cpu")
    assert not row.available and "no llvmlite" in row.reason


def test_oxla_load_plugins_restricts_distributions(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS_DIR / "oxla_test_plugin"))
    eps = [
        (md.EntryPoint("test_plugin", "oxla_test_plugin.plugin", "oxla"), "oxla-test-plugin", "1"),
        (md.EntryPoint("broken", "oxla_no_such_module_xyz", "oxla"), "oxla-broken", "1"),
    ]
    monkeypatch.setenv("OXLA_LOAD_PLUGINS", "oxla_test_plugin")
    registry = make_registry()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        registry.load_entry_points(entry_points=eps)
    assert "testdummy" in registry.backends() and not registry.broken
    monkeypatch.setenv("OXLA_LOAD_PLUGINS", "")
    registry = make_registry()
    registry.load_entry_points(entry_points=eps)
    assert set(registry.backends()) == {"interpreter"}
    excluded = [(r.name, r.kind, r.available, r.reason) for r in registry.records()
                if r.distribution in ("oxla-test-plugin", "oxla-broken")]
    assert excluded == [
        ("test_plugin", "plugin", False, "not loaded: OXLA_LOAD_PLUGINS leaves it out"),
        ("broken", "plugin", False, "not loaded: OXLA_LOAD_PLUGINS leaves it out")]
    with pytest.warns(PluginWarning, match="names 'oxla-missing'"):
        make_registry().load_entry_points(allowed=["oxla-missing"], entry_points=eps)


def test_patterns_and_custom_calls_by_backend(global_registry):
    def rule(op, rewriter):
        return False

    class P:
        @hookimpl
        def oxla_patterns(self):
            return [
                PatternInfo("stablehlo.add", rule, 1, "low"),
                PatternInfo("stablehlo.add", rule, 5, "high"),
                PatternInfo("stablehlo.dot_general", rule, 3, "dot"),
            ]

    global_registry(make_registry((P(), "oxla-pats")))
    # The core canonicalization patterns come through the same hook; look at ours only.
    assert [p.name for p in plugins.patterns("stablehlo.add") if p.fn is rule] == ["high", "low"]
    assert len([p for p in plugins.patterns() if p.fn is rule]) == 3
    assert plugins.custom_calls("cpu") == {}


def test_process_registry_discovers_lazily_and_reset_forgets(global_registry):
    first = plugins.get_registry()
    assert plugins.get_registry() is first
    assert plugins.get_plugin_manager() is first.pm
    assert "interpreter" in plugins.backends()
    plugins.reset()
    assert plugins.get_registry() is not first


def test_compile_and_load_dispatch_to_the_backend(global_registry, tmp_path):
    plugin = BackendPlugin("fake")
    global_registry(make_registry((plugin, "oxla-fake")))
    module = oxla.ir.Module()  # a Module is passed through untouched
    exe = oxla.compile(module, backend="fake", fast_math=True)
    assert exe == ("executable", module)
    assert plugin.backend.compiled[0][1] == CompileOptions(fast_math=True)

    path = tmp_path / "m.oxla"
    write_artifact(path, "fake", {"module.mlir": b"module {}"}, {"note": "x"})
    assert read_manifest(path)["backend"] == "fake"
    assert oxla.load(path) == ("loaded", str(path))

    write_artifact(path, "hip", {})
    with pytest.raises(PluginError, match="unknown backend 'hip'.*extensions/backend_hip"):
        oxla.load(path)
    (tmp_path / "junk.oxla").write_text("not a zip")
    with pytest.raises(OxlaError, match="is not an oxla artifact"):
        oxla.load(tmp_path / "junk.oxla")


def test_best_backend_skips_unavailable(global_registry):
    global_registry(
        make_registry((BackendPlugin("cuda", ok=False), "oxla-c"), (BackendPlugin("cpu"), "x"))
    )
    assert plugins.best_backend() == "cpu"
    with pytest.raises(PluginError, match="no usable backend"):
        plugins.best_backend(("cuda", "hip"))
