"""``torch.export.Dim`` dims imported as ``?`` dimensions (``import_program(dynamic=True)``)
and run at several sizes; ops without a dynamic rule raise NotSupportedError naming the
op; GPT-2 and BERT with dynamic batch and sequence as one ``?`` program, run on the
interpreter and, refined per input shape, on the cpu backend."""

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

    class _Flip(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.flip(m(x), [0])

    b = torch.export.Dim("b", min=1, max=16)
    ep = export_module(_Flip(), (torch.randn(2, 8),), dynamic_shapes=({0: b},))
    with pytest.raises(NotSupportedError) as ei:
        import_program(ep, decompose=False, dynamic=True)
    msg = str(ei.value)
    assert "'aten.flip.default' on dynamic ('?') dimensions" in msg
    assert "compiles once per input shape" in msg
    f = ot.compile(_Flip(), (torch.randn(2, 8),), dynamic_shapes=({0: b},))
    assert f.dynamic_module is None and "aten.flip.default" in f.dynamic_error
    x = torch.randn(3, 8)
    with torch.no_grad():
        np.testing.assert_allclose(f(x).numpy(), _Flip()(x).numpy(), rtol=1e-5, atol=1e-6)


class _Ops(torch.nn.Module):
    """The ops transformers need on ``?`` dims: layer norm, softmax, log-softmax, arange,
    slices with symbolic bounds, select, split, cat, cumsum, comparisons, embedding,
    advanced indexing, gather and causal attention."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(10, 8)
        self.ln = torch.nn.LayerNorm(8)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t = ids.shape
        h = self.ln(self.emb(ids))  # [b, t, 8]
        pos = torch.arange(0, t) * 2 + 1
        mask = (ids.ne(3).long().cumsum(-1) <= pos) & ids.ge(1) | ids.lt(2) | ids.gt(8)
        h = h + mask.unsqueeze(-1).float() + pos[None, :, None].float()
        q, k = h.split([4, 4], dim=-1)
        att = torch.nn.functional.scaled_dot_product_attention(
            q[:, None], k[:, None], h[:, None, :, :4], is_causal=True)[:, 0]
        rows = torch.arange(b)[:, None]
        cols = torch.arange(t)[None, :]
        picked = h[rows, t - 1 - cols]  # [b, t, 8]
        g = torch.gather(h, 2, torch.where(ids > 7, ids - 8, ids)[:, :, None].expand(b, t, 8))
        tail = torch.cat([h[:, 1:], h[:, :1]], dim=1)[:, : t - 1]
        first = h.select(1, 0) + h[:, -1]
        return (torch.softmax(att, -1) + torch.log_softmax(picked, -1)[..., :4], g,
                tail, first, ids.eq(mask.long()))


def _dynamic_ops():
    torch.manual_seed(0)
    m = _Ops().eval()
    b = torch.export.Dim("b", min=1, max=16)
    t = torch.export.Dim("t", min=3, max=32)
    ids = torch.randint(0, 10, (2, 5))
    ep = export_module(m, (ids,), dynamic_shapes=({0: b, 1: t},))
    return m, ep


def test_transformer_ops_on_question_mark_dims() -> None:
    """Each op marked DYNAMIC_SAFE for transformers, at two sizes: on the interpreter from
    the ``?`` module, and on cpu through the refined per-shape compile path."""
    from oxla import plugins

    m, ep = _dynamic_ops()
    mod = import_program(ep, decompose=False, dynamic=True)
    text = str(mod.body.ops[0])
    assert text.splitlines()[0].startswith("func.func @main(%arg0: tensor<?x?xi64>)")
    for op in ("dynamic_iota", "real_dynamic_slice", "dynamic_broadcast_in_dim",
               "get_dimension_size", "stablehlo.gather"):
        assert op in text, op
    backends = ["interpreter"] + (["cpu"] if "cpu" in plugins.backends() else [])
    fns = {be: ot.compile(ep, backend=be) for be in backends}
    for shape in [(2, 5), (3, 7)]:
        ids = torch.randint(0, 10, shape, generator=torch.Generator().manual_seed(shape[1]))
        with torch.no_grad():
            want = m(ids)
        got = run_function(mod, "main", [ids.numpy()])
        outs = {"?": [torch.from_numpy(np.asarray(g)) for g in got]}
        outs.update({be: list(f(ids)) for be, f in fns.items()})
        for where, vals in outs.items():
            assert len(vals) == len(want), where
            for g, w in zip(vals, want):
                assert g.shape == w.shape, (where, g.shape, w.shape)
                np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5,
                                           err_msg=where)
    for f in fns.values():
        assert f.dynamic_module is not None and len(f.executables) == 2
        assert all("?" not in str(md.body.ops[0]).splitlines()[0]
                   for md in f.modules.values())


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
    """Dynamic batch and sequence as ONE program with ``?`` dims: run on the interpreter
    at two sizes, and on cpu (refined and compiled once per input shape)."""
    from oxla import plugins

    model = _gpt2() if name == "gpt2" else _bert()
    batch = torch.export.Dim("batch", min=1, max=8)
    seq = torch.export.Dim("seq", min=2, max=32)
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(1))
    ep = export_module(model, (ids,), dynamic_shapes=({0: batch, 1: seq},))
    mod = import_program(ep, decompose=False, dynamic=True)
    assert str(mod.body.ops[0]).splitlines()[0].startswith(
        "func.func @main(%arg0: tensor<?x?xi64>) -> ")
    backend = "cpu" if "cpu" in plugins.backends() else "interpreter"
    f = ot.compile(ep, backend=backend)
    assert f.dynamic and f.dynamic_module is not None
    for shape in [(2, 8), (3, 5)]:
        x = torch.randint(0, 100, shape, generator=torch.Generator().manual_seed(shape[1]))
        with torch.no_grad():
            want = model(x).logits if name == "gpt2" else model(x).last_hidden_state
        got = torch.from_numpy(np.asarray(run_function(mod, "main", [x.numpy()])[0]))
        assert_close(got, want)
        out = f(x)
        assert_close(out.logits if name == "gpt2" else out.last_hidden_state, want)
    assert len(f.executables) == 2
