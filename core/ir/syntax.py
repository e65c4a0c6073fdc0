"""Pretty syntaxes of ops, as MLIR's StableHLO, CHLO, func and check dialects print them.

A :class:`Syntax` reads an op after its name (``parse``) and writes it (``print``).
Families share one syntax object; ops without one use the generic form. Each op's
syntax is chosen in its :class:`~oxla.ir.opdef.OpDef` row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.printer import format_attr_dict, format_attribute, quote_string

if TYPE_CHECKING:
    from oxla.ir.operation import Operation
    from oxla.ir.parser import OpState, Parser
    from oxla.ir.printer import Printer


class Syntax:
    """Base class: one op family's pretty form."""

    def parse(self, p: Parser, name: str) -> OpState:
        raise NotImplementedError

    def print(self, pr: Printer, op: Operation) -> None:
        raise NotImplementedError


def _state() -> OpState:
    from oxla.ir.parser import OpState

    return OpState()


def _attr_dict_text(op: Operation, elide: set[str] | tuple = ()) -> str:
    rest = {k: v for k, v in op.attributes.items() if k not in elide}
    s = format_attr_dict(rest)
    return " " + s if s else ""


def _types(ts) -> str:
    return ", ".join(str(t) for t in ts)


def _functional(op: Operation) -> str:
    ins = _types(op.operand_types)
    if len(op.results) == 1:
        return f"({ins}) -> {op.results[0].type}"
    return f"({ins}) -> ({_types(op.result_types)})"


def _parse_functional_or_same(p: Parser, st: OpState, name: str, n_results: int = 1) -> None:
    """``: T`` (all operands and results of type T) or ``: (Ts) -> R``."""
    p.expect(":")
    tok = p.tok
    if p.at("("):
        ft = p.parse_function_type()
        p.check_operand_types(st.operands, ft.inputs, tok, name)
        st.result_types = list(ft.results)
        return
    t = p.parse_type()
    p.check_operand_types(st.operands, [t] * len(st.operands), tok, name)
    st.result_types = [t] * n_results


def _print_same_or_functional(pr: Printer, op: Operation) -> None:
    ts = op.operand_types + op.result_types
    if ts and all(t == ts[0] for t in ts) and len(op.results) == 1:
        pr.emit(f" : {ts[0]}")
    else:
        pr.emit(f" : {_functional(op)}")


def _parse_functional(p: Parser, st: OpState, name: str) -> None:
    p.expect(":")
    tok = p.tok
    ft = p.parse_function_type()
    p.check_operand_types(st.operands, ft.inputs, tok, name)
    st.result_types = list(ft.results)


def parse_i64_list(p: Parser) -> tuple[int, ...]:
    """``[1, 2, 3]`` (possibly empty)."""
    p.expect("[")
    vals = []
    if not p.at("]"):
        vals.append(p.parse_integer())
        while p.consume_if(","):
            vals.append(p.parse_integer())
    p.expect("]")
    return tuple(vals)


def _fmt_list(vals) -> str:
    return "[" + ", ".join(str(int(v)) for v in vals) + "]"


# ---------------------------------------------------------------------------
# Keyword-argument values: how one ``kw = value`` is read and written.


@dataclass(frozen=True)
class KW:
    """A ``keyword = value`` item mapped to attribute ``attr``.

    ``form``: ``i64_array`` (``[1, 2]`` as array<i64>), ``i64`` (``0`` as i64 attr),
    ``enum:KIND`` (bare word as ``#stablehlo<KIND WORD>``), ``bool``, ``string``,
    ``exp_mant`` (``e5m10`` -> exponent_bits/mantissa_bits), ``attr`` (any attribute).
    """

    keyword: str
    attr: str
    form: str
    optional: bool = False


def _parse_kw_value(p: Parser, kw: KW, st: OpState) -> None:
    f = kw.form
    if f == "i64_array":
        st.attributes[kw.attr] = A.i64_array(parse_i64_list(p))
    elif f == "i64":
        st.attributes[kw.attr] = A.i64_attr(p.parse_integer())
    elif f.startswith("enum:"):
        st.attributes[kw.attr] = A.enum(f[5:], p.expect_ident("an enum value"))
    elif f == "bool":
        st.attributes[kw.attr] = A.BoolAttr(p.expect_ident("true or false") == "true")
    elif f == "string":
        st.attributes[kw.attr] = A.StringAttr(p.parse_string())
    elif f == "float":
        st.attributes[kw.attr] = A.FloatAttr(p.parse_float(), T.f64)
    elif f == "exp_mant":
        tok = p.tok
        word = p.expect_ident("a format such as e5m10")
        import re

        m = re.fullmatch(r"e(\d+)m(\d+)", word)
        if not m:
            raise p.error(f"expected a format such as 'e5m10', got '{word}'", tok)
        st.attributes["exponent_bits"] = A.i32_attr(int(m.group(1)))
        st.attributes["mantissa_bits"] = A.i32_attr(int(m.group(2)))
    elif f == "precision":
        p.expect("[")
        vals = []
        if not p.at("]"):
            vals.append(A.enum("precision", p.expect_ident("a precision")))
            while p.consume_if(","):
                vals.append(A.enum("precision", p.expect_ident("a precision")))
        p.expect("]")
        st.attributes[kw.attr] = A.ArrayAttr(tuple(vals))
    else:
        st.attributes[kw.attr] = p.parse_attribute()


def _format_kw_value(kw: KW, op: Operation) -> str | None:
    f = kw.form
    if f == "exp_mant":
        e, m = op.attributes.get("exponent_bits"), op.attributes.get("mantissa_bits")
        if e is None or m is None:
            return None
        return f"e{A.to_python(e)}m{A.to_python(m)}"
    a = op.attributes.get(kw.attr)
    if a is None:
        return None
    if f == "i64_array" and isinstance(a, A.DenseArrayAttr):
        return _fmt_list(a.values)
    if f == "i64" and isinstance(a, A.IntegerAttr):
        return str(a.value)
    if f.startswith("enum:") and isinstance(a, A.EnumAttr):
        return a.value
    if f == "bool" and isinstance(a, A.BoolAttr):
        return "true" if a.value else "false"
    if f == "string" and isinstance(a, A.StringAttr):
        return quote_string(a.value)
    if f == "float" and isinstance(a, A.FloatAttr):
        from oxla.ir.printer import format_float

        return format_float(a.value)
    if f == "precision" and isinstance(a, A.ArrayAttr) and all(
        isinstance(x, A.EnumAttr) for x in a
    ):
        return "[" + ", ".join(x.value for x in a) + "]"  # type: ignore[attr-defined]
    if f == "attr":
        return format_attribute(a)
    return None


def _kw_attr_names(kws) -> set[str]:
    names = set()
    for kw in kws:
        if kw.form == "exp_mant":
            names |= {"exponent_bits", "mantissa_bits"}
        else:
            names.add(kw.attr)
    return names


@dataclass(frozen=True)
class OperandsKeywords(Syntax):
    """``op %a, %b, kw1 = v1, kw2 = v2 attr-dict : types``.

    ``types``: ``same`` (``: T`` or functional), ``functional``, ``result`` (``: R``; no
    operands or operand types implied), ``operand`` (``: T``, result type = operand type).
    ``prefix``: keywords written before the operands (e.g. ``iota dim = 0``).
    """

    keywords: tuple[KW, ...] = ()
    types: str = "functional"
    prefix: bool = False
    n_results: int = 1

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        if self.prefix:
            self._parse_keywords(p, st, first=True)
            st.operands = p.parse_operand_list()
        else:
            st.operands = p.parse_operand_list()
            self._parse_keywords(p, st, first=not st.operands)
        st.attributes.update(p.parse_optional_attr_dict())
        if self.types == "same":
            _parse_functional_or_same(p, st, name, self.n_results)
        elif self.types == "functional":
            _parse_functional(p, st, name)
        elif self.types == "result":
            p.expect(":")
            st.result_types = [p.parse_type()]
        elif self.types == "operand":
            p.expect(":")
            tok = p.tok
            if p.at("("):
                ft = p.parse_function_type()
                p.check_operand_types(st.operands, ft.inputs, tok, name)
                st.result_types = list(ft.results)
            else:
                t = p.parse_type()
                p.check_operand_types(st.operands, [t], tok, name)
                st.result_types = [t]
        return st

    def _parse_keywords(self, p: Parser, st: OpState, first: bool) -> None:
        by_kw = {k.keyword: k for k in self.keywords}
        while True:
            if not first:
                if not (p.at(",") and p._peek_text() in by_kw):
                    return
                p.advance()
            if p.tok.kind != "ident" or p.tok.text not in by_kw:
                if first:
                    return
                raise p.error(f"expected one of {sorted(by_kw)}, got '{p.tok.text}'")
            kw = by_kw[p.advance().text]
            p.expect("=")
            _parse_kw_value(p, kw, st)
            first = False

    def print(self, pr: Printer, op: Operation) -> None:
        items = []
        for kw in self.keywords:
            v = _format_kw_value(kw, op)
            if v is not None:
                items.append(f"{kw.keyword} = {v}")
        ops = pr.operands(op.operands)
        name = op.name
        if self.prefix:
            head = ", ".join(items)
            body = " ".join(x for x in (head, ops) if x)
            pr.emit(f"{name} {body}".rstrip())
        else:
            parts = ([ops] if ops else []) + items
            pr.emit(f"{name} {', '.join(parts)}".rstrip())
        pr.emit(_attr_dict_text(op, _kw_attr_names(self.keywords)))
        if self.types == "same":
            _print_same_or_functional(pr, op)
        elif self.types == "functional":
            pr.emit(f" : {_functional(op)}")
        elif self.types == "result":
            pr.emit(f" : {op.results[0].type}")
        elif self.types == "operand":
            if op.operand_types and op.operand_types[0] == op.results[0].type:
                pr.emit(f" : {op.results[0].type}")
            else:
                pr.emit(f" : {_functional(op)}")

    def can_print(self, op: Operation) -> bool:
        return all(
            _format_kw_value(kw, op) is not None or kw.optional for kw in self.keywords
        )


SAME = OperandsKeywords(types="same")
FUNCTIONAL = OperandsKeywords(types="functional")


@dataclass(frozen=True)
class Constant(Syntax):
    """``stablehlo.constant attr-dict? dense<...> : tensor<...>``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        if p.at("{"):
            st.attributes.update(p.parse_attr_dict())
        tok = p.tok
        value = p.parse_attribute()
        if not isinstance(value, A.DenseElementsAttr):
            raise p.error("expected a dense elements attribute for 'stablehlo.constant'", tok)
        st.attributes["value"] = value
        st.result_types = [value.type]
        if p.at(":"):
            # `: type` after the attribute when the result type differs (quantized).
            p.advance()
            st.result_types = [p.parse_type()]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        value = op.attributes["value"]
        extra = _attr_dict_text(op, {"value"})
        limit = pr.elide_constants_over
        if limit is not None and isinstance(value, A.DenseElementsAttr) and \
                value.array.nbytes > limit:
            pr.emit(f"{op.name}{extra} dense_resource<__elided__> : {value.type}")
            pr.elided.append(value.array)
        else:
            pr.emit(f"{op.name}{extra} {format_attribute(value)}")
        if isinstance(value, A.DenseElementsAttr) and value.type != op.results[0].type:
            pr.emit(f" : {op.results[0].type}")


@dataclass(frozen=True)
class Compare(Syntax):
    """``stablehlo.compare DIR, %a, %b (, TYPE)? attr-dict : types``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.attributes["comparison_direction"] = A.enum(
            "comparison_direction", p.expect_ident("a comparison direction")
        )
        p.expect(",")
        st.operands = [p.parse_operand()]
        p.expect(",")
        st.operands.append(p.parse_operand())
        if p.consume_if(","):
            st.attributes["compare_type"] = A.enum(
                "comparison_type", p.expect_ident("a comparison type")
            )
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional_or_same(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        d = op.attributes["comparison_direction"]
        ct = op.attributes.get("compare_type")
        if not all(isinstance(a, A.EnumAttr | A.StringAttr) for a in (d, ct) if a is not None):
            pr.print_generic(op)  # an opaque enum has no pretty spelling
            return
        s = f"{op.name}  {d.value}, {pr.operands(op.operands)}"  # type: ignore[attr-defined]
        if ct is not None:
            s += f",  {ct.value}"  # type: ignore[attr-defined]
        pr.emit(s + _attr_dict_text(op, {"comparison_direction", "compare_type"}))
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Select(Syntax):
    """``stablehlo.select %p, %t, %f : PRED_T, T`` or functional."""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        if p.at("("):
            ft = p.parse_function_type()
            p.check_operand_types(st.operands, ft.inputs, tok, name)
            st.result_types = list(ft.results)
            return st
        pt = p.parse_type()
        p.expect(",")
        t = p.parse_type()
        p.check_operand_types(st.operands, [pt, t, t], tok, name)
        st.result_types = [t]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{op.name} {pr.operands(op.operands)}{_attr_dict_text(op)}")
        ts = op.operand_types
        if len(ts) == 3 and ts[1] == ts[2] == op.results[0].type:
            pr.emit(f" : {ts[0]}, {ts[1]}")
        else:
            pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Complex(Syntax):
    """``stablehlo.complex %re, %im : tensor<...xcomplex<f32>>`` or functional."""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        if p.at("("):
            ft = p.parse_function_type()
            p.check_operand_types(st.operands, ft.inputs, tok, name)
            st.result_types = list(ft.results)
            return st
        t = p.parse_type()
        if not (isinstance(t, T.TensorType) and isinstance(t.element_type, T.ComplexType)):
            raise p.error(f"expected a complex tensor type, got {t}", tok)
        real = t.with_element_type(t.element_type.element_type)
        p.check_operand_types(st.operands, [real, real], tok, name)
        st.result_types = [t]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{op.name} {pr.operands(op.operands)}{_attr_dict_text(op)}")
        rt = op.results[0].type
        ok = isinstance(rt, T.TensorType) and isinstance(rt.element_type, T.ComplexType)
        if ok:
            real = rt.with_element_type(rt.element_type.element_type)  # type: ignore[union-attr]
            ok = all(t == real for t in op.operand_types)
        pr.emit(f" : {rt}" if ok else f" : {_functional(op)}")


@dataclass(frozen=True)
class PairwiseTypes(Syntax):
    """``op attr-dict %a, %b : T1, T2`` where result i has operand i's type
    (``optimization_barrier``; MLIR's order; attr-dict after the operands is read too)."""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.attributes.update(p.parse_optional_attr_dict())
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        if st.operands:
            p.expect(":")
            tok = p.tok
            ts = p.parse_type_list()
            p.check_operand_types(st.operands, ts, tok, name)
            st.result_types = ts
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{pr.op_name(op)}{_attr_dict_text(op)} {pr.operands(op.operands)}".rstrip())
        if op.operands:
            pr.emit(f" : {_types(op.operand_types)}")


@dataclass(frozen=True)
class Return(Syntax):
    """``stablehlo.return %a, %b : T1, T2`` / ``func.return``."""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        if st.operands:
            p.expect(":")
            tok = p.tok
            ts = p.parse_type_list()
            p.check_operand_types(st.operands, ts, tok, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{pr.op_name(op)} {pr.operands(op.operands)}".rstrip() + _attr_dict_text(op))
        if op.operands:
            pr.emit(f" : {_types(op.operand_types)}")


@dataclass(frozen=True)
class ResultTypeOnly(Syntax):
    """``op %a, %b attr-dict : R`` where operand types follow from R or are tokens
    (``after_all``, ``tuple``, ``partition_id``, ``create_token``)."""

    operand_types: Callable | None = None

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        st.result_types = [p.parse_type()]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{pr.op_name(op)} {pr.operands(op.operands)}".rstrip() + _attr_dict_text(op))
        pr.emit(f" : {op.results[0].type}")


@dataclass(frozen=True)
class GetTupleElement(Syntax):
    """``stablehlo.get_tuple_element %t[0] : (tuple<...>) -> T``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = [p.parse_operand()]
        p.expect("[")
        st.attributes["index"] = A.i32_attr(p.parse_integer())
        p.expect("]")
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        idx = A.to_python(op.attributes["index"])
        pr.emit(f"{op.name} {pr.operands(op.operands)}[{idx}]{_attr_dict_text(op, {'index'})}")
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Slice(Syntax):
    """``stablehlo.slice %x [0:2, 1:4:2] : (T) -> R``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = [p.parse_operand()]
        p.expect("[")
        starts, limits, strides = [], [], []
        if not p.at("]"):
            while True:
                starts.append(p.parse_integer())
                p.expect(":")
                limits.append(p.parse_integer())
                strides.append(p.parse_integer() if p.consume_if(":") else 1)
                if not p.consume_if(","):
                    break
        p.expect("]")
        st.attributes["start_indices"] = A.i64_array(starts)
        st.attributes["limit_indices"] = A.i64_array(limits)
        st.attributes["strides"] = A.i64_array(strides)
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        s = A.to_python(op.attributes["start_indices"])
        lim = A.to_python(op.attributes["limit_indices"])
        stride = A.to_python(op.attributes.get("strides")) or (1,) * len(s)
        parts = [f"{a}:{b}" + (f":{c}" if c != 1 else "") for a, b, c in zip(s, lim, stride)]
        pr.emit(f"{op.name} {pr.operands(op.operands)} [{', '.join(parts)}]")
        pr.emit(_attr_dict_text(op, {"start_indices", "limit_indices", "strides"}))
        pr.emit(f" : {_functional(op)}")
