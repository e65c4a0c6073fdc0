"""``torch.compile(model, backend="oxla")``: inference and training through AOTAutograd's
forward and backward graphs, against eager PyTorch (1e-4 relative)."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

from oxla.errors import OxlaError  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 16),
                               torch.nn.Tanh(), torch.nn.Linear(16, 4))


def _sgd_step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    opt.step()
    return loss.detach(), grads, [p.detach().clone() for p in model.parameters()]


def test_backend_registered_through_entry_point() -> None:
    assert "oxla" in torch._dynamo.list_backends()


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_mlp_training_step_matches_eager(backend: str, assert_close) -> None:
    from oxla import plugins

    if backend not in plugins.backends():
        pytest.skip(f"the {backend} backend is not installed")
    eager = _mlp()
    model = copy.deepcopy(eager)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(6, 8, generator=g), torch.randint(0, 4, (6,), generator=g)
    want = _sgd_step(eager, x, y)
    compiled = torch.compile(model, backend="oxla", options={"backend": backend})
    calls = []
    import oxla_frontend_torch.dynamo as dyn

    orig = dyn.GraphFunction.__call__

    def spy(self, *args):
        calls.append(self.backend)
        return orig(self, *args)

    dyn.GraphFunction.__call__ = spy
    try:
        got = _sgd_step(compiled, x, y)
    finally:
        dyn.GraphFunction.__call__ = orig
    assert calls == [backend, backend]  # the forward and the backward graph ran on oxla
    assert_close(got[0], want[0])
    for a, b in zip(got[1], want[1]):
        assert_close(a, b)
    for a, b in zip(got[2], want[2]):  # parameters after the SGD step
        assert_close(a, b)


def test_inference_under_no_grad(assert_close) -> None:
    model = _mlp().eval()
    x = torch.randn(3, 8, generator=torch.Generator().manual_seed(2))
    compiled = torch.compile(model, backend="oxla")
    with torch.no_grad():
        want = model(x)
        got = compiled(x)
        got2 = compiled(x * 2)
        want2 = model(x * 2)
    assert_close(got, want)
    assert_close(got2, want2)


def test_gpt2_loss_and_gradients_match_eager(assert_close) -> None:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                                  n_positions=32, use_cache=False, resid_pdrop=0.0,
                                  embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                                  eos_token_id=0)
    eager = transformers.GPT2LMHeadModel(cfg)
    model = copy.deepcopy(eager)
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(3))
    want = eager(ids, labels=ids).loss
    want.backward()
    got = torch.compile(model, backend="oxla")(ids, labels=ids).loss
    got.backward()
    assert_close(got.detach(), want.detach())
    for (name, a), b in zip(model.named_parameters(), eager.parameters()):
        # relative to the gradient's own scale: tiny entries carry summation-order noise
        scale = b.grad.abs().max().item()
        assert_close(a.grad, b.grad, atol=1e-4 * scale + 1e-7), name


def test_unknown_option_is_an_error() -> None:
    compiled = torch.compile(_mlp(), backend="oxla", options={"backend": "cpu", "fast": 1})
    with pytest.raises(Exception) as ei:
        compiled(torch.randn(2, 8))
    cause = ei.value
    while cause is not None and not isinstance(cause, OxlaError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None and "unknown oxla torch.compile option(s) ['fast']" in str(cause)
