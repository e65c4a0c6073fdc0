"""Attributes of the Shardy (``sdy``) dialect: meshes, tensor shardings, sharding rules.

The textual forms are those of ``openxla/shardy`` (``docs/sdy_dialect.md``)::

    <["data"=2, "model"=2]>                          mesh (axes in major-to-minor order)
    <[], device_ids=[1]>                             a one-device mesh
    #sdy.sharding<@mesh, [{"a", ?}, {"b":(1)2}p1], replicated={"c"}>
    #sdy.sharding_per_value<[<@mesh, [{}, {?}]>]>    one sharding per op result
    #sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=16, k=4}, reduction={j}>

A dimension sharding lists mesh axes major to minor; ``?`` marks it open (propagation
may append axes), without it the dimension is closed. ``"a":(1)2`` is a sub-axis of
``"a"`` (pre-size 1, size 2). ``p<N>`` is a user priority (lower is earlier).
Attributes are frozen dataclasses, equal by value, printed back exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oxla.ir.attributes import Attribute, OpaqueAttr

if TYPE_CHECKING:
    from oxla.ir.parser import Parser


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class AxisRef:
    """A mesh axis, or the sub-axis ``name:(pre_size)size`` of one."""

    name: str
    sub: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.sub is None:
            return _q(self.name)
        return f"{_q(self.name)}:({self.sub[0]}){self.sub[1]}"

    def size(self, mesh: MeshAttr) -> int:
        """The number of shards this axis splits a dimension into on ``mesh``."""
        return self.sub[1] if self.sub is not None else mesh.axis_size(self.name)


@dataclass(frozen=True, slots=True)
class DimSharding:
    """The axes one tensor dimension is sharded along (major to minor).

    ``closed`` False is written ``?``: propagation may shard the dimension further.
    ``priority`` is the user priority ``pN`` (None: none given).
    """

    axes: tuple[AxisRef, ...] = ()
    closed: bool = True
    priority: int | None = None

    def __str__(self) -> str:
        items = [str(a) for a in self.axes]
        if not self.closed:
            items.append("?")
        s = "{" + ", ".join(items) + "}"
        return s if self.priority is None else f"{s}p{self.priority}"


@dataclass(frozen=True, slots=True)
class MeshAttr(Attribute):
    """``<["a"=2, "b"=4], device_ids=[...]>``: named axes, major to minor.

    ``device_ids`` None is the iota order ``0..N-1``.
    """

    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None

    def body(self) -> str:
        s = "[" + ", ".join(f"{_q(n)}={k}" for n, k in self.axes) + "]"
        if self.device_ids is not None:
            s += ", device_ids=[" + ", ".join(str(d) for d in self.device_ids) + "]"
        return f"<{s}>"

    def __str__(self) -> str:
        return "#sdy.mesh" + self.body()

    def axis_size(self, name: str) -> int:
        for n, k in self.axes:
            if n == name:
                return k
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.axes)

    @property
    def num_devices(self) -> int:
        n = 1
        for _, k in self.axes:
            n *= k
        return n

    def devices(self) -> tuple[int, ...]:
        """Device id of each mesh position, in row-major order of the axes."""
        return self.device_ids if self.device_ids is not None else tuple(
            range(self.num_devices))


@dataclass(frozen=True, slots=True)
class TensorShardingAttr(Attribute):
    """``#sdy.sharding<@mesh, [dims...], replicated={...}, unreduced={...}>``.

    ``mesh`` is a symbol name (``@mesh``) or an inline :class:`MeshAttr`. ``body()``
    is the form without the ``#sdy.sharding`` prefix (inside per-value lists and the
    pretty form of ``sdy.sharding_constraint``).
    """

    mesh: str | MeshAttr
    dims: tuple[DimSharding, ...]
    replicated: tuple[AxisRef, ...] = ()
    unreduced: tuple[AxisRef, ...] = ()

    def body(self) -> str:
        m = f"@{self.mesh}" if isinstance(self.mesh, str) else f"mesh{self.mesh.body()}"
        s = f"{m}, [" + ", ".join(str(d) for d in self.dims) + "]"
        if self.replicated:
            s += ", replicated={" + ", ".join(str(a) for a in self.replicated) + "}"
        if self.unreduced:
            s += ", unreduced={" + ", ".join(str(a) for a in self.unreduced) + "}"
        return f"<{s}>"

    def __str__(self) -> str:
        return "#sdy.sharding" + self.body()

    def axes_of(self, dim: int) -> tuple[AxisRef, ...]:
        return self.dims[dim].axes


@dataclass(frozen=True, slots=True)
class ShardingPerValueAttr(Attribute):
    """``#sdy.sharding_per_value<[<@mesh, ...>, ...]>``: one sharding per op result."""

    shardings: tuple[TensorShardingAttr, ...]

    def __str__(self) -> str:
        return ("#sdy.sharding_per_value<[" + ", ".join(s.body() for s in self.shardings)
                + "]>")


@dataclass(frozen=True, slots=True)
class OpShardingRuleAttr(Attribute):
    """``#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=16, k=4}, ...>``.

    ``operands``/``results`` map each dimension to its factors (a dimension of several
    factors is written ``ij``, major first; ``[]`` for a scalar). ``sizes`` are the
    factor sizes in order. ``kinds`` maps ``reduction``, ``need_replication``,
    ``permutation``, ``blocked_propagation`` to factor names; ``custom`` marks a rule of
    a custom call.
    """

    operands: tuple[tuple[tuple[str, ...], ...], ...]
    results: tuple[tuple[tuple[str, ...], ...], ...]
    sizes: tuple[tuple[str, int], ...]
    kinds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    custom: bool = False

    def __str__(self) -> str:
        def mapping(vals) -> str:
            return "(" + ", ".join("[" + ", ".join("".join(d) for d in v) + "]"
                                   for v in vals) + ")"

        s = mapping(self.operands) + "->" + mapping(self.results)
        s += " {" + ", ".join(f"{n}={k}" for n, k in self.sizes) + "}"
        for kind, names in self.kinds:
            s += f" {kind}={{" + ", ".join(names) + "}"
        if self.custom:
            s += ", custom"
        return f"#sdy.op_sharding_rule<{s}>"

    def kind_of(self, factor: str) -> str:
        for kind, names in self.kinds:
            if factor in names:
                return kind
        return "pass_through"


# ---------------------------------------------------------------------------
# Parsing (called from the attribute parser for ``#sdy.*`` names).


def parse_axis_ref(p: Parser) -> AxisRef:
    """``axis-ref ::= string (`:` `(` int `)` int)?``"""
    name = p.parse_string()
    if p.at(":"):
        p.advance()
        p.expect("(")
        pre = p.parse_integer()
        p.expect(")")
        return AxisRef(name, (pre, p.parse_integer()))
    return AxisRef(name)


def _parse_axis_set(p: Parser) -> tuple[AxisRef, ...]:
    p.expect("{")
    axes = []
    while not p.at("}"):
        axes.append(parse_axis_ref(p))
        if not p.consume_if(","):
            break
    p.expect("}")
    return tuple(axes)


def parse_dim_sharding(p: Parser) -> DimSharding:
    """``dim-sharding ::= `{` (axis-ref (`,` axis-ref)*)? (`,`? `?`)? `}` (`p` int)?``"""
    p.expect("{")
    axes: list[AxisRef] = []
    closed = True
    while not p.at("}"):
        if p.consume_if("?"):
            closed = False
            break
        axes.append(parse_axis_ref(p))
        if not p.consume_if(","):
            break
    p.expect("}")
    prio = None
    tok = p.tok
    if tok.kind == "ident" and tok.text[:1] == "p" and tok.text[1:].isdigit() \
            and tok.start == p.lex.text.rfind("}", 0, tok.start) + 1:
        p.advance()
        prio = int(tok.text[1:])
    return DimSharding(tuple(axes), closed, prio)


def parse_mesh_body(p: Parser) -> MeshAttr:
    """``mesh ::= `<` `[` (string `=` int),* `]` (`,` `device_ids` `=` `[` int,* `]`)? `>```"""
    p.expect("<")
    p.expect("[")
    axes = []
    while not p.at("]"):
        name = p.parse_string()
        p.expect("=")
        axes.append((name, p.parse_integer()))
        if not p.consume_if(","):
            break
    p.expect("]")
    ids = None
    if p.consume_if(","):
        tok = p.tok
        if p.expect_ident("'device_ids'") != "device_ids":
            raise p.error("expected 'device_ids'", tok)
        p.expect("=")
        p.expect("[")
        vals = []
        while not p.at("]"):
            vals.append(p.parse_integer())
            if not p.consume_if(","):
                break
        p.expect("]")
        ids = tuple(vals)
    p.expect(">")
    return MeshAttr(tuple(axes), ids)


def parse_sharding_body(p: Parser) -> TensorShardingAttr:
    """``sharding ::= `<` (symbol | `mesh` mesh) `,` `[` dim-sharding,* `]`
    (`,` (`replicated` | `unreduced`) `=` axis-set)* `>```"""
    p.expect("<")
    if p.tok.kind == "at":
        mesh: str | MeshAttr = p.parse_symbol_name()
    else:
        tok = p.tok
        if p.expect_ident("a mesh symbol or 'mesh'") != "mesh":
            raise p.error("expected a mesh symbol or 'mesh<...>'", tok)
        mesh = parse_mesh_body(p)
    p.expect(",")
    p.expect("[")
    dims = []
    while not p.at("]"):
        dims.append(parse_dim_sharding(p))
        if not p.consume_if(","):
            break
    p.expect("]")
    extra: dict[str, tuple[AxisRef, ...]] = {}
    while p.consume_if(","):
        tok = p.tok
        key = p.expect_ident("'replicated' or 'unreduced'")
        if key not in ("replicated", "unreduced"):
            raise p.error(f"expected 'replicated' or 'unreduced', got '{key}'", tok)
        p.expect("=")
        extra[key] = _parse_axis_set(p)
    p.expect(">")
    return TensorShardingAttr(mesh, tuple(dims), extra.get("replicated", ()),
                              extra.get("unreduced", ()))


def _parse_rule_mapping(p: Parser) -> tuple[tuple[tuple[str, ...], ...], ...]:
    p.expect("(")
    out = []
    while not p.at(")"):
        p.expect("[")
        dims = []
        while not p.at("]"):
            word = p.expect_ident("factor names")
            dims.append(_split_factors(word))
            if not p.consume_if(","):
                break
        p.expect("]")
        out.append(tuple(dims))
        if not p.consume_if(","):
            break
    p.expect(")")
    return tuple(out)


def _split_factors(word: str) -> tuple[str, ...]:
    """``ij`` -> (i, j); ``z_1k`` -> (z_1, k): a factor is a letter and an optional
    ``_N`` suffix (Shardy names factors i..z, then z_1, z_2, ...)."""
    out, i = [], 0
    while i < len(word):
        j = i + 1
        if j < len(word) and word[j] == "_":
            j += 1
            while j < len(word) and word[j].isdigit():
                j += 1
        out.append(word[i:j])
        i = j
    return tuple(out)


def parse_op_sharding_rule(p: Parser) -> OpShardingRuleAttr:
    p.expect("<")
    ops = _parse_rule_mapping(p)
    p.expect("->")
    res = _parse_rule_mapping(p)
    p.expect("{")
    sizes = []
    while not p.at("}"):
        n = p.expect_ident("a factor name")
        p.expect("=")
        sizes.append((n, p.parse_integer()))
        if not p.consume_if(","):
            break
    p.expect("}")
    kinds, custom = [], False
    while p.consume_if(",") or p.tok.kind == "ident":
        key = p.expect_ident("a factor kind")
        if key == "custom":
            custom = True
            continue
        p.expect("=")
        p.expect("{")
        names = []
        while not p.at("}"):
            names.append(p.expect_ident("a factor name"))
            if not p.consume_if(","):
                break
        p.expect("}")
        kinds.append((key, tuple(names)))
    p.expect(">")
    return OpShardingRuleAttr(ops, res, tuple(sizes), tuple(kinds), custom)


def parse_sdy_attribute(p: Parser, name: str, tok) -> Attribute:
    """Reads ``#sdy.NAME<...>`` after its name token; unknown kinds stay verbatim."""
    if name == "sdy.sharding":
        return parse_sharding_body(p)
    if name == "sdy.sharding_per_value":
        p.expect("<")
        p.expect("[")
        items = []
        while not p.at("]"):
            if p.tok.kind == "hash":  # ``#sdy.sharding<...>`` written in full
                p.advance()
            items.append(parse_sharding_body(p))
            if not p.consume_if(","):
                break
        p.expect("]")
        p.expect(">")
        return ShardingPerValueAttr(tuple(items))
    if name == "sdy.mesh":
        return parse_mesh_body(p)
    if name == "sdy.op_sharding_rule":
        return parse_op_sharding_rule(p)
    wrapped = {"sdy.axis_set": parse_axis_set, "sdy.axes_per_dim": parse_axes_per_dim,
               "sdy.all_to_all_params": parse_all_to_all_params}
    if name in wrapped:
        p.expect("<")
        a = wrapped[name](p)
        p.expect(">")
        return a
    return OpaqueAttr(tok.text + p._balanced_text())


__all__ = [
    "AxisRef", "DimSharding", "MeshAttr", "TensorShardingAttr", "ShardingPerValueAttr",
    "OpShardingRuleAttr", "parse_sdy_attribute", "parse_sharding_body", "parse_mesh_body",
    "parse_dim_sharding", "parse_axis_ref",
]


# ---------------------------------------------------------------------------
# Op-level attribute forms (axis lists of the ``sdy`` collectives).


@dataclass(frozen=True, slots=True)
class AxisSetAttr(Attribute):
    """``{"x", "y"}``: a set of axes (``manual_axes``, ``sdy.all_reduce``'s axes)."""

    axes: tuple[AxisRef, ...]

    def body(self) -> str:
        return "{" + ", ".join(str(a) for a in self.axes) + "}"

    def __str__(self) -> str:
        return f"#sdy.axis_set<{self.body()}>"


@dataclass(frozen=True, slots=True)
class AxesPerDimAttr(Attribute):
    """``[{"x"}, {}]``: axes per tensor dimension (``sdy.all_gather``, ``all_slice``,
    ``reduce_scatter``)."""

    dims: tuple[tuple[AxisRef, ...], ...]

    def body(self) -> str:
        return "[" + ", ".join("{" + ", ".join(str(a) for a in d) + "}"
                               for d in self.dims) + "]"

    def __str__(self) -> str:
        return f"#sdy.axes_per_dim<{self.body()}>"


@dataclass(frozen=True, slots=True)
class AllToAllParamsAttr(Attribute):
    """``[{"x"}: 0->1, ...]``: axes moved from a source to a target dimension."""

    params: tuple[tuple[tuple[AxisRef, ...], int, int], ...]

    def body(self) -> str:
        return "[" + ", ".join("{" + ", ".join(str(a) for a in ax) + f"}}: {s}->{t}"
                               for ax, s, t in self.params) + "]"

    def __str__(self) -> str:
        return f"#sdy.all_to_all_params<{self.body()}>"


def parse_axis_set(p: Parser) -> AxisSetAttr:
    return AxisSetAttr(_parse_axis_set(p))


def parse_axes_per_dim(p: Parser) -> AxesPerDimAttr:
    p.expect("[")
    dims = []
    while not p.at("]"):
        dims.append(_parse_axis_set(p))
        if not p.consume_if(","):
            break
    p.expect("]")
    return AxesPerDimAttr(tuple(dims))


def parse_all_to_all_params(p: Parser) -> AllToAllParamsAttr:
    p.expect("[")
    params = []
    while not p.at("]"):
        axes = _parse_axis_set(p)
        p.expect(":")
        src = p.parse_integer()
        p.expect("->")
        params.append((axes, src, p.parse_integer()))
        if not p.consume_if(","):
            break
    p.expect("]")
    return AllToAllParamsAttr(tuple(params))
