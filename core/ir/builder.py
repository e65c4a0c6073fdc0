"""A linear IR builder (llvmlite's ``IRBuilder`` shape) for frontends and passes.

::

    m = Builder.module()
    f, entry = Builder(m.body).func("main", [tensor((2,), f32)] * 2, [tensor((2,), f32)])
    b = Builder(entry)
    b.return_(b.add(*entry.args))

``create`` infers result types through :mod:`oxla.ir.infer` when they are omitted and
raises a clear error when the spec gives no rule (pass ``result_types`` then).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import VerifyError
from oxla.ir import attributes as A
from oxla.ir.infer import infer_result_types
from oxla.ir.location import UNKNOWN, Location
from oxla.ir.opdef import lookup_opdef
from oxla.ir.operation import Block, Module, Operation, Region, Value
from oxla.ir.types import (
    ElementType,
    FunctionType,
    TensorType,
    Type,
    element_type_from_dtype,
)


class Builder:
    """Creates ops at an insertion point: the end of ``block``, or before an op.

    Args:
        block: the block to insert into (defaults to ``insertion_point``'s block).
        insertion_point: insert before this op; None appends at the end.
        loc: default location of created ops.
    """

    def __init__(self, block: Block | None = None, insertion_point: Operation | None = None,
                 loc: Location | None = None):
        if block is None:
            if insertion_point is None or insertion_point.parent is None:
                raise ValueError("Builder needs a block or an insertion point inside a block")
            block = insertion_point.parent
        self.block = block
        self.insertion_point = insertion_point
        self.loc = loc if loc is not None else UNKNOWN

    # -- positioning --------------------------------------------------------------------
    @classmethod
    def before(cls, op: Operation, loc: Location | None = None) -> Builder:
        """A builder inserting before ``op`` (with ``op``'s location by default)."""
        return cls(None, op, loc if loc is not None else op.loc)

    @classmethod
    def at_end(cls, block: Block, loc: Location | None = None) -> Builder:
        return cls(block, None, loc)

    @staticmethod
    def module(name: str | None = None) -> Module:
        """A new empty module (``module @name {}``)."""
        m = Module()
        if name is not None:
            m.op.attributes["sym_name"] = A.StringAttr(name)
        return m

    def insert(self, op: Operation) -> Operation:
        """Inserts a detached op at the insertion point."""
        if self.insertion_point is None:
            return self.block.append(op)
        return self.block.insert_before(self.insertion_point, op)

    # -- generic creation ---------------------------------------------------------------
    def create(self, op_name: str, operands: Sequence[Value] = (),
               attributes: dict[str, A.Attribute] | None = None,
               result_types: Sequence[Type] | None = None,
               regions: Sequence[Region] | None = None,
               loc: Location | None = None) -> Operation:
        """Creates ``op_name`` and inserts it.

        Raises:
            VerifyError: for an unknown op, or when ``result_types`` is omitted and the
                spec defines no inference for the op.
        """
        od = lookup_opdef(op_name)
        if od is None:
            raise VerifyError(f"unknown op '{op_name}'")
        attributes = dict(attributes or {})
        if result_types is None:
            if not od.results:
                result_types = []
            else:
                result_types = infer_result_types(od.name, [v.type for v in operands],
                                                  attributes)
        op = Operation.create(od.name, operands, result_types, attributes, regions or (),
                              loc if loc is not None else self.loc)
        return self.insert(op)

    def _one(self, op_name: str, operands: Sequence[Value], attributes=None,
             result_type: Type | None = None) -> Value:
        rt = None if result_type is None else [result_type]
        return self.create(op_name, operands, attributes, rt).results[0]

    # -- functions ----------------------------------------------------------------------
    def func(self, name: str, arg_types: Sequence[Type], result_types: Sequence[Type],
             visibility: str | None = None) -> tuple[Operation, Block]:
        """A ``func.func`` with an entry block whose arguments have ``arg_types``."""
        entry = Block(arg_types)
        attrs: dict[str, A.Attribute] = {
            "sym_name": A.StringAttr(name),
            "function_type": A.TypeAttr(FunctionType(tuple(arg_types), tuple(result_types))),
        }
        if visibility is not None:
            attrs["sym_visibility"] = A.StringAttr(visibility)
        op = self.create("func.func", (), attrs, [], [Region([entry])])
        return op, entry

    def return_(self, *values: Value) -> Operation:
        """``func.return`` inside a function body, ``stablehlo.return`` elsewhere."""
        parent = self.block.parent_op
        name = "func.return" if parent is None or parent.name == "func.func" else \
            "stablehlo.return"
        return self.create(name, list(values), result_types=[])

    def call(self, callee: str, args: Sequence[Value], result_types: Sequence[Type]):
        return self.create("func.call", args, {"callee": A.SymbolRefAttr(callee)},
                           result_types).results

    # -- common ops ---------------------------------------------------------------------
    def constant(self, value: Any, type: Type | ElementType | None = None) -> Value:
        """``stablehlo.constant`` of a numpy array or Python scalar.

        ``type`` may be a tensor type, or an element type (the shape is the value's).
        """
        arr = np.asarray(value)
        if isinstance(type, ElementType):
            type = TensorType(arr.shape, type)
        if type is None:
            if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
                arr = arr.astype(np.float32)
            if arr.dtype == np.int64 and not isinstance(value, np.ndarray):
                arr = arr.astype(np.int32)
            type = TensorType(arr.shape, element_type_from_dtype(arr.dtype))
        assert isinstance(type, TensorType)
        if arr.shape != type.shape:
            arr = np.broadcast_to(arr, type.shape)
        attr = A.dense(arr, type)
        return self._one("stablehlo.constant", [], {"value": attr}, type)

    def compare(self, direction: str, lhs: Value, rhs: Value,
                compare_type: str | None = None) -> Value:
        """``stablehlo.compare`` with ``direction`` in EQ, NE, GE, GT, LE, LT."""
        attrs: dict[str, A.Attribute] = {
            "comparison_direction": A.enum("comparison_direction", direction.upper())}
        if compare_type is not None:
            attrs["compare_type"] = A.enum("comparison_type", compare_type.upper())
        return self._one("stablehlo.compare", [lhs, rhs], attrs)

    def select(self, pred: Value, on_true: Value, on_false: Value) -> Value:
        return self._one("stablehlo.select", [pred, on_true, on_false])

    def clamp(self, min: Value, x: Value, max: Value) -> Value:
        return self._one("stablehlo.clamp", [min, x, max])

    def broadcast_in_dim(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        t = TensorType(tuple(shape), _elem(x))
        return self._one("stablehlo.broadcast_in_dim", [x],
                         {"broadcast_dimensions": A.i64_array(dims)}, t)

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        return self._one("stablehlo.reshape", [x], None, TensorType(tuple(shape), _elem(x)))

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        return self._one("stablehlo.transpose", [x], {"permutation": A.i64_array(perm)})

    def convert(self, x: Value, element_type: ElementType) -> Value:
        t = x.type
        assert isinstance(t, TensorType)
        return self._one("stablehlo.convert", [x], None, t.with_element_type(element_type))

    def iota(self, shape: Sequence[int], element_type: ElementType, dim: int = 0) -> Value:
        return self._one("stablehlo.iota", [], {"iota_dimension": A.i64_attr(dim)},
                         TensorType(tuple(shape), element_type))

    def dot_general(self, lhs: Value, rhs: Value, contracting=((1,), (0,)), batching=((), ()),
                    precision: Sequence[str] | None = None) -> Value:
        """``stablehlo.dot_general``; ``contracting``/``batching`` are (lhs, rhs) pairs."""
        attrs: dict[str, A.Attribute] = {"dot_dimension_numbers": A.dot_dimension_numbers(
            batching[0], batching[1], contracting[0], contracting[1])}
        if precision is not None:
            attrs["precision_config"] = A.ArrayAttr(tuple(A.enum("precision", p)
                                                          for p in precision))
        return self._one("stablehlo.dot_general", [lhs, rhs], attrs)

    def slice(self, x: Value, start: Sequence[int], limit: Sequence[int],
              strides: Sequence[int] | None = None) -> Value:
        attrs = {"start_indices": A.i64_array(start), "limit_indices": A.i64_array(limit),
                 "strides": A.i64_array(strides or [1] * len(start))}
        return self._one("stablehlo.slice", [x], attrs)

    def concatenate(self, xs: Sequence[Value], dim: int) -> Value:
        return self._one("stablehlo.concatenate", list(xs), {"dimension": A.i64_attr(dim)})

    def reduce(self, inputs: Sequence[Value], inits: Sequence[Value], dims: Sequence[int],
               body_op_name: str = "stablehlo.add") -> list[Value]:
        """``stablehlo.reduce`` whose body applies the binary ``body_op_name`` pairwise."""
        scalars = [TensorType((), _elem(v)) for v in inits]
        body = Block([*scalars, *scalars])
        bb = Builder(body, loc=self.loc)
        n = len(inputs)
        outs = [bb._one(body_op_name, [body.args[i], body.args[n + i]]) for i in range(n)]
        bb.create("stablehlo.return", outs, result_types=[])
        op = self.create("stablehlo.reduce", [*inputs, *inits],
                         {"dimensions": A.i64_array(dims)}, regions=[Region([body])])
        return list(op.results)


def _elem(v: Value) -> ElementType:
    t = v.type
    if not isinstance(t, TensorType):
        raise VerifyError(f"expected a tensor value, got {t}")
    return t.element_type


def _binary(name: str):
    def method(self: Builder, lhs: Value, rhs: Value) -> Value:
        return self._one(f"stablehlo.{name}", [lhs, rhs])

    method.__name__ = name
    method.__doc__ = f"``stablehlo.{name}`` (type inferred from the operands)."
    return method


def _unary(name: str):
    def method(self: Builder, x: Value) -> Value:
        return self._one(f"stablehlo.{name}", [x])

    method.__name__ = name
    method.__doc__ = f"``stablehlo.{name}`` (type inferred from the operand)."
    return method


for _n in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder",
           "power", "atan2", "and", "or", "xor", "shift_left", "shift_right_arithmetic",
           "shift_right_logical"):
    setattr(Builder, _n + "_" if _n in ("and", "or") else _n, _binary(_n))
for _n in ("abs", "negate", "exponential", "log", "sqrt", "rsqrt", "tanh", "logistic",
           "sine", "cosine", "floor", "ceil", "sign", "not", "exponential_minus_one",
           "log_plus_one", "is_finite", "real", "imag"):
    setattr(Builder, _n + "_" if _n == "not" else _n, _unary(_n))


__all__ = ["Builder"]
