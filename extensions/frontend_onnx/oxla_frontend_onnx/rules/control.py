"""Control flow: ``If`` -> ``stablehlo.if`` (inlined when the condition is a constant),
``Loop`` and ``Scan`` -> ``stablehlo.while`` with scan outputs written into buffers
preallocated from the static trip count. Subgraphs read outer-scope values directly
(StableHLO regions capture values from above)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.ir import Block, Builder, NameLoc, Region, Value
from oxla.ir import attributes as A
from oxla.ir.types import TensorType, i1, i64
from oxla_frontend_onnx.emit import norm_axis, shape_of, splat
from oxla_frontend_onnx.registry import NodeContext, rule, value_type


def _sub_importer(ctx: NodeContext, graph: Any):
    return ctx.graph.subgraph(graph)


def _lower_graph(ctx: NodeContext, graph: Any, block: Block,
                 bind: Sequence[Value] = ()) -> list[Value]:
    """Lowers ``graph`` into ``block`` with its inputs bound to ``bind``; returns the
    values of its outputs (not yet returned)."""
    gi = _sub_importer(ctx, graph)
    for inp, v in zip(graph.input, bind):
        want = gi.inferred_shape(inp.name)
        if want is not None and None not in want and tuple(want) != shape_of(v):
            v = Builder(block).reshape(v, want)
        gi.values[inp.name] = v
    b = Builder(block, loc=NameLoc(f"{ctx.node.name or ctx.node.op_type}/{graph.name}"))
    gi.lower_nodes(b, f"{ctx.node.name or ctx.node.op_type}/")
    return [gi.value(o.name, b) for o in graph.output]


@rule("If", since=1)
def _if(ctx: NodeContext) -> list[Value]:
    then_g, else_g = ctx.attr("then_branch"), ctx.attr("else_branch")
    cond = ctx.const(0)
    if cond is not None:  # a constant condition: the taken branch, inlined
        g = then_g if bool(np.asarray(cond).reshape(-1)[0]) else else_g
        return _lower_graph(ctx, g, ctx.b.block) if ctx.b.insertion_point is None else \
            _inline_here(ctx, g)
    pred = ctx.input(0)
    if shape_of(pred) != ():
        pred = ctx.b.reshape(pred, ())
    blocks, outs = [], []
    for g in (then_g, else_g):
        blk = Block([])
        vals = _lower_graph(ctx, g, blk)
        outs.append(vals)
        blocks.append(blk)
    types_t = [v.type for v in outs[0]]
    types_e = [v.type for v in outs[1]]
    if types_t != types_e:
        raise ctx.fail(f"If's branches return different types ({', '.join(map(str, types_t))}"
                       f" vs {', '.join(map(str, types_e))}); StableHLO needs one type per "
                       "result")
    for blk, vals in zip(blocks, outs):
        Builder(blk).create("stablehlo.return", vals, result_types=[])
    op = ctx.b.create("stablehlo.if", [pred], {}, types_t, [Region([blocks[0]]),
                                                              Region([blocks[1]])])
    return list(op.results)


def _inline_here(ctx: NodeContext, g: Any) -> list[Value]:
    return _lower_graph(ctx, g, ctx.b.block)


def _scalar(b: Builder, v: Value) -> Value:
    return b.reshape(v, ()) if shape_of(v) != () else v


def _while(ctx: NodeContext, init: list[Value], cond_fn, body_fn) -> list[Value]:
    """``stablehlo.while`` over ``init``; ``cond_fn(b, args) -> i1 scalar`` and
    ``body_fn(block, args) -> new values`` build the two regions."""
    types = [v.type for v in init]
    cblk = Block(types)
    cb = Builder(cblk, loc=ctx.b.loc)
    cb.create("stablehlo.return", [cond_fn(cb, list(cblk.args))], result_types=[])
    bblk = Block(types)
    new = body_fn(bblk, list(bblk.args))
    got = [v.type for v in new]
    if got != types:
        bad = next(i for i, (a, c) in enumerate(zip(got, types)) if a != c)
        raise ctx.fail(f"loop-carried value #{bad} changes type across iterations ({types[bad]}"
                       f" -> {got[bad]}); StableHLO loops keep one type")
    Builder(bblk).create("stablehlo.return", new, result_types=[])
    op = ctx.b.create("stablehlo.while", init, {}, types, [Region([cblk]), Region([bblk])])
    return list(op.results)


def _elem_type(ctx: NodeContext, name: str, what: str) -> TensorType:
    vi = ctx.graph.infos.get(name)
    vt = value_type(vi) if vi is not None else None
    if vt is None or None in vt[1]:
        raise ctx.fail(f"{what} '{name}' has no static shape after shape inference")
    return TensorType(vt[1], vt[0])


def _dus(b: Builder, buf: Value, elem: Value, index: Value) -> Value:
    """``buf[index] = elem`` along dim 0."""
    es = shape_of(elem)
    upd = b.reshape(elem, (1, *es))
    zero = splat(b, 0, i64)
    return b.create("stablehlo.dynamic_update_slice", [buf, upd, index, *[zero] * len(es)]
                    ).results[0]


@rule("Loop", since=1)
def _loop(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    body = ctx.attr("body")
    n_carried = len(ctx.node.input) - 2
    n_scan = len(body.output) - 1 - n_carried
    if n_scan and ctx.has(0):  # the scan outputs' length must be static
        ctx.const_required(0, "Loop's trip count (with scan outputs)")
        if ctx.has(1):
            ctx.const_required(1, "Loop's initial condition (with scan outputs)")
    m = ctx.const(0)
    trip = int(np.asarray(m).reshape(-1)[0]) if m is not None else None
    if not ctx.has(0):
        trip = None
    elif m is None:
        trip = -1  # run-time bound
    cond_c = ctx.const(1)
    early = ctx.has(1) and (cond_c is None or not bool(np.asarray(cond_c).reshape(-1)[0]))
    cond_out = body.output[0].name
    body_cond_const = _graph_const(body, cond_out)
    passthrough = _passes_through(body, cond_out, body.input[1].name)
    may_stop = early or not (passthrough or (body_cond_const is not None
                                             and bool(body_cond_const)))
    if n_scan and (trip is None or trip < 0 or may_stop):
        raise ctx.fail("Loop with scan outputs needs a constant trip count and no early exit "
                       "(the scan outputs' length must be static)")
    carried = [ctx.input(2 + i) for i in range(n_carried)]
    bufs = []
    for k in range(n_scan):
        t = _elem_type(ctx, body.output[1 + n_carried + k].name, "Loop scan output")
        bufs.append(splat(b, 0, t.element_type, (trip, *t.shape)))
    limit = ctx.input(0) if trip == -1 else None
    i0 = splat(b, 0, i64)
    c0 = _scalar(b, ctx.input(1)) if ctx.has(1) else splat(b, True, i1)
    init = [i0, c0, *carried, *bufs]
    if limit is not None:
        init.append(_scalar(b, limit))
    max_trip = trip if trip is not None and trip >= 0 else None

    def cond_fn(cb: Builder, args: list[Value]) -> Value:
        ok = args[1]
        if max_trip is not None:
            ok = cb.and_(ok, cb.compare("LT", args[0], splat(cb, max_trip, i64), "SIGNED"))
        elif limit is not None:
            ok = cb.and_(ok, cb.compare("LT", args[0], args[-1], "SIGNED"))
        return ok

    def body_fn(blk: Block, args: list[Value]) -> list[Value]:
        outs = _lower_graph(ctx, body, blk, [args[0], args[1], *args[2:2 + n_carried]])
        bb = Builder(blk)
        nxt = [bb.add(args[0], splat(bb, 1, i64)), _scalar(bb, outs[0]),
               *outs[1:1 + n_carried]]
        for k in range(n_scan):
            nxt.append(_dus(bb, args[2 + n_carried + k], outs[1 + n_carried + k], args[0]))
        if limit is not None:
            nxt.append(args[-1])
        return nxt

    res = _while(ctx, init, cond_fn, body_fn)
    return res[2:2 + n_carried + n_scan]


def _passes_through(graph: Any, name: str, source: str) -> bool:
    """True when ``name`` is ``source`` or an Identity chain of it in ``graph``."""
    while name != source:
        prod = next((n for n in graph.node if name in n.output), None)
        if prod is None or prod.op_type != "Identity":
            return False
        name = prod.input[0]
    return True


def _graph_const(graph: Any, name: str) -> Any:
    """The value of ``name`` when a Constant node or an Identity of an input... makes it a
    compile-time constant in ``graph``; else None."""
    from onnx import numpy_helper

    for n in graph.node:
        if name in n.output and n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    return np.asarray(numpy_helper.to_array(a.t)).reshape(-1)[0]
    return None


@rule("Scan", since=9)
def _scan(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    body = ctx.attr("body")
    n_scan_in = ctx.attr("num_scan_inputs")
    n_state = len(ctx.node.input) - n_scan_in
    n_scan_out = len(body.output) - n_state
    states = [ctx.input(i) for i in range(n_state)]
    xs = [ctx.input(n_state + j) for j in range(n_scan_in)]
    in_axes = list(ctx.attr("scan_input_axes", [0] * n_scan_in))
    in_dirs = list(ctx.attr("scan_input_directions", [0] * n_scan_in))
    out_axes = list(ctx.attr("scan_output_axes", [0] * n_scan_out))
    out_dirs = list(ctx.attr("scan_output_directions", [0] * n_scan_out))
    in_axes = [norm_axis(a, len(shape_of(x))) for a, x in zip(in_axes, xs)]
    lengths = {shape_of(x)[a] for x, a in zip(xs, in_axes)}
    if len(lengths) != 1:
        raise ctx.fail(f"Scan inputs have different lengths {sorted(lengths)}")
    trip = lengths.pop()
    bufs = []
    for k in range(n_scan_out):
        t = _elem_type(ctx, body.output[n_state + k].name, "Scan output")
        bufs.append(splat(b, 0, t.element_type, (trip, *t.shape)))
    init = [splat(b, 0, i64), *states, *bufs]

    def cond_fn(cb: Builder, args: list[Value]) -> Value:
        return cb.compare("LT", args[0], splat(cb, trip, i64), "SIGNED")

    def body_fn(blk: Block, args: list[Value]) -> list[Value]:
        bb = Builder(blk)
        i = args[0]
        rev = bb.subtract(splat(bb, trip - 1, i64), i)
        elems = []
        for x, a, d in zip(xs, in_axes, in_dirs):
            s = shape_of(x)
            starts = [splat(bb, 0, i64)] * len(s)
            starts[a] = rev if d else i
            sizes = [1 if k == a else n for k, n in enumerate(s)]
            sl = bb.create("stablehlo.dynamic_slice", [x, *starts],
                           {"slice_sizes": A.i64_array(sizes)}).results[0]
            elems.append(bb.reshape(sl, [n for k, n in enumerate(s) if k != a]))
        outs = _lower_graph(ctx, body, blk, [*args[1:1 + n_state], *elems])
        nxt = [bb.add(i, splat(bb, 1, i64)), *outs[:n_state]]
        for k in range(n_scan_out):
            at = rev if out_dirs[k] else i
            nxt.append(_dus(bb, args[1 + n_state + k], outs[n_state + k], at))
        return nxt

    res = _while(ctx, init, cond_fn, body_fn)
    outs = res[1:1 + n_state]
    for k, buf in enumerate(res[1 + n_state:]):
        r = len(shape_of(buf))
        a = norm_axis(out_axes[k], r)
        if a:
            perm = list(range(1, a + 1)) + [0] + list(range(a + 1, r))
            buf = b.transpose(buf, perm)
        outs.append(buf)
    return outs

