"""Parsing of types, attributes and locations (the part of :class:`oxla.ir.parser.Parser`
that reads no operations). Grammar productions are quoted in each method's docstring."""

from __future__ import annotations

import re

import numpy as np

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.dense import DenseLiteralError, decode_hex, decode_literal
from oxla.ir.lexer import Token
from oxla.ir.location import (
    UNKNOWN,
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Location,
    NameLoc,
)

_INT_TYPE_RE = re.compile(r"^(u|s)?i(\d+)$")
# Fast path for the common ``tensor<2x?x3xf32>`` (no encoding, plain element type).
_SIMPLE_TENSOR_RE = re.compile(r"tensor<((?:(?:\d+|\?)x)*)([A-Za-z][A-Za-z0-9]*)>")
_SIMPLE_TENSOR_CACHE: dict[str, T.TensorType] = {}
MAX_DIM = (1 << 62) - 1
"""Largest static dimension size accepted (sizes must fit int64 with room to multiply)."""
MAX_CONSTANT_BYTES = 16 << 30
"""Largest dense constant the parser materializes (bytes)."""
_ESCAPE_RE = re.compile(r"\\([0-9A-Fa-f]{2}|.)")


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    out = bytearray()
    i = 0
    raw = body.encode("utf-8")
    while i < len(raw):
        c = raw[i]
        if c == 0x5C and i + 1 < len(raw):
            nxt = raw[i + 1 : i + 3]
            if re.match(rb"[0-9A-Fa-f]{2}", nxt):
                out.append(int(nxt, 16))
                i += 3
                continue
            esc = chr(raw[i + 1])
            out.extend({"n": b"\n", "t": b"\t"}.get(esc, esc.encode()))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", errors="replace")




class TypeAttrParserMixin:
    """Type, attribute and location productions; mixed into the op parser."""

    # -- types ----------------------------------------------------------------------
    def parse_type(self) -> T.Type:
        """``type ::= builtin-type | dialect-type | function-type``"""
        t = self.parse_optional_type()
        if t is None:
            raise self.error(f"expected a type, got '{self.tok.text or 'end of input'}'")
        return t

    def parse_optional_type(self) -> T.Type | None:
        tok = self.tok
        if tok.kind == "ident":
            word = tok.text
            if word == "tensor":
                return self._parse_tensor_type()
            if word == "tuple":
                self.advance()
                self.expect("<")
                types: list[T.Type] = []
                if not self.at(">"):
                    types.append(self.parse_type())
                    while self.consume_if(","):
                        types.append(self.parse_type())
                self.expect(">")
                return T.TupleType(tuple(types))
            if word == "complex":
                self.advance()
                self.expect("<")
                et = self.parse_type()
                self.expect(">")
                if not isinstance(et, T.FloatType):
                    raise self.error("complex element type must be a float type", tok)
                return T.ComplexType(et)
            et = self._element_type_from_word(word)
            if et is not None:
                self.advance()
                return et
            return None
        if tok.kind == "bang":
            return self._parse_dialect_type()
        if tok.kind == "punct" and tok.text == "(":
            return self.parse_function_type()
        if tok.kind == "hash":
            return None
        return None

    def _element_type_from_word(self, word: str) -> T.Type | None:
        m = _INT_TYPE_RE.match(word)
        if m:
            width = int(m.group(2))
            if width not in (1, 2, 4, 8, 16, 32, 64):
                return None
            return T.IntegerType(width, unsigned=m.group(1) == "u")
        if word in T.FLOAT_TYPE_NAMES:
            return T.FloatType(word)
        if word == "index":
            return T.IndexType()
        if word == "none":
            return T.NoneType()
        if word in self.type_aliases:
            return self.type_aliases[word]
        return None

    def _parse_tensor_type(self) -> T.Type:
        """``tensor-type ::= `tensor` `<` (dim `x`)* element-type (`,` encoding)? `>```"""
        m = _SIMPLE_TENSOR_RE.match(self.lex.text, self.tok.start)
        if m is not None:
            key = m.group()
            t = _SIMPLE_TENSOR_CACHE.get(key)
            if t is None and m.group(2) not in self.type_aliases:
                et = self._element_type_from_word(m.group(2))
                if isinstance(et, T.ElementType):
                    dims = [None if d == "?" else int(d) for d in m.group(1).split("x")[:-1]]
                    # Oversized dims take the slow path, which reports them.
                    t = None if any(d is not None and d > MAX_DIM for d in dims) else \
                        T.TensorType(tuple(dims), et)
                    if len(_SIMPLE_TENSOR_CACHE) < 4096:
                        _SIMPLE_TENSOR_CACHE[key] = t
            if t is not None:
                self.reset_to(m.end())
                return t
        self.advance()
        lt = self.expect("<")
        shape: list[int | None] = []
        if self.at("*"):
            self.advance()
            self._expect_x()
            et = self.parse_type()
            self.expect(">")
            return T.UnrankedTensorType(et)  # type: ignore[arg-type]
        while True:
            tok = self.tok
            if tok.kind == "int":
                self.advance()
                dim = int(tok.text)
                if dim > MAX_DIM:
                    raise self.error(f"dimension size {dim} is too large (at most {MAX_DIM})",
                                     tok)
                shape.append(dim)
                self._expect_x()
            elif tok.kind == "punct" and tok.text == "?":
                self.advance()
                shape.append(None)
                self._expect_x()
            elif tok.kind == "hex":
                # `0x6` / `0xf32` in a dimension list: a zero-sized dim, then `x...`.
                shape.append(0)
                self.reset_to(tok.start + 1)
                self._expect_x()
            else:
                break
        et = self.parse_type()
        if not isinstance(et, T.ElementType):
            raise self.error(f"invalid tensor element type '{et}'", lt)
        enc = None
        if self.consume_if(","):
            enc = self.parse_attribute()
        self.expect(">")
        return T.TensorType(tuple(shape), et, enc)

    def _expect_x(self) -> None:
        tok = self.tok
        if tok.kind == "ident" and tok.text.startswith("x"):
            if tok.text == "x":
                self.advance()
            else:
                self.reset_to(tok.start + 1)
            return
        raise self.error(f"expected 'x' in dimension list, got '{tok.text}'")

    def _balanced_text(self) -> str:
        """Consumes a ``<...>`` group and returns its raw text (including brackets)."""
        start_tok = self.expect("<")
        depth = 1
        while depth:
            if self.tok.kind == "eof":
                raise self.error("unbalanced '<' in dialect attribute or type", start_tok)
            if self.at("<"):
                depth += 1
            elif self.at(">"):
                depth -= 1
            end = self.tok.end
            self.advance()
        return self.lex.text[start_tok.start:end]

    def _parse_dialect_type(self) -> T.Type:
        tok = self.advance()
        name = tok.text
        if name == "!stablehlo.token":
            return T.TokenType()
        if name == "!quant.uniform":
            return self._parse_quant_body(tok)
        if name in self.type_aliases:
            return self.type_aliases[name]
        text = name
        if self.at("<") and self.tok.start == tok.end:
            text += self._balanced_text()
        return T.OpaqueType(text)

    def _parse_quant_body(self, tok: Token) -> T.QuantizedType:
        """``!quant.uniform<i8<-127:127>:f32:1, {0.1:0, 0.2:1}>``"""
        self.expect("<")
        st = self.parse_type()
        if not isinstance(st, T.IntegerType):
            raise self.error("quantized storage type must be an integer type", tok)
        smin, smax, explicit = st.min_value, st.max_value, False
        if self.consume_if("<"):
            smin = self.parse_integer()
            self.expect(":")
            smax = self.parse_integer()
            self.expect(">")
            explicit = True
        self.expect(":")
        et = self.parse_type()
        if not isinstance(et, T.FloatType):
            raise self.error("quantized expressed type must be a float type", tok)
        axis = None
        if self.consume_if(":"):
            axis = self.parse_integer()
        self.expect(",")
        scales, zps = [], []
        if axis is not None:
            self.expect("{")
            while True:
                s, z = self._parse_scale_zp()
                scales.append(s)
                zps.append(z)
                if not self.consume_if(","):
                    break
            self.expect("}")
        else:
            s, z = self._parse_scale_zp()
            scales.append(s)
            zps.append(z)
        self.expect(">")
        return T.QuantizedType(st, et, tuple(scales), tuple(zps), smin, smax, axis, explicit)

    def _parse_scale_zp(self) -> tuple[float, int]:
        scale = self.parse_float()
        zp = 0
        if self.consume_if(":"):
            zp = self.parse_integer()
        return scale, zp

    def parse_float(self) -> float:
        neg = self.consume_if("-")
        tok = self.tok
        if tok.kind == "float" or tok.kind == "int":
            self.advance()
            v = float(tok.text)
        elif tok.kind == "hex":
            self.advance()
            v = float(np.array([int(tok.text, 16)], dtype=np.uint64).view(np.float64)[0])
        else:
            raise self.error(f"expected a float, got '{tok.text or 'end of input'}'")
        return -v if neg else v

    def parse_function_type(self) -> T.FunctionType:
        """``function-type ::= `(` type-list `)` `->` (type | `(` type-list `)`)``"""
        self.expect("(")
        ins = self._parse_type_list_until(")")
        self.expect("->")
        if self.at("("):
            # Either a parenthesized result list or a function type as the single result.
            save = self.tok.start
            self.advance()
            outs = self._parse_type_list_until(")")
            if self.at("->"):
                self.reset_to(save)
                outs = [self.parse_function_type()]
        else:
            outs = [self.parse_type()]
        return T.FunctionType(tuple(ins), tuple(outs))

    def _parse_type_list_until(self, close: str) -> list[T.Type]:
        types: list[T.Type] = []
        if self.consume_if(close):
            return types
        types.append(self.parse_type())
        while self.consume_if(","):
            types.append(self.parse_type())
        self.expect(close)
        return types

    def parse_type_list(self) -> list[T.Type]:
        """``type (`,` type)*`` without parentheses."""
        types = [self.parse_type()]
        while self.at(",") and self._peek_starts_type():
            self.advance()
            types.append(self.parse_type())
        return types

    def _peek_starts_type(self) -> bool:
        save = self.lex.pos
        nxt = self.lex.next()
        self.lex.pos = save
        return nxt.kind in ("ident", "bang") or nxt.text == "("

    # -- attributes -----------------------------------------------------------------
    def parse_attribute(self, type_hint: T.Type | None = None) -> A.Attribute:
        """``attribute-value`` (builtin attributes, dialect attributes, aliases)."""
        tok = self.tok
        k, text = tok.kind, tok.text
        if k == "ident":
            if text == "dense":
                return self._parse_dense()
            if text == "dense_resource":
                return self._parse_dense_resource()
            if text == "array":
                return self._parse_dense_array()
            if text in ("true", "false"):
                self.advance()
                return A.BoolAttr(text == "true")
            if text == "unit":
                self.advance()
                return A.UnitAttr()
            if text == "loc":
                start = self.tok.start
                self.parse_location()
                return A.LocationAttr(self.lex.text[start:self.tok.start].strip())
            t = self.parse_optional_type()
            if t is not None:
                return A.TypeAttr(t)
            raise self.error(f"unknown attribute '{text}'")
        if k in ("int", "hex", "float") or (k == "punct" and text == "-"):
            return self._parse_number_attr()
        if k == "string":
            s = self.parse_string()
            if self.at(":") and self._peek_starts_type():
                self.advance()
                self.parse_type()
            return A.StringAttr(s)
        if k == "punct" and text == "[":
            self.advance()
            items: list[A.Attribute] = []
            if not self.at("]"):
                items.append(self.parse_attribute())
                while self.consume_if(","):
                    items.append(self.parse_attribute())
            self.expect("]")
            return A.ArrayAttr(tuple(items))
        if k == "punct" and text == "{":
            return A.DictionaryAttr(tuple(self.parse_attr_dict().items()))
        if k == "at":
            return self._parse_symbol_ref()
        if k == "hash":
            return self._parse_hash_attr()
        if k == "bang" or (k == "punct" and text == "("):
            return A.TypeAttr(self.parse_type())
        raise self.error(f"expected an attribute, got '{text or 'end of input'}'")

    def _parse_number_attr(self) -> A.Attribute:
        neg = self.consume_if("-")
        tok = self.advance()
        if tok.kind not in ("int", "hex", "float"):
            raise self.error(f"expected a number, got '{tok.text}'", tok)
        ty = None
        if self.at(":"):
            self.advance()
            ty = self.parse_type()
        if tok.kind == "float" or isinstance(ty, T.FloatType):
            if tok.kind == "hex" and isinstance(ty, T.FloatType):
                bits = np.array([int(tok.text, 16)], dtype=np.uint64)
                dt = ty.dtype
                v = float(bits.astype(f"u{dt.itemsize}").view(dt)[0])
            else:
                v = float(tok.text) if tok.kind != "hex" else float(int(tok.text, 16))
            return A.FloatAttr(-v if neg else v, ty)
        v = int(tok.text, 16) if tok.kind == "hex" else int(tok.text)
        return A.IntegerAttr(-v if neg else v, ty)

    def _parse_symbol_ref(self) -> A.SymbolRefAttr:
        root = self.parse_symbol_name()
        nested = []
        while self.at("::"):
            self.advance()
            nested.append(self.parse_symbol_name())
        return A.SymbolRefAttr(root, tuple(nested))

    def parse_symbol_name(self) -> str:
        tok = self.tok
        if tok.kind != "at":
            raise self.error(f"expected a symbol name '@...', got '{tok.text or 'end of input'}'")
        self.advance()
        body = tok.text[1:]
        return _unescape(body[1:-1]) if body.startswith('"') else body

    def parse_attr_dict(self) -> dict[str, A.Attribute]:
        """``attr-dict ::= `{` (name (`=` attribute)?)* `}```"""
        self.expect("{")
        out: dict[str, A.Attribute] = {}
        if self.consume_if("}"):
            return out
        while True:
            tok = self.tok
            if tok.kind == "string":
                key = self.parse_string()
            elif tok.kind == "ident":
                key = self.advance().text
            else:
                raise self.error(f"expected an attribute name, got '{tok.text}'")
            if key in out:
                raise self.error(f"duplicate attribute '{key}'", tok)
            if self.consume_if("="):
                out[key] = self.parse_attribute()
            else:
                out[key] = A.UnitAttr()
            if self.consume_if("}"):
                return out
            self.expect(",", "or '}' in attribute dictionary")

    def parse_optional_attr_dict(self) -> dict[str, A.Attribute]:
        if self.at("{"):
            return self.parse_attr_dict()
        return {}

    def _parse_dense(self) -> A.DenseElementsAttr:
        """``dense<literal> : tensor-type``; the literal is sliced out and decoded in bulk."""
        start_tok = self.advance()
        if not self.at("<"):
            raise self.error("expected '<' after 'dense'")
        text = self.lex.text
        body_start = self.tok.end
        # Find the matching '>' (dense bodies hold no '<'; strings hold no '>').
        q0 = -1
        if text.startswith('"', body_start) or text[body_start:body_start + 64].lstrip().startswith('"'):
            q0 = text.find('"', body_start)
            q1 = text.find('"', q0 + 1)
            body_end = text.find(">", q1) if q1 >= 0 else -1
        else:
            body_end = text.find(">", body_start)
        if body_end < 0:
            raise self.error("unterminated dense literal: expected '>'", start_tok)
        body = text[body_start:body_end].strip()
        self.reset_to(body_end + 1)
        self.expect(":", "and a type after dense literal")
        ty_tok = self.tok
        ty = self.parse_type()
        if not isinstance(ty, T.TensorType):
            raise self.error(f"dense elements need a tensor type, got {ty}", ty_tok)
        if not ty.is_static or ty.num_elements * ty.element_type.dtype.itemsize > MAX_CONSTANT_BYTES:
            size = "a dynamic shape" if not ty.is_static else f"{ty.num_elements} elements"
            raise self.error(f"dense constant of type {ty} has {size}: constants are limited "
                             f"to {MAX_CONSTANT_BYTES >> 30} GiB", start_tok)
        try:
            if body.startswith('"'):
                arr = decode_hex(body[1:-1], ty)
            elif body == "":
                arr = np.zeros(ty.shape, dtype=ty.element_type.dtype)
            else:
                arr = decode_literal(body, ty)
        except DenseLiteralError as e:
            raise self.error(str(e), start_tok) from None
        return A.DenseElementsAttr(ty, arr)

    def _parse_dense_resource(self) -> A.Attribute:
        start_tok = self.advance()
        self.expect("<")
        name_tok = self.advance()
        self.expect(">")
        self.expect(":")
        ty = self.parse_type()
        if not isinstance(ty, T.TensorType) or not ty.is_static:
            raise self.error(f"dense_resource needs a static tensor type, got {ty}", start_tok)
        attr = A.DenseElementsAttr(ty, np.zeros(ty.shape, dtype=ty.element_type.dtype))
        self._pending_resources.append((attr, name_tok.text, start_tok))
        return attr

    def _parse_dense_array(self) -> A.DenseArrayAttr:
        """``array<i64: 1, 2>`` or ``array<i64>``"""
        self.advance()
        self.expect("<")
        et = self.parse_type()
        vals: list = []
        if self.consume_if(":"):
            while True:
                if isinstance(et, T.IntegerType) and et.width == 1:
                    w = self.expect_ident("true or false")
                    vals.append(w == "true")
                elif isinstance(et, T.FloatType):
                    vals.append(self.parse_float())
                else:
                    vals.append(self.parse_integer())
                if not self.consume_if(","):
                    break
        self.expect(">")
        return A.DenseArrayAttr(et, tuple(vals))  # type: ignore[arg-type]

    def _parse_hash_attr(self) -> A.Attribute:
        tok = self.advance()
        name = tok.text[1:]
        if name in self.attr_aliases and not (self.at("<") and self.tok.start == tok.end):
            return self.attr_aliases[name]
        if not (self.at("<") and self.tok.start == tok.end):
            raise self.error(f"undefined attribute alias '#{name}'", tok)
        from oxla.ir.dialect_attrs import parse_dialect_attribute

        return parse_dialect_attribute(self, name, tok)

    # -- locations ------------------------------------------------------------------
    def parse_optional_location(self) -> Location | None:
        """``trailing-location ::= `loc` `(` location `)```"""
        if not (self.tok.kind == "ident" and self.tok.text == "loc"):
            return None
        return self.parse_location()

    def parse_location(self) -> Location:
        self.expect("loc")
        self.expect("(")
        loc = self._parse_location_body()
        self.expect(")")
        return loc

    def _parse_location_body(self) -> Location:
        tok = self.tok
        if tok.kind == "hash":
            self.advance()
            alias = tok.text[1:]
            if alias in self.loc_aliases:
                return self.loc_aliases[alias]
            return NameLoc("#" + alias)
        if tok.kind == "ident" and tok.text == "unknown":
            self.advance()
            return UNKNOWN
        if tok.kind == "ident" and tok.text == "callsite":
            self.advance()
            self.expect("(")
            callee = self._parse_location_body()
            self.expect("at")
            caller = self._parse_location_body()
            self.expect(")")
            return CallSiteLoc(callee, caller)
        if tok.kind == "ident" and tok.text == "fused":
            self.advance()
            meta = None
            if self.at("<"):
                meta = self._balanced_text()[1:-1]
            self.expect("[")
            locs = []
            if not self.at("]"):
                locs.append(self._parse_location_body())
                while self.consume_if(","):
                    locs.append(self._parse_location_body())
            self.expect("]")
            return FusedLoc(tuple(locs), meta)
        if tok.kind == "string":
            name = self.parse_string()
            if self.consume_if(":"):
                line = self.parse_integer()
                col = 0
                if self.consume_if(":"):
                    col = self.parse_integer()
                if self.tok.kind == "ident" and self.tok.text == "to":
                    self.advance()
                    if self.consume_if(":"):
                        self.parse_integer()
                    else:
                        self.parse_integer()
                        if self.consume_if(":"):
                            self.parse_integer()
                return FileLineColLoc(name, line, col)
            child = None
            if self.consume_if("("):
                child = self._parse_location_body()
                self.expect(")")
            return NameLoc(name, child)
        raise self.error(f"expected a location, got '{tok.text}'")

