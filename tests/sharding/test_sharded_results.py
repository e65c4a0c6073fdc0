"""Results left sharded (``out_shardings``): each device keeps its piece, no collective
assembles it, and ``np.asarray`` of the :class:`ShardedArray` equals the unsharded
program's result (oxla's interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.errors import OxlaError
from oxla.interpreter import run_function
from oxla.ir import parse_module
from oxla.sharding.array import ShardedArray
from oxla.sharding.model import drop_shardings
from oxla.sharding.run import ShardedExecutable

DOT = """\
sdy.mesh @mesh = <["data"=2, "model"=2]>
func.func @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {}]>},
                %arg1: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>})
    -> tensor<8x6xf32> {
  %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0]
    : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
  %1 = stablehlo.tanh %0 : tensor<8x6xf32>
  return %1 : tensor<8x6xf32>
}
"""


def _inputs(rows=8):
    rng = np.random.default_rng(1)
    return [rng.standard_normal((rows, 4)).astype(np.float32),
            rng.standard_normal((4, 6)).astype(np.float32)]


def _unsharded(text, ins):
    return run_function(drop_shardings(parse_module(text)), "main", ins)[0]


def test_result_left_sharded_holds_each_device_piece(backend):
    ins = _inputs()
    exe = ShardedExecutable(DOT, backend, out_shardings=[("data", "model")])
    (y,) = exe(*ins)
    assert isinstance(y, ShardedArray) and y.shape == (8, 6) and y.dtype == np.float32
    assert exe.report.counts() == {}  # nothing gathers the result
    ref = _unsharded(DOT, ins)
    assert len(y.shards) == 4 and not y.is_fully_replicated
    for s in y.shards:
        assert s.data.shape == (4, 3) and s.replica_id == 0
        np.testing.assert_allclose(s.data, ref[s.index], rtol=1e-6, atol=1e-6)
    # device d = data * 2 + model (row-major mesh): rows by data, columns by model
    assert [(s.index[0].start, s.index[1].start) for s in y.shards] == \
        [(0, 0), (0, 3), (4, 0), (4, 3)]
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-6, atol=1e-6)


def test_out_sharding_other_than_propagated_reshards(backend):
    """Columns only on ``model``: the rows are gathered over ``data`` (one all_gather),
    the columns stay split; the two devices of a ``model`` shard are replicas."""
    ins = _inputs()
    (y,) = ShardedExecutable(DOT, backend, out_shardings=["_,model"])(*ins)
    assert sorted(s.replica_id for s in y.shards) == [0, 0, 1, 1]
    assert all(s.data.shape == (8, 3) for s in y.shards)
    np.testing.assert_allclose(np.asarray(y), _unsharded(DOT, ins), rtol=1e-6, atol=1e-6)


def test_uneven_result_shards_drop_their_padding(backend):
    text = DOT.replace("8x4xf32", "7x4xf32").replace("8x6xf32", "7x6xf32")
    ins = _inputs(7)
    (y,) = ShardedExecutable(text, backend, out_shardings=[("data", None)])(*ins)
    assert sorted({s.data.shape for s in y.shards}) == [(3, 6), (4, 6)]
    np.testing.assert_allclose(np.asarray(y), _unsharded(text, ins), rtol=1e-6, atol=1e-6)


def test_default_still_gathers_and_keep_sharded_uses_the_module_sharding():
    ins = _inputs()
    text = DOT.replace("-> tensor<8x6xf32> {", "-> (tensor<8x6xf32> {sdy.sharding = "
                       "#sdy.sharding<@mesh, [{\"data\"}, {}]>}) {")
    (plain,) = ShardedExecutable(text, "interpreter")(*ins)
    assert isinstance(plain, np.ndarray)
    (y,) = ShardedExecutable(text, "interpreter", keep_sharded=True)(*ins)
    assert {s.data.shape for s in y.shards} == {(4, 6)}
    np.testing.assert_allclose(np.asarray(y), plain, rtol=0, atol=0)


def test_partial_shards_refuse_to_assemble():
    ins = _inputs()
    (y,) = ShardedExecutable(DOT, "interpreter", out_shardings=[("data", "model")])(*ins)
    mine = ShardedArray(y.shards[1:2], y.shape, y.dtype, y.sharding, y.mesh)
    assert not mine.is_fully_addressable
    with pytest.raises(OxlaError, match="holds only device 1's shard"):
        np.asarray(mine)


def test_bad_out_shardings_are_one_line_errors():
    with pytest.raises(OxlaError, match="1 results"):
        ShardedExecutable(DOT, "interpreter", out_shardings=[None, None])
    with pytest.raises(OxlaError, match="unknown mesh axis 'batch'"):
        ShardedExecutable(DOT, "interpreter", out_shardings=[("batch", None)])
