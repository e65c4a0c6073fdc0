"""Top-k without a full sort: a ``sort`` whose results are only read through ``slice``s
of their first ``K`` positions along the sort dimension (what ``chlo.top_k``, torch's
``topk`` and ``jnp.sort(x)[..., :k]`` lower to) keeps a K-element selection per row.

Per row, elements are visited in index order; a sorted list of at most ``K`` indices
holds the first ``K`` of the stable order seen so far. Once the list is full, an element
costs one comparator call against the list's last entry (the common case); one that
belongs in the list is placed by binary search (``log2 K`` comparator calls) after every
entry it does not strictly precede, so ties keep the lower index first, exactly as the
stable sort orders them (any strict weak order the comparator defines). Positions ``K``
and beyond of the results are not written: no consumer reads them. The cost is
``O(n + m log K)`` per row for ``m`` insertions (``O(n log K)`` comparisons, ``O(n K)``
index moves in the worst case), against the merge sort's ``O(n log n)``; it is used when
``K <= n / 4`` and ``K <= 256``.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from oxla_codegen_llvm import Scalar, linearize, loop_nest, shape_of
from oxla_codegen_llvm.fused import emit_region
from oxla_codegen_llvm.fused import load as load_elem
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range, loop_hint

from oxla_backend_cpu.parallel import grain_for, worth_parallel

I64 = ir.IntType(64)
MAX_K = 256
SCALAR_LOOP = (("llvm.loop.unroll.disable", None),)
"""Loop metadata of the selection's loops (data-dependent branches, a short list move,
K outputs): not unrolled, which bought no run time (top_k8 small and large, one
thread, interleaved A/B) and cost ~3.5 of the ~27 ms of -O3 and code generation of a
top-8 program. (Turning their vectorization off too saved ~3.5 ms more, but made
top_k8/large 3% slower.)"""


def _ints(op, name: str) -> list[int]:
    from oxla.ir import attributes as A

    a = op.attr(name)
    v = A.to_python(a) if a is not None else None
    return [int(x) for x in v] if v is not None else []


def topk_rows(op) -> int | None:
    """``K`` when every result of ``sort`` ``op`` is read only by ``slice``s whose limit
    along the sort dimension is at most ``K`` (and ``K`` is small against the dimension),
    else None."""
    shape = shape_of(op.operands[0])
    if not shape:
        return None
    dim = op.attr("dimension").value
    dim = dim + len(shape) if dim < 0 else dim
    n = shape[dim]
    k = 0
    for r in op.results:
        for user in r.users:
            if user.name != "stablehlo.slice":
                return None
            lim = _ints(user, "limit_indices")
            if len(lim) != len(shape):
                return None
            k = max(k, lim[dim])
    if k == 0 or k > MAX_K or 4 * k > n:
        return None
    return k


def topk_parallel(op) -> tuple[int, int] | None:
    """``(n, grain)`` of a parallel-for over the outermost dimension when it is not the
    sort dimension (chunks select whole rows), else None."""
    shape = shape_of(op.operands[0])
    dim = op.attr("dimension").value
    dim = dim + len(shape) if dim < 0 else dim
    if dim == 0 or len(shape) < 2:
        return None
    n = shape[0]
    per = 4 * max(1, math.prod(shape) // max(n, 1))  # a comparator call is a few ops
    return (n, grain_for(n, per)) if worth_parallel(n, per) else None


def sort_layout(op) -> tuple[list, list, tuple[int, ...], int, int, list[int]]:
    """``(operands, element types, shape, sort dim, its size, the other dims' sizes)`` of a
    ``sort`` (spec ``sort``; a negative ``dimension`` counts from the end)."""
    xs = list(op.operands)
    shape = shape_of(xs[0])
    dim = op.attr("dimension").value
    dim = dim + len(shape) if dim < 0 else dim
    return (xs, [x.type.element_type for x in xs], shape, dim, shape[dim],
            [d for i, d in enumerate(shape) if i != dim])


def emit_topk(s: Scalar, op, K: int, buffers: dict, outs: list) -> None:
    """The first ``K`` positions of every row of the stable ``sort`` ``op``."""
    b = s.b
    xs, ets, shape, dim, n, outer = sort_layout(op)
    if 0 in shape:
        return
    fn, chunk = b.function, None
    if len(fn.args) >= 2 and fn.args[-1].type == I64:  # a parallel kernel (see codegen)
        fn.oxla_parallel = topk_parallel(op)
        chunk = (fn.args[-2], fn.args[-1])
    with b.goto_entry_block():
        lst = b.alloca(I64, K, name="topk.list")
        cnt_p, lo_p, hi_p = b.alloca(I64), b.alloca(I64), b.alloca(I64)

    def c(v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def slot(i):
        return b.gep(lst, [i], source_etype=I64)

    with loop_nest(b, outer, "o", outer=chunk) as oidx:
        def at(i):
            idx = list(oidx)
            idx.insert(dim, i)
            return linearize(b, idx, shape)

        def before(i, j):
            """Whether element ``i`` strictly precedes element ``j`` (the comparator)."""
            fi, fj = at(i), at(j)
            args = []
            for x, et in zip(xs, ets):
                args += [load_elem(s, buffers[x], et, fi), load_elem(s, buffers[x], et, fj)]
            return emit_region(s, op.regions[0], args)[0]

        b.store(c(0), cnt_p)
        with for_range(b, n, "tk", hints=SCALAR_LOOP) as i:
            cnt = b.load(cnt_p, typ=I64)
            full = b.icmp_signed("==", cnt, c(K))
            last = b.load(slot(c(K - 1)), typ=I64)
            # Full list: the element must strictly precede the last entry to enter.
            enter_full = b.append_basic_block("topk.full")
            search = b.append_basic_block("topk.search")
            nxt = b.append_basic_block("topk.next")
            b.cbranch(full, enter_full, search)
            b.position_at_end(enter_full)
            b.cbranch(before(i, last), search, nxt)
            b.position_at_end(search)
            b.store(c(0), lo_p)
            b.store(b.select(full, c(K - 1), cnt), hi_p)
            head = b.append_basic_block("topk.bs")
            body = b.append_basic_block("topk.bs.body")
            place = b.append_basic_block("topk.place")
            b.branch(head)
            b.position_at_end(head)
            lo, hi = b.load(lo_p, typ=I64), b.load(hi_p, typ=I64)
            b.cbranch(b.icmp_signed("<", lo, hi), body, place)
            b.position_at_end(body)
            mid = b.lshr(b.add(lo, hi), c(1))
            first = before(i, b.load(slot(mid), typ=I64))
            b.store(b.select(first, lo, b.add(mid, c(1))), lo_p)
            b.store(b.select(first, mid, hi), hi_p)
            loop_hint(b, b.branch(head), *SCALAR_LOOP[0], *SCALAR_LOOP[1:])
            b.position_at_end(place)
            p = b.load(lo_p, typ=I64)
            top = b.select(full, c(K - 1), cnt)  # entries [p, top) move one slot right
            with for_range(b, b.sub(top, p), "mv", hints=SCALAR_LOOP) as m:
                q = b.sub(top, m)
                b.store(b.load(slot(b.sub(q, c(1))), typ=I64), slot(q))
            b.store(i, slot(p))
            b.store(b.select(full, cnt, b.add(cnt, c(1))), cnt_p)
            b.branch(nxt)
            b.position_at_end(nxt)
        with for_range(b, min(K, n), "tko", hints=SCALAR_LOOP) as j:
            fo, fp = at(j), at(b.load(slot(j), typ=I64))
            for out, x, et in zip(outs, xs, ets):
                store_elem(s, out, et, fo, load_elem(s, buffers[x], et, fp))
