"""Op definitions: each op declared once, read by parser, printer, verifier, builder
and interpreter alike (see STYLE.md, "One declarative op table").

An :class:`OpDef` row gives an op's operands (with variadicity), results, attributes,
regions, traits, a type-inference rule, a verifier, its pretty syntax and the spec
section it follows. Rows are registered in one global table with :func:`register`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oxla.ir.attributes import Attribute
    from oxla.ir.operation import Operation
    from oxla.ir.syntax import Syntax
    from oxla.ir.types import Type

# Traits, asked by passes instead of class types.
PURE = "pure"  # no side effects; may be CSE'd and removed when unused
ELEMENTWISE = "elementwise"  # result[i] depends only on operands[i]
COMMUTATIVE = "commutative"
TERMINATOR = "terminator"
SAME_OPERANDS_AND_RESULT_TYPE = "same_operands_and_result_type"
SAME_OPERANDS_AND_RESULT_SHAPE = "same_operands_and_result_shape"
SIDE_EFFECT = "side_effect"
ISOLATED_FROM_ABOVE = "isolated_from_above"
SYMBOL = "symbol"
RETURN_LIKE = "return_like"
CONTROL_FLOW = "control_flow"
COLLECTIVE = "collective"
DEPRECATED = "deprecated"
TEST_OP = "test_op"


@dataclass(frozen=True, slots=True)
class OperandDef:
    """One declared operand; ``variadic`` groups take zero or more values, ``optional``
    groups zero or one."""

    name: str
    variadic: bool = False
    optional: bool = False
    doc: str = ""


@dataclass(frozen=True, slots=True)
class ResultDef:
    name: str
    variadic: bool = False
    doc: str = ""


@dataclass(frozen=True, slots=True)
class AttrDef:
    """One declared (inherent) attribute.

    ``kind`` names the attribute's form (``i64``, ``i64_array``, ``bool``, ``string``,
    ``enum:comparison_direction``, ``dot_dims``, ...); ``default`` is used when absent.
    """

    name: str
    kind: str = "any"
    optional: bool = False
    default: Attribute | None = None


@dataclass(frozen=True, slots=True)
class RegionDef:
    name: str
    variadic: bool = False


@dataclass(frozen=True)
class OpDef:
    """The declaration of one op.

    Attributes:
        name: full MLIR name, e.g. ``stablehlo.add``.
        operands, results, attributes, regions: the op's parts, in order.
        traits: trait names (see module constants).
        spec: the spec section the op follows (anchor in stablehlo-spec.md).
        syntax: the pretty syntax, or None to read and print the generic form only.
        infer: ``infer(operand_types, attributes, regions) -> result types``, or None.
        verify: ``verify(op)`` raising VerifyError, or None.
        aliases: other names that parse to this op (``call`` -> ``func.call``).
    """

    name: str
    operands: tuple[OperandDef, ...] = ()
    results: tuple[ResultDef, ...] = (ResultDef("result"),)
    attributes: tuple[AttrDef, ...] = ()
    regions: tuple[RegionDef, ...] = ()
    traits: frozenset[str] = frozenset()
    spec: str = ""
    syntax: Syntax | None = None
    infer: Callable[..., list[Type]] | None = None
    verify: Callable[[Operation], None] | None = None
    aliases: tuple[str, ...] = ()
    _attr_index: dict[str, AttrDef] = field(default_factory=dict, compare=False, repr=False)
    _range_cache: dict[tuple[str, int], tuple[tuple[int, int], ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        self._attr_index.update({a.name: a for a in self.attributes})

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    def attribute(self, name: str) -> AttrDef | None:
        return self._attr_index.get(name)

    def is_inherent(self, attr_name: str) -> bool:
        return attr_name in self._attr_index

    def _group_ranges(self, groups, count: int, what: str) -> tuple[tuple[int, int], ...]:
        """(start, stop) of each group of ``groups`` (operands or results) for ``count``
        values, memoized per (``what``, ``count``).

        Raises:
            ValueError: when ``count`` values cannot be split among the groups.
        """
        key = (what, count)
        r = self._range_cache.get(key)
        if r is None:
            r = self._range_cache[key] = tuple(self._split_groups(groups, count, what))
        return r

    def _split_groups(self, groups, count: int, what: str) -> list[tuple[int, int]]:
        fixed = sum(1 for g in groups if not (g.variadic or getattr(g, "optional", False)))
        var = [g for g in groups if g.variadic or getattr(g, "optional", False)]
        extra = count - fixed
        if extra < 0:
            raise ValueError(f"'{self.name}' expects at least {fixed} {what}, got {count}")
        if not var and extra:
            raise ValueError(f"'{self.name}' expects {fixed} {what}, got {count}")
        per = 0
        if var:
            if extra % len(var):
                raise ValueError(
                    f"'{self.name}' cannot split {count} {what} among {len(var)} variadic groups"
                )
            per = extra // len(var)
        ranges, pos = [], 0
        for g in groups:
            n = per if (g.variadic or getattr(g, "optional", False)) else 1
            ranges.append((pos, pos + n))
            pos += n
        return ranges

    def operand_range(self, name: str, count: int) -> tuple[int, int]:
        """(start, stop) of operand group ``name`` for an op with ``count`` operands."""
        for g, r in zip(self.operands, self._group_ranges(self.operands, count, "operands")):
            if g.name == name:
                return r
        raise KeyError(f"'{self.name}' has no operand '{name}'")

    def result_range(self, name: str, count: int) -> tuple[int, int]:
        for g, r in zip(self.results, self._group_ranges(self.results, count, "results")):
            if g.name == name:
                return r
        raise KeyError(f"'{self.name}' has no result '{name}'")


_REGISTRY: dict[str, OpDef] = {}
_ALIASES: dict[str, str] = {}


def register(*defs: OpDef) -> None:
    """Adds op definitions to the global table.

    Raises:
        ValueError: when a name is already registered.
    """
    for d in defs:
        if d.name in _REGISTRY:
            raise ValueError(f"op '{d.name}' is defined twice")
        _REGISTRY[d.name] = d
        for a in d.aliases:
            _ALIASES[a] = d.name


def _ensure_loaded() -> None:
    if not _REGISTRY:
        from oxla.ir import ops  # noqa: F401  (fills the registry)


def lookup_opdef(name: str) -> OpDef | None:
    """The OpDef of ``name`` (or of an alias such as ``call``), or None."""
    _ensure_loaded()
    d = _REGISTRY.get(name)
    if d is None and name in _ALIASES:
        d = _REGISTRY[_ALIASES[name]]
    return d


def canonical_name(name: str) -> str:
    _ensure_loaded()
    return _ALIASES.get(name, name)


def all_opdefs() -> dict[str, OpDef]:
    """Every registered op, by name."""
    _ensure_loaded()
    return dict(_REGISTRY)


def operands(*names: str, variadic: tuple[str, ...] = ()) -> tuple[OperandDef, ...]:
    """Shorthand: ``operands("lhs", "rhs")``; names listed in ``variadic`` are variadic."""
    return tuple(OperandDef(n, variadic=n in variadic) for n in names)


def results(*names: str, variadic: tuple[str, ...] = ()) -> tuple[ResultDef, ...]:
    return tuple(ResultDef(n, variadic=n in variadic) for n in names)


def attrs(**kinds: Any) -> tuple[AttrDef, ...]:
    """Shorthand: ``attrs(dimension="i64", lower=("bool", "optional"))``."""
    out = []
    for n, k in kinds.items():
        if isinstance(k, tuple):
            kind, *flags = k
            out.append(AttrDef(n, kind, optional="optional" in flags))
        else:
            out.append(AttrDef(n, k))
    return tuple(out)
