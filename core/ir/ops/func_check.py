"""The ``func`` dialect (spec "Dialect Interop > Module, Function, Call and Return"), the
``check`` test ops of StableHLO's interpreter tests, and ``interpreter.*`` test ops."""

from __future__ import annotations

from oxla.ir.opdef import (
    ISOLATED_FROM_ABOVE,
    PURE,
    RETURN_LIKE,
    SIDE_EFFECT,
    SYMBOL,
    TERMINATOR,
    TEST_OP,
    AttrDef,
    OpDef,
    OperandDef,
    RegionDef,
    ResultDef,
    operands,
    register,
)
from oxla.ir.syntax import KW, OperandsKeywords, Return
from oxla.ir.syntax_ops import Call, CheckBinary, CheckConst, Func

SPEC = "stablehlo-spec.md#module-function-call-and-return"
TEST = frozenset({SIDE_EFFECT, TEST_OP})
_V = {"variadic": True}

register(
    OpDef("func.func", results=(), regions=(RegionDef("body"),),
          attributes=(AttrDef("sym_name", "string"), AttrDef("function_type", "type"),
                      AttrDef("sym_visibility", "string", optional=True),
                      AttrDef("arg_attrs", "array", optional=True),
                      AttrDef("res_attrs", "array", optional=True)),
          traits=frozenset({ISOLATED_FROM_ABOVE, SYMBOL}), spec=SPEC, syntax=Func()),
    OpDef("func.call", operands=(OperandDef("operands", **_V),),
          results=(ResultDef("results", **_V),), attributes=(AttrDef("callee", "symbol"),),
          spec=SPEC, syntax=Call(), aliases=("call",)),
    OpDef("func.return", operands=(OperandDef("operands", **_V),), results=(),
          traits=frozenset({PURE, TERMINATOR, RETURN_LIKE}), spec=SPEC, syntax=Return(),
          aliases=("return",)),
    OpDef("check.expect_eq", operands=operands("lhs", "rhs"), results=(), traits=TEST,
          spec="interpreter-check-ops", syntax=CheckBinary()),
    OpDef("check.expect_almost_eq", operands=operands("lhs", "rhs"), results=(),
          attributes=(AttrDef("tolerance", "f64", optional=True),), traits=TEST,
          spec="interpreter-check-ops",
          syntax=CheckBinary((KW("tolerance", "tolerance", "float"),))),
    OpDef("check.expect_close", operands=operands("actual", "expected"), results=(),
          attributes=(AttrDef("max_ulp_difference", "i64", optional=True),
                      AttrDef("min_ulp_difference", "i64", optional=True)),
          traits=TEST, spec="interpreter-check-ops",
          syntax=CheckBinary((KW("max_ulp_difference", "max_ulp_difference", "i64"),
                              KW("min_ulp_difference", "min_ulp_difference", "i64")))),
    OpDef("check.expect_eq_const", operands=operands("lhs"), results=(),
          attributes=(AttrDef("value", "dense"),), traits=TEST, spec="interpreter-check-ops",
          syntax=CheckConst()),
    OpDef("check.expect_almost_eq_const", operands=operands("lhs"), results=(),
          attributes=(AttrDef("value", "dense"), AttrDef("tolerance", "f64", optional=True)),
          traits=TEST, spec="interpreter-check-ops", syntax=CheckConst()),
    OpDef("check.expect_serialized_eq", operands=operands("expected"), results=(),
          attributes=(AttrDef("probe_id", "string"), AttrDef("iteration", "i64", optional=True)),
          traits=TEST, spec="interpreter-check-ops",
          syntax=CheckBinary((KW("probe_id", "probe_id", "string"),
                              KW("iter", "iteration", "i64")))),
    OpDef("interpreter.probe", operands=operands("operand"),
          attributes=(AttrDef("probe_id", "string"),), traits=TEST,
          spec="interpreter-check-ops",
          syntax=OperandsKeywords((KW("probe_id", "probe_id", "string"),), types="operand")),
    OpDef("interpreter.print", operands=operands("operand"), traits=TEST,
          spec="interpreter-check-ops", syntax=OperandsKeywords((), types="operand")),
    OpDef("interpreter.run_parallel", operands=(OperandDef("inputs", **_V),),
          results=(ResultDef("results", **_V),),
          attributes=(AttrDef("programs", "array"), AttrDef("infeed", "array", optional=True)),
          traits=TEST, spec="interpreter-check-ops"),
)
