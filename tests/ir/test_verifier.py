"""The verifier rejects ill-formed programs with the spec constraint, line and column.

Each case is one small function whose op on line 2 breaks one numbered constraint of
its op's "Constraints" section in the spec.
"""

from __future__ import annotations

import pytest

from oxla.errors import VerifyError
from oxla.ir import parse_module, verify


def prog(args: str, line: str, ret: str = "") -> str:
    """A function whose second line is ``line``; ``args`` are its parameters."""
    return f"func.func @main({args}) {{\n  {line}\n  func.return{ret}\n}}\n"


T = "tensor"
CASES = [
    # (name, args, op line, op name, constraint)
    ("add", "%a: tensor<2xf32>, %b: tensor<3xf32>",
     '%0 = "stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>',
     "stablehlo.add", "C1"),
    ("add_etype", "%a: tensor<2xf32>, %b: tensor<2xi32>",
     '%0 = "stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>',
     "stablehlo.add", "C1"),
    ("and_float", "%a: tensor<2xf32>",
     "%0 = stablehlo.and %a, %a : tensor<2xf32>", "stablehlo.and", "C1"),
    ("compare", "%a: tensor<2xf32>, %b: tensor<2xi32>",
     '%0 = "stablehlo.compare"(%a, %b) {comparison_direction = #stablehlo<comparison_direction '
     'LT>} : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xi1>', "stablehlo.compare", "C1"),
    ("select", "%p: tensor<3xi1>, %a: tensor<2xf32>",
     "%0 = stablehlo.select %p, %a, %a : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> "
     "tensor<2xf32>", "stablehlo.select", "C1"),
    ("clamp", "%m: tensor<3xf32>, %a: tensor<2xf32>",
     "%0 = stablehlo.clamp %m, %a, %m : (tensor<3xf32>, tensor<2xf32>, tensor<3xf32>) -> "
     "tensor<2xf32>", "stablehlo.clamp", "C1"),
    ("broadcast_in_dim", "%a: tensor<3xf32>",
     "%0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<3x4xf32>",
     "stablehlo.broadcast_in_dim", "C5"),
    ("reshape", "%a: tensor<6xf32>",
     "%0 = stablehlo.reshape %a : (tensor<6xf32>) -> tensor<4xf32>", "stablehlo.reshape", "C2"),
    ("transpose", "%a: tensor<2x3xf32>",
     "%0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>",
     "stablehlo.transpose", "C2"),
    ("slice", "%a: tensor<4xf32>",
     "%0 = stablehlo.slice %a [1:6] : (tensor<4xf32>) -> tensor<5xf32>", "stablehlo.slice",
     "C3"),
    ("dynamic_slice", "%a: tensor<4xf32>, %i: tensor<i32>",
     "%0 = stablehlo.dynamic_slice %a, %i, sizes = [5] : (tensor<4xf32>, tensor<i32>) -> "
     "tensor<5xf32>", "stablehlo.dynamic_slice", "C4"),
    ("dynamic_update_slice", "%a: tensor<4xf32>, %u: tensor<5xf32>, %i: tensor<i32>",
     "%0 = stablehlo.dynamic_update_slice %a, %u, %i : (tensor<4xf32>, tensor<5xf32>, "
     "tensor<i32>) -> tensor<4xf32>", "stablehlo.dynamic_update_slice", "C6"),
    ("concatenate", "%a: tensor<2x3xf32>, %b: tensor<2x4xf32>",
     "%0 = stablehlo.concatenate %a, %b, dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> "
     "tensor<4x3xf32>", "stablehlo.concatenate", "C2"),
    ("pad", "%a: tensor<2xf32>, %p: tensor<f32>",
     "%0 = stablehlo.pad %a, %p, low = [1], high = [1], interior = [0] : (tensor<2xf32>, "
     "tensor<f32>) -> tensor<5xf32>", "stablehlo.pad", "C4"),
    ("iota", "", "%0 = stablehlo.iota dim = 2 : tensor<4x2xf32>", "stablehlo.iota", "C1"),
    ("reduce", "%a: tensor<2x3xf32>, %z: tensor<f32>",
     "%0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : "
     "(tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>", "stablehlo.reduce", "C7"),
    ("get_dimension_size", "%a: tensor<2xf32>",
     "%0 = stablehlo.get_dimension_size %a, dim = 1 : (tensor<2xf32>) -> tensor<i32>",
     "stablehlo.get_dimension_size", "C1"),
    ("dot_general", "%a: tensor<2x3xf32>, %b: tensor<4x2xf32>",
     "%0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xf32>, "
     "tensor<4x2xf32>) -> tensor<2x2xf32>", "stablehlo.dot_general", "C10"),
    ("convert", "%a: tensor<2xf32>",
     "%0 = stablehlo.convert %a : (tensor<2xf32>) -> tensor<3xi32>", "stablehlo.convert", "C1"),
    ("bitcast_convert", "%a: tensor<2xf32>",
     "%0 = stablehlo.bitcast_convert %a : (tensor<2xf32>) -> tensor<2xi16>",
     "stablehlo.bitcast_convert", "C1"),
    ("reduce_precision", "%a: tensor<2xf32>",
     "%0 = stablehlo.reduce_precision %a, format = e0m2 : tensor<2xf32>",
     "stablehlo.reduce_precision", "C2"),
    ("cholesky", "%a: tensor<2x3xf32>",
     "%0 = stablehlo.cholesky %a, lower = true : tensor<2x3xf32>", "stablehlo.cholesky", "C3"),
    ("triangular_solve", "%a: tensor<3x3xf32>, %b: tensor<4x2xf32>",
     '%0 = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, '
     "unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : "
     "(tensor<3x3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>", "stablehlo.triangular_solve",
     "C3"),
    ("fft", "%a: tensor<8xf32>",
     "%0 = stablehlo.fft %a, type = RFFT, length = [8] : (tensor<8xf32>) -> "
     "tensor<8xcomplex<f32>>", "stablehlo.fft", "C5"),
    ("rng_bit_generator", "%s: tensor<3xui64>",
     "%0:2 = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<3xui64>) -> "
     "(tensor<3xui64>, tensor<4xui32>)", "stablehlo.rng_bit_generator", "C2"),
    ("batch_norm_inference", "%x: tensor<2x3xf32>, %s: tensor<2xf32>",
     '%0 = "stablehlo.batch_norm_inference"(%x, %s, %s, %s, %s) {epsilon = 1.0e-5 : f32, '
     "feature_index = 1 : i64} : (tensor<2x3xf32>, tensor<2xf32>, tensor<2xf32>, "
     "tensor<2xf32>, tensor<2xf32>) -> tensor<2x3xf32>", "stablehlo.batch_norm_inference",
     "C3"),
    ("all_reduce", "%a: tensor<2xf32>",
     '%0 = "stablehlo.all_reduce"(%a) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
     '    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n'
     "  }) {replica_groups = dense<[[0, 0]]> : tensor<1x2xi64>} : (tensor<2xf32>) -> "
     "tensor<2xf32>", "stablehlo.all_reduce", "C1"),
    ("collective_permute", "%a: tensor<2xf32>",
     '%0 = "stablehlo.collective_permute"(%a) {source_target_pairs = dense<[[0, 1, 2]]> : '
     "tensor<1x3xi64>} : (tensor<2xf32>) -> tensor<2xf32>", "stablehlo.collective_permute",
     "C1"),
    ("gather", "%a: tensor<3x4xf32>, %i: tensor<2x1xi32>",
     '%0 = "stablehlo.gather"(%a, %i) {dimension_numbers = #stablehlo.gather<offset_dims = '
     "[1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
     "slice_sizes = array<i64: 1, 4, 2>} : (tensor<3x4xf32>, tensor<2x1xi32>) -> "
     "tensor<2x4xf32>", "stablehlo.gather", "C20"),
    ("scatter", "%a: tensor<3x4xf32>, %i: tensor<2x1xi32>, %u: tensor<2x4xf32>",
     '%0 = "stablehlo.scatter"(%a, %i, %u) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
     "    stablehlo.return %y : tensor<f32>\n  }) {scatter_dimension_numbers = "
     "#stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], "
     "scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>} : (tensor<3x4xf32>, "
     "tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>", "stablehlo.scatter", "C19"),
    ("sort", "%a: tensor<4xf32>",
     '%0 = "stablehlo.sort"(%a) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
     "    stablehlo.return %x : tensor<f32>\n  }) {dimension = 0 : i64} : (tensor<4xf32>) -> "
     "tensor<4xf32>", "stablehlo.sort", "C5"),
    ("while", "%a: tensor<i32>",
     '%0 = "stablehlo.while"(%a) ({\n  ^bb0(%x: tensor<i32>):\n'
     "    stablehlo.return %x : tensor<i32>\n  }, {\n  ^bb0(%x: tensor<i32>):\n"
     "    stablehlo.return %x : tensor<i32>\n  }) : (tensor<i32>) -> tensor<i32>",
     "stablehlo.while", "C1"),
    ("if", "%p: tensor<i1>, %a: tensor<f32>, %b: tensor<i32>",
     '%0 = "stablehlo.if"(%p) ({\n    stablehlo.return %a : tensor<f32>\n  }, {\n'
     "    stablehlo.return %b : tensor<i32>\n  }) : (tensor<i1>) -> tensor<f32>",
     "stablehlo.if", "C2"),
    ("case", "%i: tensor<i32>, %a: tensor<f32>",
     '%0 = "stablehlo.case"(%i) ({\n    stablehlo.return %a : tensor<f32>\n  }) : '
     "(tensor<i32>) -> tensor<i32>", "stablehlo.case", "C4"),
    ("reduce_window", "%a: tensor<4xf32>, %z: tensor<f32>",
     '%0 = "stablehlo.reduce_window"(%a, %z) ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n'
     "    %s = stablehlo.add %x, %y : tensor<f32>\n    stablehlo.return %s : tensor<f32>\n"
     "  }) {window_dimensions = array<i64: 2>} : (tensor<4xf32>, tensor<f32>) -> "
     "tensor<4xf32>", "stablehlo.reduce_window", "C15"),
    ("convolution", "%a: tensor<1x4x4x2xf32>, %k: tensor<3x3x3x1xf32>",
     "%0 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],"
     " window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : "
     "(tensor<1x4x4x2xf32>, tensor<3x3x3x1xf32>) -> tensor<1x2x2x1xf32>",
     "stablehlo.convolution", "C14"),
]


@pytest.mark.parametrize("name,args,line,op_name,cid", CASES, ids=[c[0] for c in CASES])
def test_verifier_rejects_with_constraint_and_location(name, args, line, op_name, cid):
    text = prog(args, line)
    m = parse_module(text, "bad.mlir")
    with pytest.raises(VerifyError) as info:
        verify(m)
    e = info.value
    assert e.message.startswith(f"'{op_name}' op ({cid}) "), e.message
    assert (e.loc.line, e.loc.col) == (2, 8 if line.startswith("%0 ") else 10), e.render()
    assert e.render().startswith("bad.mlir:2:")


def test_func_return_and_call_types():
    text = ("func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  func.return %a : tensor<f32>\n}\n"
            "func.func @main(%a: tensor<i32>) -> tensor<i32> {\n"
            "  %0 = func.call @f(%a) : (tensor<i32>) -> tensor<i32>\n"
            "  func.return %0 : tensor<i32>\n}\n")
    with pytest.raises(VerifyError, match="expected the callee type") as info:
        verify(parse_module(text, "c.mlir"))
    assert info.value.loc.line == 5
    bad_ret = "func.func @main(%a: tensor<i32>) -> tensor<f32> {\n  func.return %a : tensor<i32>\n}\n"
    with pytest.raises(VerifyError, match="expected the function result types") as info:
        verify(parse_module(bad_ret, "r.mlir"))
    assert (info.value.loc.line, info.value.loc.col) == (2, 3)


def test_structure_errors():
    unknown = 'func.func @main() {\n  "foo.bar"() : () -> ()\n  func.return\n}\n'
    with pytest.raises(VerifyError, match="'foo.bar' op is not a registered operation"):
        verify(parse_module(unknown))
    arity = ('func.func @main(%a: tensor<f32>) {\n'
             '  %0 = "stablehlo.add"(%a) : (tensor<f32>) -> tensor<f32>\n  func.return\n}\n')
    with pytest.raises(VerifyError, match="expects at least 2 operands, got 1"):
        verify(parse_module(arity))
    no_attr = ('func.func @main(%a: tensor<2xf32>) {\n  %0 = "stablehlo.transpose"(%a) : '
               "(tensor<2xf32>) -> tensor<2xf32>\n  func.return\n}\n")
    with pytest.raises(VerifyError, match="requires attribute 'permutation'"):
        verify(parse_module(no_attr))
    kind = ('func.func @main(%a: tensor<2xf32>) {\n  %0 = "stablehlo.transpose"(%a) '
            '{permutation = "x"} : (tensor<2xf32>) -> tensor<2xf32>\n  func.return\n}\n')
    with pytest.raises(VerifyError, match="expected a i64_array attribute"):
        verify(parse_module(kind))


def test_dynamic_dims_are_compatible():
    ok = ("func.func @main(%a: tensor<?x3xf32>, %b: tensor<2x?xf32>) -> tensor<2x3xf32> {\n"
          '  %0 = "stablehlo.add"(%a, %b) : (tensor<?x3xf32>, tensor<2x?xf32>) -> '
          "tensor<2x3xf32>\n  func.return %0 : tensor<2x3xf32>\n}\n")
    verify(parse_module(ok))


def test_duplicate_symbol_is_a_redefinition():
    """A module is a symbol table: a second ``@main`` is an error at the second one with
    a note at the first (was accepted, and ``main`` silently meant the first)."""
    one = "func.func @{n}(%a: tensor<2xf32>) -> tensor<2xf32> {{\n  return %a : tensor<2xf32>\n}}\n"
    dup = one.format(n="main") + one.format(n="helper") + one.format(n="main")
    with pytest.raises(VerifyError, match="redefinition of symbol 'main'") as info:
        verify(parse_module(dup, "dup.mlir"))
    assert (info.value.loc.line, info.value.loc.col) == (7, 1)
    assert info.value.notes == ["see existing symbol definition at dup.mlir:1:1"]
    verify(parse_module(one.format(n="main") + one.format(n="helper"), "ok.mlir"))
