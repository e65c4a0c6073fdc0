"""Small IR helpers shared by the passes: constants, purity, op creation."""

from __future__ import annotations

from typing import Any

import numpy as np

from oxla.ir import DenseElementsAttr, Operation, Value
from oxla.ir import types as T
from oxla.ir.attributes import dense
from oxla.ir.opdef import PURE, SIDE_EFFECT, TERMINATOR

_REGION_OPS_PURE_IF_BODY_PURE = frozenset({"stablehlo.while", "stablehlo.if", "stablehlo.case"})


def constant_array(v: Value) -> np.ndarray | None:
    """The value of ``v`` when a ``stablehlo.constant`` defines it, else None."""
    op = v.owner_op
    if op is None or op.name != "stablehlo.constant":
        return None
    attr = op.attributes.get("value")
    return attr.array if isinstance(attr, DenseElementsAttr) else None


def splat_value(v: Value) -> Any:
    """The single element of a splat constant ``v`` (a numpy scalar), else None."""
    op = v.owner_op
    if op is None or op.name != "stablehlo.constant":
        return None
    attr = op.attributes.get("value")
    if not isinstance(attr, DenseElementsAttr) or attr.array.size == 0 or not attr.is_splat:
        return None
    return attr.array.reshape(-1)[0]


def element_type(v: Value) -> T.ElementType | None:
    t = v.type
    return t.element_type if isinstance(t, T.TensorType) else None


def is_float(v: Value) -> bool:
    return isinstance(element_type(v), T.FloatType)


def is_int(v: Value) -> bool:
    """True for signless, unsigned and boolean integer element types."""
    return isinstance(element_type(v), T.IntegerType)


def make_constant(array: np.ndarray, type: T.TensorType, loc=None) -> Operation:
    """A detached ``stablehlo.constant`` holding ``array`` reshaped to ``type``."""
    arr = np.asarray(array).reshape(type.shape)
    return Operation.create("stablehlo.constant", [], [type], {"value": dense(arr, type)}, (), loc)


def is_pure(op: Operation) -> bool:
    """True when ``op`` can be removed when unused or merged with an equal op.

    Pure means: the op has the ``PURE`` trait (or is control flow), no ``SIDE_EFFECT``
    trait, and every op nested in its regions is pure too. ``custom_call`` is never
    pure here: even without ``has_side_effect`` its target is opaque to us.
    """
    if op.has_trait(SIDE_EFFECT) or op.name == "stablehlo.custom_call":
        return False
    if not (op.has_trait(PURE) or op.name in _REGION_OPS_PURE_IF_BODY_PURE):
        return False
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                if inner.has_trait(TERMINATOR):
                    continue
                if not is_pure(inner):
                    return False
    return True


def is_trivially_dead(op: Operation) -> bool:
    """A pure, non-terminator op none of whose results is used."""
    if not op.results or op.has_trait(TERMINATOR) or any(r.uses for r in op.results):
        return False
    return is_pure(op)


def static_tensor(t: T.Type) -> bool:
    return isinstance(t, T.TensorType) and t.is_static


def i64s(op: Operation, name: str) -> tuple[int, ...]:
    """An ``array<i64: ...>`` attribute of ``op`` as a tuple of ints (empty if absent)."""
    a = op.attr(name)
    if a is None:
        return ()
    if isinstance(a, DenseElementsAttr):
        return tuple(int(x) for x in a.array.reshape(-1))
    return tuple(int(x) for x in a)
