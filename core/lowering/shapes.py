"""Small facts about values that every stage of the lowering asks: static shapes, byte
sizes, splat constants, and which inputs of a fused expression are read at the output's
own index."""

from __future__ import annotations

import math

from oxla.ir import Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.opdef import ELEMENTWISE, lookup_opdef

SAME_INDEX_OPS = frozenset({"stablehlo.select", "stablehlo.clamp"})
"""Ops without the ``ELEMENTWISE`` trait (their predicate or bounds may be scalars) that
still read every operand *of the result's shape* at the result's own index."""


def shape_of(v: Value) -> tuple[int, ...]:
    """The static shape of tensor value ``v``."""
    t = v.type
    assert isinstance(t, T.TensorType) and t.is_static, t
    return tuple(t.shape)  # type: ignore[arg-type]


def nbytes(v: Value) -> int:
    """Bytes of ``v``'s buffer (a token holds none: it only orders effects)."""
    t = v.type
    if isinstance(t, T.TokenType):
        return 0
    assert isinstance(t, T.TensorType)
    return int(math.prod(t.shape)) * t.element_type.dtype.itemsize


def is_splat_constant(op: Operation) -> bool:
    """True for a non-empty ``stablehlo.constant`` whose elements are all equal."""
    value = op.attr("value")
    return op.name == "stablehlo.constant" and isinstance(value, A.DenseElementsAttr) and \
        value.array.size > 0 and value.is_splat


def is_same_index_op(op: Operation) -> bool:
    """True when ``op`` reads each operand of its result's shape at the result's index
    (trait ``ELEMENTWISE``, or :data:`SAME_INDEX_OPS`)."""
    if op.name in SAME_INDEX_OPS:
        return True
    d = lookup_opdef(op.name)
    return d is not None and ELEMENTWISE in d.traits


def same_index_inputs(root: Value, inputs: list[Value]) -> set[Value]:
    """The ``inputs`` of the fused expression ``root`` read only at the output's own
    index: every path from ``root`` to them goes through same-index ops
    (:func:`is_same_index_op`) of ``root``'s shape."""
    shape = shape_of(root)
    leaves = set(inputs)
    good: set[Value] = set()
    bad: set[Value] = set()
    seen: set[tuple[Value, bool]] = set()
    stack = [(root, True)]
    while stack:
        v, same = stack.pop()
        if (v, same) in seen:
            continue
        seen.add((v, same))
        if v in leaves:
            (good if same else bad).add(v)
            continue
        op = v.owner_op
        if op is None:
            continue
        elementwise = is_same_index_op(op)
        for x in op.operands:
            stack.append((x, same and elementwise and tuple(x.type.shape) == shape))
    return good - bad


def window_update(root: Value, inputs: list[Value]) -> Operation | None:
    """The ``dynamic_update_slice`` that ``root`` is, when its operand is one of
    ``inputs`` (a materialized buffer) and neither its update nor its start indices read
    that operand: a kernel whose output is the operand's own buffer then only has to
    write the window (every other element already holds its value), which is how a scan's
    stacked outputs are updated in place each iteration."""
    op = root.owner_op
    if op is None or op.name != "stablehlo.dynamic_update_slice" or root in inputs or \
            op.operands[0] not in inputs:
        return None
    src, leaves = op.operands[0], set(inputs)
    seen: set[Value] = set()
    stack = list(op.operands[1:])
    while stack:
        v = stack.pop()
        if v is src:
            return None
        if v in seen or v in leaves:
            continue
        seen.add(v)
        if v.owner_op is not None:
            stack.extend(v.owner_op.operands)
    return op
