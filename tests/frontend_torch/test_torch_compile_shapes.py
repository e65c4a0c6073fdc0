"""``torch.compile(backend="oxla")`` as users meet it: new shapes, ``dynamic=True``,
``mark_dynamic``, several models in one process, the default backend, and train-mode
BatchNorm's running statistics written back as eager writes them."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import oxla_frontend_torch.dynamo as dyn  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def graphs(monkeypatch):
    """The GraphFunctions oxla compiles, in order."""
    made: list[dyn.GraphFunction] = []
    orig = dyn.GraphFunction.__init__

    def spy(self, *args, **kwargs):
        orig(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(dyn.GraphFunction, "__init__", spy)
    return made


class _Flatten(torch.nn.Module):
    def __init__(self, n: int = 8):
        super().__init__()
        self.lin = torch.nn.Linear(n, 6)

    def forward(self, x):
        return self.lin(x).view(x.shape[0], -1).relu() * 2


def _backends(graphs: list[dyn.GraphFunction]) -> set[str]:
    return {e.backend for g in graphs for e in g.executables.values()}


def test_new_batch_sizes_recompile_cleanly(graphs, assert_close) -> None:
    torch.manual_seed(0)
    model = _Flatten()
    compiled = torch.compile(model, backend="oxla")
    with torch.no_grad():
        for b in (2, 3, 5, 3):
            x = torch.randn(b, 8)
            assert_close(compiled(x), model(x))
    # batch 2 static, then one graph with a symbolic batch that compiled per size
    assert len(graphs) == 2
    assert len(graphs[1].executables) == 2  # batch 3 (twice) and 5


def test_default_backend_is_cpu_when_installed(graphs) -> None:
    from oxla import plugins

    if "cpu" not in plugins.backends():
        pytest.skip("the cpu backend is not installed")
    from oxla_frontend_torch.api import default_backend

    assert default_backend() == "cpu"
    with torch.no_grad():
        torch.compile(_Flatten(), backend="oxla")(torch.randn(2, 8))
    assert _backends(graphs) == {"cpu"}


@pytest.mark.parametrize("how", ["dynamic", "mark_dynamic"])
def test_dynamic_shapes_make_one_graph(how: str, graphs, assert_close) -> None:
    torch.manual_seed(0)
    model = _Flatten()
    kw = {"dynamic": True} if how == "dynamic" else {}
    compiled = torch.compile(model, backend="oxla", **kw)
    with torch.no_grad():
        for b in (4, 7):
            x = torch.randn(b, 8)
            if how == "mark_dynamic":
                torch._dynamo.mark_dynamic(x, 0)
            assert_close(compiled(x), model(x))
    assert len(graphs) == 1  # one symbolic graph served both sizes
    assert len(graphs[0].executables) == 2
    # lowered once with a `?` batch, refined per size
    assert graphs[0].dynamic_error is None, graphs[0].dynamic_error
    assert "tensor<?x8xf32>" in str(graphs[0].dynamic_module)
    for b, module in zip((4, 7), graphs[0].modules.values()):
        assert (b, 8) in [a.type.shape for a in module.main.regions[0].blocks[0].args]


def test_two_models_in_one_process(graphs, assert_close) -> None:
    torch.manual_seed(0)
    a, b = _Flatten(8), _Flatten(5)
    ca, cb = torch.compile(a, backend="oxla"), torch.compile(b, backend="oxla")
    with torch.no_grad():
        for n in (2, 3):
            xa, xb = torch.randn(n, 8), torch.randn(n + 1, 5)
            assert_close(ca(xa), a(xa))
            assert_close(cb(xb), b(xb))
    # each model's graphs are its own (dynamo may share a symbolic graph across sizes)
    assert len({id(g.gm) for g in graphs}) == len(graphs) >= 3


def _cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, stride=2, groups=2), torch.nn.BatchNorm2d(8),
        torch.nn.ReLU6(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(8, 4))


def test_train_batch_norm_running_stats_match_eager(assert_close) -> None:
    eager = _cnn().train()
    model = copy.deepcopy(eager)
    compiled = torch.compile(model, backend="oxla")
    g = torch.Generator().manual_seed(1)
    for _ in range(2):
        x = torch.randn(4, 3, 9, 9, generator=g)
        assert_close(compiled(x), eager(x))
    for (name, got), want in zip(model.named_buffers(), eager.buffers()):
        if got.dtype == torch.long:
            assert torch.equal(got, want), name
        else:
            assert_close(got, want), name


def test_default_backend_skips_one_that_cannot_compile(monkeypatch, assert_close) -> None:
    """A backend raising LoweringError for a graph is skipped, with a warning naming it."""
    import oxla_frontend_torch.api as api

    import oxla
    from oxla.errors import NotSupportedError

    real = oxla.compile

    def picky(module, backend="interpreter", **kw):
        if backend == "fast":
            raise NotSupportedError("'stablehlo.tanh' is not supported by this backend")
        return real(module, backend=backend, **kw)

    monkeypatch.setattr(oxla, "compile", picky)
    monkeypatch.setattr(api, "default_backends", lambda: ["fast", "interpreter"])
    model = _Flatten().eval()
    x = torch.randn(2, 8)
    with pytest.warns(UserWarning, match=r"backend 'fast' cannot compile .*tanh.*'interpreter'"):
        f = api.compile(model, (x,))
    assert f.executable.backend == "interpreter"
    with torch.no_grad():
        assert_close(f(x), model(x))
