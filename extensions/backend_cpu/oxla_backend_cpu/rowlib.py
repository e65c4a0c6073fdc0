"""Library row kernels: softmax and layer norm over the last dimension, compiled once
per process.

A :class:`~oxla_backend_cpu.rowfusion.RowKernel` that is exactly softmax or layer norm
(below) calls ``oxla_softmax_rows_f32`` / ``oxla_layer_norm_rows_f32`` from the runtime
object (the parallel runtime's extension, as the GEMM driver, see
:func:`oxla_backend_cpu.parallel.register_runtime_extension`) instead of having its
loops emitted, optimized and code-generated again by every compile: with llvmlite's LLVM
(built with assertions) each vectorized loop costs ~5 ms of -O3 and code generation, and
softmax's inlined vector ``exp`` ~6 ms more; the row kernels were 2-4x XLA:CPU's whole
compile of these programs (XLA rewrites them to library calls on the CPU too, oneDNN's).
The program keeps a call per row chunk. The runtime object takes ~60 ms longer to build,
once per process.

The kernels are the IR the row emitter makes (:func:`oxla_backend_cpu.rowfusion.
emit_rows` in :mod:`oxla_backend_cpu.rowemit`) with the row length a parameter, the same scalar ops in the same order and no
fast-math flags, so results equal the emitted kernel's up to the order of the row sums,
which a ``reduce`` leaves unspecified (bit-identical when the row length is a multiple of
the vector loop's step). Softmax, per row: ``m = max`` (``llvm.maximum``: exact in any
order), ``e_j = exp(x_j - m)`` (:mod:`oxla_codegen_llvm.vmath`'s ``exp``) stored into the
output row while ``s = sum e_j`` accumulates, then ``out_j = e_j / s``. Layer norm: see
:func:`match_layer_norm`.

Softmax is matched as (``x`` an f32 input of shape ``R + [C]``, every read at the row's
own index, checked by :func:`oxla_backend_cpu.rowfusion.row_local`)::

    m = reduce(x, -inf, maximum, dims=[last])      # jax.nn.softmax, torch's _softmax
    mm = m | maximum(broadcast(-inf), m)           # jax's ``initial=-inf``
    e = exponential(x - broadcast(mm))
    s = reduce(e, 0, add, dims=[last])
    out = e / broadcast(s)
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.ir import Operation, Value
from oxla_backend_cpu.parallel import register_runtime_extension
from oxla_backend_cpu.reduction import freeze, reduce_parallel
from oxla_backend_cpu.rowfusion import reached, row_local

SOFTMAX = "oxla_softmax_rows_f32"
F32, I64, PTR = ir.FloatType(), ir.IntType(64), ir.PointerType()
SOFTMAX_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, I64])
LAYER_NORM = "oxla_layer_norm_rows_f32"
LAYER_NORM_TYPE = ir.FunctionType(ir.VoidType(), [PTR] * 4 + [I64] * 3 + [F32] * 2)
_BCAST = ("stablehlo.broadcast_in_dim", "stablehlo.reshape")


def _strip(v: Value) -> Value:
    """``v`` without the broadcasts, reshapes and same-type converts in front of it."""
    while v.owner_op is not None and (v.owner_op.name in _BCAST or (
            v.owner_op.name == "stablehlo.convert" and
            v.owner_op.operands[0].type.element_type == v.type.element_type)):
        v = v.owner_op.operands[0]
    return v


def _is_f32(v: Value) -> bool:
    from oxla.ir import types as T

    return isinstance(v.type, T.TensorType) and str(v.type.element_type) == "f32"


def _splat(v: Value) -> float | None:
    from oxla.passes.util import splat_value

    x = splat_value(_strip(v))
    return None if x is None else float(x)


def _body(op: Operation) -> str | None:
    """The one op of a one-operand reduce's body (``stablehlo.add``...), else None."""
    ops = list(op.regions[0].blocks[0].ops)
    if len(op.results) != 1 or len(ops) != 2 or ops[1].name not in (
            "stablehlo.return", "func.return"):
        return None
    args = list(op.regions[0].blocks[0].args)
    if list(ops[0].operands) not in (args, args[::-1]) or \
            list(ops[1].operands) != [ops[0].results[0]]:
        return None
    return ops[0].name


def _owner(v: Value, name: str) -> Operation | None:
    op = v.owner_op
    return op if op is not None and op.name == name else None


def match_softmax(k) -> Value | None:
    """The input ``x`` when row kernel ``k`` computes exactly softmax of ``x`` over its
    last dimension (module doc), else None."""
    from oxla_codegen_llvm import shape_of

    if len(k.reduces) != 2 or k.extra or k.root is None:
        return None
    r_max, r_sum = k.reduces
    shape = shape_of(k.root)
    nr = len(shape_of(r_max.results[0]))
    if len(shape) != nr + 1 or not _is_f32(k.root):
        return None
    for op in (r_max, r_sum):
        if list(op.attr("dimensions").values) != [nr] or shape_of(op.operands[0]) != shape:
            return None
    x = r_max.operands[0]
    if x not in k.inputs or not _is_f32(x) or _body(r_max) != "stablehlo.maximum" or \
            _splat(r_max.operands[1]) != -math.inf:
        return None
    e = r_sum.operands[0]
    if _body(r_sum) != "stablehlo.add" or _splat(r_sum.operands[1]) != 0.0:
        return None
    div = _owner(k.root, "stablehlo.divide")
    if div is None or div.operands[0] is not e or _strip(div.operands[1]) is not \
            r_sum.results[0]:
        return None
    exp = _owner(e, "stablehlo.exponential")
    sub = exp and _owner(exp.operands[0], "stablehlo.subtract")
    if sub is None or sub.operands[0] is not x:
        return None
    mm, m = _strip(sub.operands[1]), r_max.results[0]
    if mm is not m:
        mx = _owner(mm, "stablehlo.maximum")
        if mx is None or m not in [_strip(o) for o in mx.operands] or \
                sorted(_splat(o) == -math.inf for o in mx.operands) != [False, True]:
            return None
    outs = {r_max.results[0], r_sum.results[0]}
    stops = set(k.inputs) | outs
    full = tuple(("d", i) for i in range(len(shape)))
    for v, target in ((sub.operands[1], m), (div.operands[1], r_sum.results[0])):
        if not row_local(v, full, stops, {target}, nr):
            return None
    return x


def _either(v: Value, name: str, shape: tuple) -> tuple[Value, Value] | None:
    """The operands of ``v``'s defining op ``name`` (commutative: both orders are
    returned by the caller's checks) when ``v`` has ``shape``, else None."""
    from oxla_codegen_llvm import shape_of

    op = _owner(v, name)
    if op is None or shape_of(v) != shape:
        return None
    return op.operands[0], op.operands[1]


def _quotient(v: Value, reduced: Value) -> float | None:
    """``c`` when ``strip(v)`` is ``divide(broadcast(reduced), splat c)``, else None."""
    div = _owner(_strip(v), "stablehlo.divide")
    if div is None or _strip(div.operands[0]) is not reduced:
        return None
    return _splat(div.operands[1])


def _centered(v: Value, x: Value, total: Value, shape: tuple) -> float | None:
    """``n`` when ``v = x - broadcast(total / n)``, else None."""
    ops = _either(v, "stablehlo.subtract", shape)
    if ops is None or ops[0] is not x:
        return None
    return _quotient(ops[1], total)


def _column_vector(v: Value, k, n: int, nr: int) -> Value | None:
    """The f32 ``[n]`` input that ``v`` broadcasts along the last dimension, else None."""
    from oxla_codegen_llvm import shape_of

    src = _strip(v)
    if src not in k.inputs or not _is_f32(src) or shape_of(src) != (n,):
        return None
    full = tuple(("d", i) for i in range(nr + 1))
    reads = reached(v, full, {src}, leaves=True)
    return src if reads == {src: {(("d", nr),)}} else None


def match_layer_norm(k) -> tuple | None:
    """``(x, g, b, n, eps)`` when row kernel ``k`` computes exactly
    ``(x - mean) * rsqrt(var + eps) * g + b`` over the last dimension of an f32 ``x``
    (jax's and torch's ``native_layer_norm`` lowering), with ``mean = sum(x) / n`` and
    ``var = sum((x - mean) * (x - mean)) / n``, else None. ``+`` and ``*`` match in
    either operand order (both are commutative in IEEE arithmetic); the association of
    the products must be the one written."""
    from oxla_codegen_llvm import shape_of

    if len(k.reduces) != 2 or k.extra or k.root is None or not _is_f32(k.root):
        return None
    r_sum, r_sq = k.reduces
    shape = shape_of(k.root)
    nr = len(shape_of(r_sum.results[0]))
    if len(shape) != nr + 1:
        return None
    for op in (r_sum, r_sq):
        if list(op.attr("dimensions").values) != [nr] or shape_of(op.operands[0]) != shape \
                or _body(op) != "stablehlo.add" or _splat(op.operands[1]) != 0.0:
            return None
    x, total, sumsq = r_sum.operands[0], r_sum.results[0], r_sq.results[0]
    if x not in k.inputs or not _is_f32(x):
        return None
    sq = _either(r_sq.operands[0], "stablehlo.multiply", shape)
    if sq is None:
        return None
    n = _centered(sq[0], x, total, shape)
    if n is None or _centered(sq[1], x, total, shape) != n:
        return None
    got = _affine(k, x, total, sumsq, shape, nr, n)
    if got is None:
        return None
    outs = {total, sumsq}
    stops = set(k.inputs) | outs
    full = tuple(("d", i) for i in range(len(shape)))
    if not (row_local(k.root, full, stops, outs, nr)
            and row_local(r_sq.operands[0], full, stops, {total}, nr)):
        return None
    return (x, *got)


def _affine(k, x: Value, total: Value, sumsq: Value, shape: tuple, nr: int,
            n: float) -> tuple | None:
    """``(g, b, n, eps)`` for ``root = ((x - mean) * rstd) * g + b``, else None."""
    c = shape[-1]
    add = _either(k.root, "stablehlo.add", shape)
    if add is None:
        return None
    for prod, bias in (add, add[::-1]):
        b = _column_vector(bias, k, c, nr)
        scaled = _either(prod, "stablehlo.multiply", shape)
        if b is None or scaled is None:
            continue
        for norm, gain in (scaled, scaled[::-1]):
            g = _column_vector(gain, k, c, nr)
            pair = _either(norm, "stablehlo.multiply", shape)
            if g is None or pair is None:
                continue
            for centered, scale in (pair, pair[::-1]):
                eps = _rstd(scale, sumsq, n)
                if eps is not None and _centered(centered, x, total, shape) == n:
                    return g, b, n, eps
    return None


def _rstd(v: Value, sumsq: Value, n: float) -> float | None:
    """``eps`` when ``strip(v) = rsqrt(sumsq / n + eps)``, else None."""
    rsqrt = _owner(_strip(v), "stablehlo.rsqrt")
    add = rsqrt and _owner(rsqrt.operands[0], "stablehlo.add")
    if add is None:
        return None
    for var, eps in (add.operands, add.operands[::-1]):
        e = _splat(eps)
        if e is not None and _quotient(var, sumsq) == n:
            return e
    return None


def emit_library_rows(s, k, buffers: dict, outs: list) -> bool:
    """Emits row kernel ``k`` as a call of a library kernel when it is one (module doc);
    returns False (nothing emitted) otherwise."""
    from oxla_codegen_llvm import shape_of

    if s.fast_math:
        return False
    x, norm = match_softmax(k), None
    if x is None:
        norm = match_layer_norm(k)
        if norm is None:
            return False
    b, fn = s.b, s.b.function
    rows = shape_of(k.op.results[0])
    per = math.prod(rows[1:])
    if len(fn.args) >= 2 and fn.args[-1].type == I64:  # parallel over rows[0] (codegen)
        fn.oxla_parallel = reduce_parallel(k.op)
        r0 = b.mul(fn.args[-2], ir.Constant(I64, per))
        r1 = b.mul(fn.args[-1], ir.Constant(I64, per))
    else:
        r0, r1 = ir.Constant(I64, 0), ir.Constant(I64, math.prod(rows))
    c = ir.Constant(I64, shape_of(k.root)[-1])
    if norm is None:
        b.call(_declare(s.module, SOFTMAX, SOFTMAX_TYPE), [buffers[x], outs[0], r0, r1, c])
        return True
    x, g, bias, n, eps = norm
    b.call(_declare(s.module, LAYER_NORM, LAYER_NORM_TYPE),
           [buffers[x], buffers[g], buffers[bias], outs[0], r0, r1, c,
            ir.Constant(F32, n), ir.Constant(F32, eps)])
    return True


def _declare(module: ir.Module, name: str, fty: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, fty, name)


def define_row_runtime(module: ir.Module) -> None:
    """Defines ``oxla_softmax_rows_f32(x, out, r0, r1, n)`` in the runtime module: rows
    ``[r0, r1)`` of ``n`` f32 each; ``out`` is either ``x`` (in place) or disjoint from
    it. One body serves both: its loops are marked ``llvm.loop.parallel_accesses`` (each
    iteration reads and writes only its own element), so the vectorizer adds no run-time
    alias check, which an in-place call would fail (scalar loops)."""
    from oxla_codegen_llvm import for_range
    from oxla_codegen_llvm.vmath import vector_math_function

    fn = ir.Function(module, SOFTMAX_TYPE, SOFTMAX)
    x, out, r0, r1, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc_m, acc_s = b.alloca(F32, name="m"), b.alloca(F32, name="s")
    maximum = module.declare_intrinsic("llvm.maximum", [F32], ir.FunctionType(F32, [F32, F32]))
    exp = vector_math_function(module, "exp", F32)
    group = _access_group(module)
    parallel = [("llvm.loop.parallel_accesses", group)]

    def mem(instr):
        instr.set_metadata("llvm.access.group", group)
        return instr

    def at(p, base, j):
        return b.gep(p, [b.add(base, j, flags=["nsw"])], source_etype=F32, inbounds=True)

    with for_range(b, r1, "row", start=r0) as row:
        base = b.mul(row, n, flags=["nsw"])
        b.store(ir.Constant(F32, -math.inf), acc_m)
        with for_range(b, n, "max", vectorize=True) as j:
            v = freeze(b, b.load(at(x, base, j), typ=F32))
            b.store(b.call(maximum, [b.load(acc_m, typ=F32), v]), acc_m)
        m = b.load(acc_m, typ=F32)
        b.store(ir.Constant(F32, 0.0), acc_s)
        with for_range(b, n, "sum", vectorize=True, hints=parallel) as j:
            e = b.call(exp, [b.fsub(mem(b.load(at(x, base, j), typ=F32)), m)])
            mem(b.store(e, at(out, base, j)))
            b.store(b.fadd(b.load(acc_s, typ=F32), e, flags=["reassoc"]), acc_s)
        total = b.load(acc_s, typ=F32)
        with for_range(b, n, "div", hints=parallel) as j:
            p = at(out, base, j)
            mem(b.store(b.fdiv(mem(b.load(p, typ=F32)), total), p))
    b.ret_void()
    _define_layer_norm(module)


def _define_layer_norm(module: ir.Module) -> None:
    """``oxla_layer_norm_rows_f32(x, g, b, out, r0, r1, c, n, eps)``: per row of ``c``
    elements ``mean = sum(x) / n``, ``var = sum((x - mean)^2) / n``,
    ``out = ((x - mean) * (1 / sqrt(var + eps))) * g + b`` (the row emitter's ops and
    rsqrt); ``out`` is ``x`` or disjoint from it, ``g`` and ``b`` are read only."""
    from oxla_codegen_llvm import for_range

    fn = ir.Function(module, LAYER_NORM_TYPE, LAYER_NORM)
    x, g, bias, out, r0, r1, c, n, eps = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    acc = b.alloca(F32, name="acc")
    sqrt = module.declare_intrinsic("llvm.sqrt", [F32])
    group = _access_group(module)

    def at(p, base, j):
        return b.gep(p, [b.add(base, j, flags=["nsw"])], source_etype=F32, inbounds=True)

    def load(p, j):
        instr = b.load(b.gep(p, [j], source_etype=F32, inbounds=True), typ=F32)
        instr.set_metadata("llvm.access.group", group)
        return instr

    def row_sum(base, term):
        b.store(ir.Constant(F32, 0.0), acc)
        with for_range(b, c, "sum", vectorize=True) as j:
            v = term(b.load(at(x, base, j), typ=F32))
            b.store(b.fadd(b.load(acc, typ=F32), v, flags=["reassoc"]), acc)
        return b.load(acc, typ=F32)

    with for_range(b, r1, "row", start=r0) as row:
        base = b.mul(row, c, flags=["nsw"])
        mean = b.fdiv(row_sum(base, lambda v: v), n)
        var = b.fdiv(row_sum(base, lambda v: b.fmul(b.fsub(v, mean), b.fsub(v, mean))), n)
        rstd = b.fdiv(ir.Constant(F32, 1.0), b.call(sqrt, [b.fadd(var, eps)]))
        with for_range(b, c, "norm", hints=[("llvm.loop.parallel_accesses", group)]) as j:
            i = b.add(base, j, flags=["nsw"])
            y = b.fmul(b.fmul(b.fsub(load(x, i), mean), rstd), load(g, j))
            st = b.store(b.fadd(y, load(bias, j)), at(out, base, j))
            st.set_metadata("llvm.access.group", group)
    b.ret_void()


class _DistinctNode(ir.values.MDValue):
    """``distinct !{}``: an access group (llvmlite prints only uniqued nodes). Equal only
    to itself, so llvmlite's metadata cache keeps each group's loop hints apart."""

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def descr(self, buf):
        buf += ("distinct !{}", "\n")


def _access_group(module: ir.Module) -> ir.values.MDValue:
    return _DistinctNode(module, [], name=str(len(module.metadata)))


def register() -> None:
    """Adds the library kernels to the runtime object (once per process)."""
    register_runtime_extension("cpu-rows", define_row_runtime, [SOFTMAX, LAYER_NORM])


register()
