"""The Shardy (``sdy``) dialect ops that JAX and Shardy's own tests write.

``sdy.mesh`` (a module-level symbol), ``sdy.sharding_constraint``, ``sdy.reshard``,
``sdy.manual_computation`` (``shard_map``: a body on local shapes with explicit
collectives) with its ``sdy.return``, the propagation helpers (``sharding_group``,
``propagation_barrier``, ``data_flow_edge``, ``constant``) and the explicit
collectives (``all_gather``, ``all_slice``, ``all_reduce``, ``reduce_scatter``,
``all_to_all``, ``collective_permute``). Attributes are in :mod:`oxla.ir.sdy`;
``openxla/shardy`` ``docs/sdy_dialect.md`` is the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oxla.ir import attributes as A
from oxla.ir import sdy as S
from oxla.ir.opdef import (
    PURE,
    RETURN_LIKE,
    SIDE_EFFECT,
    SYMBOL,
    TERMINATOR,
    AttrDef,
    OpDef,
    OperandDef,
    RegionDef,
    ResultDef,
    operands,
    register,
)
from oxla.ir.printer import format_attr_dict, format_symbol
from oxla.ir.syntax import Constant, Return, Syntax, _state

if TYPE_CHECKING:
    from oxla.ir.operation import Operation
    from oxla.ir.parser import OpState, Parser
    from oxla.ir.printer import Printer

SPEC = "shardy:docs/sdy_dialect.md#"

_PARSERS = {
    "sharding": S.parse_sharding_body,
    "axes": S.parse_axes_per_dim,
    "axisset": S.parse_axis_set,
    "a2a": S.parse_all_to_all_params,
    "ident": lambda p: A.StringAttr(p.expect_ident("a word")),
    "int": lambda p: A.i64_attr(p.parse_integer()),
}


def _fmt(form: str, a) -> str:
    if form == "ident":
        return a.value
    if form == "int":
        return str(a.value)
    return a.body()


@dataclass(frozen=True)
class SdyOperand(Syntax):
    """``op [PRE] %x [POST] [kw=VALUE ...] attr-dict : T`` (result type = ``T``).

    ``pre``/``post``: ``(attr, form)`` read before/after the operand; ``kws``:
    ``(keyword, attr, form)`` items written ``keyword=value``; ``results``: 0 or 1.
    """

    pre: tuple[tuple[str, str], ...] = ()
    post: tuple[tuple[str, str], ...] = ()
    kws: tuple[tuple[str, str, str], ...] = ()
    results: int = 1

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        for attr, form in self.pre:
            st.attributes[attr] = _PARSERS[form](p)
        st.operands = [p.parse_operand()]
        for attr, form in self.post:
            st.attributes[attr] = _PARSERS[form](p)
        by_kw = {k: (a, f) for k, a, f in self.kws}
        while p.tok.kind == "ident" and p.tok.text in by_kw:
            attr, form = by_kw[p.advance().text]
            p.expect("=")
            st.attributes[attr] = _PARSERS[form](p)
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        t = p.parse_type()
        p.check_operand_types(st.operands, [t], tok, name)
        st.result_types = [t] * self.results
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        parts = [op.name]
        named = set()
        for attr, form in self.pre:
            parts.append(_fmt(form, op.attributes[attr]))
            named.add(attr)
        parts.append(pr.operands(op.operands))
        for attr, form in self.post:
            parts.append(_fmt(form, op.attributes[attr]))
            named.add(attr)
        for kw, attr, form in self.kws:
            if attr in op.attributes:
                parts.append(f"{kw}={_fmt(form, op.attributes[attr])}")
                named.add(attr)
        rest = format_attr_dict({k: v for k, v in op.attributes.items() if k not in named})
        if rest:
            parts.append(rest)
        pr.emit(" ".join(parts) + f" : {op.operands[0].type}")


@dataclass(frozen=True)
class Mesh(Syntax):
    """``sdy.mesh @name = <["a"=2, ...]> attr-dict``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.attributes["sym_name"] = A.StringAttr(p.parse_symbol_name())
        p.expect("=")
        if p.tok.kind == "hash":  # ``#sdy.mesh<...>``
            p.advance()
        st.attributes["mesh"] = S.parse_mesh_body(p)
        st.attributes.update(p.parse_optional_attr_dict())
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        a = op.attributes
        rest = format_attr_dict({k: v for k, v in a.items() if k not in ("sym_name", "mesh")})
        pr.emit(f"sdy.mesh {format_symbol(a['sym_name'].value)} = {a['mesh'].body()}"  # type: ignore[attr-defined]
                + (" " + rest if rest else ""))


def _parse_sharding_list(p: Parser) -> S.ShardingPerValueAttr:
    p.expect("[")
    items = []
    while not p.at("]"):
        items.append(S.parse_sharding_body(p))
        if not p.consume_if(","):
            break
    p.expect("]")
    return S.ShardingPerValueAttr(tuple(items))


def _fmt_sharding_list(a: S.ShardingPerValueAttr) -> str:
    return "[" + ", ".join(s.body() for s in a.shardings) + "]"


@dataclass(frozen=True)
class ManualComputation(Syntax):
    """``sdy.manual_computation(%a, ...) in_shardings=[...] out_shardings=[...]
    manual_axes={...} (%arg: T, ...) { body } attr-dict : (Ts) -> Rs``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        p.expect("(")
        st.operands = p.parse_operand_list()
        p.expect(")")
        for kw, fn in (("in_shardings", _parse_sharding_list),
                       ("out_shardings", _parse_sharding_list),
                       ("manual_axes", S.parse_axis_set)):
            tok = p.tok
            if p.expect_ident(f"'{kw}'") != kw:
                raise p.error(f"expected '{kw}'", tok)
            p.expect("=")
            st.attributes[kw] = fn(p)
        p.expect("(")
        args = []
        while not p.at(")"):
            tok = p.tok
            if tok.kind != "percent":
                raise p.error("expected a block argument name")
            p.advance()
            p.expect(":")
            args.append((tok.text, p.parse_type(), tok))
            if not p.consume_if(","):
                break
        p.expect(")")
        st.regions = [p.parse_region(entry_args=args)]
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        ft = p.parse_function_type()
        p.check_operand_types(st.operands, ft.inputs, tok, name)
        st.result_types = list(ft.results)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        a = op.attributes
        head = (f"sdy.manual_computation({pr.operands(op.operands)}) "
                f"in_shardings={_fmt_sharding_list(a['in_shardings'])} "  # type: ignore[arg-type]
                f"out_shardings={_fmt_sharding_list(a['out_shardings'])} "  # type: ignore[arg-type]
                f"manual_axes={a['manual_axes'].body()} ")  # type: ignore[attr-defined]
        block = op.regions[0].blocks[0]
        pr.name_block_args(block)
        head += "(" + ", ".join(f"{pr.name(x)}: {x.type}" for x in block.args) + ") "
        pr.emit(head)
        pr._arg_counter[0] -= len(block.args)  # print_region names them again, the same
        pr.print_region(op.regions[0], print_entry_args=False)
        rest = format_attr_dict({k: v for k, v in a.items()
                                 if k not in ("in_shardings", "out_shardings", "manual_axes")})
        if rest:
            pr.emit(" " + rest)
        ins = ", ".join(str(t) for t in op.operand_types)
        outs = ", ".join(str(t) for t in op.result_types)
        pr.emit(f" : ({ins}) -> " + (outs if len(op.results) == 1 else f"({outs})"))


def _same(operand_types, attributes=None, regions=None):
    return [operand_types[0]]


_SH = (("sharding", "sharding"),)
_OUT = (("out_sharding", "out_sharding", "sharding"),)
_X = frozenset({PURE})

register(
    OpDef("sdy.mesh", results=(), attributes=(AttrDef("sym_name", "string"),
                                              AttrDef("mesh", "any")),
          traits=frozenset({SYMBOL}), spec=SPEC + "sdymesh-sdymeshop", syntax=Mesh()),
    OpDef("sdy.sharding_constraint", operands=operands("input"),
          attributes=(AttrDef("sharding", "any"),), traits=_X, infer=_same,
          spec=SPEC + "sdysharding_constraint", syntax=SdyOperand(post=_SH)),
    OpDef("sdy.reshard", operands=operands("input"), attributes=(AttrDef("sharding", "any"),),
          traits=_X, infer=_same, spec=SPEC + "sdyreshard", syntax=SdyOperand(post=_SH)),
    OpDef("sdy.manual_computation", operands=(OperandDef("tensors", variadic=True),),
          results=(ResultDef("results", variadic=True),),
          attributes=(AttrDef("in_shardings", "any"), AttrDef("out_shardings", "any"),
                      AttrDef("manual_axes", "any")),
          regions=(RegionDef("body"),), spec=SPEC + "sdymanual_computation",
          syntax=ManualComputation()),
    OpDef("sdy.return", operands=(OperandDef("results", variadic=True),), results=(),
          traits=frozenset({PURE, TERMINATOR, RETURN_LIKE}), spec=SPEC + "sdyreturn",
          syntax=Return()),
    OpDef("sdy.sharding_group", operands=operands("input"), results=(),
          attributes=(AttrDef("group_id", "i64"),), traits=frozenset({SIDE_EFFECT}),
          spec=SPEC + "sdysharding_group",
          syntax=SdyOperand(kws=(("group_id", "group_id", "int"),), results=0)),
    OpDef("sdy.propagation_barrier", operands=operands("input"),
          attributes=(AttrDef("allowed_direction", "any"),), traits=_X, infer=_same,
          spec=SPEC + "sdypropagation_barrier",
          syntax=SdyOperand(kws=(("allowed_direction", "allowed_direction", "ident"),))),
    OpDef("sdy.data_flow_edge", operands=operands("input"),
          attributes=(AttrDef("sharding", "any", optional=True),), traits=_X, infer=_same,
          spec=SPEC + "sdydata_flow_edge",
          syntax=SdyOperand(kws=(("sharding", "sharding", "sharding"),))),
    OpDef("sdy.constant", attributes=(AttrDef("value", "dense"),), traits=_X,
          spec=SPEC + "sdyconstant", syntax=Constant()),
    OpDef("sdy.func_data_flow_edge", operands=operands("input"), traits=_X, infer=_same,
          spec=SPEC + "sdyfunc_data_flow_edge", syntax=SdyOperand()),
    OpDef("sdy.all_gather", operands=operands("tensor"),
          attributes=(AttrDef("gathering_axes", "any"), AttrDef("out_sharding", "any")),
          traits=_X, spec=SPEC + "sdyall_gather",
          syntax=SdyOperand(pre=(("gathering_axes", "axes"),), kws=_OUT)),
    OpDef("sdy.all_slice", operands=operands("tensor"),
          attributes=(AttrDef("slicing_axes", "any"), AttrDef("out_sharding", "any")),
          traits=_X, spec=SPEC + "sdyall_slice",
          syntax=SdyOperand(pre=(("slicing_axes", "axes"),), kws=_OUT)),
    OpDef("sdy.reduce_scatter", operands=operands("tensor"),
          attributes=(AttrDef("reduce_scatter_axes", "any"), AttrDef("out_sharding", "any")),
          traits=_X, spec=SPEC + "sdyreduce_scatter",
          syntax=SdyOperand(pre=(("reduce_scatter_axes", "axes"),), kws=_OUT)),
    OpDef("sdy.all_reduce", operands=operands("tensor"),
          attributes=(AttrDef("reduction_axes", "any"), AttrDef("out_sharding", "any")),
          traits=_X, spec=SPEC + "sdyall_reduce",
          syntax=SdyOperand(pre=(("reduction_axes", "axisset"),), kws=_OUT)),
    OpDef("sdy.all_to_all", operands=operands("tensor"),
          attributes=(AttrDef("params", "any"), AttrDef("out_sharding", "any")),
          traits=_X, spec=SPEC + "sdyall_to_all",
          syntax=SdyOperand(pre=(("params", "a2a"),), kws=_OUT)),
    OpDef("sdy.collective_permute", operands=operands("tensor"),
          attributes=(AttrDef("out_sharding", "any"),), traits=_X,
          spec=SPEC + "sdycollective_permute", syntax=SdyOperand(kws=_OUT)),
)
