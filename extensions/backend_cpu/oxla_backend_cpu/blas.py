"""BLAS routines for generated code: OpenBLAS from the ``scipy-openblas32`` wheel, else
scipy's own copy through ``cython_blas``.

The wheel's library is loaded with ``ctypes`` (private to oxla: no other module calls
it, so its thread settings are oxla's); without it,
``scipy.linalg.cython_blas.__pyx_capi__`` holds a PyCapsule per routine whose pointer
is the Fortran-convention function (every argument by pointer, column-major). The
addresses are registered as the symbols ``oxla_sgemm``/``oxla_dgemm`` before JIT, so
the generated IR never contains a process-specific address.

Threads: OpenBLAS's own pool runs a GEMM on every core by default and its workers
spin-wait between calls, which made small GEMMs on a busy machine 10-100x slower than on
one core (measured: a 16x256x256 MLP layer 45 ms with 2 OpenBLAS threads on a loaded
2-core machine, 0.14 ms with 1). oxla therefore owns the threading: :func:`emit_gemm`
splits a (batched) GEMM into row or column blocks run by oxla's parallel-for (a pool of
parked workers), each block one single-threaded BLAS call. The thread count is set with
``openblas_set_num_threads_local`` (found next to ``sgemm`` in the same library with
``dladdr``, registered as ``oxla_blas_threads``) and restored after the kernel; a BLAS
without that function keeps its own setting (no call is emitted).
"""

from __future__ import annotations

import ctypes
import os
from functools import cache

import llvmlite.ir as ir

SYMBOLS = {"oxla_sgemm": "sgemm", "oxla_dgemm": "dgemm"}
THREADS_SYMBOL = "oxla_blas_threads"
# ~0.7 ms of one core at 50 GFLOP/s: below it a second thread costs more than it saves.
FLOPS_PER_THREAD = 1 << 25
I32, I64 = ir.IntType(32), ir.IntType(64)


@cache
def blas_symbols() -> dict[str, int]:
    """Symbol name -> address of each BLAS routine the generated code may call: from
    :func:`_openblas_wheel` when that library loads, else from scipy's ``cython_blas``."""
    out = _openblas_wheel()
    if out:
        return out
    from scipy.linalg import cython_blas

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    out = {}
    for sym, routine in SYMBOLS.items():
        cap = cython_blas.__pyx_capi__[routine]
        out[sym] = int(get_ptr(cap, get_name(cap)))
    threads = _threads_function(out["oxla_sgemm"])
    if threads:
        out[THREADS_SYMBOL] = threads
    return out


def _openblas_wheel() -> dict[str, int]:
    """The routines of the ``scipy-openblas32`` wheel (the OpenBLAS build that numpy and
    scipy release from, LP64, newer than the copy inside scipy's own wheel), or {} when
    it is not installed or does not load.

    Measured on a 2-core AVX-512 machine (Zen 4), one thread: OpenBLAS 0.3.33 and 0.3.34
    ran the thin GEMMs of GPT-2 and BERT at sequence 128 (128x768x2304, 64x768x2304)
    10-12% faster than scipy 1.17's bundled 0.3.30, and 1024^3 at the same speed.
    """
    try:
        import scipy_openblas32 as wheel

        lib = ctypes.CDLL(os.path.join(wheel.get_lib_dir(), wheel.get_library(True)))
        out = {sym: ctypes.cast(getattr(lib, "scipy_" + routine + "_"), ctypes.c_void_p).value
               for sym, routine in SYMBOLS.items()}
        out[THREADS_SYMBOL] = ctypes.cast(lib.openblas_set_num_threads_local,
                                          ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return {}
    return out if all(out.values()) else {}


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _threads_function(sgemm: int) -> int:
    """The address of ``openblas_set_num_threads_local`` in the library that defines
    ``sgemm`` (found with ``dladdr``), or 0."""
    try:
        libc = ctypes.CDLL(None)
        info = _DlInfo()
        if not libc.dladdr(ctypes.c_void_p(sgemm), ctypes.byref(info)) or not info.dli_fname:
            return 0
        lib = ctypes.CDLL(info.dli_fname.decode())
    except (OSError, AttributeError):
        return 0
    for name in ("openblas_set_num_threads_local", "scipy_openblas_set_num_threads_local"):
        fn = getattr(lib, name, None)
        if fn is not None:
            return ctypes.cast(fn, ctypes.c_void_p).value or 0
    return 0


def set_gemm_threads(b: ir.IRBuilder, module: ir.Module, flops: float) -> ir.Value | None:
    """Emits ``old = oxla_blas_threads(min(oxla_num_threads, ceil(flops / F)))`` (``F`` =
    :data:`FLOPS_PER_THREAD`; ``flops = 1`` asks for one thread); returns ``old`` for
    :func:`restore_threads`, or None when the BLAS has no per-thread count."""
    from oxla_codegen_llvm.parallel import runtime

    if THREADS_SYMBOL not in blas_symbols():
        return None
    runtime(module)  # defines oxla_num_threads
    nthreads = module.globals["oxla_num_threads"]
    fn = module.globals.get(THREADS_SYMBOL) or ir.Function(
        module, ir.FunctionType(I32, [I32]), THREADS_SYMBOL)
    want = ir.Constant(I64, max(1, -(-int(flops) // FLOPS_PER_THREAD)))
    have = b.load(nthreads, typ=I64)
    n = b.select(b.icmp_signed("<", have, want), have, want)
    return b.call(fn, [b.trunc(n, I32)])


def restore_threads(b: ir.IRBuilder, module: ir.Module, old: ir.Value | None) -> None:
    """Emits the call that puts back the thread count :func:`set_gemm_threads` saved."""
    if old is not None:
        b.call(module.globals[THREADS_SYMBOL], [old])


# Below this many rows per block a GEMM call is too thin for BLAS's kernels.
MIN_BLOCK_ROWS = 16
MAX_BLOCKS = 64


def row_blocks(batch: int, m: int, flops: float) -> int:
    """Row blocks per GEMM of a batch for oxla's own threads: enough blocks that each
    holds about :data:`FLOPS_PER_THREAD` operations, none thinner than
    :data:`MIN_BLOCK_ROWS` rows; 1 when the batch alone gives enough parallel items."""
    want = max(1, int(flops // FLOPS_PER_THREAD))
    if batch >= want:
        return 1
    return max(1, min(-(-want // batch), m // MIN_BLOCK_ROWS, MAX_BLOCKS))


BLOCKS_PER_THREAD = 1


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
    from oxla_backend_cpu.gemm_runtime import DESC_FIELDS, DRIVER_TYPE, driver_name

    if k.batch == 0 or k.m == 0 or k.n == 0:
        return
    if k.strategy == "packed":
        _emit_packed(s, k, lhs, rhs, out)
        return
    if k.strategy == "batched":
        _emit_batched(s, k, lhs, rhs, out)
        return
    split_n = k.n > k.m  # skinny C (an MLP layer): split columns, each thread packs less B
    flops = 2.0 * k.m * k.n * k.k
    cap = row_blocks(k.batch, k.n if split_n else k.m, flops)
    parallel = (cap > 1 or k.batch >= 2) and flops * k.batch >= 2 * FLOPS_PER_THREAD
    values = dict(batch=k.batch, m=k.m, n=k.n, k=k.k, trans_lhs=int(k.trans_lhs),
                  trans_rhs=int(k.trans_rhs), split_n=int(split_n), cap=cap,
                  parallel=int(parallel))
    _call_driver(s, k, driver_name(k.dtype), DRIVER_TYPE, DESC_FIELDS, values, [lhs, rhs, out])


def _call_driver(s, k, driver: str, driver_type: ir.FunctionType, fields: tuple[str, ...],
                 values: dict[str, int], operands: list[ir.Value]) -> None:
    """Emits ``driver(desc, *operands)`` with ``desc`` an internal constant ``i64`` array
    of ``values`` in ``fields`` order, named after kernel ``k``; declares the runtime
    (the drivers run oxla's parallel-for and read ``oxla_num_threads``)."""
    from oxla_codegen_llvm.parallel import runtime

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
    from oxla_backend_cpu.packed_gemm import DESC_FIELDS, DRIVER, DRIVER_TYPE

    flops = 2.0 * k.m * k.n * k.k
    sa_m, sa_k = (1, k.m) if k.trans_lhs else (k.k, 1)
    values = dict(m=k.m, n=k.n, k=k.k, sa_m=sa_m, sa_k=sa_k,
                  parallel=int(flops >= 2 * FLOPS_PER_THREAD))
    _call_driver(s, k, DRIVER, DRIVER_TYPE, DESC_FIELDS, values, [lhs, rhs, out])


def _emit_batched(s, k, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """A batch of small GEMMs on oxla's microkernel: one call of the runtime's
    ``oxla_bgemm_f32`` with a constant descriptor (:mod:`oxla_backend_cpu.batched_gemm`)."""
    from oxla_backend_cpu.batched_gemm import (
        BATCHED_FLOPS_PER_THREAD,
        DESC_FIELDS,
        DRIVER,
        DRIVER_TYPE,
    )

    flops = 2.0 * k.m * k.n * k.k * k.batch
    sa_m, sa_k = (1, k.m) if k.trans_lhs else (k.k, 1)
    sb_k, sb_n = (1, k.k) if k.trans_rhs else (k.n, 1)
    values = dict(batch=k.batch, m=k.m, n=k.n, k=k.k, sa_m=sa_m, sa_k=sa_k, sb_k=sb_k,
                  sb_n=sb_n, parallel=int(flops >= BATCHED_FLOPS_PER_THREAD))
    _call_driver(s, k, DRIVER, DRIVER_TYPE, DESC_FIELDS, values, [lhs, rhs, out])


def _set_one_thread(b: ir.IRBuilder, module: ir.Module) -> None:
    """One BLAS thread for calls from this thread (a worker's setting dies with it; the
    caller's is restored by :func:`emit_gemm` after the join)."""
    if THREADS_SYMBOL in blas_symbols():
        fn = module.globals.get(THREADS_SYMBOL) or ir.Function(
            module, ir.FunctionType(I32, [I32]), THREADS_SYMBOL)
        b.call(fn, [ir.Constant(I32, 1)])


def _define_gemm_runtime(module: ir.Module) -> None:
    """The runtime extension: the GEMM driver, with the BLAS addresses it calls
    registered for the JIT linker first."""
    import llvmlite.binding as llvm

    from oxla_backend_cpu.gemm_runtime import define_gemm_runtime

    for name, address in blas_symbols().items():
        llvm.add_symbol(name, address)
    define_gemm_runtime(module)


def _register_runtime() -> None:
    from oxla_codegen_llvm.parallel import register_runtime_extension

    from oxla_backend_cpu.batched_gemm import DRIVER as BATCHED_DRIVER
    from oxla_backend_cpu.gemm_runtime import driver_name
    from oxla_backend_cpu.packed_gemm import DRIVER as PACKED_DRIVER
    from oxla_backend_cpu.packed_gemm import define_packed_gemm_runtime

    register_runtime_extension("cpu-gemm", _define_gemm_runtime,
                               [driver_name("f32"), driver_name("f64")])
    register_runtime_extension("cpu-packed-gemm", define_packed_gemm_runtime,
                               [PACKED_DRIVER, BATCHED_DRIVER])


_register_runtime()
