"""Attributes: compile-time constant data attached to operations.

Builtin MLIR attributes (integers, floats, strings, arrays, dictionaries, dense
elements, symbol references, types, units) and the StableHLO attribute kinds
(enums such as ``#stablehlo<comparison_direction LT>``, dimension-number structs such
as ``#stablehlo.dot<...>``, and ``#stablehlo.conv<...>``). Attributes of dialects oxla
does not interpret (``#sdy.*``, ...) are kept as :class:`OpaqueAttr` and printed back
verbatim. All attributes are frozen dataclasses, equal by value.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.ir.types import (
    ComplexType,
    ElementType,
    FloatType,
    IntegerType,
    TensorType,
    Type,
)


class Attribute:
    """Base class of all attributes."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class UnitAttr(Attribute):
    """A present-or-absent flag (``unit``)."""

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True, slots=True)
class BoolAttr(Attribute):
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class IntegerAttr(Attribute):
    """``5 : i64``; ``type`` None means MLIR's default (i64 when printed)."""

    value: int
    type: Type | None = None

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)


@dataclass(frozen=True, slots=True)
class FloatAttr(Attribute):
    """``1.5 : f32``; ``type`` None means f64."""

    value: float
    type: Type | None = None

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)


@dataclass(frozen=True, slots=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        from oxla.ir.printer import quote_string

        return quote_string(self.value)


@dataclass(frozen=True, slots=True)
class TypeAttr(Attribute):
    type: Type

    def __str__(self) -> str:
        return str(self.type)


@dataclass(frozen=True, slots=True)
class SymbolRefAttr(Attribute):
    """``@name`` or ``@outer::@inner``."""

    root: str
    nested: tuple[str, ...] = ()

    def __str__(self) -> str:
        from oxla.ir.printer import format_symbol

        return "::".join(format_symbol(s) for s in (self.root, *self.nested))


@dataclass(frozen=True, slots=True)
class ArrayAttr(Attribute):
    """``[a, b, c]``."""

    value: tuple[Attribute, ...]

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)

    def __iter__(self):
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, i):
        return self.value[i]


@dataclass(frozen=True, slots=True)
class DenseArrayAttr(Attribute):
    """``array<i64: 1, 2, 3>`` (MLIR's DenseI64ArrayAttr and friends)."""

    element_type: ElementType
    values: tuple[Any, ...]

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)

    def __iter__(self):
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i):
        return self.values[i]


@dataclass(frozen=True, slots=True)
class DictionaryAttr(Attribute):
    """``{a = 1, b}``: entries kept sorted by name, as MLIR does."""

    entries: tuple[tuple[str, Attribute], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(sorted(self.entries, key=lambda kv: kv[0])))

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)

    def get(self, key: str, default: Attribute | None = None) -> Attribute | None:
        for k, v in self.entries:
            if k == key:
                return v
        return default

    def as_dict(self) -> dict[str, Attribute]:
        return dict(self.entries)


@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True)
class DenseElementsAttr(Attribute):
    """``dense<...> : tensor<...>``: a constant tensor held as a numpy array.

    ``array`` has the dtype of ``type.element_type`` (storage dtype for quantized types)
    and ``type``'s shape. Equality compares type and bytes.
    """

    type: TensorType
    array: np.ndarray = field(repr=False)
    # is_splat's answer, computed once: passes ask it of the same constant many times
    # (BERT at batch 8: 2,800 scans of 12 MB GELU constants, 9 s of a 19 s compile).
    _splat: bool | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        arr = self.array
        if tuple(arr.shape) != self.type.shape:
            raise ValueError(f"dense elements of shape {arr.shape} do not match {self.type}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DenseElementsAttr):
            return NotImplemented
        return (
            self.type == other.type
            and self.array.dtype == other.array.dtype
            and self.array.tobytes() == other.array.tobytes()
        )

    def __hash__(self) -> int:
        # The first 256 bytes, without copying the whole array first (GPT-2's CSE hashed
        # every weight: 0.7 s a compile).
        return hash((self.type, self.array.reshape(-1)[:256].tobytes()[:256]))

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)

    @property
    def is_splat(self) -> bool:
        """True when every element has the bit pattern of the first (NaN and -0.0 count
        as themselves); computed once per attribute."""
        if self._splat is None:
            object.__setattr__(self, "_splat", self._scan_splat())
        return self._splat  # type: ignore[return-value]

    def _scan_splat(self) -> bool:
        a = self.array
        if a.size <= 1:
            return True
        flat = a.reshape(-1)
        view = flat.view(np.uint8).reshape(flat.size, -1)
        # Weights differ within their first elements: answer without scanning them all
        # (GPT-2's fusion and codegen asked this of every weight, 1.6 s a compile).
        if not (view[:16] == view[0]).all():
            return False
        return bool((view == view[0]).all())


@dataclass(frozen=True, slots=True)
class EnumAttr(Attribute):
    """``#stablehlo<comparison_direction LT>``: a dialect enum.

    ``kind`` is the enum's mnemonic (``comparison_direction``, ``precision``, ...).
    """

    dialect: str
    kind: str
    value: str

    def __str__(self) -> str:
        return f"#{self.dialect}<{self.kind} {self.value}>"


@dataclass(frozen=True, slots=True)
class StructAttr(Attribute):
    """``#stablehlo.dot<lhs_batching_dimensions = [0], ...>`` and the like.

    ``name`` is the full mnemonic (``stablehlo.dot``); ``fields`` keep the text's order.
    Field values are Python ints, bools, tuples of ints, types or attributes.
    """

    name: str
    fields: tuple[tuple[str, Any], ...]

    def __str__(self) -> str:
        from oxla.ir.printer import format_attribute

        return format_attribute(self)

    def get(self, key: str, default: Any = None) -> Any:
        for k, v in self.fields:
            if k == key:
                return v
        return default


@dataclass(frozen=True, slots=True)
class ConvDimensionNumbers(Attribute):
    """``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``.

    Spec: ``convolution`` attributes ``input_batch_dimension`` ... ``output_spatial_dimensions``.
    """

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple[int, ...]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple[int, ...]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple[int, ...]

    def __str__(self) -> str:
        from oxla.ir.printer import format_conv_dims

        return f"#stablehlo.conv<{format_conv_dims(self)}>"


@dataclass(frozen=True, slots=True)
class OpaqueAttr(Attribute):
    """An attribute of a dialect oxla does not model, kept as its exact text."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class LocationAttr(Attribute):
    """A location used as an attribute value (rare; kept for round trips)."""

    text: str

    def __str__(self) -> str:
        return self.text


# ---------------------------------------------------------------------------
# Helpers to read attribute values as Python data.


def to_python(attr: Attribute | None) -> Any:
    """Converts an attribute to plain Python data: ints, floats, bools, str, tuples.

    DenseArrayAttr and ArrayAttr of ints become tuples; DenseElementsAttr becomes its
    numpy array; enums their value string; unit attrs True; None stays None.
    """
    if attr is None:
        return None
    if isinstance(attr, BoolAttr | IntegerAttr | FloatAttr | StringAttr):
        return attr.value
    if isinstance(attr, DenseArrayAttr):
        return tuple(attr.values)
    if isinstance(attr, ArrayAttr):
        return tuple(to_python(a) for a in attr.value)
    if isinstance(attr, DenseElementsAttr):
        return attr.array
    if isinstance(attr, EnumAttr):
        return attr.value
    if isinstance(attr, UnitAttr):
        return True
    if isinstance(attr, TypeAttr):
        return attr.type
    return attr


def i64_array(values) -> DenseArrayAttr:
    """``array<i64: ...>`` from a sequence of ints."""
    return DenseArrayAttr(IntegerType(64), tuple(int(v) for v in values))


def bool_array(values) -> DenseArrayAttr:
    """``array<i1: true, false>``."""
    return DenseArrayAttr(IntegerType(1), tuple(bool(v) for v in values))


def i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), IntegerType(64))


def i32_attr(value: int) -> IntegerAttr:
    return IntegerAttr(int(value), IntegerType(32))


_SPLATS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def splat(value: Any, type: TensorType) -> DenseElementsAttr:
    """A DenseElementsAttr of static ``type`` with every element ``value`` (cast to the
    element type), known to be a splat without a scan.

    Equal requests share one attribute while it is alive (attributes are immutable): a
    polynomial expanded per layer asked for the same [8, 128, 3072] coefficient 12 times
    (BERT's erf: 2 GB of constants built and scanned).
    """
    et = type.element_type
    dtype = et.dtype
    one = np.asarray(value).astype(dtype).reshape(-1)[:1]
    key = (type, one.tobytes())
    attr = _SPLATS.get(key)
    if attr is None:
        attr = DenseElementsAttr(type, np.full(type.shape, one[0], dtype=dtype))
        object.__setattr__(attr, "_splat", True)
        _SPLATS[key] = attr
    return attr


def dense(array: np.ndarray, type: TensorType | None = None) -> DenseElementsAttr:
    """A DenseElementsAttr from a numpy array (type inferred from the dtype when omitted)."""
    from oxla.ir.types import element_type_from_dtype

    array = np.asarray(array)
    if type is None:
        type = TensorType(tuple(array.shape), element_type_from_dtype(array.dtype))
    et = type.element_type
    storage = et.dtype
    if array.dtype != storage:
        array = array.astype(storage)
    return DenseElementsAttr(type, np.ascontiguousarray(array).reshape(array.shape))


def enum(kind: str, value: str) -> EnumAttr:
    """``#stablehlo<kind VALUE>``."""
    return EnumAttr("stablehlo", kind, value)


def struct(name: str, **fields: Any) -> StructAttr:
    """``#name<k = v, ...>``; tuple fields are int lists."""
    return StructAttr(name, tuple(fields.items()))


def dot_dimension_numbers(
    lhs_batching=(), rhs_batching=(), lhs_contracting=(), rhs_contracting=()
) -> StructAttr:
    """``#stablehlo.dot<...>`` with the spec's four dimension lists (empty ones omitted)."""
    fields = []
    for k, v in (
        ("lhs_batching_dimensions", lhs_batching),
        ("rhs_batching_dimensions", rhs_batching),
        ("lhs_contracting_dimensions", lhs_contracting),
        ("rhs_contracting_dimensions", rhs_contracting),
    ):
        if len(v):
            fields.append((k, tuple(int(x) for x in v)))
    return StructAttr("stablehlo.dot", tuple(fields))


__all__ = [
    "Attribute",
    "UnitAttr",
    "BoolAttr",
    "IntegerAttr",
    "FloatAttr",
    "StringAttr",
    "TypeAttr",
    "SymbolRefAttr",
    "ArrayAttr",
    "DenseArrayAttr",
    "DictionaryAttr",
    "DenseElementsAttr",
    "EnumAttr",
    "StructAttr",
    "ConvDimensionNumbers",
    "OpaqueAttr",
    "LocationAttr",
    "to_python",
    "i64_array",
    "bool_array",
    "i64_attr",
    "i32_attr",
    "dense",
    "enum",
    "struct",
    "dot_dimension_numbers",
    "ComplexType",
    "FloatType",
]
