"""The SPMD partitioner: partitioned programs on the in-process device grid match the
unsharded program (oxla's interpreter) and jax.jit on forced host devices."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import run_function
from oxla.ir import parse_module, print_module, verify
from oxla.sharding.model import drop_shardings
from oxla.sharding.run import prepare, run_sharded

# (case, collectives the partitioner must insert, no more)
CASES = {
    "mlp_2x2": {"all_reduce": 1},  # column- then row-parallel: one all-reduce
    "dot_2x4": {"all_reduce": 2},  # sharded contraction, then a sharded reduce
    "shapes_2": {"all_gather": 1, "all_reduce": 1},
    "shard_map_2x2": {},  # the body's own psum is not counted as inserted
    "train_step_4": {"all_reduce": 2},  # data parallel: one all-reduce per gradient
    # the embedding gradient's scatter-add of batch-sharded updates: local scatters and
    # one all-reduce of the 16x8 table, not a gather of the 32x4x8 updates
    "embed_step_4": {"all_reduce": 1},
}


def _load(d, case):
    z = np.load(d / f"{case}.npz")
    ins = [z[k] for k in sorted(k for k in z.files if k.startswith("in"))]
    outs = [z[k] for k in sorted(k for k in z.files if k.startswith("out"))]
    return ins, outs


@pytest.mark.parametrize("form", ["sdy", "gspmd"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_jax_programs_match_jax_and_unsharded(jax_programs, case, form, backend):
    text = (jax_programs / f"{case}.{form}.mlir").read_text()
    ins, expected = _load(jax_programs, case)
    outs, report = run_sharded(text, ins, backend)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-5)
    assert report.counts() == CASES[case]
    if case != "shard_map_2x2" and form == "sdy":
        plain = drop_shardings(parse_module(text))
        ref = run_function(plain, "main", ins)
        for o, r in zip(outs, ref):
            np.testing.assert_allclose(o, r, rtol=1e-6, atol=1e-6)


# shard_map over a subset of the mesh axes: collectives the partitioner inserts, the
# same in both forms (GSPMD's unspecified_dims are open dims, like sdy's `?`)
PARTIAL = {
    # the batch stays sharded on "data" in the body; the result is gathered at the end
    "shard_map_partial_2x2": {"all_gather": 1},
    # the body's tiled all_gather needs its operand whole along "model"; the result too
    "shard_map_partial_ops_2x2": {"all_gather": 2},
    # psum_scatter runs on the batch-sharded rows; all_to_all splits the rows, so they
    # are gathered along "data" first; the (replicated) result is gathered at the end
    "shard_map_partial_split_2x2": {"all_gather": 2},
    # rows on ("data", "model"), manual "data": the body's rows stay on "model"; the
    # replicated result is gathered along "model"
    "shard_map_partial_2x4": {"all_gather": 1},
}


@pytest.mark.parametrize("form", ["sdy", "gspmd"])
@pytest.mark.parametrize("case", sorted(PARTIAL))
def test_shard_map_over_some_axes_matches_jax_and_unsharded(jax_programs, case, form,
                                                            backend):
    text = (jax_programs / f"{case}.{form}.mlir").read_text()
    assert "manual_axes" in text if form == "sdy" else "last_tile_dims={manual" in text
    ins, expected = _load(jax_programs, case)
    outs, report = run_sharded(text, ins, backend)
    ref = run_function(parse_module((jax_programs / f"{case}.plain.mlir").read_text()),
                       "main", ins)
    assert len(outs) == len(expected) == len(ref)
    for o, e, r in zip(outs, expected, ref):
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(o, np.asarray(r), rtol=1e-5, atol=1e-5)
    assert report.counts() == PARTIAL[case]
    kinds = [k for k, _ in report.op_shardings if k == "sdy.manual_computation"]
    # (axis_index in the ops case is a nested manual computation over the other axis)
    assert len(kinds) == (2 if "ops" in case else 1)


def test_gspmd_partial_manual_imports_the_manual_subgroup(jax_programs):
    """``last_tile_dims={manual, replicated}`` names the manual axes: the import gives
    ``manual_axes`` over that subgroup only (GSPMD's "model" is ``_axis_1``)."""
    from oxla.sharding.importer import ImportShardings

    m = parse_module((jax_programs / "shard_map_partial_2x2.gspmd.mlir").read_text())
    ImportShardings().run(m)
    verify(m)
    text = print_module(m)
    assert text.count("sdy.manual_computation") == 1 and 'manual_axes={"_axis_1"}' in text
    assert "SPMD" not in text and "@Sharding" not in text
    # unspecified_dims=[0,1] on the boundary: the body's dot keeps the batch on "data"
    report = prepare(m)[1]
    assert ("stablehlo.dot_general", '<@mesh, [{"_axis_0"}, {}]>') in report.op_shardings


def test_partial_manual_body_stays_sharded_on_free_axes(jax_programs):
    """The body of ``shard_map(axis_names={"model"})`` is partitioned along "data": its
    dot runs on the device's batch half (4 of 8 rows) and model quarter of K, and its
    psum keeps JAX's groups over "model" (devices differing only in "model")."""
    m, report, _ = prepare((jax_programs / "shard_map_partial_2x2.sdy.mlir").read_text())
    verify(m)
    text = print_module(m)
    assert "sdy." not in text
    assert "(tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>" in text
    ar = [line for line in text.splitlines() if '"stablehlo.all_reduce"' in line]
    assert len(ar) == 1 and "replica_groups = dense<[[0, 1], [2, 3]]>" in ar[0]
    assert ("sdy.manual_computation", "manual model") in report.op_shardings


def test_partial_manual_split_collectives_keep_other_dims_sharded(jax_programs):
    """psum_scatter over "model" along dim 1 keeps the rows sharded on "data" (a local
    4x8 -> 4x4); all_to_all splits dim 0, so only its operand is gathered along "data"."""
    m, report, _ = prepare((jax_programs / "shard_map_partial_split_2x2.sdy.mlir").read_text())
    text = print_module(m)
    assert "(tensor<4x8xf32>) -> tensor<4x4xf32>" in text
    assert "(tensor<8x8xf32>) -> tensor<4x16xf32>" in text
    assert [c.op for c in report.collectives] == ["stablehlo.all_to_all", "manual_computation"]


MISPLACED = """\
sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"b", "a"}, {}]>] out_shardings=[<@mesh, [{"b", "a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x4xf32>) {
    sdy.return %arg1 : tensor<4x4xf32>
  } : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""


def test_manual_axis_after_a_free_axis_is_refused():
    from oxla.errors import NotSupportedError

    with pytest.raises(NotSupportedError, match="manual axes must come first"):
        prepare(MISPLACED)


def test_partitioned_module_is_per_device_and_verifies(jax_programs):
    m, report, name = prepare((jax_programs / "mlp_2x2.sdy.mlir").read_text())
    verify(m)
    text = print_module(m)
    assert "sdy." not in text and "mhlo.num_partitions = 4" in text
    # x: 8x16 on data (2), w1: 16x8 on model (2), w2: 8x4 on model: local shapes
    assert "@main(%arg0: tensor<4x16xf32>, %arg1: tensor<16x4xf32>, %arg2: tensor<4x4xf32>)" \
        in text
    assert text.count("stablehlo.all_reduce") == 1
    assert "replica_groups = dense<[[0, 1], [2, 3]]>" in text
    assert report.mesh.num_devices == 4


RESHARD = """\
sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[2, 0, 3, 1]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>})
    -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) {
  %0 = sdy.reshard %arg0 <@mesh, [{}, {"y"}]> : tensor<8x4xf32>
  %1 = stablehlo.exponential %0 : tensor<8x4xf32>
  %2 = stablehlo.transpose %1, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %3 : tensor<8x4xf32>
}
"""


def test_reshards_between_any_two_shardings(backend):
    x = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
    outs, report = run_sharded(RESHARD, [x], backend)
    np.testing.assert_allclose(outs[0], np.exp(x), rtol=1e-6)
    kinds = [c.kind for c in report.collectives]
    # axes moving between dims go by all_to_all, the others by all_gather
    assert set(kinds) == {"all_gather", "all_to_all"} and all(c.reason == "reshard"
                                                              for c in report.collectives)


def test_uneven_reshards_pad_and_slice(backend):
    text = RESHARD.replace("8x4xf32", "7x3xf32").replace("4x8xf32", "3x7xf32")
    x = np.arange(21, dtype=np.float32).reshape(7, 3) / 7
    outs, report = run_sharded(text, [x], backend)
    np.testing.assert_allclose(outs[0], np.exp(x), rtol=1e-6)
    # padded layouts of different counts do not nest: gathered whole, then split again
    assert {c.kind for c in report.collectives} == {"all_gather"}


UNEVEN = """\
sdy.mesh @mesh = <["x"=4]>
func.func @main(%arg0: tensor<10x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>},
                %arg1: tensor<6x5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<10x5xf32>, tensor<6xf32>, tensor<10xf32>) {
  %0 = stablehlo.log %arg0 : tensor<10x6xf32>
  %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0]
    : (tensor<10x6xf32>, tensor<6x5xf32>) -> tensor<10x5xf32>
  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %2 = stablehlo.reduce(%0 init: %c) applies stablehlo.maximum across dimensions = [0]
    : (tensor<10x6xf32>, tensor<f32>) -> tensor<6xf32>
  %3 = stablehlo.reduce(%0 init: %c) applies stablehlo.maximum across dimensions = [1]
    : (tensor<10x6xf32>, tensor<f32>) -> tensor<10xf32>
  return %1, %2, %3 : tensor<10x5xf32>, tensor<6xf32>, tensor<10xf32>
}
"""


def test_uneven_shards_are_padded_and_reductions_masked(backend):
    """6 columns on 4 devices: 2 per device, the last device all padding; log(0) =
    -inf in the padding must not reach the dot (masked with 0) or the max (masked with
    -inf, the init value)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0.5, 2.0, (10, 6)).astype(np.float32)
    w = rng.standard_normal((6, 5)).astype(np.float32)
    outs, report = run_sharded(UNEVEN, [x, w], backend)
    lx = np.log(x)
    np.testing.assert_allclose(outs[0], lx @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1], lx.max(0), rtol=1e-6)
    np.testing.assert_allclose(outs[2], lx.max(1), rtol=1e-6)
    m, _, _ = prepare(UNEVEN)
    text = print_module(m)
    assert "@main(%arg0: tensor<10x2xf32>, %arg1: tensor<2x5xf32>)" in text  # ceil(6/4)
    # the dot and the row max run on the padded shards (partial, then all-reduced)
    assert [c.kind for c in report.collectives].count("all_reduce") == 2


PAD_OP = """\
sdy.mesh @mesh = <["x"=4]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
    -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = stablehlo.reverse %arg0, dims = [0] : tensor<8x4xf32>
  %1 = stablehlo.iota dim = 0 : tensor<8x4xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}
"""


def test_ops_without_a_rule_run_replicated(backend):
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    outs, report = run_sharded(PAD_OP, [x], backend)
    np.testing.assert_array_equal(outs[0], x[::-1] + np.arange(8, dtype=np.float32)[:, None])
    assert report.counts() == {"all_gather": 1}


def test_compile_sharded_reports_collectives_in_stats(jax_programs):
    from oxla.sharding.driver import compile_sharded

    exe, report = compile_sharded(parse_module((jax_programs / "mlp_2x2.sdy.mlir").read_text()))
    assert exe.stats["collectives"] == {"all_reduce": 1}
    assert exe.stats["collective_bytes"] == 4 * 4 * 4  # the 4x4 f32 local result
    assert exe.stats["num_devices"] == 4


SLICES_AND_DOT = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %arg1: tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>},
                %arg2: tensor<i32>, %arg3: tensor<8x2xf32>)
    -> (tensor<8x4xf32>, tensor<8x6xf32>) {
  %0 = stablehlo.dynamic_slice %arg0, %arg2, %arg2, sizes = [8, 3] : (tensor<8x6xf32>, tensor<i32>, tensor<i32>) -> tensor<8x3xf32>
  %1 = stablehlo.dynamic_update_slice %arg0, %arg3, %arg2, %arg2 : (tensor<8x6xf32>, tensor<8x2xf32>, tensor<i32>, tensor<i32>) -> tensor<8x6xf32>
  %2 = stablehlo.dot %1, %arg1 : (tensor<8x6xf32>, tensor<6x4xf32>) -> tensor<8x4xf32>
  %3 = stablehlo.slice %0 [0:8, 0:2] : (tensor<8x3xf32>) -> tensor<8x2xf32>
  %4 = stablehlo.dynamic_update_slice %arg0, %3, %arg2, %arg2 : (tensor<8x6xf32>, tensor<8x2xf32>, tensor<i32>, tensor<i32>) -> tensor<8x6xf32>
  return %2, %4 : tensor<8x4xf32>, tensor<8x6xf32>
}
"""


def test_dynamic_slices_and_dot_keep_whole_dims_sharded(backend):
    """dynamic_slice/dynamic_update_slice pass whole dimensions through (sharded, with
    local sizes), stablehlo.dot shards its m and n factors: same as unsharded."""
    rng = np.random.default_rng(0)
    ins = [rng.standard_normal((8, 6)).astype(np.float32),
           rng.standard_normal((6, 4)).astype(np.float32), np.array(2, np.int32),
           rng.standard_normal((8, 2)).astype(np.float32)]
    outs, report = run_sharded(SLICES_AND_DOT, ins, backend)
    ref = run_function(drop_shardings(parse_module(SLICES_AND_DOT)), "main", ins)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
    shardings = dict(report.op_shardings)
    assert '{"x"}' in shardings["stablehlo.dynamic_slice"]
    assert '{"x"}, {"y"}' in shardings["stablehlo.dot"]


MOVE_AXIS = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", "x"}, {}]>})
    -> (tensor<8x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) {
  %0 = sdy.reshard %arg0 <@mesh, [{"y"}, {"x"}]> : tensor<8x12xf32>
  %1 = stablehlo.negate %0 : tensor<8x12xf32>
  return %1 : tensor<8x12xf32>
}
"""


@pytest.mark.parametrize("src,dst", [('[{"y", "x"}, {}]', '[{"y"}, {"x"}]'),
                                     ('[{}, {"x", "y"}]', '[{"x", "y"}, {}]')])
def test_moving_axes_between_dims_is_one_all_to_all(backend, src, dst):
    text = MOVE_AXIS.replace('[{"y", "x"}, {}]', src).replace('[{"y"}, {"x"}]', dst)
    x = np.arange(96, dtype=np.float32).reshape(8, 12)
    outs, report = run_sharded(text, [x], backend)
    np.testing.assert_array_equal(outs[0], -x)
    assert report.counts() == {"all_to_all": 1}
    c = report.collectives[0]
    assert c.reason == "reshard" and c.bytes == 8 * 12 * 4 // 4


REDUCE_SCATTER = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x", "y"}]>},
                %arg1: tensor<16x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>},
                %arg2: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>})
    -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>},
        tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%arg2 init: %c) applies stablehlo.add across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<8xf32>
}
"""


def test_sharded_contraction_into_a_sharded_result_is_a_reduce_scatter(backend):
    """Operands sharded on the contracted (reduced) dimension and a result wanted
    sharded on the same axes: partial results and one reduce_scatter each, as XLA does
    (no all_gather of the operands, no all_reduce)."""
    rng = np.random.default_rng(1)
    ins = [rng.standard_normal(s).astype(np.float32) for s in ((8, 16), (16, 4), (8, 16))]
    outs, report = run_sharded(REDUCE_SCATTER, ins, backend)
    ref = run_function(drop_shardings(parse_module(REDUCE_SCATTER)), "main", ins)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
    assert report.counts() == {"reduce_scatter": 2}
    # each device sends its partial 8x4 (dot) and 8 (reduce) f32 results
    assert sorted(c.bytes for c in report.collectives) == [8 * 4, 8 * 4 * 4]


GATHER = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>},
                %arg1: tensor<6x1xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
    -> tensor<6x8xf32> {
  %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 8>}> : (tensor<16x8xf32>, tensor<6x1xi32>) -> tensor<6x8xf32>
  %1 = stablehlo.tanh %0 : tensor<6x8xf32>
  return %1 : tensor<6x8xf32>
}
"""


def test_gather_passes_indices_and_whole_operand_dims_through(backend):
    """An embedding lookup: the indices' batch dimension (on "x") and the table's
    hidden dimension (on "y", taken whole) stay sharded: no collective at all."""
    rng = np.random.default_rng(2)
    ins = [rng.standard_normal((16, 8)).astype(np.float32),
           rng.integers(0, 16, (6, 1)).astype(np.int32)]
    outs, report = run_sharded(GATHER, ins, backend)
    np.testing.assert_allclose(outs[0], np.tanh(ins[0][ins[1][:, 0]]), rtol=1e-6)
    assert dict(report.op_shardings)["stablehlo.gather"] == '<@mesh, [{"x"}, {"y"}]>'
    assert report.counts() == {}


VOCAB = GATHER.replace('[{}, {"y"}]>},\n                %arg1', '[{"x"}, {}]>},\n                %arg1') \
    .replace('[{"x"}, {}]>})\n    -> tensor<6x8xf32>', '[{"y"}, {}]>})\n    -> tensor<6x8xf32>')


def test_gather_from_a_table_sharded_on_its_indexed_dim_masks_and_sums(backend):
    """A vocabulary-parallel embedding: table rows on "x", indices on "y". Each device
    looks up its rows (out-of-range and clamped indices included), zeros the others,
    and one all-reduce over "x" completes it: the table is never gathered."""
    rng = np.random.default_rng(3)
    idx = np.array([[0], [15], [7], [8], [-3], [40]], np.int32)  # clamped like gather
    ins = [rng.standard_normal((16, 8)).astype(np.float32), idx]
    outs, report = run_sharded(VOCAB, ins, backend)
    ref = run_function(drop_shardings(parse_module(VOCAB)), "main", ins)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-6)
    red = [c for c in report.collectives if c.reason == "reduction"]
    assert [(c.kind, c.op, c.axes) for c in red] == [("all_reduce", "stablehlo.gather",
                                                      ('"x"',))]
    assert not any(c.kind == "all_gather" and c.op == "stablehlo.gather"
                   for c in report.collectives)


CONV = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%x: tensor<2x8x6x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}, {}, {}]>},
                %w: tensor<3x3x3x4xf32>) -> tensor<2x8x6x4xf32> {
  %y = stablehlo.convolution(%x, %w)
      dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x8x6x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x8x6x4xf32>
  %z = stablehlo.tanh %y : tensor<2x8x6x4xf32>
  return %z : tensor<2x8x6x4xf32>
}
"""


@pytest.mark.parametrize("window", ["pad = [[1, 1], [1, 1]]", "pad = [[2, 0], [1, 1]]",
                                    "pad = [[2, 2], [1, 1]], rhs_dilate = [2, 1]"])
def test_convolution_sharded_spatially_exchanges_halos(backend, window):
    """Rows on "y", batch on "x": each device gets its neighbours' boundary rows by
    collective_permute (zeros at the edges are the padding); input and output stay
    sharded (only the unannotated result is gathered at the return)."""
    text = CONV.replace("pad = [[1, 1], [1, 1]]", window)
    rng = np.random.default_rng(4)
    ins = [rng.standard_normal((2, 8, 6, 3)).astype(np.float32),
           rng.standard_normal((3, 3, 3, 4)).astype(np.float32)]
    outs, report = run_sharded(text, ins, backend)
    ref = run_function(drop_shardings(parse_module(text)), "main", ins)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-5, atol=1e-5)
    halo = [c for c in report.collectives if c.reason == "halo"]
    lo, hi = (2, 0) if "[2, 0]" in window else (2, 2) if "[2, 2]" in window else (1, 1)
    assert [c.kind for c in halo] == ["collective_permute"] * ((lo > 0) + (hi > 0))
    # each halo is lo (or hi) rows of the local 1x4x6x3 f32 block
    assert sorted(c.bytes for c in halo) == sorted(r * 6 * 3 * 4 for r in (lo, hi) if r)
    assert not any(c.op == "stablehlo.convolution" and c.kind == "all_gather"
                   for c in report.collectives)


SCATTER = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, TABLE_Y]>},
                %arg1: tensor<6x1xITYPE>, %arg2: tensor<6x8xf32>) -> tensor<16x8xf32> {
  %0 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = COMBINE
    stablehlo.return %s : tensor<f32>
  }) : (tensor<16x8xf32>, tensor<6x1xITYPE>, tensor<6x8xf32>) -> tensor<16x8xf32>
  %1 = stablehlo.tanh %0 : tensor<16x8xf32>
  return %1 : tensor<16x8xf32>
}
"""


@pytest.mark.parametrize("table_y", ["{}", '{"y"}'])
@pytest.mark.parametrize("itype,combine,idx", [
    ("i32", "stablehlo.add %a, %b : tensor<f32>", [0, 15, 7, 8, 7, -3]),  # duplicate 7
    ("i64", "stablehlo.maximum %a, %b : tensor<f32>", [16, 40, 9, 9, 0, -1]),
    ("i32", "stablehlo.add %b, %b : tensor<f32>", [3, 12, 8, 7, 16, 1]),  # no operand
])
def test_scatter_into_a_table_sharded_on_its_indexed_dim_stays_sharded(
        backend, table_y, itype, combine, idx):
    """The embedding gradient's scatter: table rows on "x" (and its whole hidden dim on
    "y" or not). Each device applies the updates of its own rows (out-of-bounds ones,
    negative or past the end, skipped as the spec says; duplicates in order) and the
    result stays sharded: no collective on the scatter (only the unannotated result is
    gathered at the return)."""
    text = (SCATTER.replace("TABLE_Y", table_y).replace("ITYPE", itype)
            .replace("COMBINE", combine))
    rng = np.random.default_rng(5)
    ins = [rng.standard_normal((16, 8)).astype(np.float32),
           np.array(idx, dtype=np.dtype(itype.replace("i", "int"))).reshape(6, 1),
           rng.standard_normal((6, 8)).astype(np.float32)]
    outs, report = run_sharded(text, ins, backend)
    ref = run_function(drop_shardings(parse_module(text)), "main", ins)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-6)
    want = '{"x"}, {"y"}' if table_y != "{}" else '{"x"}, {}'
    assert dict(report.op_shardings)["stablehlo.scatter"] == f"<@mesh, [{want}]>"
    assert [c.op for c in report.collectives if c.op != "return"] == []


def test_scatter_into_a_window_sharded_table_falls_back_to_replicated(backend):
    """A table dimension the update window does not span whole (here 4 of 8 columns)
    cannot stay sharded: the scatter runs replicated, still correct."""
    text = (SCATTER.replace("TABLE_Y", '{"y"}').replace("ITYPE", "i32")
            .replace("COMBINE", "stablehlo.add %a, %b : tensor<f32>")
            .replace("tensor<6x8xf32>) -> tensor<16x8xf32> {", "tensor<6x4xf32>) -> "
                     "tensor<16x8xf32> {")
            .replace("tensor<6x8xf32>) -> tensor<16x8xf32>\n", "tensor<6x4xf32>) -> "
                     "tensor<16x8xf32>\n"))
    rng = np.random.default_rng(6)
    ins = [rng.standard_normal((16, 8)).astype(np.float32),
           np.array([[1], [9], [15], [4], [4], [0]], np.int32),
           rng.standard_normal((6, 4)).astype(np.float32)]
    outs, report = run_sharded(text, ins, backend)
    ref = run_function(drop_shardings(parse_module(text)), "main", ins)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-6)
    assert dict(report.op_shardings)["stablehlo.scatter"] == "replicated"


EMBED_GRAD = """\
sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%w: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>},
                %idx: tensor<6x1xi32>, %g: tensor<6x8xf32>) -> tensor<16x8xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zeros = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
  %0 = "stablehlo.scatter"(%zeros, %idx, %g) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<16x8xf32>, tensor<6x1xi32>, tensor<6x8xf32>) -> tensor<16x8xf32>
  %lr = stablehlo.constant dense<0.5> : tensor<16x8xf32>
  %1 = stablehlo.multiply %lr, %0 : tensor<16x8xf32>
  %2 = stablehlo.subtract %w, %1 : tensor<16x8xf32>
  return %2 : tensor<16x8xf32>
}
"""


def test_embedding_gradient_scatter_gets_the_tables_sharding(backend):
    """An SGD step on a vocabulary-parallel table: propagation carries the table's rows
    sharding back through the update to the scatter's result and its zeros operand, so
    the scatter runs per shard (no collective on it)."""
    rng = np.random.default_rng(7)
    ins = [rng.standard_normal((16, 8)).astype(np.float32),
           np.array([[2], [9], [9], [15], [0], [8]], np.int32),
           rng.standard_normal((6, 8)).astype(np.float32)]
    outs, report = run_sharded(EMBED_GRAD, ins, backend)
    ref = run_function(drop_shardings(parse_module(EMBED_GRAD)), "main", ins)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-6)
    assert dict(report.op_shardings)["stablehlo.scatter"] == '<@mesh, [{"x"}, {}]>'
    assert [c.op for c in report.collectives if c.op != "return"] == []
