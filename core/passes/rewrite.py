"""Rewrite patterns, the :class:`Rewriter` and the greedy pattern driver.

A pattern is a function ``fn(op, rewriter) -> bool`` registered for a root op name
with a benefit (higher is tried first). It returns True when it changed the IR and
makes every change through the rewriter, so the driver knows which ops to revisit.
Each pattern remembers its ``file:line``; with ``OXLA_DEBUG_PATTERNS=1`` (or the
driver's ``debug`` flag) every application is printed as
``pattern <name> (<file:line>) fired on <op> at <loc>``.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from oxla.ir import Attribute, Block, Operation, Value
from oxla.ir import types as T
from oxla.passes.util import is_trivially_dead

PatternFn = Callable[[Operation, "Rewriter"], bool]


@dataclass(frozen=True)
class Pattern:
    """One rewrite pattern.

    Attributes:
        root_op: full op name it matches (``stablehlo.multiply``).
        fn: ``fn(op, rewriter) -> bool``.
        benefit: higher is tried first.
        name: for debug output.
        where: ``file:line`` of ``fn``.
    """

    root_op: str
    fn: PatternFn
    benefit: int = 1
    name: str = ""
    where: str = ""


def source_of(fn: Callable) -> str:
    """``file:line`` where ``fn`` is defined (``?`` when unknown)."""
    try:
        code = fn.__code__  # type: ignore[attr-defined]
        return f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    except AttributeError:
        try:
            return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
        except (OSError, TypeError):
            return "?"


CORE_PATTERNS: list[Pattern] = []
"""Patterns of the ``canonicalize`` pass, filled by :func:`pattern`."""


def pattern(
    *root_ops: str, benefit: int = 1, into: list[Pattern] | None = None
) -> Callable[[PatternFn], PatternFn]:
    """Registers the decorated function as a pattern for each op in ``root_ops``.

    Args:
        root_ops: full op names.
        benefit: higher is tried first.
        into: the list to add to (default: :data:`CORE_PATTERNS`, i.e. canonicalize).
    """
    target = CORE_PATTERNS if into is None else into

    def deco(fn: PatternFn) -> PatternFn:
        for r in root_ops:
            target.append(Pattern(r, fn, benefit, fn.__name__, source_of(fn)))
        return fn

    return deco


class PatternSet:
    """Patterns indexed by root op, sorted by decreasing benefit."""

    def __init__(self, patterns: Iterable[Pattern] = ()):
        self.by_root: dict[str, list[Pattern]] = {}
        for p in patterns:
            self.by_root.setdefault(p.root_op, []).append(p)
        for lst in self.by_root.values():
            lst.sort(key=lambda p: -p.benefit)

    def __len__(self) -> int:
        return sum(len(v) for v in self.by_root.values())


class Rewriter:
    """Makes IR changes on behalf of patterns and tells the driver what to revisit.

    Attributes:
        changed: True once any change was made.
    """

    def __init__(
        self,
        on_new: Callable[[Operation], None] | None = None,
        on_erase: Callable[[Operation], None] | None = None,
    ):
        self.changed = False
        self._on_new = on_new or (lambda op: None)
        self._on_erase = on_erase or (lambda op: None)

    def create_before(
        self,
        anchor: Operation,
        name: str,
        operands: Sequence[Value] = (),
        result_types: Sequence[T.Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Sequence = (),
    ) -> Operation:
        """Creates op ``name`` right before ``anchor`` (with ``anchor``'s location)."""
        op = Operation.create(name, operands, result_types, attributes, regions, anchor.loc)
        return self.insert_before(anchor, op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Inserts a detached ``op`` before ``anchor``."""
        assert anchor.parent is not None
        anchor.parent.insert_before(anchor, op)
        self.changed = True
        self._on_new(op)
        return op

    def replace_op(self, op: Operation, new_values: Sequence[Value]) -> None:
        """Replaces every use of ``op``'s results by ``new_values`` and erases ``op``."""
        assert len(new_values) == len(op.results), (op.name, len(new_values))
        for old, new in zip(op.results, new_values):
            for u in old.uses:
                self._on_new(u.owner)
            old.replace_all_uses_with(new)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        """Erases ``op`` (its results must be unused) and everything nested in it."""
        producers = [v.owner_op for v in op.operands if v.owner_op is not None]
        for r in op.results:
            if r.uses:
                raise ValueError(f"cannot erase '{op.name}': result #{r.index} still has uses")
        for nested in op.walk():
            self._on_erase(nested)
        op.drop_all_references()
        if op.parent is not None:
            op.parent.ops.remove(op)
        self.changed = True
        for p in producers:
            self._on_new(p)

    def modified(self, op: Operation) -> None:
        """Records an in-place change of ``op`` (attributes or operands)."""
        self.changed = True
        self._on_new(op)

    def inline_block_before(
        self, block: Block, anchor: Operation, args: Sequence[Value]
    ) -> list[Value]:
        """Moves the ops of ``block`` before ``anchor``, binding its arguments to ``args``.

        Returns:
            The operands of the block's terminator (which is erased).
        """
        for a, v in zip(block.args, args):
            a.replace_all_uses_with(v)
        term = block.ops[-1]
        results = list(term.operands)
        for op in list(block.ops)[:-1]:
            self.insert_before(anchor, op)  # moves it out of `block`
        term.drop_all_references()
        block.ops.remove(term)
        return results


@dataclass
class GreedyDriver:
    """Applies patterns to every op under a root until nothing changes.

    Attributes:
        patterns: the patterns to apply.
        max_iterations: full sweeps over the IR at most.
        debug: print each pattern application.
        fold: optional ``fold(op, rewriter) -> bool`` tried after the patterns.
        remove_dead: erase trivially dead ops on the way.
        out: where debug lines go.
    """

    patterns: PatternSet
    max_iterations: int = 10
    debug: bool = False
    fold: Callable[[Operation, Rewriter], bool] | None = None
    remove_dead: bool = True
    out: TextIO = field(default_factory=lambda: sys.stderr)
    applied: int = 0

    def run(self, root: Operation) -> bool:
        """Rewrites the ops nested in ``root``; returns True when anything changed."""
        debug = self.debug or os.environ.get("OXLA_DEBUG_PATTERNS", "") not in ("", "0")
        changed_any = False
        for _ in range(self.max_iterations):
            if not self._sweep(root, debug):
                break
            changed_any = True
        return changed_any

    def _sweep(self, root: Operation, debug: bool) -> bool:
        """One pass over every op under ``root`` plus the ops changes put back on the
        worklist; True when anything changed."""
        worklist: deque[Operation] = deque()
        queued: set[int] = set()
        erased: dict[int, Operation] = {}  # holds the ops so their ids are not reused

        def push(op: Operation) -> None:
            if id(op) not in queued and op is not root:
                queued.add(id(op))
                worklist.append(op)

        def drop(op: Operation) -> None:
            erased[id(op)] = op

        rewriter = Rewriter(push, drop)
        for op in root.walk_post():
            push(op)
        while worklist:
            op = worklist.popleft()
            queued.discard(id(op))
            if id(op) in erased or op.parent is None:
                continue
            if self.remove_dead and is_trivially_dead(op):
                rewriter.erase_op(op)
                continue
            for p in self.patterns.by_root.get(op.name, ()):
                if p.fn(op, rewriter):
                    self.applied += 1
                    if debug:
                        print(
                            f"pattern {p.name} ({p.where}) fired on '{op.name}' at {op.loc}",
                            file=self.out,
                        )
                    break
            else:
                if self.fold is not None and self.fold(op, rewriter) and debug:
                    print(f"pattern fold fired on '{op.name}' at {op.loc}", file=self.out)
        return rewriter.changed
