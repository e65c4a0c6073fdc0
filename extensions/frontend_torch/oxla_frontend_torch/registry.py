"""The lowering table: one rule per ATen op overload, and the context rules build with.

A rule is registered for one or more ``OpOverload`` objects::

    @lowering(aten.add.Tensor)
    def _add(ctx, x, y, alpha=1): ...

and is called with the FX node's arguments, where every ``fx.Node`` is replaced by the
oxla ``Value`` (or tuple of values, for multi-output ops) it was lowered to. It returns a
``Value``, a tuple/list of values (multi-output ops), or None (ops with no result).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from oxla.errors import LoweringError
from oxla.ir import Builder, Value
from oxla.ir import attributes as A
from oxla.ir.types import ElementType, FloatType, IntegerType, TensorType, is_float

LOWERINGS: dict[Any, Callable[..., Any]] = {}
"""OpOverload -> rule."""

DYNAMIC_SAFE: set[Any] = set()
"""Targets whose rules are checked on ``?`` dimensions (see ``dynamic_safe``)."""

_DTYPES: dict[torch.dtype, ElementType] = {
    torch.float32: FloatType("f32"),
    torch.float64: FloatType("f64"),
    torch.float16: FloatType("f16"),
    torch.bfloat16: FloatType("bf16"),
    torch.int64: IntegerType(64),
    torch.int32: IntegerType(32),
    torch.int16: IntegerType(16),
    torch.int8: IntegerType(8),
    torch.uint8: IntegerType(8, unsigned=True),
    torch.bool: IntegerType(1),
}


def lowering(*targets: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the decorated rule for each ATen ``OpOverload`` in ``targets``."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for t in targets:
            LOWERINGS[t] = fn
        return fn

    return deco


def dynamic_safe(*targets: Any) -> None:
    """Marks rules of ``targets`` as correct on ``?`` dims: they size results only through
    ``ctx.out_type``, ``ctx.broadcast_to``/``ctx.reshape`` to the node's own output shape,
    and builder ops whose result types are inferred."""
    DYNAMIC_SAFE.update(targets)


def torch_dtype(et: ElementType) -> torch.dtype:
    """The torch dtype of an oxla element type (the inverse of :func:`element_type`).

    Raises:
        LoweringError: a type torch has no dtype for here.
    """
    for dt, e in _DTYPES.items():
        if e == et:
            return dt
    raise LoweringError(f"element type {et} has no torch dtype")


def element_type(dtype: torch.dtype) -> ElementType:
    """The oxla element type of a torch dtype.

    Raises:
        LoweringError: a dtype oxla has no type for (complex, quantized).
    """
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise LoweringError(f"torch dtype {dtype} has no oxla element type") from None


class LoweringContext:
    """What a rule sees: the builder (positioned, with the node's location) and the node.

    Attributes:
        b: the builder; ops it creates carry the node's location.
        node: the FX node being lowered.
        dim: maps a possibly symbolic torch size to an int (see ``import_program``).
        inline: lowers an ATen FX graph (a decomposition traced by a rule) in place:
            ``inline(gm, inputs)`` binds its tensor placeholders to ``inputs`` and returns
            the lowered outputs in the graph's output structure; set by the importer.
    """

    def __init__(self, b: Builder, node: torch.fx.Node, dim: Callable[[Any], int],
                 inline: Callable[[torch.fx.GraphModule, Sequence[Value]], Any] | None = None):
        self.b = b
        self.node = node
        self.dim = dim
        self.inline = inline

    # -- types ------------------------------------------------------------------------
    def tensor_type(self, val: Any) -> TensorType:
        """The oxla type of a (fake) tensor: its shape through ``dim`` and its dtype."""
        return TensorType(tuple(self.dim(s) for s in val.shape), element_type(val.dtype))

    def out_type(self, index: int | None = None) -> TensorType:
        """The type of the node's result (``index``-th one for multi-output ops)."""
        val = self.node.meta["val"]
        if index is not None:
            val = val[index]
        return self.tensor_type(val)

    def out_types(self) -> list[TensorType | None]:
        """Types of every result of a multi-output node (None for non-tensors)."""
        return [self.tensor_type(v) if isinstance(v, torch.Tensor) else None
                for v in self.node.meta["val"]]

    # -- values -----------------------------------------------------------------------
    def const(self, value: Any, et: ElementType, shape: Sequence[int] = ()) -> Value:
        """A constant of element type ``et`` (and ``shape``) holding ``value``."""
        arr = np.asarray(value)
        if isinstance(et, IntegerType) and et.width == 1:
            arr = arr.astype(bool)
        return self.b.constant(np.broadcast_to(arr.astype(et.dtype), tuple(shape)),
                               TensorType(tuple(shape), et))

    def convert(self, v: Value, et: ElementType) -> Value:
        """``v`` converted to ``et`` (``v`` itself when it already has it)."""
        if etype(v) == et:
            return v
        return self.b.convert(v, et)

    def operand(self, x: Any, et: ElementType) -> Value:
        """A value of element type ``et`` from a value or a Python scalar."""
        if isinstance(x, Value):
            return self.convert(x, et)
        if isinstance(x, torch.SymInt | torch.SymFloat | torch.SymBool):
            if self.dim(x) is None:
                return self.convert(self.sym_value(x), et)
            x = self.dim(x)
        return self.const(x, et)

    def broadcast_to(self, v: Value, shape: Sequence[int | None],
                     like: Value | None = None) -> Value:
        """Numpy-style broadcast of ``v`` to ``shape`` (dims aligned on the right); a
        ``?`` (None) target is the shape of ``like`` when given, else the node's own
        output shape, broadcast with ``dynamic_broadcast_in_dim``."""
        shape = tuple(shape)
        t = v.type
        assert isinstance(t, TensorType)
        r = len(shape)
        return self.broadcast_in_dim(v, shape, list(range(r - len(t.shape), r)), like)

    def broadcast_in_dim(self, v: Value, shape: Sequence[int | None], dims: Sequence[int],
                         like: Value | None = None) -> Value:
        """``broadcast_in_dim`` of ``v`` to ``shape``; with ``?`` dims the target sizes
        are those of ``like`` (a value of that shape) or else the node's own output's
        (``dynamic_broadcast_in_dim``).

        Raises:
            NotSupportedError: ``?`` dims with neither ``like`` nor a matching output.
        """
        shape = tuple(shape)
        if None not in shape:
            if shape_of(v) == shape and list(dims) == list(range(len(shape))):
                return v
            return self.b.broadcast_in_dim(v, shape, dims)
        parts: Any = (self.dims_value(like) if like is not None
                      else self.shape_value(self._own_sizes(shape)))
        out = TensorType(shape, etype(v))
        return self.b.create("stablehlo.dynamic_broadcast_in_dim", [v, parts],
                             {"broadcast_dimensions": A.i64_array(list(dims))},
                             [out]).results[0]

    def reshape(self, v: Value, shape: Sequence[int | None],
                parts: Sequence[Any] | None = None) -> Value:
        """``v`` reshaped to ``shape``; with ``?`` dims the sizes are ``parts`` (see
        ``parts_value``) or else the node's own output's (``dynamic_reshape``)."""
        shape = tuple(shape)
        if None in shape:
            out = TensorType(shape, etype(v))
            sizes = (self.parts_value(parts) if parts is not None
                     else self.shape_value(self._own_sizes(shape)))
            return self.b.create("stablehlo.dynamic_reshape", [v, sizes],
                                 result_types=[out]).results[0]
        return v if shape_of(v) == shape else self.b.reshape(v, shape)

    def size(self, v: Value, d: int) -> Value:
        """``tensor<i64>``: the size of dim ``d`` of ``v`` (a constant when static, else
        ``get_dimension_size``)."""
        n = shape_of(v)[d]
        if n is not None:
            return self.const(n, IntegerType(64))
        size = self.b.create("stablehlo.get_dimension_size", [v], {"dimension": A.i64_attr(d)},
                             [TensorType((), IntegerType(32))]).results[0]
        return self.b.convert(size, IntegerType(64))

    def parts_value(self, parts: Sequence[Any]) -> Value:
        """A ``tensor<Nxi64>`` shape operand from parts: ints, ``tensor<i64>`` values, or
        ``(value, dim)`` pairs (that dim's size)."""
        i64 = IntegerType(64)
        if all(isinstance(p, int) for p in parts):
            return self.const(np.asarray(parts, np.int64), i64, (len(parts),))
        vals = []
        for p in parts:
            if isinstance(p, tuple):
                p = self.size(*p)
            elif not isinstance(p, Value):
                p = self.const(int(p), i64)
            vals.append(self.b.reshape(p, (1,)))
        return vals[0] if len(vals) == 1 else self.b.concatenate(vals, 0)

    def dims_value(self, v: Value, dims: Sequence[int] | None = None) -> Value:
        """The shape of ``v`` (or of its ``dims``) as a ``tensor<Nxi64>``."""
        dims = range(len(shape_of(v))) if dims is None else dims
        return self.parts_value([(v, d) for d in dims])

    def iota_like(self, like: Value, dims: Sequence[int] | None, et: ElementType,
                  d: int) -> Value:
        """An iota over dim ``d`` shaped like ``like`` (or its ``dims``); ``dynamic_iota``
        when that shape has ``?`` dims."""
        dims = range(len(shape_of(like))) if dims is None else dims
        shape = tuple(shape_of(like)[i] for i in dims)
        if None not in shape:
            return self.b.iota(shape, et, d)
        return self.b.create("stablehlo.dynamic_iota", [self.dims_value(like, dims)],
                             {"iota_dimension": A.i64_attr(d)},
                             [TensorType(shape, et)]).results[0]

    def splat(self, value: Any, et: ElementType, like: Value) -> Value:
        """A scalar ``value`` of type ``et`` broadcast to the shape of ``like``."""
        return self.broadcast_in_dim(self.const(value, et), shape_of(like), [], like)

    # -- dynamic sizes ------------------------------------------------------------------
    def _own_sizes(self, shape: tuple[int | None, ...]) -> list[Any]:
        from oxla.errors import NotSupportedError

        val = self.node.meta.get("val")
        if isinstance(val, torch.Tensor) and self.tensor_type(val).shape == shape:
            return list(val.shape)
        raise NotSupportedError(f"'{self.node.target}' needs an intermediate shape "
                                f"{shape} with dynamic dims", loc=self.b.loc,
                                notes=["import for concrete shapes (arg_shapes=[...])"])

    def sym_value(self, s: Any) -> Value:
        """A ``tensor<i64>`` holding size ``s`` (an int or a SymInt whose expression uses
        ``+``, ``*``, ``//`` of input dims read with ``get_dimension_size``)."""
        import sympy

        from oxla.errors import NotSupportedError

        i64 = IntegerType(64)
        expr = s.node.expr if isinstance(s, torch.SymInt) else sympy.Integer(int(s))

        def build(e: Any) -> Value:
            if e.is_Integer:
                return self.const(int(e), i64)
            if e.is_Symbol:
                src = getattr(self.dim, "sources", {}).get(e)
                if src is None:
                    raise NotSupportedError(f"size symbol {e} is not an input dimension",
                                            loc=self.b.loc)
                arg, d = src
                size = self.b.create("stablehlo.get_dimension_size", [arg],
                                     {"dimension": A.i64_attr(d)},
                                     [TensorType((), IntegerType(32))]).results[0]
                return self.b.convert(size, i64)
            if isinstance(e, sympy.Add | sympy.Mul):
                op = self.b.add if isinstance(e, sympy.Add) else self.b.multiply
                parts = [build(a) for a in e.args]
                out = parts[0]
                for p in parts[1:]:
                    out = op(out, p)
                return out
            if type(e).__name__ == "FloorDiv":
                return self.b.divide(build(e.args[0]), build(e.args[1]))
            raise NotSupportedError(f"size expression {e} in '{self.node.target}'",
                                    loc=self.b.loc,
                                    notes=["import for concrete shapes (arg_shapes=[...])"])

        return build(expr)

    def shape_value(self, sizes: Sequence[Any]) -> Value:
        """A ``tensor<Nxi64>`` shape operand from torch sizes (ints and SymInts)."""
        i64 = IntegerType(64)
        if all(self.dim(s) is not None for s in sizes):
            return self.const(np.asarray([self.dim(s) for s in sizes], np.int64), i64,
                              (len(sizes),))
        parts = [self.b.reshape(self.sym_value(s), (1,)) for s in sizes]
        return parts[0] if len(parts) == 1 else self.b.concatenate(parts, 0)

    def reduce(self, v: Value, dims: Sequence[int], kind: str) -> Value:
        """Reduces ``v`` over ``dims`` with ``kind`` in add, maximum, minimum, multiply,
        and, or; the init value is the operation's identity."""
        et = etype(v)
        init = {
            "add": 0, "multiply": 1, "and": 1, "or": 0,
            "maximum": -np.inf if is_float(et) else _int_min(et),
            "minimum": np.inf if is_float(et) else _int_max(et),
        }[kind]
        return self.b.reduce([v], [self.const(init, et)], sorted(dims),
                             f"stablehlo.{kind}")[0]

    def reduce_window(self, v: Value, init: Any, kind: str, window: Sequence[int],
                      strides: Sequence[int], padding: Sequence[tuple[int, int]],
                      out_shape: Sequence[int]) -> Value:
        """``stablehlo.reduce_window`` of ``v`` with the binary op ``kind`` (spec 4.x)."""
        et = etype(v)
        scalar = TensorType((), et)
        from oxla.ir import Block, Region

        body = Block([scalar, scalar])
        bb = Builder(body, loc=self.b.loc)
        r = bb.create(f"stablehlo.{kind}", [body.args[0], body.args[1]]).results[0]
        bb.create("stablehlo.return", [r], result_types=[])
        pad = np.asarray(padding, dtype=np.int64).reshape(len(window), 2)
        attrs = {"window_dimensions": A.i64_array(window),
                 "window_strides": A.i64_array(strides),
                 "padding": A.dense(pad, TensorType(pad.shape, IntegerType(64)))}
        op = self.b.create("stablehlo.reduce_window", [v, self.const(init, et)], attrs,
                           [TensorType(tuple(out_shape), et)], regions=[Region([body])])
        return op.results[0]


def shape_of(v: Value) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return t.shape


def etype(v: Value) -> ElementType:
    t = v.type
    assert isinstance(t, TensorType)
    return t.element_type


def norm_dim(d: int, rank: int) -> int:
    """A possibly negative dim index made non-negative (rank 0 counts as rank 1)."""
    return d + max(rank, 1) if d < 0 else d


def _int_min(et: ElementType) -> int:
    assert isinstance(et, IntegerType)
    if et.width == 1:
        return 0
    return 0 if et.unsigned else -(1 << (et.width - 1))


def _int_max(et: ElementType) -> int:
    assert isinstance(et, IntegerType)
    if et.width == 1:
        return 1
    return (1 << et.width) - 1 if et.unsigned else (1 << (et.width - 1)) - 1


class Unavailable:
    """A result a rule does not compute (e.g. max-pool indices); an error when used.

    Attributes:
        what: what it is, for the error message.
    """

    def __init__(self, what: str):
        self.what = what
