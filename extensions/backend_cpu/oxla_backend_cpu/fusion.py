"""Stage 2, fusion: the main function's ops grouped into kernels.

Rules (XLA's loop and input fusion, simplified):

* an elementwise or index-mapping op (``is_fusible``) is computed inside its consumer
  when it has exactly one use and that user is fusible or a ``reduce``; otherwise its
  value is materialized and it roots a loop kernel;
* splat constants and ``iota`` are recomputed in every consumer, never stored (unless
  returned or read by a dot);
* ``reduce`` (any number of operands, any scalar body) becomes a reduction kernel with
  its operands' producers fused in; ``scatter`` becomes a kernel of its own
  (:mod:`oxla_backend_cpu.opkernels`) reading materialized operands;
* ``dot_general``/``dot`` on f32/f64 becomes a BLAS call, with a packing copy for an
  operand whose layout BLAS's transpose flags cannot express;
* non-splat constants become global buffers; ops whose results nobody uses are dropped.

Any other op raises :class:`NotSupportedError` naming the op, its location and the
backend: there is no fallback to the interpreter.
"""

from __future__ import annotations

import math

import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import Module, Operation, Value
from oxla.ir import types as T
from oxla_backend_cpu.batched_gemm import batched_tile
from oxla_backend_cpu.packed_gemm import pack_constant_rhs
from oxla_backend_cpu.plan import (
    Buf,
    DotKernel,
    Kernel,
    LoopKernel,
    OpKernel,
    PackKernel,
    Plan,
)

BACKEND = "cpu"
CHEAP = ("stablehlo.iota",)


def unsupported(op: Operation, why: str = "") -> NotSupportedError:
    extra = f" ({why})" if why else ""
    return NotSupportedError(f"'{op.name}' is not supported by the {BACKEND} backend yet{extra}",
                             op.loc)


def nbytes(v: Value) -> int:
    t = v.type
    if isinstance(t, T.TokenType):  # tokens order effects; they hold no data
        return 0
    assert isinstance(t, T.TensorType)
    return int(math.prod(t.shape)) * t.element_type.dtype.itemsize


def _check_type(op: Operation, v: Value) -> None:
    from oxla_codegen_llvm import llvm_type

    t = v.type
    if isinstance(t, T.TokenType):
        return
    if not isinstance(t, T.TensorType) or not t.is_static:
        raise unsupported(op, f"type {t}")
    try:
        llvm_type(t.element_type)
    except NotSupportedError:
        raise unsupported(op, f"element type {t.element_type}") from None


def check_static(main: Operation) -> None:
    """Refuses a main function with a ``?`` dimension, naming the first dynamic value
    (an argument, else the first op result) and how to make it static.

    Raises:
        NotSupportedError: with notes: ``--input-spec`` / ``stablehlo-refine-shapes``.
    """
    block = main.regions[0].blocks[0]
    found = next(((f"argument #{i}{_named(v)}", v.type, main.loc)
                  for i, v in enumerate(block.args) if _dynamic(v.type)), None)
    if found is None:
        found = next(((f"'{op.name}' result{_named(r)}", r.type, op.loc)
                      for op in main.walk() if op is not main for r in op.results
                      if _dynamic(r.type)), None)
    if found is None:
        return
    what, t, loc = found
    spec = "x".join("N" if d is None else str(d) for d in t.shape)
    raise NotSupportedError(
        f"{what} of @main has dynamic shape {t}; the {BACKEND} backend compiles static "
        "shapes only", loc,
        notes=[f"give concrete argument shapes: oxla compile IN --input-spec "
               f"{spec}:{t.element_type} (one per argument, in order), or refine the "
               "module first with the pass stablehlo-refine-shapes{arg-shapes=...}",
               "the interpreter backend runs dynamic shapes as written"])


def _dynamic(t: T.Type) -> bool:
    return isinstance(t, T.TensorType) and not t.is_static


def _named(v: Value) -> str:
    return f" (%{v.name_hint.lstrip('%')})" if v.name_hint else ""


def _classify(op: Operation) -> str:
    from oxla_codegen_llvm import is_fusible

    if op.name == "stablehlo.constant":
        return "cheap" if is_fusible(op) else "const"
    if op.name in CHEAP or _splat_broadcast(op):
        return "cheap"
    from oxla_backend_cpu.collectives import RUNTIME_OPS

    if op.name in RUNTIME_OPS:  # ids too: they depend on the process that runs the code
        return "op"
    from oxla_backend_cpu.misc_ops import reshaping_bitcast

    if reshaping_bitcast(op):
        return "op"
    if is_fusible(op):
        return "loop"
    if op.name == "stablehlo.reduce":
        return "reduce"
    if op.name in ("stablehlo.dot_general", "stablehlo.dot") and _blas_dot(op):
        return "dot"
    if op.name == "stablehlo.custom_call":  # a target from the oxla_custom_calls hook
        from oxla_backend_cpu.custom_call import check_custom_call

        check_custom_call(op)
        return "op"
    from oxla_backend_cpu import (  # noqa: F401  (emitters)
        collectives,
        linalg,
        misc_ops,
        rng,
        spectral,
    )
    from oxla_backend_cpu.opkernels import OP_EMITTERS

    if op.name in OP_EMITTERS:
        return "op"
    raise unsupported(op)


def _splat_broadcast(op: Operation) -> bool:
    """``broadcast_in_dim`` of a splat constant: recomputed by each reader like the
    constant itself, never stored (a shared bias or layer-norm weight of zeros or ones
    was materialized once per program and read from memory by every layer)."""
    from oxla_codegen_llvm.fused import is_splat_constant

    src = op.operands[0].owner_op if op.name == "stablehlo.broadcast_in_dim" else None
    return src is not None and src.name == "stablehlo.constant" and is_splat_constant(src)


def _blas_dot(op: Operation) -> bool:
    """True when BLAS computes the dot: f32 x f32 -> f32 or f64 x f64 -> f64, except
    tiny f32 dots (:func:`oxla_backend_cpu.linalg.small_f32_dot`)."""
    from oxla_backend_cpu.linalg import small_f32_dot

    et = op.operands[0].type.element_type
    return et == op.operands[1].type.element_type == op.results[0].type.element_type and \
        isinstance(et, T.FloatType) and et.name in ("f32", "f64") and not small_f32_dot(op)


def fuse(module: Module) -> Plan:
    """Builds the kernels of ``module``'s main function, in program order.

    Raises:
        NotSupportedError: an op, type or form the backend cannot compile yet.
    """
    main = module.main
    block = main.regions[0].blocks[0]
    ret = block.ops[-1]
    check_static(main)
    for v in block.args:
        _check_type(main, v)
    for v in ret.operands:  # before sizing the result buffers
        _check_type(v.owner_op or main, v)
    args = [Buf(f"arg{i}", nbytes(v), "arg", index=i) for i, v in enumerate(block.args)]
    results = [Buf(f"result{j}", nbytes(v), "result", index=j)
               for j, v in enumerate(ret.operands)]
    plan = fuse_block(block, dict(zip(block.args, args)), results, "", iter(range(1 << 30)))
    plan.args = args
    counts: dict[str, int] = {}
    for k in plan.kernels:
        counts[type(k).__name__] = counts.get(type(k).__name__, 0) + 1
    plan.notes.append("fusion: " + ", ".join(f"{n} {c}" for c, n in sorted(counts.items())))
    return plan


def fuse_block(block, env: dict[Value, Buf], results: list[Buf], prefix: str,
               counter) -> Plan:
    """The kernels of one block (``main``'s body or a control-flow region).

    Args:
        block: the block; its last op returns the values written to ``results``.
        env: buffers of the values visible in the block but defined outside it (the
            block's arguments, and values of enclosing blocks that its ops capture).
        results: one buffer per returned value; a computed value is written there in
            place, anything else (an argument, a constant, a repeated value) is copied.
        prefix: prepended to kernel names (unique LLVM function names).
        counter: shared iterator of fresh buffer numbers.

    Raises:
        NotSupportedError: an op, type or form the backend cannot compile yet.
    """
    from oxla_backend_cpu.control import CONTROL_OPS, captured_values, control_kernel

    ret = block.ops[-1]
    for v in block.args:
        _check_type(ret, v)
    live = _live_ops(block.ops[:-1], ret)
    kinds: dict[Operation, str] = {}
    for op in live:
        kinds[op] = "control" if op.name in CONTROL_OPS else _classify(op)
        for r in op.results:
            _check_type(op, r)
    returned = set(ret.operands)
    materialized: set[Value] = set(env)
    for op in live:
        for r in op.results:
            if _must_materialize(r, kinds, returned):
                materialized.add(r)
        if kinds[op] == "control":  # values its regions read live in buffers
            materialized.update(captured_values(op))
    _recompute_small(live, kinds, materialized, returned, set(env))

    vbuf: dict[Value, Buf] = dict(env)
    for j, v in enumerate(ret.operands):
        if v not in vbuf:  # first occurrence of a computed value: write the result in place
            vbuf[v] = results[j]
    aliased = _reshaped_results(ret, kinds, materialized, vbuf, results)
    kernels: list[Kernel] = []
    for op in live:
        if op in aliased:  # its operand's producer wrote the result's bytes
            continue
        if not op.results:  # a side-effecting custom call without results
            kernels.extend(_make_kernels(op, kinds[op], vbuf, materialized, len(kernels),
                                         counter, prefix))
            continue
        v = op.results[0]
        if v not in materialized:
            continue
        if kinds[op] in ("reduce", "op", "control"):
            for r in op.results:
                if r not in vbuf:
                    vbuf[r] = Buf(f"%{next(counter)}", nbytes(r), "temp")
        if v not in vbuf:
            kind = "const" if kinds[op] == "const" else "temp"
            data = op.attr("value").array if kind == "const" else None
            vbuf[v] = Buf(f"%{next(counter)}", nbytes(v), kind, data=data)
        if kinds[op] == "const":
            if vbuf[v].kind != "const":  # returned: a copy kernel below copies it out
                vbuf[v] = Buf(f"const{next(counter)}", nbytes(v), "const",
                              data=op.attr("value").array)
            continue
        if kinds[op] == "control":
            kernels.append(control_kernel(op, vbuf, f"{prefix}{op.name.split('.')[-1]}"
                                          f"{len(kernels)}", counter))
            continue
        kernels.extend(_make_kernels(op, kinds[op], vbuf, materialized, len(kernels), counter,
                                     prefix))
    # Results that are arguments, constants or repeated values need a copy kernel.
    for j, v in enumerate(ret.operands):
        if vbuf.get(v) is not results[j] and not isinstance(v.type, T.TokenType):
            kernels.append(LoopKernel(f"{prefix}copy{len(kernels)}", v, [v], results[j]))
    from oxla_backend_cpu.conv import fuse_conv_epilogues
    from oxla_backend_cpu.rowfusion import fuse_rows

    kernels = fuse_conv_epilogues(kernels, vbuf)

    return Plan(fuse_rows(kernels, vbuf), vbuf, [], results)


def _reshaped_results(ret: Operation, kinds: dict[Operation, str], materialized: set[Value],
                      vbuf: dict[Value, Buf], results: list[Buf]) -> set[Operation]:
    """The returned ``reshape`` ops whose operand's producer writes the result buffer
    directly (the operand's ``vbuf`` entry becomes the result): a reshape keeps the
    row-major bytes, so GPT-2's ``lm_head`` GEMM output no longer goes through a 25 MB
    copy kernel. Only a top-level result (``kind`` ``result``) whose operand is computed
    in this block by a loop, op, reduce or dot kernel and has no buffer yet."""
    out: set[Operation] = set()
    for j, v in enumerate(ret.operands):
        op = v.owner_op
        if op is None or op.name != "stablehlo.reshape" or vbuf.get(v) is not results[j] \
                or results[j].kind != "result" or kinds.get(op) not in ("loop", "cheap"):
            continue
        u = op.operands[0]
        if u in vbuf or u not in materialized or u.owner_op is None or \
                kinds.get(u.owner_op) not in ("loop", "op", "reduce", "dot") or \
                nbytes(u) != results[j].nbytes:
            continue
        vbuf[u] = results[j]
        out.add(op)
    return out


def _live_ops(ops: list[Operation], ret: Operation) -> list[Operation]:
    """The ops the returned values depend on, in program order (dead code dropped)."""
    from oxla_backend_cpu.collectives import is_ordered
    from oxla_backend_cpu.custom_call import has_side_effect

    needed: set[Operation] = set()
    stack = [v.owner_op for v in ret.operands if v.owner_op is not None]
    stack += [op for op in ops if is_ordered(op)]  # communication runs even if unused
    # side-effecting custom calls (and ops holding them) run even when nothing uses them
    stack += [op for op in ops if any(has_side_effect(o) for o in op.walk())]
    while stack:
        op = stack.pop()
        if op in needed:
            continue
        needed.add(op)
        stack.extend(v.owner_op for v in op.operands if v.owner_op is not None)
        for inner in op.walk():  # values captured by regions
            stack.extend(v.owner_op for v in inner.operands
                         if v.owner_op is not None and v.owner_op.parent_op is op.parent_op)
    return [op for op in ops if op in needed]


def _must_materialize(v: Value, kinds: dict[Operation, str], returned: set[Value]) -> bool:
    kind = kinds[v.owner_op]
    users = [u for u in v.users if u in kinds]
    if kind in ("reduce", "dot", "const", "op", "control") or v in returned:
        return True
    if any(kinds[u] in ("dot", "op", "control") for u in users):
        return True
    if kind == "cheap":
        return False
    return len(users) != 1 or len(v.uses) != 1 or kinds[users[0]] not in ("loop", "reduce")


MAX_RECOMPUTE_OPS = 12  # ops of a fused expression recomputed by each of its users
MAX_RECOMPUTE_USERS = 4


def _recompute_small(live: list[Operation], kinds: dict[Operation, str],
                     materialized: set[Value], returned: set[Value], env: set[Value]) -> None:
    """Un-materializes small elementwise expressions read by several loop or reduce
    kernels: each user recomputes them (XLA's duplication of cheap producers), which
    saves writing and re-reading a full temporary (softmax's ``exp(x - max)``, layer
    norm's ``x - mean``) and lowers ``temp_bytes``. An expression qualifies when it has at
    most :data:`MAX_RECOMPUTE_USERS` users, all ``loop``/``reduce`` kernels, and at most
    :data:`MAX_RECOMPUTE_OPS` ops counting the fused producers it already recomputes."""
    cost: dict[Value, int] = {}
    for op in live:
        if kinds[op] not in ("loop", "cheap") or len(op.results) != 1:
            continue
        v = op.results[0]
        c = 1 + sum(cost.get(x, 0) for x in op.operands
                    if x not in materialized and x not in env)
        cost[v] = c
        if v not in materialized or v in returned or v in env:
            continue
        users = set(v.users)  # ops in regions (captured values) are not in ``kinds``
        if (users and len(users) <= MAX_RECOMPUTE_USERS and c <= MAX_RECOMPUTE_OPS
                and all(kinds.get(u) in ("loop", "reduce") for u in users)):
            materialized.discard(v)
        else:
            cost[v] = 0


def _leaves(root: Value, materialized: set[Value]) -> tuple[list[Value], list[Operation]]:
    """The materialized values a fused expression reads, and its fused ops."""
    leaves: list[Value] = []
    ops: list[Operation] = []
    seen: set[Value] = set()
    stack = [root]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in materialized and v is not root:
            leaves.append(v)
            continue
        op = v.owner_op
        ops.append(op)
        stack.extend(op.operands)
    return leaves, ops[::-1]


def _make_kernels(op: Operation, kind: str, vbuf: dict[Value, Buf], materialized: set[Value],
                  n: int, counter, prefix: str = "") -> list[Kernel]:
    kernels = _make_kernels_unnamed(op, kind, vbuf, materialized, n, counter)
    for k in kernels:
        k.name = prefix + k.name
    return kernels


def _make_kernels_unnamed(op: Operation, kind: str, vbuf: dict[Value, Buf],
                          materialized: set[Value], n: int, counter) -> list[Kernel]:
    if kind in ("loop", "cheap"):
        v = op.results[0]
        saved = v in materialized
        materialized.discard(v)
        leaves, ops = _leaves(v, materialized)
        if saved:
            materialized.add(v)
        return [LoopKernel(f"loop{n}", v, leaves, vbuf[v], ops)]
    if kind == "op":
        from oxla_backend_cpu.conv import CONV_OPS, conv_kernels

        conv = conv_kernels(op, vbuf, n, counter) if op.name in CONV_OPS else None
        if conv:
            return conv
        return [OpKernel(f"{op.name.split('.')[-1]}{n}", op, list(dict.fromkeys(op.operands)),
                         [vbuf[r] for r in op.results], [op])]
    if kind == "reduce":
        leaves: list[Value] = []
        fused: list[Operation] = [op]
        for operand in op.operands:
            if operand in materialized:
                leaves.append(operand)
            else:
                more, ops = _leaves(operand, materialized)
                leaves += [x for x in more if x not in leaves]
                fused = ops + fused
        return [OpKernel(f"reduce{n}", op, leaves, [vbuf[r] for r in op.results], fused)]
    return _dot_kernels(op, vbuf, n, counter)


def _dims(op: Operation) -> tuple[tuple[int, ...], ...]:
    lhs_rank = op.operands[0].type.rank
    if op.name == "stablehlo.dot":
        return (), (), (lhs_rank - 1,), (0,)
    d = op.attr("dot_dimension_numbers")
    return tuple(tuple(d.get(k, ())) for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions",
        "lhs_contracting_dimensions", "rhs_contracting_dimensions"))


def _dot_kernels(op: Operation, vbuf: dict[Value, Buf], n: int, counter) -> list[Kernel]:
    lhs, rhs = op.operands
    et = lhs.type.element_type
    if et != rhs.type.element_type or et != op.results[0].type.element_type or not (
            isinstance(et, T.FloatType) and et.name in ("f32", "f64")):
        raise unsupported(op, "dot other than f32 x f32 -> f32 or f64 x f64 -> f64")
    lb, rb, lc, rc = _dims(op)
    lf = tuple(d for d in range(lhs.type.rank) if d not in lb + lc)
    rf = tuple(d for d in range(rhs.type.rank) if d not in rb + rc)
    ls, rs = lhs.type.shape, rhs.type.shape
    batch = math.prod(ls[d] for d in lb)
    m, k = math.prod(ls[d] for d in lf), math.prod(ls[d] for d in lc)
    nn = math.prod(rs[d] for d in rf)
    kernels: list[Kernel] = []

    def layout(x: Value, b, free, contr, free_first: bool) -> tuple[Buf, bool]:
        order = tuple(range(x.type.rank))
        if order == b + free + contr:
            return vbuf[x], not free_first
        if order == b + contr + free:
            return vbuf[x], free_first
        perm = b + free + contr if free_first else b + contr + free
        out = Buf(f"pack{next(counter)}", nbytes(x), "temp")
        kernels.append(PackKernel(f"pack{n + len(kernels)}", x, vbuf[x], perm, out))
        return out, False

    lbuf, trans_l = layout(lhs, lb, lf, lc, True)
    packed = pack_constant_rhs(vbuf[rhs], rs, rc, rf, m, nn, k) if not rb else None
    if packed is not None:
        kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, packed[0],
                                 vbuf[op.results[0]], 1, m, nn, k, trans_l, False, et.name,
                                 packed_nr=packed[1]))
        return kernels
    rbuf, trans_r = layout(rhs, rb, rf, rc, False)
    kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, rbuf, vbuf[op.results[0]],
                             batch, m, nn, k, trans_l, trans_r, et.name,
                             batched_nr=batched_tile(et.name, batch, m, nn, k)))
    return kernels


def constant_bytes(buf: Buf) -> bytes:
    assert buf.data is not None
    return np.ascontiguousarray(buf.data).tobytes()
