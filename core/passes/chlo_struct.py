"""CHLO ops with integer/bit or structural decompositions: ``next_after`` (bit
arithmetic), 64-bit ``mulhi`` (32-bit halves), ``top_k`` (stable sort of values with an
iota, then a slice), ``scan`` (a ``while`` loop over ``dynamic_slice`` /
``dynamic_update_slice``) and ``ragged_dot`` (one masked ``dot_general`` per group),
following StableHLO's ``chlo-legalize-to-stablehlo``."""

from __future__ import annotations

import numpy as np

from oxla.ir import Block, Builder, Operation, Region, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes.chlo_common import Emitter, legalizes, static_float
from oxla.passes.rewrite import Rewriter

I64 = T.IntegerType(64)


def _static(v: Value) -> bool:
    return isinstance(v.type, T.TensorType) and v.type.is_static


# ---------------------------------------------------------------------------
# next_after


@legalizes("chlo.next_after")
def next_after(op: Operation, rw: Rewriter) -> bool:
    """``next_after(x, y)`` on the bit patterns: ``x ± 1`` ulp toward ``y`` (``-1`` when
    ``|x| > |y|`` or the signs differ), the smallest subnormal with ``y``'s sign from
    zero, ``y`` when ``x == y``, NaN when either is NaN."""
    x, y = op.operands
    if not (static_float(x) and static_float(y)):
        return False
    e = Emitter(op, rw)
    bits = x.type.element_type.bitwidth
    ut = T.IntegerType(bits, unsigned=True)
    xi, yi = e.bitcast(x, ut), e.bitcast(y, ut)
    sign = e.const(1 << (bits - 1), xi)
    mag = e.const((1 << (bits - 1)) - 1, xi)
    one = e.const(1, xi)
    x_abs, y_abs = e.and_(xi, mag), e.and_(yi, mag)
    x_sign, y_sign = e.and_(xi, sign), e.and_(yi, sign)
    down = e.or_(e.cmp(x_abs, y_abs, "GT"), e.cmp(x_sign, y_sign, "NE"))
    r = e.sel(down, e.subtract(xi, one), e.add(xi, one))
    r = e.sel(e.cmp(x_abs, e.const(0, xi), "EQ"), e.or_(y_sign, one), r)
    r = e.sel(e.cmp(x, y, "EQ"), yi, r)
    out = e.bitcast(r, x.type.element_type)
    nan = e.or_(e.cmp(x, x, "NE"), e.cmp(y, y, "NE"))
    rw.replace_op(op, [e.where(nan, np.nan, out, x)])
    return True


# ---------------------------------------------------------------------------
# mulhi (64-bit)


@legalizes("chlo.mulhi")
def mulhi64(op: Operation, rw: Rewriter) -> bool:
    """64-bit ``mulhi``: the unsigned high word from four 32x32 → 64 partial products;
    signed operands subtract ``b`` when ``a < 0`` and ``a`` when ``b < 0`` (mod 2^64)."""
    a, b = op.operands
    et = a.type.element_type
    if not (isinstance(et, T.IntegerType) and et.width == 64 and _static(a)):
        return False
    e = Emitter(op, rw)
    u64 = T.IntegerType(64, unsigned=True)
    au = a if et.unsigned else e.bitcast(a, u64)
    bu = b if et.unsigned else e.bitcast(b, u64)
    k32, lo_mask = e.const(32, au), e.const(0xFFFFFFFF, au)
    a_lo, a_hi = e.and_(au, lo_mask), e.shift_right_logical(au, k32)
    b_lo, b_hi = e.and_(bu, lo_mask), e.shift_right_logical(bu, k32)
    ll, hl = e.multiply(a_lo, b_lo), e.multiply(a_hi, b_lo)
    lh, hh = e.multiply(a_lo, b_hi), e.multiply(a_hi, b_hi)
    cross = e.add(e.add(e.shift_right_logical(ll, k32), e.and_(hl, lo_mask)), lh)
    hi = e.add(e.add(hh, e.shift_right_logical(hl, k32)), e.shift_right_logical(cross, k32))
    if not et.unsigned:
        zero = e.const(0, au)
        hi = e.subtract(hi, e.sel(e.cmp(a, e.const(0, a), "LT"), bu, zero))
        hi = e.subtract(hi, e.sel(e.cmp(b, e.const(0, b), "LT"), au, zero))
        hi = e.bitcast(hi, et)
    rw.replace_op(op, [hi])
    return True


# ---------------------------------------------------------------------------
# top_k


@legalizes("chlo.top_k")
def top_k(op: Operation, rw: Rewriter) -> bool:
    """``top_k(x, k)``: a stable descending ``sort`` of ``(x, iota)`` along the last
    dimension (``GT`` with ``TOTALORDER`` for floats: +NaN first, +0 before -0; ties keep
    the lower index first), then ``slice`` of the first ``k``."""
    x = op.operands[0]
    if not _static(x):
        return False
    k = int(A.to_python(op.attributes["k"]))
    t = x.type
    it = op.results[1].type.element_type
    b = Builder.before(op)
    last = t.rank - 1
    iota = b.iota(t.shape, it, last)
    et = t.element_type
    scalar, iscalar = T.TensorType((), et), T.TensorType((), it)
    body = Block([scalar, scalar, iscalar, iscalar])
    bb = Builder(body, loc=op.loc)
    ctype = (
        "TOTALORDER"
        if isinstance(et, T.FloatType)
        else (
            "UNSIGNED"
            if isinstance(et, T.IntegerType) and (et.unsigned or et.width == 1)
            else "SIGNED"
        )
    )
    bb.create(
        "stablehlo.return", [bb.compare("GT", body.args[0], body.args[1], ctype)], result_types=[]
    )
    srt = b.create(
        "stablehlo.sort",
        [x, iota],
        {"dimension": A.i64_attr(last), "is_stable": A.BoolAttr(True)},
        [t, iota.type],
        [Region([body])],
    )
    start, limit = [0] * t.rank, list(t.shape)
    limit[last] = k
    vals = b.slice(srt.results[0], start, limit)
    idx = b.slice(srt.results[1], start, limit)
    rw.replace_op(op, [vals, idx])
    return True


# ---------------------------------------------------------------------------
# scan


@legalizes("chlo.scan")
def scan(op: Operation, rw: Rewriter) -> bool:
    """``scan`` → ``while (i < n)``: slice step ``j`` (``n-1-i`` when ``is_reverse``) of
    each input with ``dynamic_slice``, run the body inline, write each output slice
    with ``dynamic_update_slice``, carry the rest."""
    inputs = op.operand_group("inputs")
    inits = op.operand_group("inits")
    if not all(_static(v) for v in op.operands) or not all(_static(r) for r in op.results):
        return False
    dim = int(A.to_python(op.attributes["dimension"]))
    rev = bool(A.to_python(op.attributes.get("is_reverse", A.BoolAttr(False))))
    n_out = len(op.results) - len(inits)
    outs_t = [r.type for r in op.results[:n_out]]
    n = inputs[0].type.shape[dim] if inputs else outs_t[0].shape[dim]
    b = Builder.before(op)
    idx_t = T.TensorType((), I64)
    zeros = [b.constant(np.zeros(t.shape, t.element_type.dtype), t) for t in outs_t]
    state = [b.constant(np.int64(0), idx_t), *inits, *zeros]
    types = [v.type for v in state]
    n_c = len(inits)

    cond = Block(types)
    cb = Builder(cond, loc=op.loc)
    cb.create(
        "stablehlo.return",
        [cb.compare("LT", cond.args[0], cb.constant(np.int64(n), idx_t))],
        result_types=[],
    )

    body = Block(types)
    bb = Builder(body, loc=op.loc)
    i = body.args[0]
    j = bb.subtract(bb.constant(np.int64(n - 1), idx_t), i) if rev else i
    zero = bb.constant(np.int64(0), idx_t)

    def starts(rank: int) -> list[Value]:
        return [j if d == dim else zero for d in range(rank)]

    step_args = []
    for x in inputs:
        sizes = list(x.type.shape)
        sizes[dim] = 1
        piece = bb.create(
            "stablehlo.dynamic_slice",
            [x, *starts(x.type.rank)],
            {"slice_sizes": A.i64_array(sizes)},
            [x.type.with_shape(tuple(sizes))],
        ).results[0]
        step_args.append(bb.reshape(piece, [s for d, s in enumerate(sizes) if d != dim]))
    step_args += list(body.args[1 : 1 + n_c])
    mapping: dict[Value, Value] = dict(zip(op.regions[0].blocks[0].args, step_args))
    src = op.regions[0].blocks[0]
    for inner in src.ops[:-1]:
        bb.insert(inner.clone(mapping))
    res = [mapping.get(v, v) for v in src.ops[-1].operands]
    new_outs = []
    for k, t in enumerate(outs_t):
        acc = body.args[1 + n_c + k]
        shape = list(t.shape)
        shape[dim] = 1
        upd = bb.reshape(res[k], shape)
        new_outs.append(
            bb.create(
                "stablehlo.dynamic_update_slice", [acc, upd, *starts(t.rank)], result_types=[t]
            ).results[0]
        )
    nxt = bb.add(i, bb.constant(np.int64(1), idx_t))
    bb.create("stablehlo.return", [nxt, *res[n_out:], *new_outs], result_types=[])
    loop = b.create("stablehlo.while", state, None, types, [Region([cond]), Region([body])])
    final = list(loop.results)
    rw.replace_op(op, [*final[1 + n_c :], *final[1 : 1 + n_c]])
    return True


# ---------------------------------------------------------------------------
# ragged_dot


def _ends(b: Builder, gs: Value) -> tuple[list[Value], list[Value]]:
    """Per group ``j``: the start and end row (``gs.shape[:-1]`` tensors)."""
    t = gs.type
    lead = list(t.shape[:-1])
    groups = t.shape[-1]
    starts, ends = [], []
    acc = b.constant(np.zeros(lead, t.element_type.dtype), t.with_shape(tuple(lead)))
    for j in range(groups):
        s = b.slice(gs, [0] * len(lead) + [j], lead + [j + 1])
        s = b.reshape(s, lead)
        starts.append(acc)
        acc = b.add(acc, s)
        ends.append(acc)
    return starts, ends


def _row_mask(b: Builder, shape: tuple, axis: int, s: Value, e: Value) -> Value:
    """``s <= iota(axis) < e`` over ``shape`` (``s``/``e`` broadcast on the leading dims)."""
    et = s.type.element_type
    iota = b.iota(shape, et, axis)
    lead = list(range(s.type.rank))
    sb = b.broadcast_in_dim(s, shape, lead)
    eb = b.broadcast_in_dim(e, shape, lead)
    return b.create(
        "stablehlo.and",
        [b.compare("GE", iota, sb), b.compare("LT", iota, eb)],
        result_types=[T.TensorType(shape, T.IntegerType(1))],
    ).results[0]


@legalizes("chlo.ragged_dot")
def ragged_dot(op: Operation, rw: Rewriter) -> bool:
    """``ragged_dot`` by mode: ragged batch dimension → plain ``dot_general``; ragged
    free dimension → per group, ``dot_general`` with that group's rhs slice, rows
    outside the group masked by ``select``; ragged contracting dimension → per group,
    lhs columns outside the group zeroed, results stacked on a new leading dimension."""
    from oxla.interpreter.rules.chlo import ragged_dims

    lhs, rhs, gs = op.operands
    if not all(_static(v) for v in op.operands) or not _static(op.results[0]):
        return False
    dn = ragged_dims(op.attributes["ragged_dot_dimension_numbers"])
    lb, rb = list(dn["lhs_batching_dimensions"]), list(dn["rhs_batching_dimensions"])
    lc, rc = list(dn["lhs_contracting_dimensions"]), list(dn["rhs_contracting_dimensions"])
    (r,) = dn["lhs_ragged_dimensions"]
    out_t = op.results[0].type
    b = Builder.before(op)

    def dot(lv: Value, rv: Value, rbd, rcd, t: T.TensorType) -> Value:
        attrs = {"dot_dimension_numbers": A.dot_dimension_numbers(lb, rbd, lc, rcd)}
        return b.create("stablehlo.dot_general", [lv, rv], attrs, [t]).results[0]

    if r in lb:
        rw.replace_op(op, [dot(lhs, rhs, rb, rc, out_t)])
        return True
    starts, ends = _ends(b, gs)
    zero = b.constant(np.zeros((), out_t.element_type.dtype), T.TensorType((), out_t.element_type))
    if r in lc:
        part_t = out_t.with_shape(out_t.shape[1:])
        lz = b.broadcast_in_dim(b.convert(zero, lhs.type.element_type), lhs.type.shape, [])
        parts = []
        for s, e in zip(starts, ends):
            mask = _row_mask(b, lhs.type.shape, r, s, e)
            part = dot(b.select(mask, lhs, lz), rhs, rb, rc, part_t)
            parts.append(b.reshape(part, [1, *part_t.shape]))
        rw.replace_op(op, [b.concatenate(parts, 0) if len(parts) > 1 else parts[0]])
        return True
    (g,) = dn["rhs_group_dimensions"]

    def shift(ds):
        return [d - (d > g) for d in ds]

    lf = [d for d in range(lhs.type.rank) if d not in lb and d not in lc]
    r_out = len(lb) + lf.index(r)
    res = b.broadcast_in_dim(zero, out_t.shape, [])
    rshape = list(rhs.type.shape)
    for j, (s, e) in enumerate(zip(starts, ends)):
        lim = list(rshape)
        lim[g] = j + 1
        start = [0] * len(rshape)
        start[g] = j
        rj = b.reshape(b.slice(rhs, start, lim), [n for d, n in enumerate(rshape) if d != g])
        part = dot(lhs, rj, shift(rb), shift(rc), out_t)
        res = b.select(_row_mask(b, out_t.shape, r_out, s, e), part, res)
    rw.replace_op(op, [res])
    return True
