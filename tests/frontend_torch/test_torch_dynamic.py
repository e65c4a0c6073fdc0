"""``torch.export.Dim`` dims imported as ``?`` dimensions (``import_program(dynamic=True)``)
and run at several sizes; ops without a dynamic rule raise NotSupportedError naming the
op; GPT-2 and BERT with dynamic batch and sequence through per-shape compilation."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
ot = pytest.importorskip("oxla_frontend_torch")

import numpy as np  # noqa: E402
from oxla_frontend_torch.importer import export_module, import_program  # noqa: E402

from oxla.errors import NotSupportedError  # noqa: E402
from oxla.interpreter import run_function  # noqa: E402


class _Heads(torch.nn.Module):
    """Linear, GELU, head split/merge reshapes with symbolic sizes (b*4), broadcasts."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        h = torch.nn.functional.gelu(self.fc(x))
        h = h.view(b, t, 4, 4).transpose(1, 2).reshape(b * 4, t, 4)
        h = torch.sigmoid(h).reshape(b, 4, t, 4).transpose(1, 2).reshape(b, t, 16)
        return self.fc2(h) * 2.0 + x


def _dynamic_heads():
    torch.manual_seed(0)
    m = _Heads().eval()
    b = torch.export.Dim("b", min=1, max=16)
    t = torch.export.Dim("t", min=2, max=32)
    ep = export_module(m, (torch.randn(2, 5, 8),), dynamic_shapes=({0: b, 1: t},))
    return m, import_program(ep, decompose=False, dynamic=True)


def test_dim_becomes_question_mark_and_runs_at_several_sizes() -> None:
    m, mod = _dynamic_heads()
    text = str(mod.body.ops[0])
    assert text.splitlines()[0].startswith(
        "func.func @main(%arg0: tensor<?x?x8xf32>) -> tensor<?x?x8xf32>")
    assert "stablehlo.get_dimension_size" in text and "stablehlo.dynamic_reshape" in text
    assert "stablehlo.dynamic_broadcast_in_dim" in text
    for shape in [(2, 5, 8), (3, 7, 8), (1, 2, 8)]:
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))
        got = run_function(mod, "main", [x.numpy()])[0]
        with torch.no_grad():
            want = m(x).numpy()
        assert got.shape == shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_dynamic_module_on_cpu_after_refine_shapes() -> None:
    import oxla
    from oxla import plugins
    from oxla.passes.refine_shapes import RefineShapes

    if "cpu" not in plugins.backends():
        pytest.skip("the cpu backend (oxla-backend-cpu) is not installed")
    m, _ = _dynamic_heads()
    for shape in [(2, 5, 8), (3, 4, 8)]:
        _, mod = _dynamic_heads()
        RefineShapes(arg_shapes=f"tensor<{shape[0]}x{shape[1]}x8xf32>").run(mod)
        assert "?" not in str(mod.body.ops[0]).splitlines()[0]
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(9))
        got = oxla.compile(mod, backend="cpu")(x.numpy())[0]
        with torch.no_grad():
            np.testing.assert_allclose(got, m(x).numpy(), rtol=1e-4, atol=1e-5)


def test_op_without_dynamic_rule_names_the_op() -> None:
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)).eval()
    b = torch.export.Dim("b", min=1, max=16)
    ep = export_module(m, (torch.randn(2, 8),), dynamic_shapes=({0: b},))
    with pytest.raises(NotSupportedError) as ei:
        import_program(ep, decompose=False, dynamic=True)
    msg = str(ei.value)
    assert "'aten.native_layer_norm.default' on dynamic ('?') dimensions" in msg
    assert "compiles once per input shape" in msg


def _gpt2():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                                  n_positions=32, use_cache=False, bos_token_id=0,
                                  eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg).eval()


def _bert():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                  intermediate_size=128, vocab_size=100,
                                  max_position_embeddings=32)
    return transformers.BertModel(cfg).eval()


@pytest.mark.parametrize("name", ["gpt2", "bert"])
def test_transformers_dynamic_batch_and_sequence(name: str, assert_close) -> None:
    """Dynamic batch and sequence: one exported program, run at two sizes (the
    TorchFunction compiles once per input shape); the ``?`` import names the first op
    without a dynamic rule."""
    model = _gpt2() if name == "gpt2" else _bert()
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=2, max=32)
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(1))
    f = ot.compile(model, (ids,), "interpreter", dynamic_shapes=({0: batch, 1: seq},))
    assert f.dynamic
    for shape in [(2, 8), (3, 5)]:
        x = torch.randint(0, 100, shape, generator=torch.Generator().manual_seed(shape[1]))
        with torch.no_grad():
            want = model(x).logits if name == "gpt2" else model(x).last_hidden_state
        out = f(x)
        assert_close(out.logits if name == "gpt2" else out.last_hidden_state, want)
    assert len(f.executables) == 2
    with pytest.raises(NotSupportedError, match="on dynamic"):
        import_program(f.program, decompose=False, dynamic=True)
