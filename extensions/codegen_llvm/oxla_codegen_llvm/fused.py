"""Fused loop bodies: the value of a fused StableHLO expression at one index.

A fusion is a tree (a DAG) of fusible ops whose leaves are materialized buffers
(kernel parameters). :class:`FusedEmitter` emits, for an output index, the scalar value
of any value of that tree: index-mapping ops (``broadcast_in_dim``, ``reshape``,
``transpose``, ``slice``, ``reverse``, ``iota``, splat ``constant``) rewrite the index,
elementwise ops call the scalar emitter table of :mod:`oxla_codegen_llvm.scalar`.
Nothing here knows the loop structure, so the same emitter serves CPU loop nests and
GPU thread grids.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla_codegen_llvm.loops import I64, delinearize, linearize
from oxla_codegen_llvm.scalar import EMITTERS, Scalar, emit_scalar, llvm_type, storage_type

IndexRule = Callable[["FusedEmitter", Operation, list], ir.Value]
INDEX_RULES: dict[str, IndexRule] = {}


def index_rule(name: str) -> Callable[[IndexRule], IndexRule]:
    def deco(fn: IndexRule) -> IndexRule:
        INDEX_RULES[name] = fn
        return fn

    return deco


def shape_of(v: Value) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, T.TensorType) and t.is_static, t
    return tuple(t.shape)  # type: ignore[arg-type]


def is_splat_constant(op: Operation) -> bool:
    value = op.attr("value")
    return op.name == "stablehlo.constant" and isinstance(value, A.DenseElementsAttr) and \
        value.array.size > 0 and value.is_splat


def is_fusible(op: Operation) -> bool:
    """True when :class:`FusedEmitter` can compute ``op``'s value at an index."""
    if op.name == "stablehlo.constant":
        return is_splat_constant(op)
    return op.name in INDEX_RULES or op.name in EMITTERS


def load(s: Scalar, ptr: ir.Value, et: T.ElementType, offset: ir.Value) -> ir.Value:
    """Loads element ``offset`` of a buffer of ``et`` (booleans come back as ``i1``)."""
    st = storage_type(et)
    v = s.b.load(s.b.gep(ptr, [offset], source_etype=st, inbounds=True), typ=st)
    return s.b.trunc(v, ir.IntType(1)) if llvm_type(et) != st else v


def store(s: Scalar, ptr: ir.Value, et: T.ElementType, offset: ir.Value, v: ir.Value) -> None:
    """Stores ``v`` into element ``offset`` of a buffer of ``et``."""
    st = storage_type(et)
    if v.type != st:
        v = s.b.zext(v, st)
    s.b.store(v, s.b.gep(ptr, [offset], source_etype=st, inbounds=True))


class FusedEmitter:
    """Emits values of a fused expression at an index.

    Args:
        s: the scalar context (builder, module, target, fast_math).
        buffers: the materialized values (kernel parameters) -> their pointer.
    """

    def __init__(self, s: Scalar, buffers: dict[Value, ir.Value]):
        self.s = s
        self.buffers = buffers
        self._memo: dict[tuple, ir.Value] = {}

    def reset(self) -> None:
        """Forgets computed values; call when entering code they do not dominate."""
        self._memo.clear()

    def value_at(self, v: Value, idx: Sequence[ir.Value]) -> ir.Value:
        """The scalar value of ``v`` at index ``idx`` (one i64 per dimension).

        Raises:
            NotSupportedError: an op in the expression that cannot be fused.
        """
        key = (v, tuple(id(i) for i in idx))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._compute(v, list(idx))
        self._memo[key] = out
        return out

    def _compute(self, v: Value, idx: list) -> ir.Value:
        et = v.type.element_type
        if v in self.buffers:
            return load(self.s, self.buffers[v], et, linearize(self.s.b, idx, shape_of(v)))
        op = v.owner_op
        if op is None:
            raise NotSupportedError("a block argument that is not a kernel buffer")
        if op.name == "stablehlo.constant" and is_splat_constant(op):
            x = op.attr("value").array.reshape(-1)[0]
            ty = llvm_type(et)
            return ir.Constant(ty, bool(x) if ty == ir.IntType(1) else x.item())
        rule = INDEX_RULES.get(op.name)
        if rule is not None:
            return rule(self, op, idx)
        if op.name in EMITTERS:
            rank = len(shape_of(v))
            args = [self.value_at(a, idx if len(shape_of(a)) == rank else [])
                    for a in op.operands]
            return emit_scalar(self.s, op, args)
        raise NotSupportedError(f"'{op.name}' cannot be fused by the llvm emitters yet", op.loc)


def _i64(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


@index_rule("stablehlo.broadcast_in_dim")
def _broadcast(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    src = op.operands[0]
    dims = op.attr("broadcast_dimensions").values
    src_shape, out_shape = shape_of(src), shape_of(op.results[0])
    sidx = [_i64(0) if src_shape[k] == 1 and out_shape[d] != 1 else idx[d]
            for k, d in enumerate(dims)]
    return f.value_at(src, sidx)


@index_rule("stablehlo.reshape")
def _reshape(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    src = op.operands[0]
    flat = linearize(f.s.b, idx, shape_of(op.results[0]))
    return f.value_at(src, delinearize(f.s.b, flat, shape_of(src)))


@index_rule("stablehlo.transpose")
def _transpose(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    perm = op.attr("permutation").values
    sidx: list = [None] * len(perm)
    for i, p in enumerate(perm):
        sidx[p] = idx[i]
    return f.value_at(op.operands[0], sidx)


@index_rule("stablehlo.slice")
def _slice(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    starts = op.attr("start_indices").values
    strides = op.attr("strides").values
    b = f.s.b
    sidx = [b.add(_i64(st), b.mul(i, _i64(sd))) for i, st, sd in zip(idx, starts, strides)]
    return f.value_at(op.operands[0], sidx)


@index_rule("stablehlo.reverse")
def _reverse(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    dims = set(op.attr("dimensions").values)
    shape = shape_of(op.results[0])
    b = f.s.b
    sidx = [b.sub(_i64(shape[d] - 1), i) if d in dims else i for d, i in enumerate(idx)]
    return f.value_at(op.operands[0], sidx)


@index_rule("stablehlo.iota")
def _iota(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    from oxla_codegen_llvm.scalar import convert

    dim = op.attr("iota_dimension").value
    return convert(f.s, idx[dim], T.IntegerType(64), op.results[0].type.element_type)
