"""Megatron-style tensor parallelism on transformers models built from small configs
(random weights): only the projection weights are annotated, propagation does the
rest, and the partitioner inserts exactly the collectives Megatron needs."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from oxla.sharding.annotate import annotate, parse_mesh
from oxla.sharding.run import run_sharded
from tests.sharding.conftest import small_llama

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
importer = pytest.importorskip("oxla_frontend_torch.importer")

LLAMA_SHARDS = (
    [f"param:model.layers.*.self_attn.{p}.weight=model,_" for p in ("q_proj", "k_proj",
                                                                     "v_proj")]
    + [f"param:model.layers.*.mlp.{p}.weight=model,_" for p in ("gate_proj", "up_proj")]
    + ["param:model.layers.*.self_attn.o_proj.weight=_,model",
       "param:model.layers.*.mlp.down_proj.weight=_,model"])


@pytest.fixture(scope="module")
def llama():
    model, ids, ref = small_llama()
    return importer.export_module(model, (ids,)), ids.numpy(), ref


@pytest.mark.parametrize("ranks", [2, 4])
def test_llama_megatron_two_all_reduces_per_block(llama, ranks):
    ep, ids, ref = llama
    m = importer.import_program(ep)
    assert annotate(m, parse_mesh(f"model={ranks}"), LLAMA_SHARDS) == 14  # 7 per block
    outs, report = run_sharded(m, [ids])
    assert np.abs(outs[0] - ref).max() <= 1e-5 * np.abs(ref).max()
    # o_proj and down_proj of each of the 2 blocks; no all-gather, no other reshard
    assert report.counts() == {"all_reduce": 4}
    assert {c.op for c in report.collectives} == {"stablehlo.dot_general"}
    assert all(c.bytes == 8 * 64 * 4 for c in report.collectives)  # 1x8x64 f32 each
    # the 14 annotated weights were sliced at compile time: each device holds 1/ranks
    ws = report.weights["main"]
    assert len(ws) == 14
    assert sum(w.bytes_per_device for w in ws) * ranks == sum(
        w.global_type.num_elements * 4 for w in ws)


def test_gpt2_fused_qkv_runs_and_reports_its_reshards():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=100,
                                  n_positions=32, attn_implementation="eager",
                                  use_cache=False, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, 100, (1, 8))
    with torch.no_grad():
        ref = model(ids).logits.numpy()
    m = importer.import_program(importer.export_module(model, (ids,)))
    shards = ["param:transformer.h.*.attn.c_attn.weight=_,model",
              "param:transformer.h.*.attn.c_attn.bias=model",
              "param:transformer.h.*.mlp.c_fc.weight=_,model",
              "param:transformer.h.*.mlp.c_fc.bias=model",
              "param:transformer.h.*.attn.c_proj.weight=model,_",
              "param:transformer.h.*.mlp.c_proj.weight=model,_"]
    annotate(m, parse_mesh("model=2"), shards)
    outs, report = run_sharded(m, [ids])
    assert np.abs(outs[0] - ref).max() <= 1e-5 * np.abs(ref).max()
    got = collections.Counter((c.kind, c.op) for c in report.collectives)
    # the fused c_attn output is split into q, k, v along its sharded dimension: one
    # all-gather per split per block; the two row-parallel projections all-reduce
    assert got == {("all_reduce", "stablehlo.dot_general"): 4,
                   ("all_gather", "stablehlo.slice"): 6}
