"""``cse`` and ``dce``: common-subexpression and dead-code elimination."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oxla.ir import Block, Module, Operation
from oxla.passes.util import is_pure, is_trivially_dead

_SEES_OUTER = frozenset({"stablehlo.while", "stablehlo.if", "stablehlo.case"})
"""Ops whose regions reuse values of enclosing blocks; other region bodies (reduce,
sort, scatter...) only read their own arguments, so CSE starts afresh inside them."""


def _key(op: Operation) -> Any:
    """Hashable identity of a pure op without regions; None when it cannot be keyed."""
    try:
        attrs = tuple(sorted(op.attributes.items()))
        key = (op.name, tuple(id(v) for v in op.operands), attrs, tuple(r.type for r in op.results))
        hash(key)
    except TypeError:
        return None
    return key


@dataclass(frozen=True)
class CSE:
    """Merges pure ops equal by name, operands, attributes and result types.

    Assumes: ``PURE`` ops have no side effects. Ops with regions are not merged (their
    bodies are still visited). Values of enclosing blocks are reused inside the
    regions of ``while``/``if``/``case``; bodies of ``reduce``, ``sort`` and the like
    only ever read their own arguments, so they start afresh. Locations are ignored: the first op's location is kept.

    Guarantees: no two pure region-free ops in the same scope compute the same value.
    """

    name: str = "cse"

    def run(self, module: Module) -> None:
        for func in module.body.ops:
            for region in func.regions:
                for block in region.blocks:
                    self._block(block, [{}])

    def _block(self, block: Block, scopes: list[dict]) -> None:
        table: dict = {}
        scopes.append(table)
        for op in list(block.ops):
            if op.regions:
                inner = scopes if op.name in _SEES_OUTER else [{}]
                for region in op.regions:
                    for b in region.blocks:
                        self._block(b, inner)
                continue
            if not op.results or not is_pure(op):
                continue
            key = _key(op)
            if key is None:
                continue
            existing = None
            for scope in reversed(scopes):
                existing = scope.get(key)
                if existing is not None:
                    break
            if existing is None:
                table[key] = op
                continue
            for old, new in zip(op.results, existing.results):
                old.replace_all_uses_with(new)
            op.drop_all_references()
            block.ops.remove(op)
        scopes.pop()


@dataclass(frozen=True)
class DCE:
    """Erases pure ops whose results are unused (and ops that become so).

    Never erases ops with side effects: ``custom_call`` (with or without
    ``has_side_effect``), ``check.*``, ``outfeed``, ``send``, ``recv``, ``infeed``,
    ``rng``, collectives, calls. Control flow (``while``/``if``/``case``) goes when
    unused and its bodies are pure.
    """

    name: str = "dce"

    def run(self, module: Module) -> None:
        for func in module.body.ops:
            for region in func.regions:
                for block in region.blocks:
                    _dce_block(block)


def _dce_block(block: Block) -> None:
    for op in reversed(list(block.ops)):
        if is_trivially_dead(op):
            op.erase()
            continue
        for region in op.regions:
            for b in region.blocks:
                _dce_block(b)
