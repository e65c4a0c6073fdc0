"""Library row kernels: softmax over the last dimension, compiled once per process.

A :class:`~oxla_backend_cpu.rowfusion.RowKernel` that is exactly softmax (below) calls
``oxla_softmax_rows_f32`` from the runtime object (the parallel runtime's extension, as
the GEMM driver, see :func:`oxla_codegen_llvm.parallel.register_runtime_extension`)
instead of having its three loops emitted, optimized and code-generated again by every
compile: the loops with an inlined vector ``exp`` were ~20 ms of LLVM's -O3 and code
generation per program, 2-4x XLA:CPU's whole compile of it (XLA rewrites softmax to a
library call on the CPU too, oneDNN's). The program keeps a call per row chunk. The
runtime object takes ~50 ms longer to build, once per process.

The kernel is the same IR the row emitter makes (:func:`oxla_backend_cpu.rowfusion.
emit_rows`) with the row length a parameter: per row, ``m = max`` (``llvm.maximum``, the
row's elements in any order: exact), ``e_j = exp(x_j - m)`` (the same
:mod:`oxla_codegen_llvm.vmath` ``exp``) stored into the output row while ``s = sum e_j``
accumulates (partial vector sums, the order a ``reduce`` leaves unspecified), then
``out_j = e_j / s``. No fast-math flags. Results equal the emitted kernel's up to the
order of the sum (bit-identical when the row length is a multiple of the vector loop's
step).

Matched (``x`` an f32 input of shape ``R + [C]``, every read at the row's own index,
checked by :func:`oxla_backend_cpu.rowfusion._row_local`)::

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

SOFTMAX = "oxla_softmax_rows_f32"
F32, I64, PTR = ir.FloatType(), ir.IntType(64), ir.PointerType()
SOFTMAX_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, I64])
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

    from oxla_backend_cpu.rowfusion import _row_local

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
        if not _row_local(v, full, stops, {target}, nr):
            return None
    return x


def emit_library_rows(s, k, buffers: dict, outs: list) -> bool:
    """Emits row kernel ``k`` as a call of a library kernel when it is one (module doc);
    returns False (nothing emitted) otherwise."""
    from oxla_codegen_llvm import shape_of

    from oxla_backend_cpu.opkernels import reduce_parallel

    if s.fast_math:
        return False
    x = match_softmax(k)
    if x is None:
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
    callee = s.module.globals.get(SOFTMAX) or ir.Function(s.module, SOFTMAX_TYPE, SOFTMAX)
    b.call(callee, [buffers[x], outs[0], r0, r1, ir.Constant(I64, shape_of(k.root)[-1])])
    return True


def define_row_runtime(module: ir.Module) -> None:
    """Defines ``oxla_softmax_rows_f32(x, out, r0, r1, n)`` in the runtime module: rows
    ``[r0, r1)`` of ``n`` f32 each; ``out`` is either ``x`` (in place) or disjoint from
    it. One body serves both: its loops are marked ``llvm.loop.parallel_accesses`` (each
    iteration reads and writes only its own element), so the vectorizer adds no run-time
    alias check, which an in-place call would fail (scalar loops)."""
    from oxla_codegen_llvm import for_range
    from oxla_codegen_llvm.vmath import vector_math_function

    from oxla_backend_cpu.rowfusion import _freeze

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
            v = _freeze(b, b.load(at(x, base, j), typ=F32))
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


class _DistinctNode(ir.values.MDValue):
    """``distinct !{}``: an access group (llvmlite prints only uniqued nodes)."""

    def descr(self, buf):
        buf += ("distinct !{}", "\n")


def _access_group(module: ir.Module) -> ir.values.MDValue:
    return _DistinctNode(module, [], name=str(len(module.metadata)))


def register() -> None:
    """Adds the library kernels to the runtime object (once per process)."""
    from oxla_codegen_llvm.parallel import register_runtime_extension

    register_runtime_extension("cpu-rows", define_row_runtime, [SOFTMAX])


register()
