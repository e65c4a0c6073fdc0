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
from oxla_codegen_llvm.complex import constant
from oxla_codegen_llvm.loops import I64, delinearize, linearize
from oxla_codegen_llvm.rules import RULES
from oxla_codegen_llvm.scalar import (
    EMITTERS,
    Scalar,
    convert,
    emit_scalar,
    from_storage,
    llvm_type,
    round_to,
    storage_type,
    to_storage,
)

IndexRule = Callable[["FusedEmitter", Operation, list], ir.Value]
INDEX_RULES = RULES.view("index")
"""The generic index rules (read-only: register through :func:`index_rule`)."""


def index_rule(name: str, platform: str | None = None) -> Callable[[IndexRule], IndexRule]:
    """Registers the index rule of ``name`` (``RULES.register(name, fn, platform,
    "index")``).

    Raises:
        ValueError: a rule for ``name`` (on that platform) exists.
    """

    def deco(fn: IndexRule) -> IndexRule:
        RULES.register(name, fn, platform, "index")
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
    """Loads element ``offset`` of a buffer of ``et`` (as its register type: booleans
    come back as ``i1``, halves as f32)."""
    st = storage_type(et)
    v = s.b.load(s.b.gep(ptr, [offset], source_etype=st, inbounds=True), typ=st)
    return from_storage(s, et, v)


def store(s: Scalar, ptr: ir.Value, et: T.ElementType, offset: ir.Value, v: ir.Value) -> None:
    """Stores ``v`` into element ``offset`` of a buffer of ``et``."""
    st = storage_type(et)
    s.b.store(to_storage(s, et, v), s.b.gep(ptr, [offset], source_etype=st, inbounds=True))


class FusedEmitter:
    """Emits values of a fused expression at an index.

    Args:
        s: the scalar context (builder, module, target, fast_math).
        buffers: the materialized values (kernel parameters) -> their pointer.
    """

    def __init__(self, s: Scalar, buffers: dict[Value, ir.Value]):
        self.s = s
        self.buffers = buffers
        self.scalars: dict[Value, ir.Value] = {}  # rank-0 values bound to registers
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
        if v in self.scalars:
            return self.scalars[v]
        if v in self.buffers:
            return load(self.s, self.buffers[v], et, linearize(self.s.b, idx, shape_of(v)))
        op = v.owner_op
        if op is None:
            raise NotSupportedError("a block argument that is not a kernel buffer")
        if op.name == "stablehlo.constant" and is_splat_constant(op):
            x = op.attr("value").array.reshape(-1)[0]
            if isinstance(et, T.ComplexType):

                return constant(complex(x))
            ty = llvm_type(et)
            return ir.Constant(ty, bool(x) if ty == ir.IntType(1) else x.item())
        rule = INDEX_RULES.get(op.name)
        if rule is not None:
            return rule(self, op, idx)
        if op.name in EMITTERS:
            rank = len(shape_of(v))
            args = [self.value_at(a, idx if len(shape_of(a)) == rank else [])
                    for a in op.operands]
            return round_to(self.s, et, emit_scalar(self.s, op, args))
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
    src_shape, out_shape = shape_of(src), shape_of(op.results[0])
    groups = reshape_groups(src_shape, out_shape)
    if groups is None:
        flat = linearize(f.s.b, idx, out_shape)
        return f.value_at(src, delinearize(f.s.b, flat, src_shape))
    sidx: list = [_i64(0)] * len(src_shape)  # unit dims of the source
    for outs, srcs in groups:
        if len(outs) == 1 and len(srcs) == 1:
            sidx[srcs[0]] = idx[outs[0]]
            continue
        flat = linearize(f.s.b, [idx[k] for k in outs], [out_shape[k] for k in outs])
        for k, x in zip(srcs, delinearize(f.s.b, flat, [src_shape[k] for k in srcs])):
            sidx[k] = x
    return f.value_at(src, sidx)


def reshape_groups(src: Sequence[int], out: Sequence[int]
                   ) -> list[tuple[list[int], list[int]]] | None:
    """The dimension groups of a reshape: pairs (result dims, source dims) of equal
    element count, in order, unit dims left out (a source unit dim's index is 0). A
    result index maps to the source group by group: one dim to one dim directly, else
    through the group's own flat offset, so no division spans the whole shape (a
    reshape that only adds or drops unit dims divides nothing, and vectorizes). None
    when a dimension is 0."""
    if 0 in src or 0 in out:
        return None
    groups: list[tuple[list[int], list[int]]] = []
    so = [k for k, d in enumerate(out) if d != 1]
    ss = [k for k, d in enumerate(src) if d != 1]
    i = j = 0
    while i < len(so) and j < len(ss):
        gi, gj = [so[i]], [ss[j]]
        po, ps = out[so[i]], src[ss[j]]
        i, j = i + 1, j + 1
        while po != ps:
            if po < ps and i < len(so):
                gi.append(so[i])
                po, i = po * out[so[i]], i + 1
            elif ps < po and j < len(ss):
                gj.append(ss[j])
                ps, j = ps * src[ss[j]], j + 1
            else:
                return None
        groups.append((gi, gj))
    return groups if i == len(so) and j == len(ss) else None


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
    dim = op.attr("iota_dimension").value
    return convert(f.s, idx[dim], T.IntegerType(64), op.results[0].type.element_type)


def emit_region(s: Scalar, region, args: Sequence[ir.Value]) -> list[ir.Value]:
    """Emits a region of scalar (rank-0) ops (a ``reduce``/``scatter``/``sort`` body) on
    the register values ``args`` bound to its block arguments; returns the values its
    ``return`` yields.

    Raises:
        NotSupportedError: an op of the body the emitters cannot compute on scalars.
    """
    block = region.blocks[0]
    f = FusedEmitter(s, {})
    f.scalars.update(zip(block.args, args))
    ret = block.ops[-1]
    return [f.value_at(v, []) for v in ret.operands]


def to_index(f: FusedEmitter, v: Value, idx: list) -> ir.Value:
    """The integer value of ``v`` at ``idx`` as i64 (unsigned types zero-extended)."""
    return convert(f.s, f.value_at(v, idx), v.type.element_type, T.IntegerType(64))


def clamp(b: ir.IRBuilder, x: ir.Value, lo: int, hi: int) -> ir.Value:
    """``min(max(x, lo), hi)`` on signed i64."""
    x = b.select(b.icmp_signed("<", x, _i64(lo)), _i64(lo), x)
    return b.select(b.icmp_signed(">", x, _i64(hi)), _i64(hi), x)


@index_rule("stablehlo.concatenate")
def _concatenate(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    b = f.s.b
    dim = op.attr("dimension").value
    parts, start = [], 0
    for x in op.operands:
        n = shape_of(x)[dim]
        if n:
            parts.append((x, start, n))
        start += n
    if not parts:
        # an empty result: no element is ever computed, but the (dead) code needs a
        # value of the element's type: operand 0's, read where it would start
        return f.value_at(op.operands[0], [_i64(0)] * len(idx))
    out = None
    for x, st, n in reversed(parts):
        sidx = list(idx)
        sidx[dim] = clamp(b, b.sub(idx[dim], _i64(st)), 0, n - 1)
        val = f.value_at(x, sidx)
        out = val if out is None else b.select(b.icmp_signed("<", idx[dim], _i64(st + n)),
                                               val, out)
    return out


@index_rule("stablehlo.pad")
def _pad(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    b = f.s.b
    src, pad_value = op.operands
    lo = op.attr("edge_padding_low").values
    interior = op.attr("interior_padding").values
    shape = shape_of(src)
    pv = f.value_at(pad_value, [])
    if 0 in shape:
        return pv
    inside = ir.Constant(ir.IntType(1), 1)
    sidx = []
    for d, i in enumerate(idx):
        t = b.sub(i, _i64(lo[d]))
        step = interior[d] + 1
        q = b.sdiv(t, _i64(step)) if step != 1 else t
        ok = b.and_(b.icmp_signed(">=", t, _i64(0)), b.icmp_signed("<", q, _i64(shape[d])))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(t, _i64(step)), _i64(0)))
        inside = b.and_(inside, ok)
        sidx.append(clamp(b, q, 0, shape[d] - 1))
    return b.select(inside, f.value_at(src, sidx), pv)


def _starts(f: FusedEmitter, values: Sequence[Value], limits: Sequence[int]) -> list:
    return [clamp(f.s.b, to_index(f, v, []), 0, max(lim, 0)) for v, lim in zip(values, limits)]


@index_rule("stablehlo.dynamic_slice")
def _dynamic_slice(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    src = op.operands[0]
    shape, out = shape_of(src), shape_of(op.results[0])
    starts = _starts(f, op.operands[1:], [a - c for a, c in zip(shape, out)])
    return f.value_at(src, [f.s.b.add(st, i) for st, i in zip(starts, idx)])


@index_rule("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    b = f.s.b
    src, upd = op.operands[:2]
    shape, ushape = shape_of(src), shape_of(upd)
    base = f.value_at(src, idx)
    if 0 in ushape:
        return base
    starts = _starts(f, op.operands[2:], [a - c for a, c in zip(shape, ushape)])
    inside = ir.Constant(ir.IntType(1), 1)
    uidx = []
    for i, st, n in zip(idx, starts, ushape):
        t = b.sub(i, st)
        inside = b.and_(inside, b.and_(b.icmp_signed(">=", t, _i64(0)),
                                       b.icmp_signed("<", t, _i64(n))))
        uidx.append(clamp(b, t, 0, n - 1))
    return b.select(inside, f.value_at(upd, uidx), base)


@index_rule("stablehlo.gather")
def _gather(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    """Spec ``gather`` (clamped starts, batching dims) at one result index."""
    b = f.s.b
    src, indices = op.operands
    d = op.attr("dimension_numbers")
    offset_dims = [int(x) for x in d.get("offset_dims", ())]
    collapsed = [int(x) for x in d.get("collapsed_slice_dims", ())]
    op_batching = [int(x) for x in d.get("operand_batching_dims", ())]
    idx_batching = [int(x) for x in d.get("start_indices_batching_dims", ())]
    start_map = [int(x) for x in d.get("start_index_map", ())]
    ivd = int(d.get("index_vector_dim", 0))
    sizes = [int(x) for x in op.attr("slice_sizes").values]
    shape, ishape = shape_of(src), shape_of(indices)
    batch = [i for r, i in enumerate(idx) if r not in offset_dims]
    offs = [idx[r] for r in offset_dims]
    full = [_i64(0)] * len(shape)
    for k, dim in enumerate(start_map):
        iidx = list(batch)
        if ivd < len(ishape):
            iidx.insert(ivd, _i64(k))
        full[dim] = clamp(b, to_index(f, indices, iidx), 0, shape[dim] - sizes[dim])
    for d_op, d_start in zip(op_batching, idx_batching):
        full[d_op] = b.add(full[d_op], batch[d_start - (0 if d_start < ivd else 1)])
    axes = [a for a in range(len(shape)) if a not in collapsed and a not in op_batching]
    for a, o in zip(axes, offs):
        full[a] = b.add(full[a], o)
    return f.value_at(src, full)


@index_rule("stablehlo.get_dimension_size")
def _get_dimension_size(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    n = shape_of(op.operands[0])[op.attr("dimension").value]
    return ir.Constant(llvm_type(op.results[0].type.element_type), n)


@index_rule("stablehlo.partition_id")
@index_rule("stablehlo.replica_id")
def _zero_id(f: FusedEmitter, op: Operation, idx: list) -> ir.Value:
    """One process, one device: ids are 0."""
    return ir.Constant(llvm_type(op.results[0].type.element_type), 0)
