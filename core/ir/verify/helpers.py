"""Shared helpers of the verifier: failing with a constraint id, type predicates.

Spec terms (``stablehlo-spec.md#types``): a dynamic dimension ``?`` is compatible with
any size; ``baseline_type`` drops the scales and zero points of quantized types.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from oxla.errors import VerifyError
from oxla.ir.attributes import (
    ArrayAttr,
    DenseArrayAttr,
    DenseElementsAttr,
    IntegerAttr,
    StructAttr,
)
from oxla.ir.operation import Operation
from oxla.ir.types import (
    ElementType,
    QuantizedType,
    TensorType,
    Type,
    UnrankedTensorType,
)


def fail(op: Operation, cid: str, message: str) -> NoReturn:
    """Raises the VerifyError of constraint ``cid`` of ``op`` at the op's location."""
    head = f"'{op.name}' op ({cid}) " if cid else f"'{op.name}' op "
    raise VerifyError(head + message, op.loc)


def shape(t: Type) -> tuple[int | None, ...] | None:
    """The shape of a ranked tensor type, None for anything else."""
    return t.shape if isinstance(t, TensorType) else None


def elem(t: Type) -> ElementType | None:
    """The element type of a (ranked or unranked) tensor type, else None."""
    if isinstance(t, TensorType | UnrankedTensorType):
        return t.element_type
    return None


def rank(t: Type) -> int | None:
    return len(t.shape) if isinstance(t, TensorType) else None


def dim_ok(a: int | None, b: int | None) -> bool:
    """True when two dimension sizes are compatible (``?`` matches anything)."""
    return a is None or b is None or a == b


def shapes_ok(a: Sequence[int | None] | None, b: Sequence[int | None] | None) -> bool:
    """True when two shapes are compatible; an unranked side matches anything."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(dim_ok(x, y) for x, y in zip(a, b))


def baseline_elem(e: ElementType | None) -> Any:
    """``baseline_element_type``: quantized types lose scales and zero points."""
    if isinstance(e, QuantizedType):
        return ("quant", e.storage_type, e.expressed_type, e.storage_min, e.storage_max)
    return e


def elems_ok(a: Type, b: Type) -> bool:
    """True when two types have the same baseline element type (or either has none)."""
    ea, eb = elem(a), elem(b)
    if ea is None or eb is None:
        return True
    return baseline_elem(ea) == baseline_elem(eb)


def types_ok(a: Type, b: Type) -> bool:
    """``baseline_type(a) = baseline_type(b)`` up to dynamic dimensions."""
    if isinstance(a, TensorType | UnrankedTensorType) and isinstance(
        b, TensorType | UnrankedTensorType
    ):
        return shapes_ok(shape(a), shape(b)) and elems_ok(a, b)
    if isinstance(a, TensorType | UnrankedTensorType) or isinstance(
        b, TensorType | UnrankedTensorType
    ):
        return False
    return a == b


# Element-type predicates: the ones oxla.ir.types defines, under the verifier's names.
from oxla.ir.types import is_bool as is_bool  # noqa: E402
from oxla.ir.types import is_complex as is_complex  # noqa: E402
from oxla.ir.types import is_float as is_float  # noqa: E402
from oxla.ir.types import is_integer as is_int  # noqa: E402, F401
from oxla.ir.types import is_quantized as is_quant  # noqa: E402, F401


def ints(attr: Any) -> tuple[int, ...]:
    """The integers of an i64 array attribute (dense array, array or 1-D dense)."""
    if attr is None:
        return ()
    if isinstance(attr, DenseArrayAttr):
        return tuple(int(v) for v in attr.values)
    if isinstance(attr, DenseElementsAttr):
        return tuple(int(v) for v in attr.array.reshape(-1))
    if isinstance(attr, ArrayAttr):
        return tuple(int(a.value) for a in attr.value if isinstance(a, IntegerAttr))
    if isinstance(attr, tuple | list):
        return tuple(int(v) for v in attr)
    return ()


def int_attr(op: Operation, name: str, default: int = 0) -> int:
    a = op.attributes.get(name)
    return int(a.value) if isinstance(a, IntegerAttr) else default


def field(attr: Any, name: str, default: Any = ()) -> Any:
    """A field of a dimension-numbers struct attribute."""
    if isinstance(attr, StructAttr):
        return attr.get(name, default)
    return default


def unique(xs: Iterable[int]) -> bool:
    xs = list(xs)
    return len(set(xs)) == len(xs)


def in_range(xs: Iterable[int], lo: int, hi: int) -> bool:
    """All ``lo <= x < hi``."""
    return all(lo <= x < hi for x in xs)


def fmt(types: Iterable[Type]) -> str:
    return ", ".join(str(t) for t in types)
