"""The Builder: creation with inferred types, insertion points, verifying output."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.errors import VerifyError
from oxla.ir import Builder, infer_result_types, parse_module, print_module, verify
from oxla.ir.attributes import dot_dimension_numbers, i64_array
from oxla.ir.types import TensorType, f32, i1, i32, tensor


def _mlp_module():
    m = Builder.module()
    x_t, w_t = tensor((4, 3), f32), tensor((3, 2), f32)
    _, entry = Builder(m.body).func("main", [x_t, w_t], [tensor((4,), f32)])
    b = Builder(entry)
    x, w = entry.args
    h = b.dot_general(x, w)
    zero = b.constant(0.0)
    relu = b.maximum(h, b.broadcast_in_dim(zero, (4, 2), ()))
    (s,) = b.reduce([relu], [zero], [1])
    b.return_(b.select(b.compare("GT", s, s), s, b.negate(s)))
    return m


def test_builder_makes_a_verifying_module_that_round_trips():
    m = _mlp_module()
    verify(m)
    text = print_module(m)
    assert "stablehlo.dot_general" in text and "applies stablehlo.add" in text
    assert print_module(parse_module(text)) == text
    verify(parse_module(print_module(m, generic=True)))


def test_inferred_types():
    a = tensor((2, 3), f32)
    assert infer_result_types("stablehlo.add", [a, a]) == [a]
    assert infer_result_types("stablehlo.compare", [a, a]) == [tensor((2, 3), i1)]
    assert infer_result_types("stablehlo.transpose", [a], {"permutation": i64_array([1, 0])}
                              ) == [tensor((3, 2), f32)]
    dn = dot_dimension_numbers(lhs_contracting=[1], rhs_contracting=[1])
    assert infer_result_types("stablehlo.dot_general", [a, a], {"dot_dimension_numbers": dn}
                              ) == [tensor((2, 2), f32)]
    assert infer_result_types("stablehlo.get_dimension_size", [a]) == [TensorType((), i32)]
    with pytest.raises(VerifyError, match="cannot infer the result types of 'stablehlo.iota'"):
        infer_result_types("stablehlo.iota", [])


def test_insertion_before_an_op_and_replace_uses():
    m = _mlp_module()
    body = m.main.regions[0].blocks[0]
    ret = body.ops[-1]
    b = Builder.before(ret)
    v = ret.operands[0]
    n = b.negate(v)
    assert body.ops[-2] is n.owner
    v.replace_uses_if(n, lambda u: u.owner is ret)
    verify(m)
    assert ret.operands[0] is n


def test_constant_and_errors():
    m = Builder.module()
    _, entry = Builder(m.body).func("main", [], [])
    b = Builder(entry)
    c = b.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    assert str(c.type) == "tensor<2x3xi32>"
    assert str(b.constant(1.5, f32).type) == "tensor<f32>"
    with pytest.raises(VerifyError, match="unknown op 'stablehlo.nope'"):
        b.create("stablehlo.nope", [])
    with pytest.raises(VerifyError, match="cannot infer"):
        b.create("stablehlo.reshape", [c])
    b.return_()
    verify(m)
