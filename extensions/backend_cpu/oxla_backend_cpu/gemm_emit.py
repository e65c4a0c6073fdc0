"""GEMM kernels of the plan (:class:`~oxla.lowering.DotKernel`) as calls of the
runtime's GEMM drivers, and the runtime extensions that define those drivers: BLAS on
oxla's threads (:mod:`oxla_backend_cpu.gemm_runtime`), oxla's microkernel with weights
packed at compile time (strategy ``packed``, :mod:`oxla_backend_cpu.packed_gemm`) or per
GEMM of a batch (strategy ``batched``, :mod:`oxla_backend_cpu.batched_gemm`).
"""

from __future__ import annotations

import llvmlite.binding as llvm
import llvmlite.ir as ir

from oxla_backend_cpu import batched_gemm as bg
from oxla_backend_cpu import gemm_runtime as gr
from oxla_backend_cpu import int8_gemm as ig
from oxla_backend_cpu import packed_gemm as pg
from oxla_backend_cpu.blas import FLOPS_PER_THREAD, blas_symbols, row_blocks
from oxla_backend_cpu.gemv import emit_gemv
from oxla_backend_cpu.parallel import register_runtime_extension, runtime

I32, I64 = ir.IntType(32), ir.IntType(64)


def emit_gemm(s, k, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """Emits ``dot_general`` kernel ``k`` (a :class:`~oxla.lowering.DotKernel`):
    single-threaded BLAS calls run by oxla's parallel-for.

    Row-major ``C[M,N] = A[M,K] B[K,N]`` is column-major ``C^T = B^T A^T``: the Fortran
    call gets ``rhs`` first, ``m = N`` and ``n = M`` (no copy for either layout of an
    operand: the transpose flags express it). The work items are (batch, row block) pairs;
    a row block ``[r0, r1)`` of ``C`` reads the same rows of ``A`` (column offset ``r0``
    when ``A`` is stored ``[K,M]``) with unchanged leading dimensions, so blocks write
    disjoint rows of ``C`` and need no synchronization. Consecutive blocks of one GEMM in
    a thread's chunk are merged into one call. BLAS runs one thread per call (its own
    pool would oversubscribe the cores next to oxla's threads).

    OpenBLAS's own threads (one call, shared packed panels) were as fast as one block
    per thread on a quiet 2-core machine (1024^3: 186 vs 179 GFLOP/s, 128x768x2304: 162
    vs 156), but they synchronize inside the call: with another process on one core,
    GPT-2's 128x768x768 fell to 6 GFLOP/s, where independent blocks just run at the
    remaining core's speed. So oxla's blocks it is.

    Blocks per GEMM are chosen at run time from ``oxla_num_threads``:
    :data:`BLOCKS_PER_THREAD` work items per thread (the pool hands them out
    dynamically), never more than :func:`row_blocks` allows, one block on one thread.
    Every block re-packs the operand it shares with the others: all of ``B`` (the
    weights) for row blocks, all of ``A`` for column blocks. One block per thread
    measured fastest: 1024x768x768 175-195 GFLOP/s against 161-179 with three; in
    GPT-2 at batch 1 (128-row GEMMs, column blocks) 165-173 against 144-149 with two.

    The block loop and the BLAS call site are not emitted here: they are the runtime's
    GEMM driver (:mod:`oxla_backend_cpu.gemm_runtime`, compiled once per process); the
    kernel is one call with this GEMM's constant descriptor.
    """
    if k.batch == 0 or k.m == 0 or k.n == 0:
        return
    if k.strategy == "packed":
        _emit_packed(s, k, lhs, rhs, out)
        return
    if k.strategy == "batched":
        _emit_batched(s, k, lhs, rhs, out)
        return
    if k.strategy.startswith("int8-"):
        driver, values = ig.descriptor(k)
        _call_driver(s, k, driver, ig.DRIVER_TYPE, ig.DESC_FIELDS, values, [lhs, rhs, out])
        return
    if k.strategy == "gemv":
        emit_gemv(s, k, lhs, rhs, out)
        return
    split_n = k.n > k.m  # skinny C (an MLP layer): split columns, each thread packs less B
    flops = 2.0 * k.m * k.n * k.k
    cap = row_blocks(k.batch, k.n if split_n else k.m, flops)
    parallel = (cap > 1 or k.batch >= 2) and flops * k.batch >= 2 * FLOPS_PER_THREAD
    values = dict(batch=k.batch, m=k.m, n=k.n, k=k.k, trans_lhs=int(k.trans_lhs),
                  trans_rhs=int(k.trans_rhs), split_n=int(split_n), cap=cap,
                  parallel=int(parallel))
    _call_driver(s, k, gr.driver_name(k.dtype), gr.DRIVER_TYPE, gr.DESC_FIELDS, values, [lhs, rhs, out])


def _call_driver(s, k, driver: str, driver_type: ir.FunctionType, fields: tuple[str, ...],
                 values: dict[str, int], operands: list[ir.Value]) -> None:
    """Emits ``driver(desc, *operands)`` with ``desc`` an internal constant ``i64`` array
    of ``values`` in ``fields`` order, named after kernel ``k``; declares the runtime
    (the drivers run oxla's parallel-for and read ``oxla_num_threads``)."""
    b, module = s.b, s.module
    ty = ir.ArrayType(I64, len(fields))
    desc = ir.GlobalVariable(module, ty, f"{k.name}.desc")
    desc.linkage, desc.global_constant = "internal", True
    desc.initializer = ir.Constant(ty, [values[f] for f in fields])
    runtime(module)
    fn = module.globals.get(driver) or ir.Function(module, driver_type, driver)
    b.call(fn, [b.bitcast(desc, ir.PointerType()), *operands])


def _emit_packed(s, k, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """A GEMM with pre-packed constant weights: one call of the runtime's
    ``oxla_pgemm_f32`` with a constant descriptor (:mod:`oxla_backend_cpu.packed_gemm`)."""
    flops = 2.0 * k.m * k.n * k.k
    sa_m, sa_k = (1, k.m) if k.trans_lhs else (k.k, 1)
    values = dict(m=k.m, n=k.n, k=k.k, sa_m=sa_m, sa_k=sa_k,
                  parallel=int(flops >= 2 * pg.PACKED_FLOPS_PER_THREAD))
    _call_driver(s, k, pg.DRIVER, pg.DRIVER_TYPE, pg.DESC_FIELDS, values, [lhs, rhs, out])


def _emit_batched(s, k, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """A batch of small GEMMs on oxla's microkernel: one call of the runtime's
    ``oxla_bgemm_f32`` with a constant descriptor (:mod:`oxla_backend_cpu.batched_gemm`)."""
    flops = 2.0 * k.m * k.n * k.k * k.batch
    sa_m, sa_k = (1, k.m) if k.trans_lhs else (k.k, 1)
    sb_k, sb_n = (1, k.k) if k.trans_rhs else (k.n, 1)
    values = dict(batch=k.batch, m=k.m, n=k.n, k=k.k, sa_m=sa_m, sa_k=sa_k, sb_k=sb_k,
                  sb_n=sb_n, parallel=int(flops >= bg.BATCHED_PARALLEL_FLOPS),
                  row_blocks=bg.row_blocks(k.batch, k.m, k.n, k.k))
    _call_driver(s, k, bg.DRIVER, bg.DRIVER_TYPE, bg.DESC_FIELDS, values, [lhs, rhs, out])


def define_packed_gemm_runtime(module: ir.Module) -> None:
    """Defines ``oxla_pgemm_f32`` for the host's tile shape in the runtime ``module`` (a
    runtime extension, see :func:`oxla_backend_cpu.parallel.register_runtime_extension`);
    nothing on a host without AVX2+FMA or AVX-512 (programs there never call it)."""
    lanes = pg.host_lanes()
    if lanes:
        pg.define_driver(module, lanes, *pg.tile_shape(lanes))


def define_batched_gemm_runtime(module: ir.Module) -> None:
    """Defines ``oxla_bgemm_f32`` (:mod:`oxla_backend_cpu.batched_gemm`) like
    :func:`define_packed_gemm_runtime`: its own extension, so a program that uses only
    one of the two microkernel drivers (an RNN's packed weights, attention's batches)
    builds only that one at its first compile in a process (about 0.1 s each)."""
    lanes = pg.host_lanes()
    if lanes:
        bg.define_batched_driver(module, lanes, *bg.tile_shape(lanes))


def _define_gemm_runtime(module: ir.Module) -> None:
    """The runtime extension: the GEMM driver, with the BLAS addresses it calls
    registered for the JIT linker first."""
    for name, address in blas_symbols().items():
        llvm.add_symbol(name, address)
    gr.define_gemm_runtime(module)


def _register_runtime() -> None:
    register_runtime_extension("cpu-gemm", _define_gemm_runtime,
                               [gr.driver_name("f32"), gr.driver_name("f64")])
    register_runtime_extension("cpu-packed-gemm", define_packed_gemm_runtime, [pg.DRIVER])
    register_runtime_extension("cpu-batched-gemm", define_batched_gemm_runtime, [bg.DRIVER])
    register_runtime_extension("cpu-int8-gemm", ig.define_int8_gemm_runtime,
                               [isa.driver for isa in ig.ISAS])


_register_runtime()
