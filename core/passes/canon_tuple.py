"""Canonicalization of tuples: tuple values inside a function become their elements.

StableHLO programs converted from old HLO carry ``while``/``if``/``case`` state as
tuples (spec "tuple", "get_tuple_element"). These patterns rewrite control flow over
tuples into control flow over the tuples' leaf tensors (with ``tuple`` ops rebuilt where
a tuple value is still read), and fold ``get_tuple_element(tuple(x...), i)`` to ``x_i``,
so that afterwards only the function boundary can hold a tuple. Each rewrite moves
values, never computes them: results are unchanged bit for bit.
"""

from __future__ import annotations

from oxla.ir import Block, Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.operation import BlockArgument
from oxla.passes.rewrite import Rewriter, pattern


def _has_tuple(types) -> bool:
    return any(isinstance(t, T.TupleType) for t in types)


def leaf_types(t: T.Type) -> list[T.Type]:
    """The non-tuple types of ``t`` in order (``t`` itself when it is not a tuple)."""
    if isinstance(t, T.TupleType):
        return [leaf for s in t.types for leaf in leaf_types(s)]
    return [t]


def _leaves(v: Value, rw: Rewriter, anchor: Operation) -> list[Value]:
    """The leaf values of ``v``: ``get_tuple_element`` chains created before ``anchor``
    (or the elements themselves when ``v`` is made by a ``tuple`` op)."""
    t = v.type
    if not isinstance(t, T.TupleType):
        return [v]
    owner = v.owner_op
    out: list[Value] = []
    for i, et in enumerate(t.types):
        if owner is not None and owner.name == "stablehlo.tuple":
            elem = owner.operands[i]
        else:
            elem = rw.create_before(anchor, "stablehlo.get_tuple_element", [v], [et],
                                    {"index": A.i32_attr(i)}).results[0]
        out.extend(_leaves(elem, rw, anchor))
    return out


def _rebuild(t: T.Type, leaves: list[Value], rw: Rewriter, anchor: Operation) -> Value:
    """A value of type ``t`` from the next leaves of ``leaves`` (consumed from the front):
    ``tuple`` ops created before ``anchor``."""
    if not isinstance(t, T.TupleType):
        return leaves.pop(0)
    parts = [_rebuild(s, leaves, rw, anchor) for s in t.types]
    return rw.create_before(anchor, "stablehlo.tuple", parts, [t]).results[0]


def _flatten_block_args(block: Block, rw: Rewriter) -> None:
    """Replaces each tuple-typed argument of ``block`` by its leaf arguments; reads of the
    old argument see a ``tuple`` of the new ones (built at the block's start)."""
    first = block.ops[0]
    new_args: list[BlockArgument] = []
    for old in list(block.args):
        leaves = [BlockArgument(t, block, len(new_args) + k, old.name_hint)
                  for k, t in enumerate(leaf_types(old.type))]
        new_args.extend(leaves)
        if isinstance(old.type, T.TupleType):
            old.replace_all_uses_with(_rebuild(old.type, list(leaves), rw, first))
        else:
            old.replace_all_uses_with(leaves[0])
    block.args = new_args


def _flatten_terminators(op: Operation, rw: Rewriter, regions) -> None:
    for region in regions:
        term = region.blocks[0].ops[-1]
        flat = [leaf for v in term.operands for leaf in _leaves(v, rw, term)]
        term.set_operands(flat)
        rw.modified(term)


def _replace_results(op: Operation, new: Operation, rw: Rewriter) -> None:
    """Replaces ``op``'s results by ``new``'s leaf results (``new`` precedes ``op``)."""
    flat = list(new.results)
    rw.replace_op(op, [_rebuild(r.type, flat, rw, op) for r in op.results])


@pattern("stablehlo.get_tuple_element")
def get_tuple_element_of_tuple(op: Operation, rw: Rewriter) -> bool:
    """``get_tuple_element(tuple(x_0, ..., x_n), i)`` → ``x_i``."""
    src = op.operands[0].owner_op
    if src is None or src.name != "stablehlo.tuple":
        return False
    rw.replace_op(op, [src.operands[op.attr("index").value]])
    return True


@pattern("stablehlo.while")
def while_over_tuples(op: Operation, rw: Rewriter) -> bool:
    """A ``while`` carrying tuples → a ``while`` carrying their leaves (both regions
    take leaf arguments, the body returns leaves, the results are rebuilt)."""
    if not _has_tuple(v.type for v in op.operands):
        return False
    operands = [leaf for v in op.operands for leaf in _leaves(v, rw, op)]
    for region in op.regions:
        _flatten_block_args(region.blocks[0], rw)
    _flatten_terminators(op, rw, op.regions[1:])
    regions = list(op.regions)
    op.regions = []
    new = rw.create_before(op, "stablehlo.while", operands, [v.type for v in operands],
                           dict(op.attributes), regions)
    _replace_results(op, new, rw)
    return True


@pattern("stablehlo.if", "stablehlo.case")
def branches_returning_tuples(op: Operation, rw: Rewriter) -> bool:
    """An ``if``/``case`` with tuple results → one whose branches return the leaves."""
    if not _has_tuple(r.type for r in op.results):
        return False
    _flatten_terminators(op, rw, op.regions)
    types = [leaf for r in op.results for leaf in leaf_types(r.type)]
    regions = list(op.regions)
    op.regions = []
    new = rw.create_before(op, op.name, list(op.operands), types, dict(op.attributes),
                           regions)
    _replace_results(op, new, rw)
    return True
