"""The GEMM driver in the parallel runtime: one compiled ``oxla_gemm_f32``/``_f64`` per
process instead of a block loop and a BLAS call site emitted into every program.

A program's ``dot_general`` kernel becomes one call, ``oxla_gemm_<dtype>(desc, lhs, rhs,
out)``, with ``desc`` a constant ``i64[9]`` descriptor (:data:`DESC_FIELDS`). The
driver is part of the runtime module (:func:`oxla_backend_cpu.parallel.runtime_module`
with this module's extension), which is optimized and compiled once per process and
loaded next to every program, and stored in ``.oxla`` artifacts beside it. So a program
made of GEMMs has no loop of its own for LLVM to optimize: measured, a module with any
vectorizable loop costs about 5 ms of ``-O3`` and 6 ms of code generation on top of an
empty one, which was most of the 1024^3 GEMM workload's 22 ms compile.

The driver does at run time what :func:`oxla_backend_cpu.gemm_emit.emit_gemm` documents: the
blocks from ``oxla_num_threads`` and the descriptor's cap, one single-threaded BLAS call
per run of consecutive blocks, oxla's parallel-for when the descriptor allows it.
"""

from __future__ import annotations

import llvmlite.ir as ir

from oxla_backend_cpu.blas import BLOCKS_PER_THREAD, THREADS_SYMBOL, blas_symbols, set_one_thread
from oxla_backend_cpu.parallel import NUM_THREADS, call_parallel_if

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
DESC_FIELDS = ("batch", "m", "n", "k", "trans_lhs", "trans_rhs", "split_n", "cap",
               "parallel")
"""The descriptor's i64 words: GEMM shape (``C[batch, m, n] = A B`` over ``k``), operand
layouts (1: stored transposed), 1 to split ``n`` instead of ``m`` into blocks, the most
blocks per GEMM, and 1 when the work is worth oxla's parallel-for."""
DRIVER_TYPE = ir.FunctionType(VOID, [PTR] * 4)  # desc, lhs, rhs, out


def driver_name(dtype: str) -> str:
    """The runtime symbol of the GEMM driver for ``dtype`` (``"f32"`` or ``"f64"``)."""
    return f"oxla_gemm_{dtype}"


def define_gemm_runtime(module: ir.Module) -> None:
    """Defines the f32 and f64 drivers in the runtime ``module`` (a runtime extension,
    see :func:`oxla_backend_cpu.parallel.register_runtime_extension`)."""
    for dtype in ("f32", "f64"):
        _define_driver(module, dtype)


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _fields(b: ir.IRBuilder, desc: ir.Value) -> dict[str, ir.Value]:
    return {name: b.load(b.gep(desc, [_c(i)], source_etype=I64), typ=I64)
            for i, name in enumerate(DESC_FIELDS)}


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _max(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def _define_driver(module: ir.Module, dtype: str) -> None:
    fn = ir.Function(module, DRIVER_TYPE, driver_name(dtype))
    task = ir.Function(module, ir.FunctionType(VOID, [PTR] * 5 + [I64] * 2),
                       f"{fn.name}.blocks")
    task.linkage = "internal"
    _define_task(task, dtype)
    desc, lhs, rhs, out = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    f = _fields(b, desc)
    geom = b.alloca(I64, 2, name="geom")
    extent = b.select(b.icmp_signed("!=", f["split_n"], _c(0)), f["n"], f["m"])
    nt = b.load(module.globals[NUM_THREADS], typ=I64)
    want = b.sdiv(b.add(b.mul(nt, _c(BLOCKS_PER_THREAD)), b.sub(f["batch"], _c(1))),
                  f["batch"])
    want = b.select(b.icmp_signed("<=", nt, _c(1)), _c(1), want)
    blocks = _max(b, _min(b, want, f["cap"]), _c(1))
    rows = b.sdiv(b.add(extent, b.sub(blocks, _c(1))), blocks)
    blocks = b.sdiv(b.add(extent, b.sub(rows, _c(1))), rows)  # no empty block
    b.store(blocks, geom)
    b.store(rows, b.gep(geom, [_c(1)], source_etype=I64))
    items = b.mul(blocks, f["batch"])
    old = None
    if THREADS_SYMBOL in blas_symbols():  # the calling thread's chunk: one BLAS thread
        threads = module.globals.get(THREADS_SYMBOL) or ir.Function(
            module, ir.FunctionType(I32, [I32]), THREADS_SYMBOL)
        old = b.call(threads, [ir.Constant(I32, 1)])
    call_parallel_if(b, module, b.icmp_signed("!=", f["parallel"], _c(0)), task,
                     [desc, lhs, rhs, out, geom], items)
    if old is not None:
        b.call(module.globals[THREADS_SYMBOL], [old])
    b.ret_void()


def _define_task(task: ir.Function, dtype: str) -> None:
    """``task(desc, A, B, C, geom, start, end)``: work items ``[start, end)`` (pairs of
    batch and block), one BLAS call per run of consecutive blocks of one GEMM (see
    :func:`oxla_backend_cpu.gemm_emit.emit_gemm` for the layout algebra)."""
    module = task.module
    fty = ir.FloatType() if dtype == "f32" else ir.DoubleType()
    name = "oxla_sgemm" if dtype == "f32" else "oxla_dgemm"
    gemm = module.globals.get(name) or ir.Function(
        module, ir.FunctionType(VOID, [PTR] * 13), name)
    desc, a_p, b_p, c_p, geom, start, end = task.args
    entry = task.append_basic_block("entry")
    head = task.append_basic_block("head")
    body = task.append_basic_block("body")
    done = task.append_basic_block("done")
    b = ir.IRBuilder(entry)
    set_one_thread(b, module)
    f = _fields(b, desc)
    m, n, k = f["m"], f["n"], f["k"]
    tl = b.icmp_signed("!=", f["trans_lhs"], _c(0))
    tr = b.icmp_signed("!=", f["trans_rhs"], _c(0))
    split_n = b.icmp_signed("!=", f["split_n"], _c(0))
    blocks = b.load(geom, typ=I64)
    rows = b.load(b.gep(geom, [_c(1)], source_etype=I64), typ=I64)

    def slot(ty: ir.Type, value: ir.Value) -> ir.Value:
        p = b.alloca(ty)
        b.store(value, p)
        return p

    def i32(v: ir.Value) -> ir.Value:
        return b.trunc(v, I32)

    ta = slot(I8, b.select(tr, ir.Constant(I8, ord("T")), ir.Constant(I8, ord("N"))))
    tb = slot(I8, b.select(tl, ir.Constant(I8, ord("T")), ir.Constant(I8, ord("N"))))
    m_arg, kk, n_arg = slot(I32, i32(n)), slot(I32, i32(k)), slot(I32, i32(m))
    lda = slot(I32, i32(_max(b, b.select(tr, k, n), _c(1))))
    ldb = slot(I32, i32(_max(b, b.select(tl, m, k), _c(1))))
    ldc = slot(I32, i32(_max(b, n, _c(1))))
    alpha, beta = slot(fty, ir.Constant(fty, 1.0)), slot(fty, ir.Constant(fty, 0.0))
    extent = b.select(split_n, n, m)
    split_arg = b.select(split_n, m_arg, n_arg)
    b.branch(head)
    b.position_at_end(head)
    item = b.phi(I64, name="item")
    item.add_incoming(start, entry)
    b.cbranch(b.icmp_signed("<", item, end), body, done)
    b.position_at_end(body)
    bt = b.sdiv(item, blocks)
    blk0 = b.srem(item, blocks)
    run = _min(b, b.sub(blocks, blk0), b.sub(end, item))
    r0 = b.mul(blk0, rows)
    r1 = _min(b, b.mul(b.add(blk0, run), rows), extent)
    b.store(i32(b.sub(r1, r0)), split_arg)

    def at(p: ir.Value, off: ir.Value) -> ir.Value:
        return b.gep(p, [off], source_etype=fty)

    a_off = b.mul(bt, b.mul(m, k))
    b_off = b.mul(bt, b.mul(k, n))
    c_off = b.mul(bt, b.mul(m, n))
    # split n: B from column r0 (row r0 when stored [N,K]), C from column r0;
    # split m: A from row r0 (column r0 when stored [K,M]), C from row r0
    b_off = b.add(b_off, b.select(split_n, b.select(tr, b.mul(r0, k), r0), _c(0)))
    a_off = b.add(a_off, b.select(split_n, _c(0), b.select(tl, r0, b.mul(r0, k))))
    c_off = b.add(c_off, b.select(split_n, r0, b.mul(r0, n)))
    b.call(gemm, [ta, tb, m_arg, n_arg, kk, alpha, at(b_p, b_off), lda, at(a_p, a_off), ldb,
                  beta, at(c_p, c_off), ldc])
    item.add_incoming(b.add(item, run), body)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
