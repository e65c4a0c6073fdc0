"""StableHLO types: element types, tensors, tokens, tuples, functions.

Follows the "Types" section of the StableHLO spec (``stablehlo-spec.md#types``).
Every type is a frozen, slotted dataclass, equal by value; ``str(t)`` prints it in
MLIR syntax. Element types know their numpy/ml_dtypes dtype (sub-byte integers and
floats use ml_dtypes' unpacked one-byte types).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np

if TYPE_CHECKING:
    from oxla.ir.attributes import Attribute


class Type:
    """Base class of all types."""

    __slots__ = ()


class ElementType(Type):
    """Base class of tensor element types."""

    __slots__ = ()

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype used to hold values of this type."""
        raise NotImplementedError(f"type {self} has no numpy dtype")

    @property
    def bitwidth(self) -> int:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class IntegerType(ElementType):
    """``i1``, ``iN`` (signless, treated as signed by StableHLO) and ``uiN``.

    Args:
        width: bits, one of 1, 2, 4, 8, 16, 32, 64.
        unsigned: True for ``uiN``.
    """

    width: int
    unsigned: bool = False

    def __post_init__(self) -> None:
        if self.width not in (1, 2, 4, 8, 16, 32, 64):
            raise ValueError(f"unsupported integer width {self.width}")

    def __str__(self) -> str:
        return f"{'u' if self.unsigned else ''}i{self.width}"

    @property
    def is_bool(self) -> bool:
        return self.width == 1

    @property
    def is_signed(self) -> bool:
        """True for iN with N > 1 (StableHLO reads signless integers as signed)."""
        return not self.unsigned and self.width > 1

    @property
    def dtype(self) -> np.dtype:
        return _INT_DTYPES[(self.width, self.unsigned)]

    @property
    def bitwidth(self) -> int:
        return self.width

    @property
    def min_value(self) -> int:
        if self.width == 1 or self.unsigned:
            return 0
        return -(1 << (self.width - 1))

    @property
    def max_value(self) -> int:
        if self.width == 1:
            return 1
        if self.unsigned:
            return (1 << self.width) - 1
        return (1 << (self.width - 1)) - 1


_INT_DTYPES = {
    (1, False): np.dtype(np.bool_),
    (1, True): np.dtype(np.bool_),
    (2, False): np.dtype(ml_dtypes.int2),
    (4, False): np.dtype(ml_dtypes.int4),
    (8, False): np.dtype(np.int8),
    (16, False): np.dtype(np.int16),
    (32, False): np.dtype(np.int32),
    (64, False): np.dtype(np.int64),
    (2, True): np.dtype(ml_dtypes.uint2),
    (4, True): np.dtype(ml_dtypes.uint4),
    (8, True): np.dtype(np.uint8),
    (16, True): np.dtype(np.uint16),
    (32, True): np.dtype(np.uint32),
    (64, True): np.dtype(np.uint64),
}

# name -> (numpy dtype, bit width). tf32 is held in float32 (its values are a subset).
_FLOAT_TYPES: dict[str, tuple[np.dtype, int]] = {
    "f4E2M1FN": (np.dtype(ml_dtypes.float4_e2m1fn), 4),
    "f6E2M3FN": (np.dtype(ml_dtypes.float6_e2m3fn), 6),
    "f6E3M2FN": (np.dtype(ml_dtypes.float6_e3m2fn), 6),
    "f8E3M4": (np.dtype(ml_dtypes.float8_e3m4), 8),
    "f8E4M3": (np.dtype(ml_dtypes.float8_e4m3), 8),
    "f8E4M3FN": (np.dtype(ml_dtypes.float8_e4m3fn), 8),
    "f8E4M3FNUZ": (np.dtype(ml_dtypes.float8_e4m3fnuz), 8),
    "f8E4M3B11FNUZ": (np.dtype(ml_dtypes.float8_e4m3b11fnuz), 8),
    "f8E5M2": (np.dtype(ml_dtypes.float8_e5m2), 8),
    "f8E5M2FNUZ": (np.dtype(ml_dtypes.float8_e5m2fnuz), 8),
    "f8E8M0FNU": (np.dtype(ml_dtypes.float8_e8m0fnu), 8),
    "bf16": (np.dtype(ml_dtypes.bfloat16), 16),
    "f16": (np.dtype(np.float16), 16),
    "tf32": (np.dtype(np.float32), 19),
    "f32": (np.dtype(np.float32), 32),
    "f64": (np.dtype(np.float64), 64),
}

FLOAT_TYPE_NAMES: tuple[str, ...] = tuple(_FLOAT_TYPES)


@dataclass(frozen=True, slots=True)
class FloatType(ElementType):
    """A floating-point type by its MLIR name (``f32``, ``bf16``, ``f8E4M3FN``, ...)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in _FLOAT_TYPES:
            raise ValueError(f"unknown float type '{self.name}'")

    def __str__(self) -> str:
        return self.name

    @property
    def dtype(self) -> np.dtype:
        return _FLOAT_TYPES[self.name][0]

    @property
    def bitwidth(self) -> int:
        return _FLOAT_TYPES[self.name][1]

    @property
    def storage_bitwidth(self) -> int:
        """Bits of the numpy storage type (8 for sub-byte floats, 32 for tf32)."""
        return self.dtype.itemsize * 8


@dataclass(frozen=True, slots=True)
class ComplexType(ElementType):
    """``complex<f32>`` or ``complex<f64>``."""

    element_type: FloatType

    def __str__(self) -> str:
        return f"complex<{self.element_type}>"

    @property
    def dtype(self) -> np.dtype:
        if self.element_type.name == "f32":
            return np.dtype(np.complex64)
        if self.element_type.name == "f64":
            return np.dtype(np.complex128)
        raise NotImplementedError(f"complex<{self.element_type}> has no numpy dtype")

    @property
    def bitwidth(self) -> int:
        return 2 * self.element_type.bitwidth


@dataclass(frozen=True, slots=True)
class IndexType(ElementType):
    """MLIR's ``index`` (seen in shape computations); held as int64."""

    def __str__(self) -> str:
        return "index"

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.int64)

    @property
    def bitwidth(self) -> int:
        return 64


@dataclass(frozen=True, slots=True)
class QuantizedType(ElementType):
    """``!quant.uniform<storage<min:max>:expressed:axis, scales:zero_points>``.

    Per-tensor when ``quantized_dimension`` is None (one scale and zero point), per-axis
    otherwise. Spec: "Quantized element types".

    Args:
        storage_type: integer type of stored values.
        expressed_type: float type the values stand for.
        scales: one per tensor, or one per slice along ``quantized_dimension``.
        zero_points: as ``scales``.
        storage_min, storage_max: the storage range (defaults: the storage type's).
        quantized_dimension: axis for per-axis quantization.
    """

    storage_type: IntegerType
    expressed_type: FloatType
    scales: tuple[float, ...]
    zero_points: tuple[int, ...]
    storage_min: int
    storage_max: int
    quantized_dimension: int | None = None
    storage_range_explicit: bool = False

    def __str__(self) -> str:
        from oxla.ir.printer import format_float

        st = str(self.storage_type)
        if self.storage_range_explicit:
            st += f"<{self.storage_min}:{self.storage_max}>"
        head = f"{st}:{self.expressed_type}"
        if self.quantized_dimension is not None:
            head += f":{self.quantized_dimension}"
            body = ", ".join(
                f"{format_float(s)}:{z}" for s, z in zip(self.scales, self.zero_points)
            )
            return f"!quant.uniform<{head}, {{{body}}}>"
        s, z = self.scales[0], self.zero_points[0]
        return f"!quant.uniform<{head}, {format_float(s)}:{z}>"

    @property
    def is_per_axis(self) -> bool:
        return self.quantized_dimension is not None

    @property
    def dtype(self) -> np.dtype:
        """The storage type's dtype: quantized values are held as their integers."""
        return self.storage_type.dtype

    @property
    def bitwidth(self) -> int:
        return self.storage_type.width


@dataclass(frozen=True, slots=True)
class TensorType(Type):
    """``tensor<2x?x3xf32>``: shape with None for a dynamic dimension, an element type,
    and an optional encoding attribute (``#stablehlo.bounds<...>`` for bounded dims).
    """

    shape: tuple[int | None, ...]
    element_type: ElementType
    encoding: Attribute | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(self.shape))
        for d in self.shape:
            if d is not None and (not isinstance(d, int) or d < 0):
                raise ValueError(f"invalid dimension size {d!r} in tensor shape")

    def __str__(self) -> str:
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = f", {self.encoding}" if self.encoding is not None else ""
        return f"tensor<{dims}{self.element_type}{enc}>"

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return None not in self.shape

    @property
    def num_elements(self) -> int:
        """Element count; raises ValueError for dynamic shapes."""
        if not self.is_static:
            raise ValueError(f"{self} has a dynamic shape")
        n = 1
        for d in self.shape:
            n *= d  # type: ignore[operator]
        return n

    @property
    def dtype(self) -> np.dtype:
        return self.element_type.dtype

    def with_shape(self, shape: tuple[int | None, ...]) -> TensorType:
        return TensorType(tuple(shape), self.element_type, self.encoding)

    def with_element_type(self, element_type: ElementType) -> TensorType:
        return TensorType(self.shape, element_type, self.encoding)


@dataclass(frozen=True, slots=True)
class UnrankedTensorType(Type):
    """``tensor<*xf32>``: kept so such inputs parse; StableHLO programs rarely use it."""

    element_type: ElementType

    def __str__(self) -> str:
        return f"tensor<*x{self.element_type}>"


@dataclass(frozen=True, slots=True)
class TokenType(Type):
    """``!stablehlo.token``: orders side effects."""

    def __str__(self) -> str:
        return "!stablehlo.token"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    """``tuple<T1, T2, ...>``."""

    types: tuple[Type, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.types))}>"


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    """``(T1, T2) -> (R1, R2)``."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            outs = str(self.results[0])
        else:
            outs = f"({', '.join(map(str, self.results))})"
        return f"({ins}) -> {outs}"


@dataclass(frozen=True, slots=True)
class NoneType(Type):
    """MLIR's ``none``."""

    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, slots=True)
class OpaqueType(Type):
    """A dialect type oxla does not model (``!foo.bar<...>``), kept verbatim."""

    text: str

    def __str__(self) -> str:
        return self.text


# Commonly used instances.
i1 = IntegerType(1)
i8 = IntegerType(8)
i32 = IntegerType(32)
i64 = IntegerType(64)
ui32 = IntegerType(32, unsigned=True)
ui64 = IntegerType(64, unsigned=True)
f16 = FloatType("f16")
bf16 = FloatType("bf16")
f32 = FloatType("f32")
f64 = FloatType("f64")


def tensor(shape, element_type: ElementType) -> TensorType:
    """Shorthand: ``tensor((2, 3), f32)`` is ``tensor<2x3xf32>``."""
    return TensorType(tuple(shape), element_type)


def is_integer(t: ElementType) -> bool:
    """True for iN/uiN with N > 1 (not booleans)."""
    return isinstance(t, IntegerType) and t.width > 1


def is_bool(t: ElementType) -> bool:
    return isinstance(t, IntegerType) and t.width == 1


def is_float(t: ElementType) -> bool:
    return isinstance(t, FloatType)


def is_complex(t: ElementType) -> bool:
    return isinstance(t, ComplexType)


def is_quantized(t: ElementType) -> bool:
    return isinstance(t, QuantizedType)


def element_type_of(t: Type) -> ElementType:
    """The element type of a tensor type; raises TypeError for other types."""
    if isinstance(t, TensorType | UnrankedTensorType):
        return t.element_type
    raise TypeError(f"expected a tensor type, got {t}")


def element_type_from_dtype(dtype: np.dtype) -> ElementType:
    """Maps a numpy/ml_dtypes dtype to the element type that holds it.

    Raises:
        ValueError: for dtypes with no StableHLO element type.
    """
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return i1
    for (width, unsigned), dt in _INT_DTYPES.items():
        if width > 1 and dt == dtype:
            return IntegerType(width, unsigned)
    for name, (dt, _) in _FLOAT_TYPES.items():
        if dt == dtype and name != "tf32":
            return FloatType(name)
    if dtype == np.complex64:
        return ComplexType(f32)
    if dtype == np.complex128:
        return ComplexType(f64)
    raise ValueError(f"dtype {dtype} has no StableHLO element type")
