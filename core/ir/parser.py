"""The MLIR text parser: recursive descent over :mod:`oxla.ir.lexer` tokens.

Reads the generic form of every op and the pretty forms declared by the op table
(:mod:`oxla.ir.syntax`), ``func.func``, ``module``, attribute and location aliases,
``{-# dialect_resources ... #-}`` and ``// -----`` split files. ``parse_x`` methods
raise :class:`ParseError` with ``file:line:col``; ``parse_optional_x`` methods return
None and consume nothing when the construct is absent.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from oxla.errors import ParseError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.gcpause import gc_paused
from oxla.ir.lexer import Lexer, Token, split_input_file
from oxla.ir.location import (
    FileLineColLoc,
    Location,
    NameLoc,
)
from oxla.ir.opdef import canonical_name, lookup_opdef
from oxla.ir.operation import Block, Module, Operation, Region, Value
from oxla.ir.parse_attrs import _SIMPLE_TENSOR_CACHE, TypeAttrParserMixin, _unescape  # noqa: F401

_INT_TYPE_RE = re.compile(r"^(u|s)?i(\d+)$")
# The most common line of large modules, ``%r = dialect.op %a, %b : tensor<4x8xf32>``,
# read with one regex match (see Parser._parse_simple_op).
_SIMPLE_OP_RE = re.compile(
    r"(%[\w$.\-]+) = ([A-Za-z_][\w$.]*) (%[\w$.\-]+(?:, %[\w$.\-]+)*) : "
    r"(tensor<(?:(?:\d+|\?)x)*[A-Za-z][A-Za-z0-9]*>)"
)
_SIMPLE_OP_NAMES: dict[str, str | None] = {}
"""Op name as written -> full name when its syntax is ``op %a, %b : T`` (one result of
type T, every operand of type T, no keywords or attributes), else None."""


def _simple_op_name(raw: str) -> str | None:
    if raw in _SIMPLE_OP_NAMES:
        return _SIMPLE_OP_NAMES[raw]
    from oxla.ir.syntax import OperandsKeywords

    full = canonical_name(raw)
    od = lookup_opdef(full)
    ok = (
        od is not None
        and type(od.syntax) is OperandsKeywords
        and od.syntax.types == "same"
        and not od.syntax.prefix
        and od.syntax.n_results == 1
    )
    _SIMPLE_OP_NAMES[raw] = full if ok else None
    return _SIMPLE_OP_NAMES[raw]


class OpState:
    """What a syntax's parse method returns: the parts of the op being built."""

    __slots__ = ("operands", "result_types", "attributes", "regions")

    def __init__(self):
        self.operands: list[Value] = []
        self.result_types: list[T.Type] = []
        self.attributes: dict[str, A.Attribute] = {}
        self.regions: list[Region] = []


class Parser(TypeAttrParserMixin):
    """Parses one MLIR text (use :func:`parse_module`).

    Args:
        text: the MLIR text.
        filename: shown in locations.
        line_offset: lines before ``text`` in its file (for split files).
    """

    def __init__(self, text: str, filename: str = "<string>", line_offset: int = 0):
        self.lex = Lexer(text, filename, line_offset)
        self.tok: Token = self.lex.next()
        self.attr_aliases: dict[str, A.Attribute] = {}
        self.type_aliases: dict[str, T.Type] = {}
        self.loc_aliases: dict[str, Location] = {}
        self._deferred_locs: list[tuple[Operation, str]] = []
        self.scopes: list[dict[str, Value]] = [{}]
        self.resources: dict[str, bytes] = {}
        self._pending_resources: list[tuple[A.DenseElementsAttr, str, Token]] = []

    # -- token helpers ----------------------------------------------------------
    def advance(self) -> Token:
        t = self.tok
        self.tok = self.lex.next()
        return t

    def loc_of(self, tok: Token | None = None) -> FileLineColLoc:
        tok = tok or self.tok
        return self.lex.location(tok.start, max(1, tok.end - tok.start))

    def error(self, message: str, tok: Token | None = None) -> ParseError:
        return ParseError(message, self.loc_of(tok))

    def at(self, text: str) -> bool:
        return self.tok.text == text and self.tok.kind in ("punct", "ident", "filemeta")

    def consume_if(self, text: str) -> bool:
        if self.at(text):
            self.advance()
            return True
        return False

    def expect(self, text: str, what: str | None = None) -> Token:
        if not self.at(text):
            got = self.tok.text or "end of input"
            raise self.error(f"expected '{text}'{' ' + what if what else ''}, got '{got}'")
        return self.advance()

    def expect_keyword(self, word: str) -> None:
        self.expect(word)

    def expect_ident(self, what: str = "identifier") -> str:
        if self.tok.kind != "ident":
            raise self.error(f"expected {what}, got '{self.tok.text or 'end of input'}'")
        return self.advance().text

    def parse_string(self) -> str:
        if self.tok.kind != "string":
            raise self.error(f"expected a string, got '{self.tok.text or 'end of input'}'")
        return _unescape(self.advance().text[1:-1])

    def parse_integer(self) -> int:
        neg = self.consume_if("-")
        if self.tok.kind == "int":
            v = int(self.advance().text)
        elif self.tok.kind == "hex":
            v = int(self.advance().text, 16)
        else:
            raise self.error(f"expected an integer, got '{self.tok.text or 'end of input'}'")
        return -v if neg else v

    def reset_to(self, offset: int) -> None:
        self.lex.pos = offset
        self.tok = self.lex.next()

    # -- SSA values ---------------------------------------------------------------
    def push_scope(self, isolated: bool = False) -> None:
        self.scopes.append({"__isolated__": None} if isolated else {})  # type: ignore[dict-item]

    def pop_scope(self) -> None:
        self.scopes.pop()

    def define(self, name: str, value: Value, tok: Token | None = None) -> None:
        scope = self.scopes[-1]
        if name in scope:
            raise self.error(f"redefinition of SSA value '{name}'", tok)
        scope[name] = value
        value.name_hint = name

    def lookup_value(self, name: str, tok: Token) -> Value:
        v = self._find_value(name)
        if v is None:
            raise self.error(f"use of undeclared SSA value '{name}'", tok)
        return v

    def _find_value(self, name: str) -> Value | None:
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                return v
            if "__isolated__" in scope:
                break
        return None

    def parse_operand(self) -> Value:
        """``ssa-use ::= `%` suffix-id (`#` int)?``"""
        tok = self.tok
        if tok.kind != "percent":
            raise self.error(f"expected an SSA value, got '{tok.text or 'end of input'}'")
        self.advance()
        name = tok.text
        if self.tok.kind == "hash" and self.tok.start == tok.end and self.tok.text[1:].isdigit():
            idx = int(self.advance().text[1:])
            base = self.lookup_value(name, tok)
            from oxla.ir.operation import OpResult

            if isinstance(base, OpResult) and idx < len(base.owner.results):
                return base.owner.results[base.index + idx]
            raise self.error(f"result number {idx} out of range for '{name}'", tok)
        return self.lookup_value(name, tok)

    def parse_optional_operand(self) -> Value | None:
        if self.tok.kind != "percent":
            return None
        return self.parse_operand()

    def parse_operand_list(self) -> list[Value]:
        """Comma-separated SSA uses (possibly none)."""
        vals = []
        v = self.parse_optional_operand()
        if v is None:
            return vals
        vals.append(v)
        while self.tok.text == "," and self._peek_is_operand():
            self.advance()
            vals.append(self.parse_operand())
        return vals

    def _peek_is_operand(self) -> bool:
        save = self.lex.pos
        nxt = self.lex.next()
        self.lex.pos = save
        return nxt.kind == "percent"

    # -- operations -----------------------------------------------------------------
    def parse_operation(self, block: Block) -> Operation:
        """``operation ::= op-result-list? (generic-operation | custom-operation)
        trailing-location?``"""
        results: list[tuple[str, int, Token]] = []
        if self.tok.kind == "percent":
            op = self._parse_simple_op(block)
            if op is not None:
                return op
            while True:
                rtok = self.advance()
                count = 1
                if self.at(":"):
                    self.advance()
                    count = self.parse_integer()
                results.append((rtok.text, count, rtok))
                if not self.consume_if(","):
                    break
                if self.tok.kind != "percent":
                    raise self.error("expected an SSA result name")
            self.expect("=")
        name_tok = self.tok
        loc = self.loc_of(name_tok)
        if name_tok.kind == "string":
            name = self.parse_string()
            op = self._parse_generic(name, loc)
        elif name_tok.kind == "ident":
            self.advance()
            raw = name_tok.text
            full = canonical_name(raw)
            od = lookup_opdef(full)
            if od is None and "." not in raw:
                od = lookup_opdef("func." + raw)
                full = od.name if od is not None else full
            if od is None or od.syntax is None:
                raise self.error(
                    f"unknown operation '{raw}'; use the generic form \"{raw}\"(...) for ops "
                    "oxla does not know the syntax of",
                    name_tok,
                )
            state = od.syntax.parse(self, full)
            op = Operation.create(
                full, state.operands, state.result_types, state.attributes, state.regions, loc
            )
        else:
            raise self.error(f"expected an operation, got '{name_tok.text or 'end of input'}'")
        trailing = self.parse_optional_location()
        if trailing is not None:
            op.loc = self._attach_file_loc(trailing, loc)
        total = sum(c for _, c, _ in results)
        if results and total != len(op.results):
            raise self.error(
                f"operation defines {len(op.results)} results but was given {total} names",
                results[0][2],
            )
        i = 0
        for rname, count, rtok in results:
            self.define(rname, op.results[i], rtok)
            i += count
        block.append(op)
        return op

    def _parse_simple_op(self, block: Block) -> Operation | None:
        """Reads ``%r = op %a, %b : T`` with one regex match when ``op``'s syntax is the
        plain same-type one; returns None (having consumed nothing) for anything else or
        anything wrong, which the general path then reads or reports."""
        tok = self.tok
        m = _SIMPLE_OP_RE.match(self.lex.text, tok.start)
        if m is None:
            return None
        rname, raw, names, type_text = m.groups()
        full = _simple_op_name(raw)
        if full is None:
            return None
        t = _SIMPLE_TENSOR_CACHE.get(type_text)
        if t is None or rname in self.scopes[-1]:
            return None
        operands = []
        for name in names.split(", "):
            v = self._find_value(name)
            if v is None or (v.type is not t and v.type != t):
                return None
            operands.append(v)
        loc = self.lex.location(m.start(2), len(raw))
        op = Operation.create(full, operands, (t,), None, (), loc)
        self.reset_to(m.end())
        trailing = self.parse_optional_location()
        if trailing is not None:
            op.loc = self._attach_file_loc(trailing, loc)
        self.define(rname, op.results[0], tok)
        block.append(op)
        return op

    def _attach_file_loc(self, loc: Location, fallback: FileLineColLoc) -> Location:
        # Keep the text position as the child of a named location so errors show a snippet.
        if isinstance(loc, NameLoc) and loc.child is None:
            return NameLoc(loc.name, fallback)
        if loc.is_unknown():
            return fallback
        return loc

    def _parse_generic(self, name: str, loc: FileLineColLoc) -> Operation:
        """``generic-operation ::= string-literal `(` value-use-list? `)` successor-list?
        dictionary-properties? region-list? dictionary-attribute? `:` function-type``"""
        name = canonical_name(name)
        self.expect("(")
        operands = self.parse_operand_list()
        self.expect(")")
        attrs: dict[str, A.Attribute] = {}
        if self.at("<") :
            self.advance()
            attrs.update(self.parse_attr_dict())
            self.expect(">")
        regions: list[Region] = []
        if self.at("("):
            self.advance()
            regions.append(self.parse_region())
            while self.consume_if(","):
                regions.append(self.parse_region())
            self.expect(")")
        attrs.update(self.parse_optional_attr_dict())
        self.expect(":")
        ft_tok = self.tok
        ft = self.parse_function_type()
        if len(ft.inputs) != len(operands):
            raise self.error(
                f"'{name}' has {len(operands)} operands but its type lists {len(ft.inputs)}",
                ft_tok,
            )
        for i, (v, t) in enumerate(zip(operands, ft.inputs)):
            if v.type != t:
                raise self.error(
                    f"operand #{i} of '{name}' has type {v.type}, but the signature says {t}",
                    ft_tok,
                )
        return Operation.create(name, operands, ft.results, attrs, regions, loc)

    def check_operand_types(self, operands: list[Value], types, tok: Token, name: str) -> None:
        """Raises when operand values' types differ from the types written for them."""
        if len(types) != len(operands):
            raise self.error(
                f"'{name}' has {len(operands)} operands but {len(types)} types were given", tok
            )
        for i, (v, t) in enumerate(zip(operands, types)):
            if v.type != t:
                raise self.error(
                    f"operand #{i} of '{name}' has type {v.type}, but the signature says {t}",
                    tok,
                )

    def parse_region(self, entry_args: list[tuple[str, T.Type, Token]] | None = None,
                     isolated: bool = False) -> Region:
        """``region ::= `{` entry-block? block* `}```; ``entry_args`` are names given by
        the op's pretty syntax (e.g. ``while``'s iteration arguments)."""
        self.expect("{")
        if self.at("}") and entry_args is None:  # `{}`: a region without blocks, as MLIR
            self.advance()
            return Region()
        self.push_scope(isolated)
        region = Region()
        block = Block()
        region.add_block(block)
        if entry_args:
            for name, ty, tok in entry_args:
                self.define(name, block.add_arg(ty), tok)
        if self.tok.kind == "caret":
            if entry_args:
                raise self.error("region arguments were already given by the op syntax")
            self._parse_block_header(block)
        while not self.at("}"):
            if self.tok.kind == "caret":
                block = Block()
                region.add_block(block)
                self._parse_block_header(block)
                continue
            if self.tok.kind == "eof":
                raise self.error("expected '}' to close the region")
            self.parse_operation(block)
        self.advance()
        self.pop_scope()
        return region

    def _parse_block_header(self, block: Block) -> None:
        """``block-label ::= caret-id (`(` value-id `:` type (`,` ...)* `)`)? `:```"""
        tok = self.advance()
        block.name_hint = tok.text
        if self.consume_if("("):
            if not self.at(")"):
                while True:
                    atok = self.tok
                    if atok.kind != "percent":
                        raise self.error("expected a block argument name")
                    self.advance()
                    self.expect(":")
                    ty = self.parse_type()
                    self.define(atok.text, block.add_arg(ty), atok)
                    self.parse_optional_location()
                    if not self.consume_if(","):
                        break
            self.expect(")")
        self.expect(":")

    # -- top level ------------------------------------------------------------------
    def parse_top_level(self) -> Module:
        """A file: aliases, then a ``module`` or bare top-level ops, then resources."""
        module: Module | None = None
        loose = Block()
        while self.tok.kind != "eof":
            tok = self.tok
            if tok.kind == "hash" and self._peek_text() == "=":
                self._parse_alias_def()
                continue
            if tok.kind == "bang" and self._peek_text() == "=":
                self.advance()
                self.advance()
                self.type_aliases[tok.text] = self.parse_type()
                continue
            if tok.kind == "filemeta" and tok.text == "{-#":
                self._parse_file_metadata()
                continue
            if tok.kind == "ident" and tok.text == "module":
                if module is not None or loose.ops:
                    raise self.error("expected one 'module' per file (split with '// -----')")
                module = self._parse_module_op()
                continue
            self.parse_operation(loose)
        if module is None:
            # an input of only comments (or nothing) is an empty module, as in mlir-opt
            module = Module()
            for op in list(loose.ops):
                module.body.append(op)  # moves it out of `loose`
        elif loose.ops:
            raise self.error("operations outside the module", self.tok)
        module.resources = self.resources
        self._resolve_resources()
        self._resolve_deferred_locs()
        return module

    def _peek_text(self) -> str:
        save = self.lex.pos
        nxt = self.lex.next()
        self.lex.pos = save
        return nxt.text

    def _parse_alias_def(self) -> None:
        tok = self.advance()
        self.expect("=")
        name = tok.text[1:]
        if self.tok.kind == "ident" and self.tok.text == "loc":
            self.loc_aliases[name] = self.parse_location()
        else:
            self.attr_aliases[name] = self.parse_attribute()

    def _parse_module_op(self) -> Module:
        mtok = self.advance()
        attrs: dict[str, A.Attribute] = {}
        if self.tok.kind == "at":
            attrs["sym_name"] = A.StringAttr(self.parse_symbol_name())
        if self.tok.kind == "ident" and self.tok.text == "attributes":
            self.advance()
            attrs.update(self.parse_attr_dict())
        region = self.parse_region(entry_args=[], isolated=True)  # always one block
        op = Operation.create("builtin.module", attributes=attrs, regions=[region],
                              loc=self.loc_of(mtok))
        loc = self.parse_optional_location()
        if loc is not None:
            op.loc = loc
        return Module(op)

    def _parse_file_metadata(self) -> None:
        """``{-# dialect_resources: { builtin: { name: "0x..." } } #-}``"""
        self.advance()
        depth = 0
        section = None
        while not (self.tok.kind == "filemeta" and self.tok.text == "#-}"):
            tok = self.tok
            if tok.kind == "eof":
                raise self.error("unterminated '{-#' file metadata")
            if tok.kind == "ident" and self._peek_text() == ":":
                key = self.advance().text
                self.advance()
                if depth == 0:
                    section = key
                if self.tok.kind == "string" and section == "dialect_resources":
                    blob = self.parse_string()
                    try:
                        raw = bytes.fromhex(blob[2:])
                    except ValueError:
                        raise self.error(f"invalid hex in resource '{key}'", tok) from None
                    # The first 4 bytes are the blob's alignment.
                    self.resources[key] = raw[4:]
                continue
            if tok.text == "{":
                depth += 1
            elif tok.text == "}":
                depth -= 1
            self.advance()
        self.advance()

    def _resolve_resources(self) -> None:
        for attr, name, tok in self._pending_resources:
            raw = self.resources.get(name)
            if raw is None:
                raise self.error(f"undefined dense resource '{name}'", tok)
            ty = attr.type
            dtype = ty.element_type.dtype
            need = ty.num_elements * dtype.itemsize
            if len(raw) != need:
                raise self.error(
                    f"dense resource '{name}' has {len(raw)} bytes, expected {need} for {ty}", tok
                )
            arr = np.frombuffer(raw, dtype=dtype).reshape(ty.shape).copy()
            object.__setattr__(attr, "array", arr)

    def _resolve_deferred_locs(self) -> None:
        pass


def parse_module(text: str, filename: str = "<string>", line_offset: int = 0) -> Module:
    """Parses MLIR text into a module (bare functions are wrapped in one).

    Args:
        text: MLIR text, pretty or generic form.
        filename: for error locations.
        line_offset: lines before ``text`` in ``filename``.

    Returns:
        The module, not yet verified (see :func:`oxla.ir.verify`).

    Raises:
        ParseError: with ``file:line:col`` and the source line on malformed input.
    """
    with gc_paused():
        p = Parser(text, filename, line_offset)
        return _guarded(p, p.parse_top_level)


def _guarded(p: Parser, parse: Any) -> Any:
    """Runs ``parse()``; nesting deeper than Python's stack (a tuple type 3,000 deep)
    becomes a :class:`ParseError` at the token reached, not a ``RecursionError``."""
    try:
        return parse()
    except RecursionError:
        raise p.error("input nested too deeply (types, attributes or regions)") from None


def parse_file(path: str, split: bool = False) -> list[Module]:
    """Parses a file; with ``split``, one module per ``// -----`` chunk."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if not split:
        return [parse_module(text, path)]
    return [parse_module(chunk, path, off) for chunk, off in split_input_file(text)
            if chunk.strip() and _has_code(chunk)]


def _has_code(chunk: str) -> bool:
    return any(line.strip() and not line.strip().startswith("//") for line in chunk.splitlines())


def parse_type(text: str) -> T.Type:
    """Parses a single type, e.g. ``tensor<2x3xf32>``."""
    p = Parser(text)
    t = _guarded(p, p.parse_type)
    if p.tok.kind != "eof":
        raise p.error(f"unexpected '{p.tok.text}' after type")
    return t


_MAIN_HEADER_RE = re.compile(r"^\s*func\.func\s+(?:public\s+)?(?=@main\s*\()", re.MULTILINE)


def parse_main_signature(text: str, filename: str = "<string>") -> T.FunctionType:
    """The type of the entry function of module text, read from its header alone when
    it is written ``func.func [public] @main(...)`` (a large module is not parsed), else
    from the whole module.

    Raises:
        ParseError: malformed text. VerifyError: no entry function.
    """
    m = _MAIN_HEADER_RE.search(text)
    if m is None:
        from oxla.ir.operation import func_type

        return func_type(parse_module(text, filename).main)
    from oxla.ir.syntax_ops import Func

    p = Parser(text, filename)
    p.reset_to(m.end())
    st, _ = _guarded(p, lambda: Func().parse_header(p))
    ft = st.attributes["function_type"].type  # type: ignore[attr-defined]
    assert isinstance(ft, T.FunctionType)
    return ft


def parse_attribute(text: str) -> A.Attribute:
    """Parses a single attribute, e.g. ``dense<1.0> : tensor<f32>``."""
    p = Parser(text)
    a = _guarded(p, p.parse_attribute)
    if p.tok.kind != "eof":
        raise p.error(f"unexpected '{p.tok.text}' after attribute")
    return a


def parse_input_spec(spec: str) -> tuple[tuple[int, ...], T.ElementType | None]:
    """Reads one ``--input-spec`` item: ``4x8:f32``, ``:f32`` (a scalar) or ``4x8`` (no
    element type: the caller's default applies).

    Returns:
        ``(shape, element type or None)``.

    Raises:
        RuntimeInputError: malformed spec.
    """
    from oxla.errors import OxlaError, RuntimeInputError

    dims, _, elem = spec.strip().partition(":")
    bad = [d for d in dims.split("x") if not d.strip().isdigit()] if dims else []
    if bad:
        raise RuntimeInputError(f"invalid input spec '{spec}': dimension '{bad[0]}' is not "
                                "a size; expected e.g. 4x8:f32")
    shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    try:
        t = parse_type(f"tensor<{elem}>") if elem else None
    except OxlaError as exc:  # one line: the spec, not a snippet of tensor<...>
        raise RuntimeInputError(f"invalid input spec '{spec}': '{elem}' is not an element "
                                "type; expected e.g. 4x8:f32") from exc
    if any(d < 0 for d in shape):
        raise RuntimeInputError(f"invalid input spec '{spec}', expected e.g. 4x8:f32")
    return shape, t.element_type if isinstance(t, T.TensorType) else None

