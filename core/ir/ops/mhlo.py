"""MHLO ops that TensorFlow's StableHLO export still writes.

TensorFlow (``experimental_get_compiler_ir(...)(stage="stablehlo")``) legalizes to
StableHLO but leaves ``mhlo.copy`` behind for resource variables passed through
``while`` loops (Keras RNN layers). ``mhlo.copy`` returns its operand unchanged.
"""

from __future__ import annotations

from oxla.ir.opdef import PURE, SAME_OPERANDS_AND_RESULT_SHAPE, OpDef, operands, register
from oxla.ir.syntax import SAME

SPEC = "stablehlo-spec.md#"


def _same_type(operand_types, attributes=None, regions=None):
    return [operand_types[0]]


register(
    # `%r = mhlo.copy %x : tensor<...>`: the identity; a frontend may forward the operand
    OpDef("mhlo.copy", operands=operands("operand"),
          traits=frozenset({PURE, SAME_OPERANDS_AND_RESULT_SHAPE}),
          spec=SPEC + "optimization_barrier", syntax=SAME, infer=_same_type),
)
