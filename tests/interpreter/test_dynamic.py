"""Dynamic-shape op rules (spec ``dynamic_broadcast_in_dim``, ``dynamic_reshape``,
``dynamic_iota``, ``dynamic_pad``): shapes come from operand values."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from oxla.errors import OxlaError
from oxla.interpreter import Context, run_function
from oxla.ir import parse_module


def run(body: str, sig: str, *args):
    m = parse_module(f"func.func @main({sig}) {body}", "test.mlir")
    return run_function(m, "main", [np.asarray(a) for a in args], Context(module=m))


def test_dynamic_broadcast_in_dim_from_runtime_shape():
    (r,) = run("""-> tensor<?x3xi32> {
      %r = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1]
        : (tensor<3xi32>, tensor<2xi64>) -> tensor<?x3xi32>
      return %r : tensor<?x3xi32> }""", "%a: tensor<3xi32>, %s: tensor<2xi64>",
               np.array([1, 2, 3], np.int32), np.array([2, 3]))
    np.testing.assert_array_equal(r, [[1, 2, 3], [1, 2, 3]])


def test_dynamic_broadcast_in_dim_rejects_shape_against_static_dim():
    with pytest.raises(OxlaError, match="does not match"):
        run("""-> tensor<?x3xi32> {
          %r = stablehlo.dynamic_broadcast_in_dim %a, %s, dims = [1]
            : (tensor<3xi32>, tensor<2xi64>) -> tensor<?x3xi32>
          return %r : tensor<?x3xi32> }""", "%a: tensor<3xi32>, %s: tensor<2xi64>",
            np.array([1, 2, 3], np.int32), np.array([2, 4]))


def test_dynamic_reshape_and_iota():
    (r, i) = run("""-> (tensor<?x2xi32>, tensor<2x?xf32>) {
      %r = stablehlo.dynamic_reshape %a, %s : (tensor<?xi32>, tensor<2xi32>) -> tensor<?x2xi32>
      %i = stablehlo.dynamic_iota %t, dim = 1 : (tensor<2xi32>) -> tensor<2x?xf32>
      return %r, %i : tensor<?x2xi32>, tensor<2x?xf32> }""",
                 "%a: tensor<?xi32>, %s: tensor<2xi32>, %t: tensor<2xi32>",
                 np.arange(4, dtype=np.int32), np.array([2, 2], np.int32),
                 np.array([2, 3], np.int32))
    np.testing.assert_array_equal(r, [[0, 1], [2, 3]])
    assert i.dtype == np.float32
    np.testing.assert_array_equal(i, [[0, 1, 2], [0, 1, 2]])


def test_dynamic_pad_negative_low_and_interior():
    # interior 1: [1 0 2 0 3]; low -1: [0 2 0 3]; high 2: [0 2 0 3 0 0].
    (r,) = run("""-> tensor<?xi32> {
      %r = stablehlo.dynamic_pad %a, %p, %lo, %hi, %in
        : (tensor<3xi32>, tensor<i32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>)
        -> tensor<?xi32>
      return %r : tensor<?xi32> }""",
               "%a: tensor<3xi32>, %p: tensor<i32>, %lo: tensor<1xi64>, %hi: tensor<1xi64>, "
               "%in: tensor<1xi64>", np.array([1, 2, 3], np.int32), np.int32(0),
               np.array([-1]), np.array([2]), np.array([1]))
    np.testing.assert_array_equal(r, [0, 2, 0, 3, 0, 0])


def _shared() -> Path:
    return Path(os.environ.get("OXLA_SHARED",
                               Path(__file__).resolve().parents[2].parent / "shared"))


@pytest.mark.parametrize("name", ["broadcast_in_dim_poly2_dynamic.mlir",
                                  "iota_dynamic.mlir", "pad_poly_padding_config_dynamic.mlir"])
def test_jax_shape_polymorphic_export_runs(name):
    """The testdata/dynamic programs have no checks: run them with every symbolic
    dimension set to 3 and check the results have the declared static dims."""
    path = _shared() / "conformance/stablehlo/testdata/dynamic" / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    m = parse_module(path.read_text(), str(path))
    f = m.lookup("main")
    args = []
    for a in f.regions[0].blocks[0].args:
        t = a.type
        if t.shape == () and t.element_type.dtype == np.int64 and not any(
                np.ndim(x) for x in args):
            args.append(np.int64(3))
        else:
            args.append(np.ones([3 if s is None else s for s in t.shape], t.element_type.dtype))
    outs = run_function(m, "main", args, Context(module=m))
    term = f.regions[0].blocks[0].ops[-1]
    for o, v in zip(outs, term.operands):
        assert all(s is None or s == n for s, n in zip(v.type.shape, o.shape))
