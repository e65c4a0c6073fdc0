"""The ops of a block: an intrusive doubly linked list (MLIR's ``iplist``).

Every :class:`~oxla.ir.operation.Operation` carries ``_prev``/``_next`` links and an
order key ``_order``, so inserting, removing and comparing positions cost O(1)
(amortized: order keys are renumbered lazily, once per block after an insertion in
the middle). Iteration is in order and survives the removal of the current op.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    from oxla.ir.operation import Block, Operation


class OpList:
    """The ordered operations of one block.

    Supports ``append``, ``insert_before``/``insert_after``, ``remove``, ``index``,
    ``len``, ``bool``, iteration (forward and ``reversed``), ``ops[0]``/``ops[-1]``
    in O(1), other integer indices and slices in O(n) (a slice is a new ``list``), and
    ``ops[:] = iterable`` to replace every op. Adding an op that is in another block
    first removes it from there. Ops are owned: ``op.parent`` is kept up to date.
    """

    __slots__ = ("_block", "_head", "_tail", "_len", "_ordered", "_dense")

    def __init__(self, block: Block):
        self._block = block
        self._head: Operation | None = None
        self._tail: Operation | None = None
        self._len = 0
        self._ordered = True  # every op's _order increases along the list
        self._dense = True  # ... and the orders are exactly 0, 1, ..., len - 1

    # -- mutation -----------------------------------------------------------------
    def _take(self, op: Operation) -> None:
        if op.parent is not None:
            op.parent.ops.remove(op)
        op.parent = self._block

    def append(self, op: Operation) -> Operation:
        """Adds ``op`` at the end. O(1)."""
        self._take(op)
        tail = self._tail
        op._prev = tail
        op._next = None
        if tail is None:
            self._head = op
            op._order = 0
        else:
            tail._next = op
            op._order = tail._order + 1
        self._tail = op
        self._len += 1
        return op

    def extend(self, ops: Iterable[Operation]) -> None:
        for op in list(ops):
            self.append(op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Inserts ``op`` right before ``anchor`` (an op of this block). O(1).

        Raises:
            ValueError: if ``anchor`` is not in this block.
        """
        if anchor.parent is not self._block:
            raise ValueError(f"insert_before: anchor '{anchor.name}' is not in this block")
        if op is anchor:
            return op
        self._take(op)
        prev = anchor._prev
        op._prev = prev
        op._next = anchor
        anchor._prev = op
        if prev is None:
            self._head = op
            op._order = anchor._order - 1
        else:
            prev._next = op
            self._ordered = False
        self._dense = False
        self._len += 1
        return op

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        """Inserts ``op`` right after ``anchor`` (an op of this block). O(1).

        Raises:
            ValueError: if ``anchor`` is not in this block.
        """
        if anchor.parent is not self._block:
            raise ValueError(f"insert_after: anchor '{anchor.name}' is not in this block")
        nxt = anchor._next
        if nxt is None:
            return self.append(op)
        return self.insert_before(nxt, op)

    def remove(self, op: Operation) -> None:
        """Unlinks ``op`` (which must be in this block) and clears its parent. O(1).

        Raises:
            ValueError: if ``op`` is not in this block.
        """
        if op.parent is not self._block:
            raise ValueError(f"OpList.remove: '{op.name}' is not in this block")
        prev, nxt = op._prev, op._next
        if prev is None:
            self._head = nxt
        else:
            prev._next = nxt
        if nxt is None:
            self._tail = prev
        else:
            nxt._prev = prev
            self._dense = False
        # op._next is kept: an iterator standing on op continues from there.
        op._prev = None
        op.parent = None
        self._len -= 1

    def clear(self) -> None:
        for op in list(self):
            self.remove(op)

    # -- queries --------------------------------------------------------------------
    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len != 0

    def __iter__(self) -> Iterator[Operation]:
        block = self._block
        op = self._head
        while op is not None:
            nxt = op._next
            yield op
            if op.parent is block:
                nxt = op._next
            while nxt is not None and nxt.parent is not block:
                nxt = nxt._next  # removed meanwhile: follow the stale links
            op = nxt

    def __reversed__(self) -> Iterator[Operation]:
        block = self._block
        op = self._tail
        while op is not None:
            prev = op._prev
            yield op
            if op.parent is block:
                prev = op._prev
            op = prev

    def __contains__(self, op: object) -> bool:
        return getattr(op, "parent", None) is self._block

    @overload
    def __getitem__(self, i: int) -> Operation: ...

    @overload
    def __getitem__(self, i: slice) -> list[Operation]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        n = self._len
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("op index out of range")
        if i == 0:
            return self._head
        if i == n - 1:
            return self._tail
        if i < n // 2:
            op = self._head
            for _ in range(i):
                op = op._next  # type: ignore[union-attr]
        else:
            op = self._tail
            for _ in range(n - 1 - i):
                op = op._prev  # type: ignore[union-attr]
        return op

    def __setitem__(self, i: slice, ops: Iterable[Operation]) -> None:
        """Only ``ops[:] = new_ops``: replaces every op (ops not kept are unlinked)."""
        if not (isinstance(i, slice) and i == slice(None)):
            raise TypeError("OpList supports only ops[:] = ... assignment")
        new = list(ops)
        self.clear()
        for op in new:
            self.append(op)

    def _renumber(self) -> None:
        k = 0
        op = self._head
        while op is not None:
            op._order = k
            k += 1
            op = op._next
        self._ordered = True
        self._dense = True

    def index(self, op: Operation) -> int:
        """The position of ``op`` (O(1) amortized: one renumbering per batch of edits
        in the middle of the block).

        Raises:
            ValueError: if ``op`` is not in this block.
        """
        if op.parent is not self._block:
            raise ValueError(f"'{op.name}' is not in this block")
        if not self._dense:
            self._renumber()
        return op._order

    def is_before(self, a: Operation, b: Operation) -> bool:
        """True when ``a`` comes before ``b`` (both in this block). O(1) amortized."""
        if not self._ordered:
            self._renumber()
        return a._order < b._order

    def __repr__(self) -> str:
        return f"OpList({[op.name for op in self]})"
