"""CHLO ops that JAX and TensorFlow emit (spec "Dialect Interop > CHLO").

CHLO ops decompose into StableHLO (``chlo-legalize-to-stablehlo``); the interpreter
also evaluates them directly.
"""

from __future__ import annotations

from oxla.ir.opdef import (
    ELEMENTWISE,
    PURE,
    SAME_OPERANDS_AND_RESULT_SHAPE,
    AttrDef,
    OpDef,
    OperandDef,
    RegionDef,
    ResultDef,
    operands,
    register,
    results,
)
from oxla.ir.syntax import FUNCTIONAL, Constant
from oxla.ir.syntax_ops import ChloScan, ChloTopK, ChloUnary

SPEC = "stablehlo-spec.md#chlo"
EW = frozenset({PURE, ELEMENTWISE, SAME_OPERANDS_AND_RESULT_SHAPE})
_UNARY_SYNTAX = ChloUnary()

CHLO_UNARY = [
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj", "cosh",
    "digamma", "erf", "erf_inv", "erfc", "is_inf", "is_neg_inf", "is_pos_inf", "lgamma",
    "sinh", "square", "tan",
]
CHLO_BINARY = ["next_after", "polygamma", "zeta"]
CHLO_BROADCAST = [
    "add", "and", "atan2", "complex", "divide", "maximum", "minimum", "multiply",
    "next_after", "or", "polygamma", "power", "remainder", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "subtract", "xor", "zeta",
]

_BCAST = AttrDef("broadcast_dimensions", "i64_array", optional=True)

register(
    *(OpDef(f"chlo.{n}", operands=operands("operand"), traits=EW, spec=SPEC,
            syntax=_UNARY_SYNTAX) for n in CHLO_UNARY),
    *(OpDef(f"chlo.{n}", operands=operands("lhs", "rhs"), traits=EW, spec=SPEC,
            syntax=_UNARY_SYNTAX) for n in CHLO_BINARY),
    *(OpDef(f"chlo.broadcast_{n}", operands=operands("lhs", "rhs"), attributes=(_BCAST,),
            traits=frozenset({PURE}), spec=SPEC, syntax=FUNCTIONAL) for n in CHLO_BROADCAST),
    OpDef("chlo.broadcast_compare", operands=operands("lhs", "rhs"),
          attributes=(_BCAST, AttrDef("comparison_direction", "enum:comparison_direction"),
                      AttrDef("compare_type", "enum:comparison_type", optional=True)),
          traits=frozenset({PURE}), spec=SPEC, syntax=FUNCTIONAL),
    OpDef("chlo.broadcast_select", operands=operands("pred", "on_true", "on_false"),
          traits=frozenset({PURE}), spec=SPEC, syntax=FUNCTIONAL),
    OpDef("chlo.constant", attributes=(AttrDef("value", "dense"),), traits=frozenset({PURE}),
          spec=SPEC, syntax=Constant()),
    OpDef("chlo.constant_like", operands=operands("operand"),
          attributes=(AttrDef("value", "any"),), traits=frozenset({PURE}), spec=SPEC),
    OpDef("chlo.mulhi", operands=operands("lhs", "rhs"), traits=EW, spec=SPEC),
    OpDef("chlo.top_k", operands=operands("operand"), results=results("values", "indices"),
          attributes=(AttrDef("k", "i64"),), traits=frozenset({PURE}), spec=SPEC,
          syntax=ChloTopK()),
    OpDef("chlo.ragged_dot", operands=operands("lhs", "rhs", "group_sizes"),
          attributes=(AttrDef("ragged_dot_dimension_numbers", "ragged_dot_dims"),
                      AttrDef("precision_config", "precision_array", optional=True)),
          traits=frozenset({PURE}), spec=SPEC),
    OpDef("chlo.scan", operands=(OperandDef("inputs", variadic=True),
                                 OperandDef("inits", variadic=True)),
          results=(ResultDef("results", variadic=True),),
          attributes=(AttrDef("dimension", "i64"), AttrDef("is_reverse", "bool", optional=True),
                      AttrDef("is_associative", "bool", optional=True),
                      AttrDef("operandSegmentSizes", "i32_array"),
                      AttrDef("resultSegmentSizes", "i32_array", optional=True)),
          regions=(RegionDef("body"),), traits=frozenset({PURE}), spec=SPEC,
          syntax=ChloScan()),
)
