"""Per-op sharding rules in Shardy's factor model (``openxla/shardy``
``docs/propagation.md``, "Operation sharding rule").

A rule names the op's independent *factors* (with sizes) and says, for every operand
and result dimension, which factors make it up (major first: a reshape of ``[8]`` to
``[2, 4]`` has one operand dimension of factors ``(i, j)``). A factor of kind
``reduction`` (a dot's contracting dimension, a reduce's reduced dimension) appears
in operands only; sharding it makes partial results that the partitioner all-reduces.
A ``need_replication`` factor (a concatenated or sliced dimension) may not be sharded
inside the op. An op without a rule is replicated by the partitioner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.opdef import ELEMENTWISE
from oxla.ir.operation import Operation

REDUCTION = "reduction"
NEED_REPLICATION = "need_replication"


@dataclass
class Rule:
    """Factor sizes, the factors of every operand/result dimension, and factor kinds.

    ``operands[i][d]`` is the tuple of factor indices of dimension ``d`` of operand ``i``.
    """

    sizes: list[int] = field(default_factory=list)
    operands: list[list[tuple[int, ...]]] = field(default_factory=list)
    results: list[list[tuple[int, ...]]] = field(default_factory=list)
    kinds: dict[int, str] = field(default_factory=dict)

    def factor(self, size: int, kind: str | None = None) -> int:
        self.sizes.append(size)
        if kind:
            self.kinds[len(self.sizes) - 1] = kind
        return len(self.sizes) - 1


def _shape(v) -> tuple[int, ...]:
    t = v.type
    return tuple(t.shape) if isinstance(t, T.TensorType) else ()


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    a = op.attributes.get(name)
    if a is None:
        return ()
    v = A.to_python(a)
    return (int(v),) if isinstance(v, int) else tuple(int(x) for x in v)


def _pointwise(op: Operation) -> Rule:
    shape = _shape(op.results[0])
    r = Rule()
    fs = [r.factor(s) for s in shape]
    r.operands = [[(f,) for f in fs] if _shape(v) == shape else [() for _ in _shape(v)]
                  for v in op.operands]
    r.results = [[(f,) for f in fs] for _ in op.results]
    return r


def _dot(op: Operation) -> Rule:
    dn = op.attributes["dot_dimension_numbers"]
    lb, rb = dn.get("lhs_batching_dimensions", ()), dn.get("rhs_batching_dimensions", ())
    lc, rc = dn.get("lhs_contracting_dimensions", ()), dn.get("rhs_contracting_dimensions", ())
    ls, rs = _shape(op.operands[0]), _shape(op.operands[1])
    r = Rule()
    lhs: list[tuple[int, ...]] = [()] * len(ls)
    rhs: list[tuple[int, ...]] = [()] * len(rs)
    out: list[tuple[int, ...]] = []
    for a, b in zip(lb, rb):
        f = r.factor(ls[a])
        lhs[a] = rhs[b] = (f,)
        out.append((f,))
    for d in range(len(ls)):
        if d not in lb and d not in lc:
            f = r.factor(ls[d])
            lhs[d] = (f,)
            out.append((f,))
    for d in range(len(rs)):
        if d not in rb and d not in rc:
            f = r.factor(rs[d])
            rhs[d] = (f,)
            out.append((f,))
    for a, b in zip(lc, rc):
        f = r.factor(ls[a], REDUCTION)
        lhs[a] = rhs[b] = (f,)
    r.operands = [lhs, rhs]
    r.results = [out]
    return r


def _dot_legacy(op: Operation) -> Rule | None:
    """``stablehlo.dot``: ``[m, k] x [k, n]`` (either side may be a vector ``[k]``)."""
    ls, rs = _shape(op.operands[0]), _shape(op.operands[1])
    if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2):
        return None
    r = Rule()
    out: list[tuple[int, ...]] = []
    lhs: list[tuple[int, ...]] = []
    if len(ls) == 2:
        m = r.factor(ls[0])
        lhs.append((m,))
        out.append((m,))
    k = r.factor(ls[-1], REDUCTION)
    lhs.append((k,))
    rhs: list[tuple[int, ...]] = [(k,)]
    if len(rs) == 2:
        n = r.factor(rs[1])
        rhs.append((n,))
        out.append((n,))
    r.operands, r.results = [lhs, rhs], [out]
    return r


def _reduce(op: Operation) -> Rule:
    n = len(op.operands) // 2
    dims = set(_ints(op, "dimensions"))
    shape = _shape(op.operands[0])
    r = Rule()
    fs = [r.factor(s, REDUCTION if d in dims else None) for d, s in enumerate(shape)]
    if n > 1:  # variadic reductions (argmax) cannot be combined by one all_reduce
        for d in dims:
            r.kinds[fs[d]] = NEED_REPLICATION
    ins = [(f,) for f in fs]
    r.operands = [ins] * n + [[]] * n
    keep = [(f,) for d, f in enumerate(fs) if d not in dims]
    r.results = [keep] * n
    return r


def _transpose(op: Operation) -> Rule:
    perm = _ints(op, "permutation")
    shape = _shape(op.operands[0])
    r = Rule()
    fs = [r.factor(s) for s in shape]
    r.operands = [[(f,) for f in fs]]
    r.results = [[(fs[p],) for p in perm]]
    return r


def _broadcast(op: Operation) -> Rule:
    dims = _ints(op, "broadcast_dimensions")
    ins, out = _shape(op.operands[0]), _shape(op.results[0])
    r = Rule()
    fs = [r.factor(s) for s in out]
    r.operands = [[(fs[dims[i]],) if ins[i] == out[dims[i]] else () for i in range(len(ins))]]
    r.results = [[(f,) for f in fs]]
    return r


def _concatenate(op: Operation) -> Rule:
    dim = _ints(op, "dimension")[0]
    out = _shape(op.results[0])
    r = Rule()
    fs = [r.factor(s, NEED_REPLICATION if d == dim else None) for d, s in enumerate(out)]
    r.operands = [[(f,) for f in fs] for _ in op.operands]
    r.results = [[(f,) for f in fs]]
    return r


def _reshape(op: Operation) -> Rule:
    """Compound factors: walks both shapes, splitting dimensions at common sizes."""
    ins, out = _shape(op.operands[0]), _shape(op.results[0])
    if 0 in ins or 0 in out:
        return None
    r = Rule()
    in_f: list[list[int]] = [[] for _ in ins]
    out_f: list[list[int]] = [[] for _ in out]
    i = j = 0
    ri = ins[0] if ins else 1
    ro = out[0] if out else 1
    while i < len(ins) and j < len(out):
        if ri == 1:
            i += 1
            ri = ins[i] if i < len(ins) else 1
            continue
        if ro == 1:
            j += 1
            ro = out[j] if j < len(out) else 1
            continue
        g = gcd(ri, ro)
        if g == 1 or (ri % ro and ro % ri):  # no common factor: replicate what is left
            f = r.factor(ri, NEED_REPLICATION)
            in_f[i].append(f)
            g2 = r.factor(ro, NEED_REPLICATION)
            out_f[j].append(g2)
            ri = ro = 1
            continue
        s = min(ri, ro)
        f = r.factor(s)
        in_f[i].append(f)
        out_f[j].append(f)
        ri //= s
        ro //= s
    r.operands = [[tuple(x) for x in in_f]]
    r.results = [[tuple(x) for x in out_f]]
    return r


def _custom(op: Operation) -> Rule | None:
    from oxla.ir.sdy import OpShardingRuleAttr

    a = op.attributes.get("sdy.sharding_rule")
    if not isinstance(a, OpShardingRuleAttr):
        return None
    r = Rule()
    index = {}
    for name, size in a.sizes:
        kind = a.kind_of(name)
        index[name] = r.factor(size, kind if kind in (REDUCTION, NEED_REPLICATION) else (
            NEED_REPLICATION if kind in ("permutation", "blocked_propagation") else None))
    r.operands = [[tuple(index[f] for f in d) for d in v] for v in a.operands]
    r.results = [[tuple(index[f] for f in d) for d in v] for v in a.results]
    return r


def _convolution(op: Operation) -> Rule | None:
    """Batch, output feature, and input feature (a reduction) factors; spatial
    dimensions need replication (no halo exchange yet)."""
    dn = op.attributes.get("dimension_numbers")
    groups = [A.to_python(op.attributes.get(k)) or 1
              for k in ("feature_group_count", "batch_group_count")]
    if dn is None or groups != [1, 1]:
        return None
    ls, ks, os_ = _shape(op.operands[0]), _shape(op.operands[1]), _shape(op.results[0])
    r = Rule()
    lhs: list[tuple[int, ...]] = [()] * len(ls)
    rhs: list[tuple[int, ...]] = [()] * len(ks)
    out: list[tuple[int, ...]] = [()] * len(os_)
    b = r.factor(ls[dn.input_batch_dimension])
    lhs[dn.input_batch_dimension] = out[dn.output_batch_dimension] = (b,)
    o = r.factor(ks[dn.kernel_output_feature_dimension])
    rhs[dn.kernel_output_feature_dimension] = out[dn.output_feature_dimension] = (o,)
    i = r.factor(ls[dn.input_feature_dimension], REDUCTION)
    lhs[dn.input_feature_dimension] = rhs[dn.kernel_input_feature_dimension] = (i,)
    for dims, shape, slot in ((dn.input_spatial_dimensions, ls, lhs),
                              (dn.kernel_spatial_dimensions, ks, rhs),
                              (dn.output_spatial_dimensions, os_, out)):
        for d in dims:
            slot[d] = (r.factor(shape[d], NEED_REPLICATION),)
    r.operands, r.results = [lhs, rhs], [out]
    return r


def _slice(op: Operation) -> Rule:
    """Dimensions taken whole (start 0, stride 1, to the end) pass through; sliced ones
    need replication."""
    ins, out = _shape(op.operands[0]), _shape(op.results[0])
    start, limit = _ints(op, "start_indices"), _ints(op, "limit_indices")
    strides = _ints(op, "strides") or (1,) * len(ins)
    r = Rule()
    a, b = [], []
    for d in range(len(ins)):
        whole = start[d] == 0 and limit[d] == ins[d] and strides[d] == 1
        if whole:
            f = r.factor(ins[d])
            a.append((f,))
            b.append((f,))
        else:
            a.append((r.factor(ins[d], NEED_REPLICATION),))
            b.append((r.factor(out[d], NEED_REPLICATION),))
    r.operands, r.results = [a], [b]
    return r


def _dynamic_slice(op: Operation) -> Rule:
    """``dynamic_slice``/``dynamic_update_slice``: dimensions taken whole pass through;
    the others need replication (the offsets are run-time values); the scalar offsets
    have no factors."""
    dus = op.name == "stablehlo.dynamic_update_slice"
    ins = _shape(op.operands[0])
    part = _shape(op.operands[1] if dus else op.results[0])
    r = Rule()
    a, b = [], []
    for d in range(len(ins)):
        if ins[d] == part[d]:
            f = r.factor(ins[d])
            a.append((f,))
            b.append((f,))
        else:
            a.append((r.factor(ins[d], NEED_REPLICATION),))
            b.append((r.factor(part[d], NEED_REPLICATION),))
    if dus:  # operand, update, offsets -> result (the operand's dims)
        r.operands = [a, b] + [[] for _ in op.operands[2:]]
        r.results = [a]
    else:
        r.operands = [a] + [[] for _ in op.operands[1:]]
        r.results = [b]
    return r


def _gather(op: Operation) -> Rule | None:
    """``gather``: the batch dimensions of the indices pass through to the result's
    batch dimensions (index passthrough), operand dimensions taken whole and not indexed
    pass through to their offset dimensions (operand passthrough); the rest need
    replication. Batching dims (``operand_batching_dims``): no rule."""
    dn = op.attributes.get("dimension_numbers")
    get = getattr(dn, "get", None)
    if get is None or tuple(get("operand_batching_dims", ()) or ()):
        return None
    offset = tuple(get("offset_dims", ()) or ())
    collapsed = set(get("collapsed_slice_dims", ()) or ())
    indexed = set(get("start_index_map", ()) or ())
    ivd = int(get("index_vector_dim", 0) or 0)
    sizes = _ints(op, "slice_sizes")
    xs, ids, out = _shape(op.operands[0]), _shape(op.operands[1]), _shape(op.results[0])
    r = Rule()
    x_f: list[tuple[int, ...]] = [()] * len(xs)
    i_f: list[tuple[int, ...]] = [()] * len(ids)
    o_f: list[tuple[int, ...]] = [()] * len(out)
    batch_out = [d for d in range(len(out)) if d not in offset]
    batch_in = [d for d in range(len(ids)) if d != ivd]
    if len(batch_out) != len(batch_in):
        return None
    for di, do in zip(batch_in, batch_out):
        f = r.factor(ids[di])
        i_f[di] = o_f[do] = (f,)
    if ivd < len(ids):
        i_f[ivd] = (r.factor(ids[ivd], NEED_REPLICATION),)
    kept = [d for d in range(len(xs)) if d not in collapsed]
    for d, do in zip(kept, offset):
        if sizes[d] == xs[d] and d not in indexed:
            f = r.factor(xs[d])
            x_f[d] = o_f[do] = (f,)
        else:
            x_f[d] = (r.factor(xs[d], NEED_REPLICATION),)
            o_f[do] = (r.factor(out[do], NEED_REPLICATION),)
    for d in collapsed:
        x_f[d] = (r.factor(xs[d], NEED_REPLICATION),)
    r.operands, r.results = [x_f, i_f], [o_f]
    return r


def _scatter(op: Operation) -> Rule | None:
    """``scatter`` (``N`` inputs, indices, ``N`` updates -> ``N`` results): every input
    dimension is one factor with the results' (the result index space is the input's),
    the updates' window dimensions share it where the window spans the dimension whole,
    and the updates' scatter dimensions share factors with the indices' batch
    dimensions (no result dimension); the index vector dimension and partial windows
    need replication. The partitioner handles a scatter itself
    (:mod:`oxla.sharding.gather`). Batching dims (``input_batching_dims``): no rule."""
    dn = op.attributes.get("scatter_dimension_numbers")
    get = getattr(dn, "get", None)
    n = len(op.results)
    if get is None or tuple(get("input_batching_dims", ()) or ()) or \
            len(op.operands) != 2 * n + 1:
        return None
    window = tuple(get("update_window_dims", ()) or ())
    inserted = set(get("inserted_window_dims", ()) or ())
    ivd = int(get("index_vector_dim", 0) or 0)
    xs, ids, upd = (_shape(op.operands[0]), _shape(op.operands[n]),
                    _shape(op.operands[n + 1]))
    r = Rule()
    x_f = [(r.factor(size),) for size in xs]
    i_f: list[tuple[int, ...]] = [()] * len(ids)
    u_f: list[tuple[int, ...]] = [()] * len(upd)
    kept = [d for d in range(len(xs)) if d not in inserted]
    if len(kept) != len(window):
        return None
    for d, w in zip(kept, window):
        u_f[w] = x_f[d] if upd[w] == xs[d] else (r.factor(upd[w], NEED_REPLICATION),)
    scatter_dims = [d for d in range(len(upd)) if d not in window]
    batch = [d for d in range(len(ids)) if d != ivd]
    if len(scatter_dims) != len(batch):
        return None
    for di, du in zip(batch, scatter_dims):
        f = r.factor(ids[di])
        i_f[di] = u_f[du] = (f,)
    if ivd < len(ids):
        i_f[ivd] = (r.factor(ids[ivd], NEED_REPLICATION),)
    r.operands = [x_f] * n + [i_f] + [u_f] * n
    r.results = [x_f] * n
    return r


_RULES = {
    "stablehlo.gather": _gather,
    "stablehlo.scatter": _scatter,
    "stablehlo.dynamic_slice": _dynamic_slice,
    "stablehlo.dynamic_update_slice": _dynamic_slice,
    "stablehlo.slice": _slice,
    "stablehlo.convolution": _convolution,
    "stablehlo.dot_general": _dot,
    "stablehlo.dot": _dot_legacy,
    "stablehlo.reduce": _reduce,
    "stablehlo.transpose": _transpose,
    "stablehlo.broadcast_in_dim": _broadcast,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.reshape": _reshape,
}
_POINTWISE = {"stablehlo.convert", "stablehlo.select", "stablehlo.clamp",
              "stablehlo.compare", "stablehlo.bitcast_convert", "stablehlo.constant",
              "stablehlo.iota", "sdy.constant", "stablehlo.optimization_barrier",
              "stablehlo.reduce_precision", "stablehlo.is_finite", "mhlo.copy"}


def rule_for(op: Operation) -> Rule | None:
    """The op's sharding rule, or None (the op is then replicated).

    A ``sdy.sharding_rule`` attribute (custom calls) takes precedence.
    """
    r = _custom(op)
    if r is not None:
        return r
    fn = _RULES.get(op.name)
    if fn is not None:
        return fn(op)
    if op.name in _POINTWISE or op.has_trait(ELEMENTWISE):
        if op.results and all(isinstance(v.type, T.TensorType) for v in op.results):
            return _pointwise(op)
    return None


__all__ = ["Rule", "rule_for", "REDUCTION", "NEED_REPLICATION"]
