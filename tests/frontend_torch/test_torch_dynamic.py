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


def test_op_without_dynamic_rule_names_the_op(monkeypatch) -> None:
    """An op not marked DYNAMIC_SAFE (flip, unmarked here for the test) is refused by name
    on ``?`` dims; the compiled function then compiles once per input shape."""
    from oxla_frontend_torch import importer

    monkeypatch.setattr(importer, "DYNAMIC_SAFE",
                        importer.DYNAMIC_SAFE - {torch.ops.aten.flip.default})
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


def test_rule_refusing_question_mark_dims_falls_back_per_shape() -> None:
    """A repeat count that is itself a ``?`` size is refused by the rule (NotSupportedError
    naming the op); the compiled function compiles per input shape and matches eager."""

    class _Rep(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.repeat(x.shape[0], 2)

    b = torch.export.Dim("b", min=1, max=16)
    ep = export_module(_Rep(), (torch.randn(2, 3),), dynamic_shapes=({0: b},))
    with pytest.raises(NotSupportedError, match="aten.repeat.* repeat count"):
        import_program(ep, decompose=False, dynamic=True)
    f = ot.compile(ep)
    assert f.dynamic_module is None and "repeat count" in f.dynamic_error
    for n in (1, 3):
        x = torch.randn(n, 3)
        np.testing.assert_allclose(f(x).numpy(), _Rep()(x).numpy())


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


# -- one op at a time on ``?`` dims ------------------------------------------------------
_B = torch.export.Dim("b", min=1, max=16)
_T = torch.export.Dim("t", min=4, max=32)


def _seeded(b: int, t: int) -> torch.Generator:
    return torch.Generator().manual_seed(b * 31 + t)


def _f2(b: int, t: int) -> torch.Tensor:
    return torch.randn(b, t, generator=_seeded(b, t))


def _i2(b: int, t: int) -> torch.Tensor:
    return torch.randint(-9, 9, (b, t), generator=_seeded(b, t))


def _f3(b: int, t: int) -> torch.Tensor:
    return torch.randn(b, t, 4, generator=_seeded(b, t))


def _nct(b: int, t: int) -> torch.Tensor:
    return torch.randn(b, 3, t, generator=_seeded(b, t))


def _nc6(b: int, t: int) -> torch.Tensor:  # only the batch is dynamic
    return torch.randn(b, 3, 6, generator=_seeded(b, t))


def _setcols(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[:, torch.tensor([2, 0])] = x[:, :2] + 1
    return y


def _addcols(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[:, (x[0] > 0).long()] += x + 1  # an index of ? length, a ? dim kept whole
    return y


torch.manual_seed(0)
_BN = torch.nn.BatchNorm1d(3).eval()
_BN.running_mean.fill_(0.3)
_BN.running_var.fill_(2.0)
_CONV = torch.nn.Conv1d(3, 4, 3, padding=1)
_F = torch.nn.functional
_BT, _BO = {0: _B, 1: _T}, {0: _B}

_OP_CASES = {
    # elementwise with scalar operands (broadcast to the output's run-time sizes)
    "unary": (lambda x: (x.abs().log1p() + x.ceil() + x.floor() + x.sign() + x.sin().cos()
                         + torch.round(x * 3) + x.expm1() + torch.reciprocal(x.abs() + 1)
                         + _F.silu(x) + torch.isnan((x - 0.5).log()).float()), _f2, _BT),
    "binary": (lambda x: (torch.atan2(x, x[:1] + 0.5) + torch.maximum(x, x[:, :1])
                          + torch.minimum(x, x * 0.5) + (1.5 - x)
                          + torch.rsub(x, x[:1], alpha=2) + torch.pow(2.0, x)
                          + torch.pow(x.abs(), x[:1])), _f2, _BT),
    "remainder": (lambda x: torch.remainder(x, 0.6) + torch.remainder(x, x[:1].abs() + 0.5)
                  + torch.fmod(x, 0.6), _f2, _BT),
    "remainder_int": (lambda x: torch.remainder(x, 4) + torch.remainder(x, x[:1].abs() + 1)
                      + torch.div(x, 4, rounding_mode="floor")
                      + torch.div(x, x[:, :1].abs() + 1, rounding_mode="trunc"), _i2, _BT),
    "clamp": (lambda x: torch.clamp(x, -0.5, 0.5) + torch.clamp(x, x[:1], x[:1] + 1)
              + torch.clamp_min(x, 0.1) + torch.clamp_max(x, x[:, :1]), _f2, _BT),
    "clamp_int": (lambda x: torch.clamp(x, -3, 4), _i2, _BT),
    "where_fill": (lambda x: torch.where(x > 0, x, 0.0) + torch.where(x > 0, 1.0, -2.0)
                   + torch.where(x > 0, 3.0, x) + x.masked_fill(x > 0.3, -1.0), _f2, _BT),
    "logical_bits": (lambda x: (torch.logical_xor(torch.logical_and(x > 0, x < 5),
                                                  torch.logical_or(x > 3, ~(x < -1)))
                                .long() + ((x & 3) | 8 ^ 5) + (x ^ x.flip(1))), _i2, _BT),
    # shape-agnostic or sized from the operand
    "flip": (lambda x: torch.flip(x, [0]) + torch.flip(x, [0, -1]) * 2, _f2, _BT),
    "flip_int": (lambda x: torch.flip(x, [1]), _i2, _BT),
    "tril_triu": (lambda x: torch.tril(x) + torch.triu(x, 1) * 2, _f2, _BT),
    "repeat": (lambda x: x.repeat(2, 1, 3), _f2, _BT),
    "pad": (lambda x: _F.pad(x, (1, 2, 0, 1), value=0.5), _f2, _BT),
    "index_select": (lambda x: torch.index_select(x, 1, torch.tensor([0, 3, 1]))
                     + torch.index_select(x, 1, torch.tensor([1, 0, 0])), _f2, _BT),
    "index_select_dyn": (lambda x: torch.index_select(x, 1, (x[:, 0] > 0).long()), _f2, _BT),
    "index_keep": (lambda x: x[:, torch.tensor([0, 2, -1])] * 2, _f2, _BT),
    "index_put": (lambda x: x.index_put((torch.tensor([0, -1]),), x[:1] * 3, accumulate=True)
                  + _setcols(x), _f2, _BT),
    "index_put_dyn": (_addcols, _f2, _BT),
    "scatter": (lambda x: torch.zeros_like(x).scatter(1, (x > 0).long(), x)
                + torch.zeros_like(x).scatter_add(1, (x > 0).long(), x), _f2, _BT),
    "creation": (lambda x: (torch.full_like(x, 2.0) + torch.ones_like(x) - torch.zeros_like(x)
                            + x.new_zeros(x.shape[0], 1) + torch.full((x.shape[0], 1), 3.0)),
                 _f2, _BT),
    "split_unbind": (lambda x: x.split([1, 3], 2)[1] + torch.split(x, 1, 2)[3]
                     + x.unbind(2)[0][..., None], _f3, _BT),
    # reductions: counts and indices from the run-time sizes
    "reduce_all": (lambda x: torch.stack([x.mean(), x.sum(), (x * 0.1 + 1).prod(), x.max(),
                                          x.min(), x.var(), x.argmax().float()]), _f2, _BT),
    "reduce_dim": (lambda x: (x.amin(0) + (x * 0.1 + 1).prod(0) + x.var(0, correction=0)
                              + x.argmin(0) + (x > 1).any(0) + (x > -1).all(0)), _f2, _BT),
    "reduce_dim1": (lambda x: x.var(1, keepdim=True) + x.argmax(1, keepdim=True), _f2, _BT),
    "softmax": (lambda x: torch.softmax(x, 0) + torch.log_softmax(x, 1), _f2, _BT),
    "sdpa_gqa": (lambda x: _F.scaled_dot_product_attention(  # 4 query heads, 2 kv heads
        x.view(x.shape[0], x.shape[1], 4, 2).transpose(1, 2), x[..., None, :2].transpose(1, 2)
        .expand(-1, 2, -1, -1) * 0.5, x[..., None, 2:4].transpose(1, 2).expand(-1, 2, -1, -1),
        is_causal=True, enable_gqa=True), lambda b, t: _f3(b, t).repeat(1, 1, 2), _BT),
    # nn: per-channel broadcasts from the input's sizes
    "batch_norm": (lambda x: _BN(x), _nct, {0: _B, 2: _T}),
    "batch_norm_stats": (lambda x: _F.batch_norm(x, None, None, training=True), _nct,
                         {0: _B, 2: _T}),
    "conv1d": (lambda x: _CONV(x), _nct, {0: _B, 2: _T}),
    "pools_batch": (lambda x: (_F.max_pool1d(x, 2) + _F.avg_pool1d(x, 2)
                               + _F.adaptive_avg_pool2d(x[..., None], (3, 1))[..., 0]),
                    _nc6, _BO),
}


@pytest.mark.parametrize("name", sorted(_OP_CASES))
def test_op_on_question_mark_dims(name: str) -> None:
    """Each op marked DYNAMIC_SAFE by this batch of rules: one ``?`` module, run at two
    sizes on the interpreter, and on cpu (refined per shape), against eager torch."""
    from oxla import plugins

    fn, make, dims = _OP_CASES[name]

    class _M(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return fn(x)

    m = _M().eval()
    ep = export_module(m, (make(2, 5),), dynamic_shapes=(dims,))
    mod = import_program(ep, decompose=False, dynamic=True)
    assert "?" in str(mod.body.ops[0]).splitlines()[0]
    backends = ["interpreter"] + (["cpu"] if "cpu" in plugins.backends() else [])
    fns = {be: ot.compile(ep, backend=be) for be in backends}
    for b, t in [(3, 6), (1, 4)]:
        x = make(b, t)
        with torch.no_grad():
            want = m(x).numpy()
        got = {"?": np.asarray(run_function(mod, "main", [x.numpy()])[0])}
        got.update({be: f(x).numpy() for be, f in fns.items()})
        for where, g in got.items():
            assert g.shape == want.shape and g.dtype == want.dtype, where
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5, err_msg=where)
    for f in fns.values():
        assert f.dynamic_module is not None, f.dynamic_error
        assert len(f.executables) == 2
