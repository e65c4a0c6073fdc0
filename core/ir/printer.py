"""The MLIR printer: pretty form (as MLIR prints StableHLO) or generic form.

Output is deterministic: SSA values are numbered per function (``%0``, ``%1``...,
block arguments ``%arg0``...), attribute dictionaries are sorted by name, dense
constants with more than 100 elements are printed as hex blobs.
"""

from __future__ import annotations

import re

import numpy as np

from oxla.ir.attributes import (
    ArrayAttr,
    Attribute,
    BoolAttr,
    ConvDimensionNumbers,
    DenseArrayAttr,
    DenseElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    StructAttr,
    UnitAttr,
)
from oxla.ir.dense import encode_hex
from oxla.ir.location import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    Location,
    NameLoc,
    UnknownLoc,
)
from oxla.ir.operation import Block, Module, Operation, Region, Value
from oxla.ir.types import ComplexType, FloatType, IntegerType, QuantizedType, Type

HEX_THRESHOLD = 100
_BARE_ID = re.compile(r"^[A-Za-z_][\w$.]*$")
_BARE_SYM = re.compile(r"^[A-Za-z_][\w$.\-]*$")


def quote_string(s: str) -> str:
    """MLIR string literal: printable ASCII kept, others as ``\\XX`` hex escapes."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= o < 0x7F:
            out.append(ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        else:
            for b in ch.encode("utf-8"):
                out.append(f"\\{b:02X}")
    return '"' + "".join(out) + '"'


def format_symbol(name: str) -> str:
    return "@" + (name if _BARE_SYM.match(name) else quote_string(name))


def format_key(name: str) -> str:
    return name if _BARE_ID.match(name) else quote_string(name)


def format_float(x: float) -> str:
    """A Python float as an MLIR float literal that reads back exactly."""
    return format_float_elem(np.float64(x), FloatType("f64"))


def format_float_elem(v, ft: FloatType) -> str:
    """One float element of type ``ft``: ``%e`` when exact, else shortest, hex for
    non-finite values (as MLIR prints them)."""
    dtype = ft.dtype
    v = np.asarray(v, dtype=dtype)
    f = float(v)
    if not np.isfinite(f):
        bits = int(v.reshape(1).view(_uint(dtype))[0])
        return f"0x{bits:0{dtype.itemsize * 2}X}"
    s = f"{f:e}"
    if _same_bits(np.float64(float(s)).astype(dtype), v):
        return s
    if dtype == np.float32:
        s = np.format_float_scientific(np.float32(f), unique=True, exp_digits=2)
    else:
        s = np.format_float_scientific(np.float64(f), unique=True, exp_digits=2)
    if _same_bits(np.float64(float(s)).astype(dtype), v):
        return s
    bits = int(v.reshape(1).view(_uint(dtype))[0])
    return f"0x{bits:0{dtype.itemsize * 2}X}"


def _uint(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _same_bits(a, b) -> bool:
    a = np.asarray(a).reshape(1)
    b = np.asarray(b).reshape(1)
    return a.view(_uint(a.dtype))[0] == b.view(_uint(b.dtype))[0]


def _format_scalar(v, et) -> str:
    if isinstance(et, IntegerType):
        if et.width == 1:
            return "true" if bool(v) else "false"
        return str(int(v))
    if isinstance(et, QuantizedType):
        return str(int(v))
    if isinstance(et, FloatType):
        return format_float_elem(v, et)
    if isinstance(et, ComplexType):
        ft = et.element_type
        return f"({format_float_elem(v.real, ft)}, {format_float_elem(v.imag, ft)})"
    return str(v)


def format_dense_body(attr: DenseElementsAttr) -> str:
    """The text inside ``dense<...>``."""
    arr = attr.array
    et = attr.type.element_type
    if arr.size == 0:
        return ""
    if attr.is_splat and arr.size >= 1:
        return _format_scalar(arr.reshape(-1)[0], et)
    if arr.size > HEX_THRESHOLD:
        return '"' + encode_hex(arr) + '"'
    flat = [_format_scalar(x, et) for x in arr.reshape(-1)]

    def nest(offset: int, dims: tuple[int, ...]) -> str:
        if not dims:
            return flat[offset]
        step = int(np.prod(dims[1:])) if len(dims) > 1 else 1
        return "[" + ", ".join(nest(offset + i * step, dims[1:]) for i in range(dims[0])) + "]"

    return nest(0, arr.shape)


def _format_field(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple):
        return "[" + ", ".join(_format_field(x) for x in v) + "]"
    return str(v)


_CONV_LETTERS = ("b", "f", "i", "o")


def format_conv_dims(d: ConvDimensionNumbers) -> str:
    """``[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``."""

    def layout(first: int, second: int, spatial, a: str, b: str) -> str:
        n = 2 + len(spatial)
        slots = ["?"] * n
        slots[first] = a
        slots[second] = b
        for k, s in enumerate(spatial):
            slots[s] = str(k)
        return "[" + ", ".join(slots) + "]"

    lhs = layout(d.input_batch_dimension, d.input_feature_dimension,
                 d.input_spatial_dimensions, "b", "f")
    rhs = layout(d.kernel_input_feature_dimension, d.kernel_output_feature_dimension,
                 d.kernel_spatial_dimensions, "i", "o")
    out = layout(d.output_batch_dimension, d.output_feature_dimension,
                 d.output_spatial_dimensions, "b", "f")
    return f"{lhs}x{rhs}->{out}"


def format_attribute(attr: Attribute) -> str:
    """An attribute in MLIR syntax."""
    if isinstance(attr, BoolAttr):
        return "true" if attr.value else "false"
    if isinstance(attr, IntegerAttr):
        if attr.type is None:
            return str(attr.value)
        if isinstance(attr.type, IntegerType) and attr.type.width == 1:
            return "true" if attr.value else "false"
        return f"{attr.value} : {attr.type}"
    if isinstance(attr, FloatAttr):
        ft = attr.type if isinstance(attr.type, FloatType) else FloatType("f64")
        s = format_float_elem(attr.value, ft)
        return s if attr.type is None else f"{s} : {attr.type}"
    if isinstance(attr, ArrayAttr):
        return "[" + ", ".join(format_attribute(a) for a in attr.value) + "]"
    if isinstance(attr, DenseArrayAttr):
        et = attr.element_type
        if not attr.values:
            return f"array<{et}>"
        vals = ", ".join(_format_scalar(v, et) if not isinstance(et, FloatType)
                         else format_float_elem(v, et) for v in attr.values)
        return f"array<{et}: {vals}>"
    if isinstance(attr, DictionaryAttr):
        return format_attr_dict(dict(attr.entries), braces=True) or "{}"
    if isinstance(attr, DenseElementsAttr):
        return f"dense<{format_dense_body(attr)}> : {attr.type}"
    if isinstance(attr, StructAttr):
        if attr.name == "stablehlo.bounds":
            vals = attr.get("bounds", ())
            return "#stablehlo.bounds<" + ", ".join("?" if v is None else str(v)
                                                     for v in vals) + ">"
        body = ", ".join(f"{k} = {_format_field(v)}" for k, v in attr.fields)
        return f"#{attr.name}<{body}>"
    if isinstance(attr, UnitAttr):
        return "unit"
    return str(attr)


def format_attr_dict(attrs: dict[str, Attribute], braces: bool = True) -> str:
    """``{a = 1 : i64, flag}`` sorted by name; '' when empty."""
    if not attrs:
        return ""
    parts = []
    for k in sorted(attrs):
        v = attrs[k]
        parts.append(format_key(k) if isinstance(v, UnitAttr) else
                     f"{format_key(k)} = {format_attribute(v)}")
    body = ", ".join(parts)
    return "{" + body + "}" if braces else body


def format_location(loc: Location) -> str:
    """``loc(...)`` text of a location."""
    return f"loc({_loc_body(loc)})"


def _loc_body(loc: Location) -> str:
    if isinstance(loc, FileLineColLoc):
        return f"{quote_string(loc.file)}:{loc.line}:{loc.col}"
    if isinstance(loc, NameLoc):
        if loc.child is not None:
            return f"{quote_string(loc.name)}({_loc_body(loc.child)})"
        return quote_string(loc.name)
    if isinstance(loc, CallSiteLoc):
        return f"callsite({_loc_body(loc.callee)} at {_loc_body(loc.caller)})"
    if isinstance(loc, FusedLoc):
        meta = f"<{loc.metadata}>" if loc.metadata else ""
        return f"fused{meta}[{', '.join(_loc_body(x) for x in loc.locations)}]"
    if isinstance(loc, UnknownLoc):
        return "unknown"
    return "unknown"


class Printer:
    """Prints operations; used by the pretty syntaxes in :mod:`oxla.ir.syntax`.

    Args:
        generic: print every op in the generic form.
        print_locations: append ``loc(...)`` to every op.
    """

    def __init__(self, generic: bool = False, print_locations: bool = False,
                 elide_constants_over: int | None = None, func_default_dialect: bool = False):
        self.generic = generic
        # MLIR's form: ops of the func dialect print without ``func.`` (``call``, ``return``)
        self.func_default_dialect = func_default_dialect
        self.print_locations = print_locations
        self.elide_constants_over = elide_constants_over
        self.elided: list = []  # the arrays of elided constants, in print order
        self.out: list[str] = []
        self.indent = 0
        self._names: dict[Value, str] = {}
        self._counter = [0]
        self._arg_counter = [0]
        self._live_names: set[str] = set()  # names of region arguments in scope
        self._conflict = [0]  # MLIR's suffix counter for names that clash

    # -- value naming -----------------------------------------------------------
    def name(self, v: Value) -> str:
        n = self._names.get(v)
        if n is None:
            # A value defined outside what is being printed (printing a lone op).
            n = f"%<{id(v):x}>"
        return n

    def _name_results(self, op: Operation) -> None:
        if not op.results:
            return
        k = self._counter[0]
        self._counter[0] += 1
        if len(op.results) == 1:
            self._names[op.results[0]] = f"%{k}"
        else:
            for i, r in enumerate(op.results):
                self._names[r] = f"%{k}#{i}"

    def scoped_names(self, base: str, n: int) -> list[str]:
        """``n`` names for region arguments, as MLIR uniques them: ``base``, then
        ``base_K`` with one counter for every clash (``%iterArg``, ``%iterArg_0``);
        unique among the names in scope. :meth:`release_names` ends their scope."""
        out = []
        for _ in range(n):
            cand = base
            while cand in self._live_names:
                cand = f"{base}_{self._conflict[0]}"
                self._conflict[0] += 1
            self._live_names.add(cand)
            out.append(cand)
        return out

    def release_names(self, names: list[str]) -> None:
        self._live_names.difference_update(names)

    def name_block_args(self, block: Block) -> None:
        for a in block.args:
            self._names[a] = f"%arg{self._arg_counter[0]}"
            self._arg_counter[0] += 1

    def op_name(self, op: Operation) -> str:
        """The op's name as printed (``func.`` dropped with ``func_default_dialect``)."""
        if self.func_default_dialect and op.name in ("func.call", "func.return"):
            return op.name[5:]
        return op.name

    def operands(self, values) -> str:
        return ", ".join(self.name(v) for v in values)

    # -- output -----------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.out.append(text)

    def newline(self) -> None:
        self.out.append("\n" + "  " * self.indent)

    def result_prefix(self, op: Operation) -> str:
        if not op.results:
            return ""
        first = self._names[op.results[0]]
        if len(op.results) == 1:
            return f"{first} = "
        return f"{first.split('#')[0]}:{len(op.results)} = "

    def print_op(self, op: Operation) -> None:
        from oxla.ir.opdef import lookup_opdef

        if op.name == "builtin.module":
            self._print_module_op(op)
            return
        self._name_results(op)
        self.emit(self.result_prefix(op))
        od = lookup_opdef(op.name)
        if not self.generic and od is not None and od.syntax is not None:
            od.syntax.print(self, op)
        else:
            self.print_generic(op)
        if self.print_locations:
            self.emit(" " + format_location(op.loc))

    def print_generic(self, op: Operation) -> None:
        from oxla.ir.opdef import lookup_opdef

        od = lookup_opdef(op.name)
        self.emit(f"{quote_string(op.name)}({self.operands(op.operands)})")
        props = {k: v for k, v in op.attributes.items() if od is not None and od.is_inherent(k)}
        rest = {k: v for k, v in op.attributes.items() if k not in props}
        if props:
            self.emit(" <" + format_attr_dict(props) + ">")
        if op.regions:
            self.emit(" (")
            for i, r in enumerate(op.regions):
                if i:
                    self.emit(", ")
                self.print_region(r, print_entry_args=True)
            self.emit(")")
        if rest:
            self.emit(" " + format_attr_dict(rest))
        ins = ", ".join(str(t) for t in op.operand_types)
        outs = ", ".join(str(t) for t in op.result_types)
        if len(op.results) == 1 and not str(op.results[0].type).startswith("("):
            self.emit(f" : ({ins}) -> {outs}")
        else:
            self.emit(f" : ({ins}) -> ({outs})")

    def print_region(self, region: Region, print_entry_args: bool = True) -> None:
        self.emit("{")
        self.indent += 1
        for bi, block in enumerate(region.blocks):
            self.name_block_args(block)
            if print_entry_args and (block.args or bi > 0):
                self.newline()
                self.indent -= 1
                self.emit(f"  ^bb{bi}")
                if block.args:
                    args = ", ".join(f"{self.name(a)}: {a.type}" for a in block.args)
                    self.emit(f"({args})")
                self.emit(":")
                self.indent += 1
            for op in block.ops:
                self.newline()
                self.print_op(op)
        self.indent -= 1
        self.newline()
        self.emit("}")

    def _print_module_op(self, op: Operation) -> None:
        from oxla.ir.attributes import StringAttr

        self.emit("module")
        name = op.attributes.get("sym_name")
        if isinstance(name, StringAttr):
            self.emit(" " + format_symbol(name.value))
        rest = {k: v for k, v in op.attributes.items() if k != "sym_name"}
        if rest:
            self.emit(" attributes " + format_attr_dict(rest))
        self.emit(" {")
        self.indent += 1
        for inner in op.regions[0].block.ops:
            self.newline()
            saved = (self._counter[0], self._arg_counter[0])
            self._counter[0], self._arg_counter[0] = 0, 0
            self.print_op(inner)
            self._counter[0], self._arg_counter[0] = saved
        self.indent -= 1
        self.newline()
        self.emit("}")

    def text(self) -> str:
        return "".join(self.out)


def print_module(module: Module, generic: bool = False, print_locations: bool = False,
                 elide_constants_over: int | None = None,
                 func_default_dialect: bool = False) -> str:
    """Prints a module as MLIR text (pretty unless ``generic``), ending in a newline.

    Args:
        elide_constants_over: constants larger than this many bytes print as
            ``dense_resource<__elided__>`` (MLIR's convention for elided data): for
            summaries of programs whose weights are stored elsewhere; such text does not
            parse back.
        func_default_dialect: print ``func.call``/``func.return`` as ``call``/``return``,
            as MLIR does inside a ``func.func`` (text compared with MLIR tools' output).
    """
    return print_module_elided(module, elide_constants_over, generic, print_locations,
                               func_default_dialect)[0]


def print_module_elided(module: Module, elide_constants_over: int | None,
                        generic: bool = False, print_locations: bool = False,
                        func_default_dialect: bool = False) -> tuple[str, list]:
    """:func:`print_module` with constants over ``elide_constants_over`` bytes elided,
    and the numpy arrays of the elided constants in the order they were printed: the
    text and those arrays' bytes together say everything about the module (the compile
    cache hashes them instead of printing the weights)."""
    p = Printer(generic=generic, print_locations=print_locations,
                elide_constants_over=elide_constants_over,
                func_default_dialect=func_default_dialect)
    p.print_op(module.op)
    return p.text() + "\n", p.elided


def print_op(op: Operation, generic: bool = False) -> str:
    """Prints one op (and its regions); values defined outside are shown as ``%<id>``."""
    p = Printer(generic=generic)
    p.print_op(op)
    return p.text()


def print_op_as_function(op: Operation, name: str) -> str:
    """``op`` (and its regions) as the body of ``func.func @name``, whose arguments are
    its operands' types and whose results are its results, in generic form: a text that
    :func:`~oxla.ir.parse_module` reads back to an equal op without its context (an
    artifact keeps the host-staged ops of a GPU program this way)."""
    p = Printer(generic=True)
    args = [f"%h{i}: {v.type}" for i, v in enumerate(op.operands)]
    for i, v in enumerate(op.operands):  # (an operand used twice: its first argument)
        p._names.setdefault(v, f"%h{i}")
    p.indent = 1
    p.print_op(op)
    body = "  " + p.text().lstrip()
    results = [p._names[r] for r in op.results]
    types = ", ".join(str(r.type) for r in op.results)
    ret = (f"  func.return {', '.join(results)} : {types}\n" if results
           else "  func.return\n")
    return (f"func.func @{name}({', '.join(args)}) -> ({types}) {{\n{body.rstrip()}\n"
            f"{ret}}}\n")


def print_type(t: Type) -> str:
    return str(t)
