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
import importlib.util
import os
from collections.abc import Iterator, Mapping
from functools import cache

import llvmlite.ir as ir

from oxla_backend_cpu.parallel import runtime

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


class _LazyBlasSymbols(Mapping):
    """:func:`blas_symbols` as a mapping whose names are known up front and whose
    addresses are found at the first lookup: what the JIT is given
    (:func:`oxla_codegen_llvm.jit.load_object` asks only for the names an object
    calls), so a program without a GEMM never loads the BLAS library (~20 ms of a first
    compile: the wheel's import and ``dlopen``)."""

    def __getitem__(self, name: str) -> int:
        return blas_symbols()[name]

    def __iter__(self) -> Iterator[str]:
        return iter((*SYMBOLS, THREADS_SYMBOL))

    def __len__(self) -> int:
        return len(SYMBOLS) + 1


BLAS_SYMBOLS: Mapping[str, int] = _LazyBlasSymbols()
"""The BLAS routines' addresses for the JIT, loaded when first asked for."""


def _wheel_library() -> str:
    """The path of the ``scipy-openblas32`` wheel's library, found without importing the
    wheel's package (its ``__init__`` reads its version with ``importlib.metadata``,
    ~10 ms per process), or ``""`` when the wheel is absent. The layout is the one its
    ``get_lib_dir``/``get_library`` read: ``lib/libscipy_openblas*`` in the package."""
    spec = importlib.util.find_spec("scipy_openblas32")
    if spec is None or not spec.submodule_search_locations:
        return ""
    lib_dir = os.path.join(os.path.realpath(list(spec.submodule_search_locations)[0]), "lib")
    try:
        names = sorted(n for n in os.listdir(lib_dir) if n.startswith("libscipy_openblas"))
    except OSError:
        return ""
    return os.path.join(lib_dir, names[0]) if names else ""


def _openblas_wheel() -> dict[str, int]:
    """The routines of the ``scipy-openblas32`` wheel (the OpenBLAS build that numpy and
    scipy release from, LP64, newer than the copy inside scipy's own wheel), or {} when
    it is not installed or does not load.

    Measured on a 2-core AVX-512 machine (Zen 4), one thread: OpenBLAS 0.3.33 and 0.3.34
    ran the thin GEMMs of GPT-2 and BERT at sequence 128 (128x768x2304, 64x768x2304)
    10-12% faster than scipy 1.17's bundled 0.3.30, and 1024^3 at the same speed.
    """
    try:
        path = _wheel_library()
        if not path:
            return {}
        lib = _load_one_threaded(path)
        out = {sym: ctypes.cast(getattr(lib, "scipy_" + routine + "_"), ctypes.c_void_p).value
               for sym, routine in SYMBOLS.items()}
        out[THREADS_SYMBOL] = ctypes.cast(lib.openblas_set_num_threads_local,
                                          ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return {}
    return out if all(out.values()) else {}


def _load_one_threaded(path: str) -> ctypes.CDLL:
    """``dlopen`` of an OpenBLAS with ``OPENBLAS_NUM_THREADS=1`` while its constructor
    runs (unless the user set it): OpenBLAS starts its worker pool at load, and idle
    workers spin for ~2^28 cycles before they sleep, so loading it in the middle of a
    first compile made that compile burn a second core (a small transposed
    convolution: 0.13 s of CPU for 0.07 s of work). oxla asks for threads per call
    (:func:`set_gemm_threads`, ``openblas_set_num_threads_local``), which starts the
    workers the first time a GEMM wants more than one."""
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return ctypes.CDLL(path)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        return ctypes.CDLL(path)
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


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


def set_one_thread(b: ir.IRBuilder, module: ir.Module) -> None:
    """One BLAS thread for calls from this thread (a worker's setting dies with it; the
    caller's is restored by :func:`emit_gemm` after the join)."""
    if THREADS_SYMBOL in blas_symbols():
        fn = module.globals.get(THREADS_SYMBOL) or ir.Function(
            module, ir.FunctionType(I32, [I32]), THREADS_SYMBOL)
        b.call(fn, [ir.Constant(I32, 1)])
