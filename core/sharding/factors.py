"""One step of sharding propagation: an op's factor shardings (Shardy's model).

:func:`propagate_op` projects the shardings of an op's operands and results onto the
factors of its rule, picks each factor's axes (the longest compatible list), and
writes them back into every open dimension. :mod:`oxla.sharding.propagation` runs
these steps to a fixed point; the partitioner reuses :func:`project` and
:func:`compose` to read an op's factor shardings.
"""

from __future__ import annotations

from oxla.ir import types as T
from oxla.ir.operation import Operation, Value
from oxla.ir.sdy import AxisRef, DimSharding, MeshAttr, TensorShardingAttr
from oxla.sharding.rules import NEED_REPLICATION, Rule


def _rank(v: Value) -> int:
    return len(v.type.shape) if isinstance(v.type, T.TensorType) else -1


class _State:
    """The shardings of one function's values while propagation runs."""

    def __init__(self, func: Operation, table: dict[str, MeshAttr]):
        self.func = func
        self.table = table
        self.sh: dict[Value, TensorShardingAttr] = {}
        self.ret: list[TensorShardingAttr | None] = []
        self.max_priority = -1
        self.priority: int | None = None  # the round's priority (None: all)
        self.stage = 2  # the op-priority stage (propagation._Step.direction)
        self.divisible = True  # a factor takes an axis only while its size stays divisible
        self.sub_axes = False  # split axes into sub-axes across compound factors
        # "aggressive": factors take axes in order, an axis goes to the first factor
        # that wants it; "basic": an axis some tensor uses for another factor is taken
        # by none (Shardy's two strategies)
        self.strategy = "aggressive"

    def get(self, v: Value) -> TensorShardingAttr | None:
        s = self.sh.get(v)
        if s is not None and len(s.dims) != _rank(v):
            return None  # a single-device sharding (``[]`` on a mesh without axes)
        return s

    def visible(self, s: TensorShardingAttr | None) -> TensorShardingAttr | None:
        """``s`` as seen in this round (dims of a later priority hidden)."""
        if s is None or self.priority is None:
            return s
        dims = tuple(d if d.priority is None or d.priority <= self.priority
                     else DimSharding((), False) for d in s.dims)
        return TensorShardingAttr(s.mesh, dims, s.replicated, s.unreduced)


def _project(s: TensorShardingAttr | None, dims_factors, sizes, mesh,
             split: bool = False) -> dict[int, tuple]:
    """Axes per factor of a tensor sharded as ``s`` (absent factors: unsharded).

    With ``split``, an axis larger than what a major factor has left is split into
    sub-axes (``"a":(1)2`` for the factor, ``"a":(2)2`` for the next), as Shardy does.
    """
    out: dict[int, tuple] = {}
    if s is None:
        return out
    for d, fs in enumerate(dims_factors):
        if d >= len(s.dims) or not fs:
            continue
        axes = list(s.dims[d].axes)
        for k, f in enumerate(fs):
            if k == len(fs) - 1:
                out[f] = tuple(axes)
                break
            got, prod = [], 1
            while axes and prod < sizes[f]:
                a = axes[0]
                n = a.size(mesh)
                if sizes[f] % (prod * n) == 0:
                    prod *= n
                    got.append(axes.pop(0))
                    continue
                need = sizes[f] // prod
                if split and sizes[f] % prod == 0 and need > 1 and n % need == 0:
                    pre = a.sub[0] if a.sub else 1
                    got.append(AxisRef(a.name, (pre, need)))
                    axes[0] = AxisRef(a.name, (pre * need, n // need))
                    prod *= need
                break
            out[f] = tuple(got)
            if prod < sizes[f]:
                # the minor factors only shard once this one is full
                for g in fs[k + 1:]:
                    out[g] = ()
                break
    return out


def _span(a: AxisRef, mesh) -> tuple[int, int]:
    """The part ``[pre, pre * size)`` of its axis a (sub-)axis covers."""
    if a.sub is None:
        return 1, mesh.axis_size(a.name)
    return a.sub[0], a.sub[0] * a.sub[1]


def _overlap(a: AxisRef, b: AxisRef, mesh) -> bool:
    if a.name != b.name:
        return False
    (p1, e1), (p2, e2) = _span(a, mesh), _span(b, mesh)
    return not (e1 <= p2 or e2 <= p1)


def _merge_sub_axes(axes, mesh) -> tuple:
    out: list[AxisRef] = []
    for a in axes:
        if out and out[-1].name == a.name and _span(out[-1], mesh)[1] == _span(a, mesh)[0]:
            p = _span(out[-1], mesh)[0]
            e = _span(a, mesh)[1]
            full = mesh.axis_size(a.name)
            out[-1] = AxisRef(a.name) if (p, e) == (1, full) else AxisRef(a.name, (p, e // p))
        else:
            out.append(a)
    return tuple(out)


def _is_prefix(a: tuple, b: tuple) -> bool:
    return len(a) <= len(b) and b[:len(a)] == a


def _merge(cands: list[tuple]) -> tuple:
    best: tuple = ()
    for c in cands:
        if _is_prefix(best, c):
            best = c
        elif not _is_prefix(c, best):
            k = 0
            while k < min(len(c), len(best)) and c[k] == best[k]:
                k += 1
            best = best[:k]
    return best


def _compose(fs, factor_axes, sizes, mesh) -> tuple:
    axes: list[AxisRef] = []
    for f in fs:
        ax = factor_axes.get(f, ())
        axes.extend(ax)
        prod = 1
        for a in ax:
            prod *= a.size(mesh)
        if prod < sizes[f]:
            break
    return _merge_sub_axes(axes, mesh)


def _ax(a: AxisRef, mesh, pre: int, size: int) -> AxisRef:
    return AxisRef(a.name) if (pre, size) == (1, mesh.axis_size(a.name)) else \
        AxisRef(a.name, (pre, size))


def _prefix_of(a: AxisRef, b: AxisRef, mesh) -> bool:
    """``a`` is ``b`` or a major part of it (``"x":(1)2`` of ``"x"``)."""
    (p1, e1), (p2, e2) = _span(a, mesh), _span(b, mesh)
    return a.name == b.name and p1 == p2 and e1 <= e2


def _contains(a: AxisRef, b: AxisRef, mesh) -> bool:
    (p1, e1), (p2, e2) = _span(a, mesh), _span(b, mesh)
    return a.name == b.name and p1 <= p2 and e2 <= e1


def _without_overlap(a: AxisRef, others, mesh) -> AxisRef | None:
    """The largest major part of ``a`` that overlaps none of ``others`` (None: none)."""
    for b in others:
        if not _overlap(a, b, mesh):
            continue
        (p1, _e1), (p2, _e2) = _span(a, mesh), _span(b, mesh)
        if p2 <= p1:
            return None
        a = _ax(a, mesh, p1, p2 // p1)
    return a


def _compatible(old: list, new: tuple, expand: bool, mesh) -> tuple[list, bool]:
    """Merges one tensor's axes along a factor into the candidate: the longer of two
    lists where one is a prefix of the other; at a conflict, the common prefix, which
    no later tensor may extend."""
    out: list = []
    i = 0
    while i < len(old) and i < len(new):
        o, n = old[i], new[i]
        if o == n:
            out.append(n)
        elif _prefix_of(n, o, mesh) and o.name == n.name:
            out.append(n if i + 1 < len(new) else o)
            if i + 1 < len(new):
                return out, False
        elif _prefix_of(o, n, mesh):
            if not expand or i + 1 < len(old):
                out.append(o)
                return out, False
            out.append(n)
        else:
            return out, False
        i += 1
    out += old[i:]
    if expand:
        out += new[i:]
    return out, expand


def _truncate(axes: list, fn, mesh) -> list:
    """``axes`` up to the first one ``fn(axis, sharded size)`` rejects (None) or
    shortens (then the shortened one is the last)."""
    size = 1
    for i, a in enumerate(axes):
        size *= a.size(mesh)
        b = fn(a, size)
        if b is None:
            return axes[:i]
        if b != a:
            return axes[:i] + [b]
    return axes


def _order(n: int, n_in: int, direction: str) -> list[tuple[int, bool]]:
    """The tensors whose axes may extend a factor's candidate (True), then those only
    checked for conflicts (False): operands first when propagating forward, results
    first backward (Shardy's propagation directions)."""
    ins, outs = list(range(n_in)), list(range(n_in, n))
    if direction == "FORWARD":
        return [(i, True) for i in ins] + [(i, False) for i in outs]
    if direction == "BACKWARD":
        return [(i, True) for i in outs] + [(i, False) for i in ins]
    return [(i, True) for i in range(n)]


def _candidate(projs, f: int, order, mesh) -> list:
    axes: list = []
    expand = True
    for i, may in order:
        if f in projs[i]:
            if not may:
                expand = False
            axes, expand = _compatible(axes, projs[i][f], expand, mesh)
    return axes


def _factor_axes(st: _State, rule: Rule, slots, shs, projs, mesh, order=None,
                 only_pass: bool = False, nelems=None,
                 elementwise: bool = False) -> dict[int, tuple]:
    """Each factor's axes (Shardy's factor propagation): the compatible major axes of
    the tensors along it, cut where a tensor cannot take them (its replicated axes, a
    closed dimension, a non-minor factor left indivisible) and where any tensor uses
    them for another factor (the ``basic`` strategy; else :func:`_greedy_factor_axes`)."""
    order = order or [(i, True) for i in range(len(projs))]
    if st.strategy != "basic":
        return _greedy_factor_axes(st, rule, projs, mesh, order, only_pass,
                                   nelems or [0] * len(projs), elementwise)
    info: list[dict[int, tuple[bool, bool]]] = []  # factor -> (closed, minor-most)
    for s, fs in zip(shs, slots):
        d_info = {}
        for d, dfs in enumerate(fs):
            closed = s is not None and d < len(s.dims) and s.dims[d].closed
            for k, f in enumerate(dfs):
                d_info[f] = (closed, k == len(dfs) - 1)
        info.append(d_info)
    result: dict[int, list] = {}
    for f in range(len(rule.sizes)):
        if rule.kinds.get(f) == NEED_REPLICATION or (only_pass and f in rule.kinds):
            continue
        result[f] = _candidate(projs, f, order, mesh)
    for s, p, inf in zip(shs, projs, info):
        rep = s.replicated if s is not None else ()
        for f, (closed, minor) in inf.items():
            if f not in result:
                continue
            have = p.get(f, ())

            def within(a, size, rep=rep, have=have, closed=closed, minor=minor, f=f):
                if _without_overlap(a, rep, mesh) != a:
                    return None
                if any(_contains(h, a, mesh) for h in have):
                    return a
                if not closed and (rule.sizes[f] % size == 0 or (minor and not st.divisible)):
                    return a
                if have and _prefix_of(have[-1], a, mesh):
                    return have[-1]
                return None

            result[f] = _truncate(result[f], within, mesh)
    for p in projs:
        for f in result:
            others = [b for g, ax in p.items() if g != f for b in ax]
            result[f] = _truncate(result[f],
                                  lambda a, _n, o=others: _without_overlap(a, o, mesh), mesh)
    return {f: tuple(a) for f, a in result.items() if a}


def _greedy_factor_axes(st: _State, rule: Rule, projs, mesh, order, only_pass: bool,
                        nelems: list[int], elementwise: bool) -> dict[int, tuple]:
    """The aggressive strategy: each factor takes the longest compatible axis list
    (a conflict keeps the common prefix, cut where the size stops dividing). Where two
    factors want one axis of a tensor, the factor of the larger source tensor wins
    (for element-wise ops, then the more sharded factor), then the earlier factor:
    the order is that of the returned dict."""
    factor_axes: dict[int, tuple] = {}
    keys = []
    for f in range(len(rule.sizes)):
        if rule.kinds.get(f) == NEED_REPLICATION or (only_pass and f in rule.kinds):
            continue
        if all(may for _, may in order):
            best = _merge([p[f] for p in projs if f in p])
        else:
            best = tuple(_candidate(projs, f, order, mesh))
        keep, prod = [], 1
        for a in best:
            if st.divisible and rule.sizes[f] % (prod * a.size(mesh)):
                break
            prod *= a.size(mesh)
            keep.append(a)
        if keep:
            factor_axes[f] = tuple(keep)
            src = max((n for p, n in zip(projs, nelems) if p.get(f)), default=0)
            keys.append((-src, -prod if elementwise else 0, f))
    return {k[2]: factor_axes[k[2]] for k in sorted(keys)}


def _propagate_op(st: _State, values: list[Value], slots: list, rule: Rule,
                  fixed: set[int], direction: str = "BOTH", n_in: int = 0,
                  only_pass: bool = False, elementwise: bool = True) -> bool:
    """One op: ``values[i]`` has dims->factors ``slots[i]``; tensors in ``fixed`` are
    read but not updated. ``direction`` FORWARD lets only the first ``n_in`` values
    (the operands) extend a factor's axes, BACKWARD only the others; ``only_pass``
    leaves reduction factors alone. Returns True when a sharding changed."""
    shs = [st.visible(st.get(v)) for v in values]

    def mesh_for(sh):
        return sh.mesh if isinstance(sh.mesh, MeshAttr) else st.table.get(sh.mesh)

    def has_axes(sh) -> bool:
        return (m := mesh_for(sh)) is not None and bool(m.axes)

    # a sharding over a mesh without axes shards nothing; only its closed dims count
    # (it takes the op's mesh when it grows)
    shs = [s if s is None or has_axes(s) or s.dims else None for s in shs]
    named = [s for s in shs if s is not None and has_axes(s)]
    if not named:
        return False
    mesh_name = named[0].mesh
    mesh = mesh_for(named[0])
    if any(mesh_for(s).axes != mesh.axes for s in named[1:]):
        return False  # tensors on different meshes: nothing propagates between them
    projs = [_project(s, fs, rule.sizes, mesh, st.sub_axes) for s, fs in zip(shs, slots)]
    nelems = [_nelems(v) for v in values]
    factor_axes = _factor_axes(st, rule, slots, shs, projs, mesh,
                               _order(len(values), n_in, direction), only_pass, nelems,
                               elementwise)
    rank_of = {f: k for k, f in enumerate(factor_axes)}
    if not factor_axes:
        return False
    changed = False
    for i, (v, fs) in enumerate(zip(values, slots)):
        if i in fixed or _rank(v) < 0:
            continue
        cur = st.get(v)
        if cur is None and v in st.sh and not (len(st.sh[v].dims) == _rank(v) and not (
                (m := mesh_for(st.sh[v])) is not None and m.axes)):
            continue  # a single-device sharding stays as written
        if cur is not None and not has_axes(cur):
            cur = TensorShardingAttr(mesh_name, cur.dims, (), ())
        rank = _rank(v)
        dims = list(cur.dims) if cur is not None else [DimSharding((), False)] * rank
        taken = [a for d in dims for a in d.axes]
        new = list(dims)
        # dims in the order of their factors' claims (see _greedy_factor_axes)
        for d in sorted(range(rank), key=lambda d: min(
                (rank_of.get(f, len(rank_of)) for f in fs[d]), default=len(rank_of))
                if d < len(fs) else len(rank_of)):
            if d >= len(fs) or dims[d].closed:
                continue
            want = _compose(fs[d], factor_axes, rule.sizes, mesh)
            if len(want) > len(dims[d].axes) and _is_prefix(dims[d].axes, want):
                extra = [a for a in want[len(dims[d].axes):]]
                ok = []
                for a in extra:
                    if any(_overlap(a, t, mesh) for t in taken):
                        break
                    ok.append(a)
                if ok:
                    taken.extend(ok)
                    new[d] = DimSharding(dims[d].axes + tuple(ok), False, dims[d].priority)
        if new != dims:
            st.sh[v] = TensorShardingAttr(cur.mesh if cur is not None else mesh_name,
                                          tuple(new), cur.replicated if cur else (),
                                          cur.unreduced if cur else ())
            changed = True
    return changed


def _nelems(v: Value) -> int:
    n = 1
    for x in (v.type.shape if _rank(v) >= 0 else ()):
        n *= x if isinstance(x, int) and x > 0 else 1
    return n


def _identity_rule(v: Value) -> tuple[Rule, list]:
    r = Rule()
    fs = [(r.factor(s),) for s in v.type.shape]
    return r, [fs, fs]


project = _project
compose = _compose
propagate_op = _propagate_op

__all__ = ["project", "compose", "propagate_op"]
