"""Fusion: the main function's ops grouped into kernels, driven by a backend policy.

Rules (XLA's loop and input fusion, simplified):

* an op the policy's loop emitter computes at an index (``policy.is_fusible``) is
  computed inside its consumer when it has exactly one use and that user is fusible or
  a ``reduce``; otherwise its value is materialized and it roots a loop kernel;
* splat constants, ``iota`` and broadcasts of splat constants are recomputed in every
  consumer, never stored (unless returned or read by a non-fusing kernel);
* ``reduce`` (any number of operands, any scalar body) becomes a reduction kernel with
  its operands' producers fused in;
* ``while``/``if``/``case`` become control kernels around sub-plans
  (:mod:`oxla.lowering.control`);
* any other op is the policy's: ``policy.claim``/``policy.classify`` name it an ``op``
  (its own kernel, or ``policy.op_kernels``) or a ``dot`` (``policy.dot_kernels``);
* non-splat constants become global buffers; ops whose results nobody uses are dropped,
  unless they have an effect (:mod:`oxla.lowering.effects`).

Any other op raises :class:`NotSupportedError` naming the op, its location and the
backend: there is no fallback to the interpreter. After each block the policy may merge
kernels (``policy.after_fusion``).
"""

from __future__ import annotations

from oxla.errors import NotSupportedError
from oxla.ir import Module, Operation, Value
from oxla.ir import types as T
from oxla.lowering.control import CONTROL_OPS, captured_values, control_kernel
from oxla.lowering.effects import has_effect
from oxla.lowering.plan import Buf, Kernel, LoopKernel, OpKernel, Plan
from oxla.lowering.policy import Policy
from oxla.lowering.shapes import is_same_index_op, is_splat_constant, nbytes, shape_of

CHEAP = ("stablehlo.iota",)
LOWERED_OPS = ("stablehlo.constant", *CONTROL_OPS)
"""Ops fusion turns into buffers or kernels without asking the policy (constants become
buffers, control flow becomes control kernels around sub-plans)."""


def unsupported(op: Operation, backend: str, why: str = "") -> NotSupportedError:
    """The error for an op, type or form the backend cannot compile (names the op, its
    location and the backend)."""
    extra = f" ({why})" if why else ""
    return NotSupportedError(f"'{op.name}' is not supported by the {backend} backend yet{extra}",
                             op.loc)


def check_static(main: Operation, backend: str) -> None:
    """Refuses a main function with a ``?`` dimension, naming the first dynamic value
    (an argument, else the first op result) and how to make it static.

    Raises:
        NotSupportedError: with notes: ``--input-spec`` / ``stablehlo-refine-shapes``.
    """
    block = main.regions[0].blocks[0]
    _check_no_boundary_tuples(main, backend)
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
        f"{what} of @main has dynamic shape {t}; the {backend} backend compiles static "
        "shapes only", loc,
        notes=[f"give concrete argument shapes: oxla compile IN --input-spec "
               f"{spec}:{t.element_type} (one per argument, in order), or refine the "
               "module first with the pass stablehlo-refine-shapes{arg-shapes=...}",
               "the interpreter backend runs dynamic shapes as written"])


def _check_no_boundary_tuples(main: Operation, backend: str) -> None:
    """Refuses tuple-typed arguments or results of main (tuples inside the function are
    flattened by ``canonicalize``, :mod:`oxla.passes.canon_tuple`).

    Raises:
        NotSupportedError: naming the first one.
    """
    ft = main.attributes["function_type"].type
    for what, types in (("argument", ft.inputs), ("result", ft.results)):
        for i, t in enumerate(types):
            if isinstance(t, T.TupleType):
                raise NotSupportedError(
                    f"{what} #{i} of @main has tuple type {t}; the {backend} backend takes "
                    "and returns tensors", main.loc,
                    notes=["pass and return the tuple's elements instead (tuples inside "
                           "the function are fine); the interpreter backend runs tuples at "
                           "the boundary as written"])


def _dynamic(t: T.Type) -> bool:
    return isinstance(t, T.TensorType) and not t.is_static


def _named(v: Value) -> str:
    return f" (%{v.name_hint.lstrip('%')})" if v.name_hint else ""


def classify(op: Operation, policy: Policy) -> str:
    """The kind of ``op``: ``cheap``, ``const``, ``loop``, ``reduce``, ``op``, ``dot``
    (``control`` is decided by the caller).

    Raises:
        NotSupportedError: neither fusion nor the policy takes the op.
    """
    if op.name == "stablehlo.constant":
        return "cheap" if policy.is_fusible(op) else "const"
    if op.name in CHEAP or _splat_broadcast(op):
        return "cheap"
    kind = policy.claim(op)
    if kind is not None:
        return kind
    if policy.is_fusible(op):
        return "loop"
    if op.name == "stablehlo.reduce":
        return "reduce"
    kind = policy.classify(op)
    if kind is not None:
        return kind
    raise unsupported(op, policy.name)


def _splat_broadcast(op: Operation) -> bool:
    """``broadcast_in_dim`` of a splat constant: recomputed by each reader like the
    constant itself, never stored (a shared bias or layer-norm weight of zeros or ones
    was materialized once per program and read from memory by every layer)."""
    src = op.operands[0].owner_op if op.name == "stablehlo.broadcast_in_dim" else None
    return src is not None and src.name == "stablehlo.constant" and is_splat_constant(src)


def fuse(module: Module, policy: Policy) -> Plan:
    """Builds the kernels of ``module``'s main function, in program order.

    Raises:
        NotSupportedError: an op, type or form the backend cannot compile yet.
    """
    main = module.main
    block = main.regions[0].blocks[0]
    ret = block.ops[-1]
    check_static(main, policy.name)
    for v in block.args:
        policy.check_type(main, v)
    for v in ret.operands:  # before sizing the result buffers
        policy.check_type(v.owner_op or main, v)
    args = [Buf(f"arg{i}", nbytes(v), "arg", index=i) for i, v in enumerate(block.args)]
    results = [Buf(f"result{j}", nbytes(v), "result", index=j)
               for j, v in enumerate(ret.operands)]
    plan = fuse_block(block, dict(zip(block.args, args)), results, "", iter(range(1 << 30)),
                      policy)
    plan.args = args
    counts: dict[str, int] = {}
    for k in plan.kernels:
        counts[type(k).__name__] = counts.get(type(k).__name__, 0) + 1
    plan.notes.append("fusion: " + ", ".join(f"{n} {c}" for c, n in sorted(counts.items())))
    return plan


def fuse_block(block, env: dict[Value, Buf], results: list[Buf], prefix: str,
               counter, policy: Policy) -> Plan:
    """The kernels of one block (``main``'s body or a control-flow region).

    Args:
        block: the block; its last op returns the values written to ``results``.
        env: buffers of the values visible in the block but defined outside it (the
            block's arguments, and values of enclosing blocks that its ops capture).
        results: one buffer per returned value; a computed value is written there in
            place, anything else (an argument, a constant, a repeated value) is copied.
        prefix: prepended to kernel names (unique function names).
        counter: shared iterator of fresh buffer numbers.
        policy: the backend's policy.

    Raises:
        NotSupportedError: an op, type or form the backend cannot compile yet.
    """
    ret = block.ops[-1]
    for v in block.args:
        policy.check_type(ret, v)
    live = _live_ops(block.ops[:-1], ret)
    kinds: dict[Operation, str] = {}
    for op in live:
        kinds[op] = "control" if op.name in CONTROL_OPS else classify(op, policy)
        for r in op.results:
            policy.check_type(op, r)
    returned = set(ret.operands)
    materialized: set[Value] = set(env)
    for op in live:
        for r in op.results:
            if _must_materialize(r, kinds, returned):
                materialized.add(r)
        if kinds[op] == "control":  # values its regions read live in buffers
            materialized.update(captured_values(op))
    _share_in_kernel(live, kinds, materialized, returned, set(env))
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
                                         counter, prefix, policy))
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
            sub = lambda b, e, r, p: fuse_block(b, e, r, p, counter, policy)  # noqa: E731
            hoist = lambda p, inv: policy.hoist_invariants(p, inv, counter)  # noqa: E731
            kernels.append(control_kernel(op, vbuf, f"{prefix}{op.name.split('.')[-1]}"
                                          f"{len(kernels)}", counter, sub, hoist))
            continue
        kernels.extend(_make_kernels(op, kinds[op], vbuf, materialized, len(kernels), counter,
                                     prefix, policy))
    # Results that are arguments, constants or repeated values need a copy kernel.
    for j, v in enumerate(ret.operands):
        if vbuf.get(v) is not results[j] and not isinstance(v.type, T.TokenType):
            kernels.append(LoopKernel(f"{prefix}copy{len(kernels)}", v, [v], results[j]))
    return Plan(policy.after_fusion(kernels, vbuf), vbuf, [], results)


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
    """The ops the returned values depend on, in program order (dead code dropped; ops
    with an effect, and ops holding one, run even when nothing uses them)."""
    needed: set[Operation] = set()
    stack = [v.owner_op for v in ret.operands if v.owner_op is not None]
    stack += [op for op in ops if has_effect(op)]
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


def _share_in_kernel(live: list[Operation], kinds: dict[Operation, str],
                     materialized: set[Value], returned: set[Value], env: set[Value]) -> None:
    """Un-materializes a loop value whose several users all end up in the same loop
    kernel and read it at that kernel's own index (every path to the kernel's root goes
    through same-index ops of one shape, :func:`oxla.lowering.shapes.is_same_index_op`):
    the kernel's emitter computes it once per index and shares it between the users, so
    a DAG of elementwise ops (JAX's unrolled threefry: every round's words feed two ops
    of the next) is one loop instead of one loop and one temporary per shared value.
    Users are visited before producers (reverse program order), so whole chains merge.
    """
    root: dict[Value, Value | None] = {}  # loop value -> the root of the kernel computing
    #                                       it at the root's own index (None: no such one)
    for op in reversed(live):
        if kinds[op] not in ("loop", "cheap") or len(op.results) != 1:
            continue
        v = op.results[0]
        users = set(v.users)
        if v in materialized:
            root[v] = v
            if v in returned or v in env or kinds[op] != "loop" or len(v.uses) < 2:
                continue
        elif len(users) != 1:
            root[v] = None
            continue
        shape = shape_of(v)
        rs = set()
        for u in users:
            if kinds.get(u) != "loop" or len(u.results) != 1 or not is_same_index_op(u) \
                    or shape_of(u.results[0]) != shape:
                rs.add(None)
                break
            rs.add(root.get(u.results[0]))
        r = rs.pop() if len(rs) == 1 else None
        if v not in materialized:
            root[v] = r
        elif r is not None:
            materialized.discard(v)
            root[v] = r


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


def leaves(root: Value, materialized: set[Value]) -> tuple[list[Value], list[Operation]]:
    """The materialized values a fused expression reads, and its fused ops."""
    out: list[Value] = []
    ops: list[Operation] = []
    seen: set[Value] = set()
    stack = [root]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in materialized and v is not root:
            out.append(v)
            continue
        op = v.owner_op
        ops.append(op)
        stack.extend(op.operands)
    return out, ops[::-1]


def _make_kernels(op: Operation, kind: str, vbuf: dict[Value, Buf], materialized: set[Value],
                  n: int, counter, prefix: str, policy: Policy) -> list[Kernel]:
    kernels = _make_kernels_unnamed(op, kind, vbuf, materialized, n, counter, policy)
    for k in kernels:
        k.name = prefix + k.name
    return kernels


def _make_kernels_unnamed(op: Operation, kind: str, vbuf: dict[Value, Buf],
                          materialized: set[Value], n: int, counter,
                          policy: Policy) -> list[Kernel]:
    if kind in ("loop", "cheap"):
        v = op.results[0]
        saved = v in materialized
        materialized.discard(v)
        ins, ops = leaves(v, materialized)
        if saved:
            materialized.add(v)
        return [LoopKernel(f"loop{n}", v, ins, vbuf[v], ops)]
    if kind == "op":
        own = policy.op_kernels(op, vbuf, n, counter)
        if own:
            return own
        return [OpKernel(f"{op.name.split('.')[-1]}{n}", op, list(dict.fromkeys(op.operands)),
                         [vbuf[r] for r in op.results], [op])]
    if kind == "reduce":
        ins: list[Value] = []
        fused: list[Operation] = [op]
        for operand in op.operands:
            if operand in materialized:
                ins.append(operand)
            else:
                more, ops = leaves(operand, materialized)
                ins += [x for x in more if x not in ins]
                fused = ops + fused
        return [OpKernel(f"reduce{n}", op, ins, [vbuf[r] for r in op.results], fused)]
    return policy.dot_kernels(op, vbuf, n, counter)
