"""Constant folding through the reference interpreter, and the ``constant-fold`` pass."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxla.ir import Module, Operation
from oxla.ir import types as T
from oxla.ir.opdef import PURE, SIDE_EFFECT
from oxla.passes.rewrite import Rewriter
from oxla.passes.util import constant_array, make_constant

_NEVER_FOLD = frozenset(
    {
        "stablehlo.constant",
        "stablehlo.iota",
        "stablehlo.rng",
        "stablehlo.rng_bit_generator",
        "stablehlo.custom_call",
        "func.call",
        "stablehlo.optimization_barrier",
    }
)


def _foldable(op: Operation, max_elements: int) -> bool:
    if op.name in _NEVER_FOLD or not op.operands or not op.results:
        return False
    if not op.has_trait(PURE) or op.has_trait(SIDE_EFFECT):
        return False
    for inner in op.walk():
        if inner is not op and (inner.name in _NEVER_FOLD or inner.has_trait(SIDE_EFFECT)):
            return False  # a region that calls functions or has effects
    total = 0
    for r in op.results:
        if not isinstance(r.type, T.TensorType) or not r.type.is_static:
            return False
        if isinstance(r.type.element_type, T.QuantizedType):
            return False
        total += r.type.num_elements
    return total <= max_elements


def fold_op(op: Operation, rewriter: Rewriter, max_elements: int = 1 << 20) -> bool:
    """Replaces ``op`` by constants when all its operands are constants.

    The interpreter computes the values, so folding is exactly as accurate as the
    reference semantics. Ops without an interpreter rule, ops whose rule fails, side
    effects, ops with function calls inside, and results over ``max_elements``
    elements in total are left alone.

    Returns:
        True when ``op`` was replaced.
    """
    for v in op.operands:  # cheapest test first: most ops have a non-constant operand
        d = v.owner_op
        if d is None or d.name != "stablehlo.constant":
            return False
    if not _foldable(op, max_elements):
        return False
    args = [constant_array(v) for v in op.operands]
    if any(a is None for a in args):
        return False
    from oxla.interpreter import eval_op

    try:
        outs = eval_op(op, args)
    except Exception:  # noqa: BLE001 - a missing or failing rule means "do not fold"
        return False
    new_values = []
    for r, arr in zip(op.results, outs):
        arr = np.asarray(arr)
        t = r.type
        assert isinstance(t, T.TensorType)
        if arr.size != t.num_elements:
            return False
        new_values.append(rewriter.insert_before(op, make_constant(arr, t, op.loc)).results[0])
    rewriter.replace_op(op, new_values)
    return True


@dataclass(frozen=True)
class ConstantFold:
    """Evaluates every pure op whose operands are all constants, in program order.

    Assumes: the interpreter's rules follow the spec (they are the oracle).
    Guarantees: results stay bit-identical; no constant over ``max_elements`` elements
    is created; side-effecting ops and ops whose regions call functions are kept.
    """

    name: str = "constant-fold"
    max_elements: int = 1 << 20

    def run(self, module: Module) -> None:
        rewriter = Rewriter()
        for op in list(module.walk()):
            if op.parent is not None:
                fold_op(op, rewriter, self.max_elements)
