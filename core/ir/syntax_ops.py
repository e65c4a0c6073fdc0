"""Pretty syntaxes of structured ops: reduce, while, dot_general, convolution,
custom_call, composite, func.func/call, CHLO and check ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.dialect_attrs import _parse_struct_fields, parse_conv_dims
from oxla.ir.printer import format_attr_dict, format_attribute, format_symbol, quote_string
from oxla.ir.syntax import (
    KW,
    Syntax,
    _attr_dict_text,
    _fmt_list,
    _format_kw_value,
    _functional,
    _kw_attr_names,
    _parse_functional,
    _parse_kw_value,
    _state,
    _types,
    parse_i64_list,
)

if TYPE_CHECKING:
    from oxla.ir.lexer import Token
    from oxla.ir.operation import Operation
    from oxla.ir.parser import OpState, Parser
    from oxla.ir.printer import Printer


_REDUCE_COMPACT_OPS = {
    "stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.and", "stablehlo.or", "stablehlo.xor",
}


@dataclass(frozen=True)
class Reduce(Syntax):
    """``stablehlo.reduce(%x init: %c) applies stablehlo.add across dimensions = [1] : F``
    or the region form ``... across dimensions = [0] : F reducer(%a: T, %b: T) {...}``."""

    def parse(self, p: Parser, name: str) -> OpState:
        from oxla.ir.operation import Block, Operation, Region

        st = _state()
        inputs, inits = [], []
        while True:
            p.expect("(")
            inputs.append(p.parse_operand())
            p.expect("init")
            p.expect(":")
            inits.append(p.parse_operand())
            p.expect(")")
            if not p.consume_if(","):
                break
        st.operands = inputs + inits
        applies = None
        if p.at("applies"):
            p.advance()
            atok = p.tok
            applies = p.expect_ident("an op name")
            applies_tok = atok
        p.expect("across")
        p.expect("dimensions")
        p.expect("=")
        st.attributes["dimensions"] = A.i64_array(parse_i64_list(p))
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        if applies is not None:
            from oxla.ir.opdef import lookup_opdef

            if lookup_opdef(applies) is None:
                raise p.error(f"unknown operation '{applies}'", applies_tok)
            block = Block()
            ets = []
            for v in inits:
                t = v.type
                ets.append(t if isinstance(t, T.TensorType) else t)
            a = block.add_arg(ets[0])
            b = block.add_arg(ets[0])
            inner = Operation.create(applies, [a, b], [ets[0]], loc=p.loc_of(applies_tok))
            block.append(inner)
            block.append(Operation.create("stablehlo.return", [inner.results[0]]))
            st.regions = [Region([block])]
            return st
        p.expect("reducer")
        pairs = []
        while p.at("("):
            p.advance()
            group = []
            while True:
                atok = p.tok
                if atok.kind != "percent":
                    raise p.error("expected a reducer argument")
                p.advance()
                p.expect(":")
                group.append((atok.text, p.parse_type(), atok))
                p.parse_optional_location()  # argument locations (TF's bridge writes them)
                if not p.consume_if(","):
                    break
            p.expect(")")
            pairs.append(group)
        firsts = [g[0] for g in pairs]
        seconds = [g[1] for g in pairs if len(g) > 1]
        st.regions = [p.parse_region(entry_args=firsts + seconds)]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        n = len(op.operands) // 2
        ins, inits = op.operands[:n], op.operands[n:]
        heads = ", ".join(f"({pr.name(a)} init: {pr.name(b)})" for a, b in zip(ins, inits))
        dims = _fmt_list(A.to_python(op.attributes["dimensions"]))
        extra = _attr_dict_text(op, {"dimensions"})
        compact = self._compact_op(op)
        if compact is not None:
            pr.emit(f"{op.name}{heads} applies {compact} across dimensions = {dims}{extra}")
            pr.emit(f" : {_functional(op)}")
            return
        pr.emit(f"{op.name}{heads} across dimensions = {dims}{extra} : {_functional(op)}")
        block = op.regions[0].block
        pr.name_block_args(block)
        pr.indent += 1
        pr.newline()
        args = block.args
        groups = " ".join(
            f"({pr.name(args[i])}: {args[i].type}, {pr.name(args[i + n])}: {args[i + n].type})"
            for i in range(n)
        )
        pr.emit(f"reducer{groups} ")
        pr.indent -= 1
        _print_block_body(pr, block)

    @staticmethod
    def _compact_op(op: Operation) -> str | None:
        if len(op.operands) != 2 or len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
            return None
        block = op.regions[0].block
        if len(block.ops) != 2 or len(block.args) != 2:
            return None
        inner, ret = block.ops
        if inner.name not in _REDUCE_COMPACT_OPS or inner.attributes or inner.regions:
            return None
        if list(inner.operands) != list(block.args) or len(inner.results) != 1:
            return None
        if ret.name != "stablehlo.return" or list(ret.operands) != [inner.results[0]]:
            return None
        et = op.operands[1].type
        if not all(a.type == et for a in block.args) or inner.results[0].type != et:
            return None
        return inner.name


def _print_block_body(pr: Printer, block) -> None:
    pr.emit("{")
    pr.indent += 1
    for inner in block.ops:
        pr.newline()
        pr.print_op(inner)
    pr.indent -= 1
    pr.newline()
    pr.emit("}")


@dataclass(frozen=True)
class While(Syntax):
    """``stablehlo.while(%a = %x, ...) : T1, ... attr-dict cond {...} do {...}``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        p.expect("(")
        names: list[tuple[str, Token]] = []
        if not p.at(")"):
            while True:
                tok = p.tok
                if tok.kind != "percent":
                    raise p.error("expected an iteration argument name")
                p.advance()
                p.expect("=")
                names.append((tok.text, tok))
                st.operands.append(p.parse_operand())
                if not p.consume_if(","):
                    break
        p.expect(")")
        types: list[T.Type] = []
        if p.consume_if(":"):
            ttok = p.tok
            types = p.parse_type_list()
            p.check_operand_types(st.operands, types, ttok, name)
        st.attributes.update(p.parse_optional_attr_dict())
        st.result_types = list(types)
        args = [(n, t, tok) for (n, tok), t in zip(names, types)]
        p.expect("cond")
        cond = p.parse_region(entry_args=args)
        p.expect("do")
        body = p.parse_region(entry_args=args)
        st.regions = [cond, body]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        cond, body = op.regions
        # Both regions share the iteration argument names.
        names = pr.scoped_names("%iterArg", len(op.operands))
        for region in (cond, body):
            for a, n in zip(region.block.args, names):
                pr._names[a] = n
        heads = ", ".join(f"{n} = {pr.name(v)}" for n, v in zip(names, op.operands))
        pr.emit(f"{op.name}({heads})")
        if op.operands:
            pr.emit(f" : {_types(op.operand_types)}")
        pr.emit(_attr_dict_text(op))
        pr.newline()
        pr.emit("cond ")
        _print_block_body(pr, cond.block)
        pr.emit(" do ")
        _print_block_body(pr, body.block)
        pr.release_names(names)


@dataclass(frozen=True)
class DotGeneral(Syntax):
    """``stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims =
    [2] x [1], precision = [DEFAULT, DEFAULT], algorithm = <...> : F``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = [p.parse_operand()]
        p.expect(",")
        st.operands.append(p.parse_operand())
        dims: dict[str, tuple[int, ...]] = {}
        while p.consume_if(","):
            kw = p.expect_ident("a keyword")
            p.expect("=")
            if kw in ("batching_dims", "contracting_dims"):
                lhs = parse_i64_list(p)
                p._expect_x()
                rhs = parse_i64_list(p)
                key = "batching" if kw == "batching_dims" else "contracting"
                dims[f"lhs_{key}"] = lhs
                dims[f"rhs_{key}"] = rhs
            elif kw == "precision":
                _parse_kw_value(p, KW("precision", "precision_config", "precision"), st)
            elif kw == "algorithm":
                p.expect("<")
                fields = _parse_struct_fields(p, ">")
                st.attributes["algorithm"] = A.StructAttr("stablehlo.dot_algorithm", fields)
            else:
                raise p.error(f"unknown dot_general keyword '{kw}'")
        st.attributes["dot_dimension_numbers"] = A.dot_dimension_numbers(
            dims.get("lhs_batching", ()), dims.get("rhs_batching", ()),
            dims.get("lhs_contracting", ()), dims.get("rhs_contracting", ()),
        )
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        dd = op.attributes["dot_dimension_numbers"]
        assert isinstance(dd, A.StructAttr)
        parts = [pr.operands(op.operands)]
        lb, rb = dd.get("lhs_batching_dimensions", ()), dd.get("rhs_batching_dimensions", ())
        if lb or rb:
            parts.append(f"batching_dims = {_fmt_list(lb)} x {_fmt_list(rb)}")
        lc = dd.get("lhs_contracting_dimensions", ())
        rc = dd.get("rhs_contracting_dimensions", ())
        parts.append(f"contracting_dims = {_fmt_list(lc)} x {_fmt_list(rc)}")
        elide = {"dot_dimension_numbers"}
        prec = _format_kw_value(KW("precision", "precision_config", "precision"), op)
        if prec is not None:
            parts.append(f"precision = {prec}")
            elide.add("precision_config")
        alg = op.attributes.get("algorithm")
        if isinstance(alg, A.StructAttr) and alg.name == "stablehlo.dot_algorithm":
            parts.append("algorithm = " + format_attribute(alg)[len("#stablehlo.dot_algorithm"):])
            elide.add("algorithm")
        pr.emit(f"{op.name} {', '.join(parts)}{_attr_dict_text(op, elide)}")
        pr.emit(f" : {_functional(op)}")


def _parse_window(p: Parser, st: OpState) -> None:
    """``window = {stride = [..], pad = [[l, h], ..], lhs_dilate = [..], rhs_dilate = [..],
    reverse = [true, false]}``"""
    p.expect("{")
    while not p.at("}"):
        kw = p.expect_ident("a window keyword")
        p.expect("=")
        if kw == "pad":
            p.expect("[")
            pads: list[int] = []
            rows = 0
            if not p.at("]"):
                while True:
                    p.expect("[")
                    pads.append(p.parse_integer())
                    p.expect(",")
                    pads.append(p.parse_integer())
                    p.expect("]")
                    rows += 1
                    if not p.consume_if(","):
                        break
            p.expect("]")
            import numpy as np

            arr = np.array(pads, dtype=np.int64).reshape(rows, 2)
            st.attributes["padding"] = A.DenseElementsAttr(
                T.TensorType((rows, 2), T.i64), arr
            )
        elif kw == "reverse":
            p.expect("[")
            vals = []
            if not p.at("]"):
                while True:
                    vals.append(p.expect_ident("true or false") == "true")
                    if not p.consume_if(","):
                        break
            p.expect("]")
            st.attributes["window_reversal"] = A.bool_array(vals)
        else:
            attr = {"stride": "window_strides", "lhs_dilate": "lhs_dilation",
                    "rhs_dilate": "rhs_dilation"}.get(kw)
            if attr is None:
                raise p.error(f"unknown window keyword '{kw}'")
            st.attributes[attr] = A.i64_array(parse_i64_list(p))
        if not p.consume_if(","):
            break
    p.expect("}")


def _format_window(op: Operation) -> str | None:
    parts = []
    a = op.attributes
    if "window_strides" in a:
        parts.append(f"stride = {_fmt_list(A.to_python(a['window_strides']))}")
    pad = a.get("padding")
    if pad is not None:
        if not isinstance(pad, A.DenseElementsAttr) or pad.array.ndim != 2:
            return None
        rows = ", ".join(f"[{int(r[0])}, {int(r[1])}]" for r in pad.array)
        parts.append(f"pad = [{rows}]")
    if "lhs_dilation" in a:
        parts.append(f"lhs_dilate = {_fmt_list(A.to_python(a['lhs_dilation']))}")
    if "rhs_dilation" in a:
        parts.append(f"rhs_dilate = {_fmt_list(A.to_python(a['rhs_dilation']))}")
    if "window_reversal" in a:
        vals = A.to_python(a["window_reversal"])
        parts.append("reverse = [" + ", ".join("true" if v else "false" for v in vals) + "]")
    return "{" + ", ".join(parts) + "}"


_WINDOW_ATTRS = {"window_strides", "padding", "lhs_dilation", "rhs_dilation", "window_reversal"}


@dataclass(frozen=True)
class Convolution(Syntax):
    """``stablehlo.convolution(%a, %b) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1,
    f], window = {...} attr-dict : F``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        p.expect("(")
        st.operands = p.parse_operand_list()
        p.expect(")")
        p.expect("dim_numbers")
        p.expect("=")
        st.attributes["dimension_numbers"] = parse_conv_dims(p)
        if p.consume_if(","):
            p.expect("window")
            p.expect("=")
            _parse_window(p, st)
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        from oxla.ir.printer import format_conv_dims

        dn = op.attributes["dimension_numbers"]
        assert isinstance(dn, A.ConvDimensionNumbers)
        pr.emit(f"{op.name}({pr.operands(op.operands)}) dim_numbers = {format_conv_dims(dn)}")
        win = _format_window(op)
        elide = {"dimension_numbers"}
        if win is not None:  # MLIR requires the window, even when empty
            pr.emit(f", window = {win}")
            elide |= _WINDOW_ATTRS
        pr.emit(_attr_dict_text(op, elide))
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class CustomCall(Syntax):
    """``stablehlo.custom_call @target(%a, %b) attr-dict : F``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        if p.tok.kind == "at":
            target = p.parse_symbol_name()
        else:
            target = p.parse_string()
        st.attributes["call_target_name"] = A.StringAttr(target)
        p.expect("(")
        st.operands = p.parse_operand_list()
        p.expect(")")
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        t = A.to_python(op.attributes["call_target_name"])
        pr.emit(f"{op.name} {format_symbol(t)}({pr.operands(op.operands)})")
        pr.emit(_attr_dict_text(op, {"call_target_name"}))
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Composite(Syntax):
    """``stablehlo.composite "name" %a, %b attr-dict : F``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.attributes["name"] = A.StringAttr(p.parse_string())
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        n = A.to_python(op.attributes["name"])
        pr.emit(f"{op.name} {quote_string(n)} {pr.operands(op.operands)}")
        pr.emit(_attr_dict_text(op, {"name"}))
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Call(Syntax):
    """``func.call @f(%a) attr-dict : (T) -> R``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.attributes["callee"] = A.SymbolRefAttr(p.parse_symbol_name())
        p.expect("(")
        st.operands = p.parse_operand_list()
        p.expect(")")
        st.attributes.update(p.parse_optional_attr_dict())
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        callee = op.attributes["callee"]
        pr.emit(f"{pr.op_name(op)} {callee}({pr.operands(op.operands)})")
        pr.emit(_attr_dict_text(op, {"callee"}))
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class Func(Syntax):
    """``func.func [private] @name(%a: T {attrs}, ...) -> (R {attrs}) attributes {...}
    { body }`` (a declaration has no body)."""

    def parse(self, p: Parser, name: str) -> OpState:
        st, args = self.parse_header(p)
        if p.at("{"):
            st.regions = [p.parse_region(entry_args=args, isolated=True)]
        else:
            from oxla.ir.operation import Region

            st.regions = [Region()]
        st.result_types = []
        return st

    def parse_header(self, p: Parser) -> tuple[OpState, list[tuple[str, T.Type, Token]]]:
        """Everything before the body: returns the op's state (no regions) and the
        entry block's ``(name, type, token)`` arguments."""
        st = _state()
        if p.tok.kind == "ident" and p.tok.text in ("private", "public", "nested"):
            st.attributes["sym_visibility"] = A.StringAttr(p.advance().text)
        st.attributes["sym_name"] = A.StringAttr(p.parse_symbol_name())
        p.expect("(")
        args: list[tuple[str, T.Type, Token]] = []
        arg_attrs: list[dict] = []
        in_types: list[T.Type] = []
        if not p.at(")"):
            while True:
                tok = p.tok
                if tok.kind == "percent":
                    p.advance()
                    p.expect(":")
                    ty = p.parse_type()
                    args.append((tok.text, ty, tok))
                else:
                    ty = p.parse_type()
                in_types.append(ty)
                arg_attrs.append(p.parse_optional_attr_dict())
                p.parse_optional_location()
                if not p.consume_if(","):
                    break
        p.expect(")")
        out_types: list[T.Type] = []
        res_attrs: list[dict] = []
        if p.consume_if("->"):
            if p.at("("):
                p.advance()
                if not p.at(")"):
                    while True:
                        out_types.append(p.parse_type())
                        res_attrs.append(p.parse_optional_attr_dict())
                        if not p.consume_if(","):
                            break
                p.expect(")")
            else:
                out_types.append(p.parse_type())
                res_attrs.append({})
        if p.tok.kind == "ident" and p.tok.text == "attributes":
            p.advance()
            st.attributes.update(p.parse_attr_dict())
        st.attributes["function_type"] = A.TypeAttr(T.FunctionType(tuple(in_types),
                                                                   tuple(out_types)))
        if any(arg_attrs):
            st.attributes["arg_attrs"] = A.ArrayAttr(
                tuple(A.DictionaryAttr(tuple(d.items())) for d in arg_attrs))
        if any(res_attrs):
            st.attributes["res_attrs"] = A.ArrayAttr(
                tuple(A.DictionaryAttr(tuple(d.items())) for d in res_attrs))
        return st, args

    def print(self, pr: Printer, op: Operation) -> None:
        a = op.attributes
        vis = a.get("sym_visibility")
        head = op.name + (f" {A.to_python(vis)}" if vis is not None else "")
        head += f" {format_symbol(A.to_python(a['sym_name']))}"
        ft = a["function_type"].type  # type: ignore[attr-defined]
        arg_attrs = a.get("arg_attrs")
        res_attrs = a.get("res_attrs")
        region = op.regions[0] if op.regions else None
        has_body = region is not None and region.blocks
        if has_body:
            pr.name_block_args(region.blocks[0])
        args = []
        for i, t in enumerate(ft.inputs):
            s = f"{pr.name(region.blocks[0].args[i])}: {t}" if has_body else str(t)
            if isinstance(arg_attrs, A.ArrayAttr) and i < len(arg_attrs):
                d = arg_attrs[i]
                if isinstance(d, A.DictionaryAttr) and d.entries:
                    s += " " + format_attribute(d)
            args.append(s)
        head += f"({', '.join(args)})"
        if ft.results:
            outs = []
            for i, t in enumerate(ft.results):
                s = str(t)
                if isinstance(res_attrs, A.ArrayAttr) and i < len(res_attrs):
                    d = res_attrs[i]
                    if isinstance(d, A.DictionaryAttr) and d.entries:
                        s += " " + format_attribute(d)
                outs.append(s)
            simple = len(outs) == 1 and not isinstance(ft.results[0], T.FunctionType) and \
                outs[0] == str(ft.results[0])
            head += " -> " + (outs[0] if simple else f"({', '.join(outs)})")
        rest = {k: v for k, v in a.items()
                if k not in ("sym_visibility", "sym_name", "function_type", "arg_attrs",
                             "res_attrs")}
        if rest:
            head += " attributes " + format_attr_dict(rest)
        pr.emit(head)
        if has_body:
            pr.emit(" ")
            _print_block_body(pr, region.blocks[0])


@dataclass(frozen=True)
class ChloUnary(Syntax):
    """``chlo.erf %x attr-dict : T -> R``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        ins = p.parse_type_list()
        p.check_operand_types(st.operands, ins, tok, name)
        p.expect("->")
        if p.at("("):
            p.advance()
            st.result_types = p._parse_type_list_until(")")
        else:
            st.result_types = [p.parse_type()]
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{op.name} {pr.operands(op.operands)}{_attr_dict_text(op)}")
        outs = _types(op.result_types)
        if len(op.results) != 1:
            outs = f"({outs})"
        pr.emit(f" : {_types(op.operand_types)} -> {outs}")


@dataclass(frozen=True)
class ChloTopK(Syntax):
    """``chlo.top_k(%x, k = 2) : T -> (V, I)``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        p.expect("(")
        st.operands = [p.parse_operand()]
        p.expect(",")
        p.expect("k")
        p.expect("=")
        st.attributes["k"] = A.i64_attr(p.parse_integer())
        p.expect(")")
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        t = p.parse_type()
        p.check_operand_types(st.operands, [t], tok, name)
        p.expect("->")
        p.expect("(")
        st.result_types = p._parse_type_list_until(")")
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        k = A.to_python(op.attributes["k"])
        pr.emit(f"{op.name}({pr.operands(op.operands)}, k = {k}){_attr_dict_text(op, {'k'})}")
        pr.emit(f" : {op.operand_types[0]} -> ({_types(op.result_types)})")


@dataclass(frozen=True)
class ChloScan(Syntax):
    """``chlo.scan(%in...) inits(%init...) dimension=0 (attributes {...})? {region} : F``

    The operand and result splits are kept in ``operandSegmentSizes`` and
    ``resultSegmentSizes`` (as MLIR's properties do).
    """

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        p.expect("(")
        inputs = p.parse_operand_list()
        p.expect(")")
        p.expect("inits")
        p.expect("(")
        inits = p.parse_operand_list()
        p.expect(")")
        p.expect("dimension")
        p.expect("=")
        st.attributes["dimension"] = A.i64_attr(p.parse_integer())
        if p.tok.kind == "ident" and p.tok.text == "attributes":
            p.advance()
            st.attributes.update(p.parse_attr_dict())
        st.attributes["operandSegmentSizes"] = A.DenseArrayAttr(
            T.IntegerType(32), (len(inputs), len(inits)))
        st.attributes["resultSegmentSizes"] = A.DenseArrayAttr(
            T.IntegerType(32), (len(inputs), len(inits)))
        st.operands = inputs + inits
        st.regions = [p.parse_region()]
        _parse_functional(p, st, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        seg = op.attributes.get("operandSegmentSizes")
        n_in = seg.values[0] if isinstance(seg, A.DenseArrayAttr) else len(op.operands) // 2
        ins, inits = op.operands[:n_in], op.operands[n_in:]
        d = A.to_python(op.attributes["dimension"])
        s = f"{op.name}({pr.operands(ins)}) inits({pr.operands(inits)}) dimension={d}"
        rest = _attr_dict_text(op, {"dimension", "operandSegmentSizes", "resultSegmentSizes"})
        if rest:
            s += " attributes" + rest
        pr.emit(s + " ")
        pr.print_region(op.regions[0], print_entry_args=True)
        pr.emit(f" : {_functional(op)}")


@dataclass(frozen=True)
class CheckConst(Syntax):
    """``check.expect_eq_const %x, dense<...> : T attr-dict?``"""

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = [p.parse_operand()]
        p.expect(",")
        tok = p.tok
        value = p.parse_attribute()
        if not isinstance(value, A.DenseElementsAttr):
            raise p.error("expected a dense elements attribute", tok)
        st.attributes["value"] = value
        st.attributes.update(p.parse_optional_attr_dict())
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        pr.emit(f"{op.name} {pr.operands(op.operands)}, {format_attribute(op.attributes['value'])}")
        pr.emit(_attr_dict_text(op, {"value"}))


@dataclass(frozen=True)
class CheckBinary(Syntax):
    """``check.expect_eq %a, %b (, kw = v)? attr-dict : T (, T)?``"""

    keywords: tuple[KW, ...] = ()

    def parse(self, p: Parser, name: str) -> OpState:
        st = _state()
        st.operands = p.parse_operand_list()
        by_kw = {k.keyword: k for k in self.keywords}
        while p.at(",") and p._peek_text() in by_kw:
            p.advance()
            kw = by_kw[p.advance().text]
            p.expect("=")
            _parse_kw_value(p, kw, st)
        st.attributes.update(p.parse_optional_attr_dict())
        p.expect(":")
        tok = p.tok
        ts = p.parse_type_list()
        if len(ts) == 1:
            ts = ts * len(st.operands)
        p.check_operand_types(st.operands, ts, tok, name)
        return st

    def print(self, pr: Printer, op: Operation) -> None:
        items = [pr.operands(op.operands)]
        for kw in self.keywords:
            v = _format_kw_value(kw, op)
            if v is not None:
                items.append(f"{kw.keyword} = {v}")
        pr.emit(f"{op.name} {', '.join(items)}{_attr_dict_text(op, _kw_attr_names(self.keywords))}")
        ts = op.operand_types
        if all(t == ts[0] for t in ts) and op.name != "check.expect_close":
            pr.emit(f" : {ts[0]}")
        else:
            pr.emit(f" : {_types(ts)}")
