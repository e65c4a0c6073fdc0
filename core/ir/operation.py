"""The IR data model: values, operations, blocks, regions, modules (MLIR's shapes).

One generic :class:`Operation` class serves every op; its name selects an
:class:`~oxla.ir.opdef.OpDef` that gives named access to operands, results and
attributes. Every value keeps a use list, so ``replace_all_uses_with`` and ``erase``
cost O(uses). A value's ``uses`` is an insertion-ordered dict used as a set (iterate,
``len``, truth test), so dropping one use costs O(1); a block's ops are an
:class:`~oxla.ir.oplist.OpList`, so inserting and erasing ops costs O(1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from oxla.errors import VerifyError
from oxla.ir.attributes import Attribute
from oxla.ir.location import UNKNOWN, Location
from oxla.ir.oplist import OpList
from oxla.ir.types import Type

if TYPE_CHECKING:
    from oxla.ir.opdef import OpDef


class Use:
    """One use of a value: operand ``index`` of operation ``owner``."""

    __slots__ = ("owner", "index")

    def __init__(self, owner: Operation, index: int):
        self.owner = owner
        self.index = index

    def __repr__(self) -> str:
        return f"Use({self.owner.name}#{self.index})"


class Value:
    """An SSA value: a block argument or an operation result.

    Attributes:
        type: the value's type.
        uses: the operations (and operand indices) that read it, as a dict
            ``Use -> None`` in insertion order (iterate it; do not index it).
        name_hint: the name it had in the parsed text (``%foo``), used by the printer.
    """

    __slots__ = ("type", "uses", "name_hint", "__weakref__")

    def __init__(self, type: Type, name_hint: str | None = None):
        self.type = type
        self.uses: dict[Use, None] = {}
        self.name_hint = name_hint

    def replace_all_uses_with(self, other: Value) -> None:
        """Makes every user of this value read ``other`` instead. O(uses)."""
        if other is self:
            return
        ouses = other.uses
        for use in self.uses:
            use.owner._operands[use.index] = other
            ouses[use] = None
        self.uses = {}

    def replace_uses_if(self, other: Value, pred) -> None:
        """Replaces the uses for which ``pred(use)`` is true."""
        keep = {}
        for use in self.uses:
            if pred(use):
                use.owner._operands[use.index] = other
                other.uses[use] = None
            else:
                keep[use] = None
        self.uses = keep

    @property
    def has_uses(self) -> bool:
        return bool(self.uses)

    @property
    def users(self) -> list[Operation]:
        return [u.owner for u in self.uses]

    @property
    def owner_op(self) -> Operation | None:
        """The defining operation, or None for a block argument."""
        return None


class OpResult(Value):
    """Result ``index`` of operation ``owner``."""

    __slots__ = ("owner", "index")

    def __init__(self, type: Type, owner: Operation, index: int, name_hint: str | None = None):
        self.type = type
        self.uses = {}
        self.name_hint = name_hint
        self.owner = owner
        self.index = index

    @property
    def owner_op(self) -> Operation:
        return self.owner

    def __repr__(self) -> str:
        return f"<OpResult {self.owner.name}#{self.index}: {self.type}>"


class BlockArgument(Value):
    """Argument ``index`` of block ``owner``."""

    __slots__ = ("owner", "index")

    def __init__(self, type: Type, owner: Block, index: int, name_hint: str | None = None):
        super().__init__(type, name_hint)
        self.owner = owner
        self.index = index

    def __repr__(self) -> str:
        return f"<BlockArgument #{self.index}: {self.type}>"


class Operation:
    """A generic operation: name, operands, results, attributes, regions, location.

    Create operations with :meth:`create` (or the builder), which wires up use lists.
    Named access (``op.operand("lhs")``, ``op.attr("comparison_direction")``) goes
    through the op's :class:`OpDef`.
    """

    __slots__ = ("name", "_operands", "_uses", "results", "attributes", "regions", "loc",
                 "parent", "_opdef", "_prev", "_next", "_order", "__weakref__")

    def __init__(self, name: str):
        self.name = name
        self._operands: list[Value] = []
        self._uses: list[Use] = []  # _uses[i] is the Use of _operands[i]
        self._prev: Operation | None = None  # links of the parent block's OpList
        self._next: Operation | None = None
        self._order = 0
        self.results: list[OpResult] = []
        self.attributes: dict[str, Attribute] = {}
        self.regions: list[Region] = []
        self.loc: Location = UNKNOWN
        self.parent: Block | None = None
        self._opdef: OpDef | None = None

    @classmethod
    def create(
        cls,
        name: str,
        operands: Iterable[Value] = (),
        result_types: Iterable[Type] = (),
        attributes: dict[str, Attribute] | None = None,
        regions: Iterable[Region] = (),
        loc: Location | None = None,
    ) -> Operation:
        """Creates a detached operation; results get the given types.

        Args:
            name: full op name, e.g. ``stablehlo.add``.
            operands: SSA values read, in order.
            result_types: one type per result.
            attributes: name -> attribute.
            regions: regions, taken over by the new op.
            loc: source location (unknown when omitted).
        """
        op = cls.__new__(cls)
        op.name = name
        op.parent = op._prev = op._next = op._opdef = None
        op._order = 0
        ops = op._operands = list(operands)
        uses = op._uses = [Use(op, i) for i in range(len(ops))]
        for v, u in zip(ops, uses):
            v.uses[u] = None
        op.results = [OpResult(t, op, i) for i, t in enumerate(result_types)]
        op.attributes = dict(attributes) if attributes else {}
        op.regions = list(regions)
        for r in op.regions:
            r.parent = op
        op.loc = loc if loc is not None else UNKNOWN
        return op

    # -- operands -------------------------------------------------------------
    @property
    def operands(self) -> list[Value]:
        """The operands (a read-only view; use :meth:`set_operand` to change)."""
        return self._operands

    def set_operand(self, index: int, value: Value) -> None:
        """Makes operand ``index`` read ``value``. O(1)."""
        use = self._uses[index]
        self._operands[index].uses.pop(use, None)
        self._operands[index] = value
        value.uses[use] = None

    def set_operands(self, values: Iterable[Value]) -> None:
        """Replaces the whole operand list."""
        self.drop_operand_uses()
        self._operands = list(values)
        self._uses = [Use(self, i) for i in range(len(self._operands))]
        for v, u in zip(self._operands, self._uses):
            v.uses[u] = None

    def drop_operand_uses(self) -> None:
        """Removes this op's uses from its operands' use lists (operands stay). O(operands)."""
        for v, u in zip(self._operands, self._uses):
            v.uses.pop(u, None)

    # -- named access through the OpDef ---------------------------------------
    @property
    def opdef(self) -> OpDef | None:
        if self._opdef is None:
            from oxla.ir.opdef import lookup_opdef

            self._opdef = lookup_opdef(self.name)
        return self._opdef

    def operand(self, name: str) -> Value:
        """The single operand declared as ``name`` in the OpDef."""
        group = self.operand_group(name)
        if len(group) != 1:
            raise KeyError(f"'{self.name}' operand '{name}' has {len(group)} values")
        return group[0]

    def operand_group(self, name: str) -> list[Value]:
        """All values of operand ``name`` (variadic operands give several)."""
        od = self.opdef
        if od is None:
            raise KeyError(f"'{self.name}' has no op definition")
        start, stop = od.operand_range(name, len(self._operands))
        return self._operands[start:stop]

    def result(self, name: str | int = 0) -> OpResult:
        if isinstance(name, int):
            return self.results[name]
        od = self.opdef
        if od is None:
            raise KeyError(f"'{self.name}' has no op definition")
        start, stop = od.result_range(name, len(self.results))
        if stop - start != 1:
            raise KeyError(f"'{self.name}' result '{name}' has {stop - start} values")
        return self.results[start]

    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute ``name`` (default, or the OpDef's default, when absent)."""
        if name in self.attributes:
            return self.attributes[name]
        od = self.opdef
        if od is not None:
            a = od.attribute(name)
            if a is not None and a.default is not None:
                return a.default
        return default

    def has_trait(self, trait: str) -> bool:
        od = self._opdef
        if od is None:
            od = self.opdef
            if od is None:
                return False
        return trait in od.traits

    # -- structure ------------------------------------------------------------
    @property
    def result_types(self) -> list[Type]:
        return [r.type for r in self.results]

    @property
    def operand_types(self) -> list[Type]:
        return [v.type for v in self._operands]

    def walk(self) -> Iterator[Operation]:
        """Pre-order walk of this op and every op nested in its regions."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    if op.regions:
                        yield from op.walk()
                    else:
                        yield op

    def walk_post(self) -> Iterator[Operation]:
        """Post-order walk (nested ops before their parent)."""
        for region in self.regions:
            for block in region.blocks:
                for op in list(block.ops):
                    if op.regions:
                        yield from op.walk_post()
                    else:
                        yield op
        yield self

    @property
    def parent_op(self) -> Operation | None:
        if self.parent is None or self.parent.parent is None:
            return None
        return self.parent.parent.parent

    def erase(self) -> None:
        """Removes this op from its block and drops its operand uses.

        Raises:
            ValueError: if a result is still used.
        """
        for r in self.results:
            if r.uses:
                raise ValueError(f"cannot erase '{self.name}': result #{r.index} still has uses")
        self.drop_all_references()
        if self.parent is not None:
            self.parent.ops.remove(self)

    def detach(self) -> None:
        """Removes this op from its block, keeping operands and uses."""
        if self.parent is not None:
            self.parent.ops.remove(self)

    def drop_all_references(self) -> None:
        """Drops operand uses of this op and of everything nested in it."""
        for op in self.walk():
            op.drop_operand_uses()
            op._operands = []
            op._uses = []

    def clone(self, mapping: dict[Value, Value] | None = None) -> Operation:
        """Deep-copies this op and its regions; operands are remapped through ``mapping``.

        ``mapping`` is updated with old -> new results and block arguments.
        """
        mapping = {} if mapping is None else mapping
        new = Operation.create(
            self.name,
            [mapping.get(v, v) for v in self._operands],
            [r.type for r in self.results],
            dict(self.attributes),
            [r.clone(mapping) for r in self.regions],
            self.loc,
        )
        for old, nr in zip(self.results, new.results):
            nr.name_hint = old.name_hint
            mapping[old] = nr
        return new

    def __repr__(self) -> str:
        return f"<Operation {self.name} at {self.loc}>"

    def __str__(self) -> str:
        from oxla.ir.printer import print_op

        return print_op(self)


class Block:
    """Operations (an :class:`~oxla.ir.oplist.OpList`) with block arguments; the last op
    is the terminator."""

    __slots__ = ("args", "_ops", "parent", "name_hint", "__weakref__")

    def __init__(self, arg_types: Iterable[Type] = ()):
        self.args: list[BlockArgument] = [
            BlockArgument(t, self, i) for i, t in enumerate(arg_types)
        ]
        self._ops = OpList(self)
        self.parent: Region | None = None
        self.name_hint: str | None = None

    @property
    def ops(self) -> OpList:
        """The operations, in order (an :class:`~oxla.ir.oplist.OpList`)."""
        return self._ops

    @ops.setter
    def ops(self, ops: Iterable[Operation]) -> None:
        """``block.ops = [...]`` replaces every op (as ``block.ops[:] = [...]``)."""
        self._ops[:] = ops

    def add_arg(self, type: Type, name_hint: str | None = None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args), name_hint)
        self.args.append(a)
        return a

    def append(self, op: Operation) -> Operation:
        """Adds ``op`` at the end (moving it from its block, if any). O(1)."""
        return self._ops.append(op)

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Inserts ``op`` right before ``anchor``, an op of this block. O(1)."""
        return self._ops.insert_before(anchor, op)

    def insert_after(self, anchor: Operation, op: Operation) -> Operation:
        """Inserts ``op`` right after ``anchor``, an op of this block. O(1)."""
        return self._ops.insert_after(anchor, op)

    @property
    def terminator(self) -> Operation | None:
        return self._ops._tail

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent if self.parent is not None else None

    def clone_into(self, region: Region, mapping: dict[Value, Value]) -> Block:
        nb = Block([a.type for a in self.args])
        for old, new in zip(self.args, nb.args):
            new.name_hint = old.name_hint
            mapping[old] = new
        region.add_block(nb)
        for op in self.ops:
            nb.append(op.clone(mapping))
        return nb


class Region:
    """A list of blocks owned by an operation (StableHLO uses single-block regions)."""

    __slots__ = ("blocks", "parent", "__weakref__")

    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The single block of the region."""
        if len(self.blocks) != 1:
            raise ValueError(f"expected a region with one block, got {len(self.blocks)}")
        return self.blocks[0]

    def clone(self, mapping: dict[Value, Value] | None = None) -> Region:
        mapping = {} if mapping is None else mapping
        r = Region()
        for b in self.blocks:
            b.clone_into(r, mapping)
        return r


class Module:
    """A ``builtin.module``: named, with attributes and a body of functions.

    Attributes:
        op: the underlying ``builtin.module`` operation (one region, one block).
        resources: dialect resources from ``{-# dialect_resources ... #-}`` (name -> bytes).
    """

    def __init__(self, op: Operation | None = None):
        if op is None:
            op = Operation.create("builtin.module", regions=[Region([Block()])])
        self.op = op
        self.resources: dict[str, bytes] = {}

    @property
    def body(self) -> Block:
        return self.op.regions[0].block

    @property
    def name(self) -> str | None:
        from oxla.ir.attributes import StringAttr

        a = self.op.attributes.get("sym_name")
        return a.value if isinstance(a, StringAttr) else None

    @property
    def attributes(self) -> dict[str, Attribute]:
        return self.op.attributes

    @property
    def functions(self) -> list[Operation]:
        return [op for op in self.body.ops if op.name == "func.func"]

    def lookup(self, name: str) -> Operation | None:
        """The function (or other symbol) named ``name``, or None."""
        from oxla.ir.attributes import StringAttr

        for op in self.body.ops:
            a = op.attributes.get("sym_name")
            if isinstance(a, StringAttr) and a.value == name:
                return op
        return None

    @property
    def main(self) -> Operation:
        """The entry function: ``main``, else the only public function.

        Raises:
            NoEntryError: when there is no unique entry (a ``VerifyError`` and a
                ``KeyError``).
        """
        f = self.lookup("main")
        if f is not None:
            return f
        public = [f for f in self.functions if func_visibility(f) == "public"]
        if len(public) == 1:
            return public[0]
        names = [getattr(f.attributes.get("sym_name"), "value", None) for f in self.functions]
        raise NoEntryError(
            "module has no 'main' function and no single public function",
            notes=[f"functions: {', '.join('@' + n for n in names if n) or 'none'}; name the "
                   "entry function @main"])

    def walk(self) -> Iterator[Operation]:
        return self.op.walk()

    def clone(self) -> Module:
        m = Module(self.op.clone())
        m.resources = dict(self.resources)
        return m

    def __str__(self) -> str:
        from oxla.ir.printer import print_module

        return print_module(self)


class NoEntryError(VerifyError, KeyError):
    """A module without an entry function (no ``@main``, not one public function).

    A :class:`VerifyError` (the user's module is at fault: exit 2 on the CLI) that is
    also a ``KeyError``, which :attr:`Module.main` raised before.
    """

    def __str__(self) -> str:
        return self.render()


def func_visibility(func: Operation) -> str:
    """``public`` (default), ``private`` or ``nested`` for a func.func."""
    from oxla.ir.attributes import StringAttr

    a = func.attributes.get("sym_visibility")
    return a.value if isinstance(a, StringAttr) else "public"


def func_name(func: Operation) -> str:
    from oxla.ir.attributes import StringAttr

    a = func.attributes["sym_name"]
    assert isinstance(a, StringAttr)
    return a.value


def func_type(func: Operation):
    """The FunctionType of a func.func."""
    from oxla.ir.attributes import TypeAttr

    a = func.attributes["function_type"]
    assert isinstance(a, TypeAttr)
    return a.type
