"""Scatters of batch-sharded updates into a replicated table (a data-parallel gradient
into an embedding): the all-reduce form (local scatters into an identity-filled table,
combined by one all_reduce) where the update computation allows it and it moves fewer
bytes, else the gathered form; both match the unsharded program in oxla's interpreter,
updates of one row on several devices and out-of-bounds indices included."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.interpreter import run_function
from oxla.ir import parse_module
from oxla.sharding.model import drop_shardings
from oxla.sharding.run import run_sharded

PROGRAM = """\
sdy.mesh @mesh = <["data"=2, "model"=2]>
func.func @main(%t: tensor<{V}x4x{T}>,
    %i: tensor<{B}x1xi32> {{sdy.sharding = #sdy.sharding<@mesh, [{AXES}, {{}}]>}},
    %u: tensor<{B}x4x{T}> {{sdy.sharding = #sdy.sharding<@mesh, [{AXES}, {{}}]>}})
    -> tensor<{V}x4x{T}> {{
  %0 = "stablehlo.scatter"(%t, %i, %u) <{{scatter_dimension_numbers = #stablehlo.scatter<
      update_window_dims = [1], inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}}> ({{
  ^bb0(%a: tensor<{T}>, %b: tensor<{T}>):
    {BODY}
  }}) : (tensor<{V}x4x{T}>, tensor<{B}x1xi32>, tensor<{B}x4x{T}>) -> tensor<{V}x4x{T}>
  return %0 : tensor<{V}x4x{T}>
}}
"""

BODIES = {
    "add": "%s = stablehlo.add %a, %b : tensor<{T}>\n    stablehlo.return %s : tensor<{T}>",
    "max": "%s = stablehlo.maximum %b, %a : tensor<{T}>\n    stablehlo.return %s : tensor<{T}>",
    "set": "stablehlo.return %b : tensor<{T}>",
    "sub": "%s = stablehlo.subtract %a, %b : tensor<{T}>\n    stablehlo.return %s : tensor<{T}>",
}


def _program(body, rows, batch, axes='{"data", "model"}', et="f32"):
    return PROGRAM.format(V=rows, B=batch, T=et, AXES=axes,
                          BODY=BODIES[body].replace("{T}", et))


def _inputs(rows, batch, et="f32", seed=0):
    rng = np.random.default_rng(seed)
    dt = np.float32 if et == "f32" else np.int32
    t = (rng.standard_normal((rows, 4)) * 8).astype(dt)
    # many updates per row, spread over the devices; -1 and `rows` are out of bounds
    i = rng.integers(-1, rows + 1, (batch, 1)).astype(np.int32)
    u = (rng.standard_normal((batch, 4)) * 8).astype(dt)
    return [t, i, u]


def _check(text, args, backend, exact):
    outs, report = run_sharded(text, args, backend)
    ref = run_function(drop_shardings(parse_module(text)), "main", args)
    if exact:
        np.testing.assert_array_equal(outs[0], np.asarray(ref[0]))
    else:
        np.testing.assert_allclose(outs[0], np.asarray(ref[0]), rtol=1e-5, atol=1e-5)
    return report


@pytest.mark.parametrize("body,et", [("add", "f32"), ("add", "i32"), ("max", "f32"),
                                     ("max", "i32")])
def test_small_table_takes_the_all_reduce_form(body, et, backend):
    text = _program(body, 6, 32, et=et)
    args = _inputs(6, 32, et)
    if body == "max":  # all negative: an identity of 0 instead of the lowest would show
        args[0] = args[0] - 40
        args[2] = args[2] - 40
    # several devices update one row (32 updates over 6 rows, 8 per device)
    per_dev = [set(args[1][8 * d:8 * d + 8, 0].tolist()) for d in range(4)]
    assert set.intersection(*per_dev) - {-1, 6}
    report = _check(text, args, backend, exact=(et == "i32" or body == "max"))
    assert report.counts() == {"all_reduce": 1}
    assert [c.reason for c in report.collectives] == ["scatter"]
    assert report.collectives[0].bytes == 6 * 4 * 4 and report.collectives[0].group == 4
    assert report.scatter_forms == {"all_reduce": 1}


@pytest.mark.parametrize("body", ["set", "sub"])
def test_other_update_computations_gather(body, backend):
    """Replacing (order-dependent across devices) or subtracting (not associative) has
    no all-reduce form: the indices and updates are gathered."""
    report = _check(_program(body, 6, 32), _inputs(6, 32), backend, exact=True)
    assert report.counts() == {"all_gather": 2}
    assert report.scatter_forms == {"gather": 1}


def test_large_table_gathers_the_updates(backend):
    """A 1024-row table (16 KiB) and 8 updates: gathering them moves fewer bytes."""
    report = _check(_program("add", 1024, 8), _inputs(1024, 8), backend, exact=False)
    assert report.counts() == {"all_gather": 2}
    assert report.scatter_forms == {"gather": 1}


def test_sharded_on_one_axis_reduces_over_that_axis(backend):
    """Updates sharded on "data" only: the all_reduce groups pair the "data" peers."""
    report = _check(_program("add", 4, 16, axes='{"data"}'), _inputs(4, 16, seed=1),
                    backend, exact=False)
    assert report.counts() == {"all_reduce": 1}
    assert report.collectives[0].axes == ('"data"',) and report.collectives[0].group == 2


def test_table_sharded_on_its_window_stays_sharded(backend):
    """A table column-sharded on "model" and updates batch-sharded on "data": each
    device scatters its rows of updates into its columns; the all_reduce is over "data"
    only, of the local 6x2 table, and the result keeps the table's sharding."""
    text = _program("add", 6, 32, axes='{"data"}').replace(
        "%t: tensor<6x4xf32>,",
        '%t: tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>},')
    text = text.replace("-> tensor<6x4xf32> {\n",
                        '-> (tensor<6x4xf32> {sdy.sharding = #sdy.sharding<@mesh, '
                        '[{}, {"model"}]>}) {\n')
    assert '[{}, {"model"}]>}) {' in text
    report = _check(text, _inputs(6, 32, seed=2), backend, exact=False)
    assert report.counts() == {"all_reduce": 1}
    c = report.collectives[0]
    assert c.axes == ('"data"',) and c.bytes == 6 * 2 * 4
    assert report.out_shardings["main"][0].dims[1].axes[0].name == "model"


def test_scatter_forms_reach_exe_stats():
    from oxla.sharding.run import ShardedExecutable

    f = ShardedExecutable(_program("add", 6, 32), "interpreter")
    assert f.stats["scatter_forms"] == {"all_reduce": 1}
    assert f.stats["collectives"] == {"all_reduce": 1}
    args = _inputs(6, 32)
    ref = run_function(drop_shardings(parse_module(_program("add", 6, 32))), "main", args)
    np.testing.assert_allclose(f(*args)[0], np.asarray(ref[0]), rtol=1e-5, atol=1e-5)
