"""One OpenBLAS thread for small LAPACK calls.

scipy's OpenBLAS runs a routine on every core by default and its workers spin-wait
between calls; on a busy machine that made a batch of 64 32x32 ``strsm`` calls take
185 ms instead of 0.8 ms (measured on the 2-core development machine; the cpu backend's
``blas.py`` saw the same with GEMMs). :func:`threads_for` sets the calling thread's
OpenBLAS thread count (``openblas_set_num_threads_local``, in the library that defines
scipy's LAPACK, found with ``dladdr``) to 1 for matrices below about 0.7 ms of one core,
and leaves it alone otherwise or where the function is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from functools import cache
from typing import Any

FLOPS_PER_THREAD = 1 << 25


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


@cache
def _set_threads_local() -> Any:
    """``int openblas_set_num_threads_local(int)`` of scipy's LAPACK library, or None."""
    try:
        from scipy.linalg import cython_lapack

        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
        get_ptr.restype = ctypes.c_void_p
        get_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]
        cap = cython_lapack.__pyx_capi__["sgetrf"]
        info = _DlInfo()
        libc = ctypes.CDLL(None)
        if not libc.dladdr(ctypes.c_void_p(get_ptr(cap, get_name(cap))), ctypes.byref(info)):
            return None
        lib = ctypes.CDLL(info.dli_fname.decode())
    except (ImportError, OSError, AttributeError, KeyError):
        return None
    for name in ("scipy_openblas_set_num_threads_local", "openblas_set_num_threads_local"):
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
            return fn
    return None


def openblas_threads_address() -> int:
    """The address of scipy's ``openblas_set_num_threads_local``, or 0 (for compiled
    kernels, :mod:`oxla_lapack.native`)."""
    fn = _set_threads_local()
    return (ctypes.cast(fn, ctypes.c_void_p).value or 0) if fn is not None else 0


@contextlib.contextmanager
def threads_for(flops_per_matrix: float) -> Iterator[None]:
    """Runs the block with one OpenBLAS thread when each matrix is small."""
    fn = _set_threads_local() if flops_per_matrix < FLOPS_PER_THREAD else None
    if fn is None:
        yield
        return
    old = fn(1)
    try:
        yield
    finally:
        fn(old)
