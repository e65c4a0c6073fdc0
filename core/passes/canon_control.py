"""Canonicalization of ops with regions: reductions over size-1 dimensions and
control flow with a known outcome."""

from __future__ import annotations

import numpy as np

from oxla.ir import Operation
from oxla.ir import types as T
from oxla.ir.opdef import PURE, lookup_opdef
from oxla.passes.rewrite import Rewriter, pattern
from oxla.passes.util import constant_array, splat_value, static_tensor


def _identity(body_op: str, et: T.ElementType) -> np.ndarray | None:
    """The identity element of a reduction body op, as a 0-d array; None if unknown."""
    if isinstance(et, T.IntegerType):
        dt = np.dtype(bool) if et.width == 1 else et.dtype
        if et.width == 1:
            table = {
                "stablehlo.add": False,
                "stablehlo.or": False,
                "stablehlo.maximum": False,
                "stablehlo.and": True,
                "stablehlo.minimum": True,
                "stablehlo.multiply": True,
            }
        else:
            info = np.iinfo(dt)
            table = {
                "stablehlo.add": 0,
                "stablehlo.or": 0,
                "stablehlo.multiply": 1,
                "stablehlo.maximum": info.min,
                "stablehlo.minimum": info.max,
                "stablehlo.and": -1 if info.min < 0 else info.max,
            }
        v = table.get(body_op)
        return None if v is None else np.array(v, dtype=dt)
    if isinstance(et, T.FloatType):
        table = {
            "stablehlo.add": -0.0,
            "stablehlo.multiply": 1.0,
            "stablehlo.maximum": -np.inf,
            "stablehlo.minimum": np.inf,
        }
        v = table.get(body_op)
        return None if v is None else np.array(v, dtype=et.dtype)
    return None


def _reduction_kind(op: Operation) -> str | None:
    """The body's single binary op when the body is ``return op(arg0, arg1)``."""
    body = op.regions[0].blocks[0]
    if len(body.ops) != 2 or len(body.args) != 2:
        return None
    inner, ret = body.ops
    if (
        ret.name != "stablehlo.return"
        or len(ret.operands) != 1
        or ret.operands[0] is not inner.results[0]
    ):
        return None
    if set(map(id, inner.operands)) != set(map(id, body.args)) or len(inner.operands) != 2:
        return None
    return inner.name


@pattern("stablehlo.reduce")
def reduce_unit_dims(op: Operation, rw: Rewriter) -> bool:
    """A single-input ``reduce`` over dimensions of size 1 → ``reshape(x)``.

    Over a size-1 dimension the result is ``body(init, x)``, which equals ``x`` only
    when ``init`` is the identity of the body: ``add`` with ``0`` (integers) or
    ``-0.0`` (floats: ``+0.0 + -0.0 = +0.0`` would lose a negative zero, so an init of
    ``+0.0`` blocks the rule), ``multiply`` with 1, ``maximum`` with the type's minimum
    or ``-inf``, ``minimum`` with its maximum or ``+inf``, ``and`` with all ones, ``or``
    with 0. NaN propagates through all of these unchanged.
    """
    if len(op.operands) != 2:
        return False
    x, init = op.operands
    xt = x.type
    if not static_tensor(xt) or any(xt.shape[d] != 1 for d in op.attr("dimensions") or ()):
        return False
    kind = _reduction_kind(op)
    s = splat_value(init)
    ident = _identity(kind, xt.element_type) if kind else None
    if ident is None or s is None or np.asarray(s).tobytes() != ident.tobytes():
        return False
    new = rw.create_before(op, "stablehlo.reshape", [x], [op.results[0].type])
    rw.replace_op(op, new.results)
    return True


def _inline_region(op: Operation, index: int, rw: Rewriter) -> bool:
    block = op.regions[index].blocks[0]
    if [v.type for v in block.ops[-1].operands] != [r.type for r in op.results]:
        return False
    values = rw.inline_block_before(block, op, [])
    rw.replace_op(op, values)
    return True


@pattern("stablehlo.if")
def if_constant(op: Operation, rw: Rewriter) -> bool:
    """``if`` on a constant predicate → the taken branch inlined (the other never runs)."""
    s = splat_value(op.operands[0])
    if s is None:
        return False
    return _inline_region(op, 0 if bool(s) else 1, rw)


@pattern("stablehlo.case")
def case_constant(op: Operation, rw: Rewriter) -> bool:
    """``case`` on a constant index → that branch inlined; an index outside
    ``[0, n)`` selects the last branch, as the spec says."""
    s = splat_value(op.operands[0])
    if s is None:
        return False
    n = len(op.regions)
    i = int(s)
    return _inline_region(op, i if 0 <= i < n else n - 1, rw)


@pattern("stablehlo.while")
def while_zero_trip(op: Operation, rw: Rewriter) -> bool:
    """``while`` whose condition is false on the initial values → its operands.

    The condition is known when it returns a constant, or when every operand is a
    constant and the interpreter can evaluate the condition region (it has no side
    effects that matter: a false condition means the body never runs).
    """
    cond = op.regions[0].blocks[0]
    ret = cond.ops[-1]
    s = splat_value(ret.operands[0]) if ret.operands else None
    if s is None:
        args = [constant_array(v) for v in op.operands]
        if any(a is None for a in args) or len(cond.ops) > 16:
            return False
        from oxla.interpreter import Context

        try:
            out = Context().run_region(op.regions[0], args)
        except Exception:  # noqa: BLE001 - unknown condition: keep the loop
            return False
        s = np.asarray(out[0]).reshape(-1)[0]
    if bool(s):
        return False
    if [v.type for v in op.operands] != [r.type for r in op.results]:
        return False
    rw.replace_op(op, list(op.operands))
    return True


UNROLL_MAX_TRIPS = 8
"""``while`` loops of at most this many iterations (known at compile time) are unrolled."""

UNROLL_MAX_OPS = 1024
"""... when the unrolled body has at most this many ops in all (compile-time bound)."""


def _counters(op: Operation) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Iteration-argument positions of ``while`` ``op`` that are counters: a constant
    integer initial value and a body result ``arg + constant`` (either operand order);
    position -> (initial value, step) as 0-d arrays of the counter's dtype."""
    body = op.regions[1].blocks[0]
    ret = body.ops[-1]
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for k, (init, arg) in enumerate(zip(op.operands, body.args)):
        t = arg.type
        if not (isinstance(t, T.TensorType) and t.shape == ()
                and isinstance(t.element_type, T.IntegerType) and t.element_type.width > 1):
            continue
        start = constant_array(init)
        nxt = ret.operands[k].owner_op
        if start is None or nxt is None or nxt.name != "stablehlo.add":
            continue
        a, b = nxt.operands
        step = splat_value(b) if a is arg else splat_value(a) if b is arg else None
        if step is not None:
            out[k] = (np.asarray(start).reshape(()), np.asarray(step, start.dtype))
    return out


def _trip_count(op: Operation, limit: int) -> int | None:
    """How many times the body of ``while`` ``op`` runs when its condition reads only
    counters (:func:`_counters`) and ops of its own region; None when unknown or above
    ``limit``. Counters wrap as the spec's integer ``add`` does."""
    cond = op.regions[0].blocks[0]
    counters = _counters(op)
    if not counters or len(cond.ops) > 16:
        return None
    inside = {r for o in cond.ops for r in o.results}
    allowed = inside | {cond.args[k] for k in counters}
    for o in cond.ops:
        if o.regions or any(v not in allowed for v in o.operands):
            return None
    from oxla.interpreter import Context

    state = {k: start for k, (start, _) in counters.items()}
    for trips in range(limit + 1):
        args = [state.get(k) for k in range(len(cond.args))]
        try:
            out = Context().run_region(op.regions[0], args)
        except Exception:  # noqa: BLE001 - a condition the interpreter rejects: keep the loop
            return None
        if not bool(np.asarray(out[0]).reshape(-1)[0]):
            return trips
        with np.errstate(over="ignore"):
            state = {k: (state[k] + step).astype(step.dtype)
                     for k, (_, step) in counters.items()}
    return None


def _pure(op: Operation) -> bool:
    d = lookup_opdef(op.name)
    return d is not None and PURE in d.traits


@pattern("stablehlo.while")
def while_unroll(op: Operation, rw: Rewriter) -> bool:
    """A ``while`` whose trip count is a compile-time constant of at most
    :data:`UNROLL_MAX_TRIPS` → that many copies of its body, each fed the previous one's
    results (spec ``while``: the body runs exactly while the condition holds, so the
    copies compute the same values). This is how JAX's threefry (``jax.random``: a 5-trip ``fori_loop`` over
    whole-array state) becomes one elementwise expression that fuses into one loop
    with constant rotations instead of one loop nest per op per trip.

    The trip count is known when the condition reads only counters (see
    :func:`_trip_count`); the unrolled ops are bounded by :data:`UNROLL_MAX_OPS`. Bodies
    with an op that is not ``PURE`` (collectives, custom calls, nested control flow) keep
    their loop.
    """
    if [v.type for v in op.operands] != [r.type for r in op.results]:
        return False
    body = op.regions[1].blocks[0]
    if not all(_pure(o) for top in body.ops for o in top.walk()):
        return False
    trips = _trip_count(op, UNROLL_MAX_TRIPS)
    if trips is None or trips * len(body.ops) > UNROLL_MAX_OPS:
        return False
    values = list(op.operands)
    for _ in range(trips):
        mapping = dict(zip(body.args, values))
        for o in body.ops[:-1]:
            rw.insert_before(op, o.clone(mapping))
        values = [mapping.get(v, v) for v in body.ops[-1].operands]
    rw.replace_op(op, values)
    return True
