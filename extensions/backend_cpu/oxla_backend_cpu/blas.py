"""BLAS routines for generated code: scipy's OpenBLAS through ``cython_blas``.

``scipy.linalg.cython_blas.__pyx_capi__`` holds a PyCapsule per routine whose pointer
is the Fortran-convention function (every argument by pointer, column-major). The
addresses are registered as the symbols ``oxla_sgemm``/``oxla_dgemm`` before JIT, so
the generated IR never contains a process-specific address.
"""

from __future__ import annotations

import ctypes
from functools import cache

SYMBOLS = {"oxla_sgemm": "sgemm", "oxla_dgemm": "dgemm"}


@cache
def blas_symbols() -> dict[str, int]:
    """Symbol name -> address of each BLAS routine the generated code may call."""
    from scipy.linalg import cython_blas

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    out = {}
    for sym, routine in SYMBOLS.items():
        cap = cython_blas.__pyx_capi__[routine]
        out[sym] = int(get_ptr(cap, get_name(cap)))
    return out
