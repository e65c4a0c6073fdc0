"""Compiled LAPACK kernels for the cpu backend: XLA FFI handlers in ``native.c`` that
call scipy's LAPACK from native code, the batch loop included, for the targets on the
hot paths (:data:`NATIVE_KINDS`: getrf, trsm, potrf, geqrf, orgqr/ungqr, syevd/heevd,
gesdd in s/d/c/z, 28 targets). The others, and the interpreter, keep the Python kernels
of :mod:`oxla_lapack.kernels`.

Binding: the routines are ``scipy.linalg.cython_lapack``/``cython_blas``'s function
pointers (``__pyx_capi__`` capsules), looked up **by name** when the library is loaded
in a process (:func:`library`), so compiled programs hold no addresses and an ``.oxla``
artifact using these targets loads in a fresh process: the cpu backend binds its sites
through the ``oxla_custom_calls`` hook again, which resolves the handler here.

Buffers: the handlers take oxla's row-major logical values and ignore the sites'
column-major ``operand_layouts`` (the handler objects say so with
``oxla_row_major = True``, which the cpu backend reads; jaxlib's own handlers could not
run on them). Threads: one OpenBLAS thread for a matrix below
:data:`oxla_lapack.threads.FLOPS_PER_THREAD` operations, as for the Python kernels.

Built on first use with the system C compiler against XLA's ``c_api.h`` (jaxlib's copy)
through the custom-call SDK's cache (:func:`oxla_kernels.native.compile_shared`).
:func:`available` says whether that can work here; without it (or with
``OXLA_LAPACK_NATIVE=0``) every target stays a Python kernel.
"""

from __future__ import annotations

import ctypes
import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from oxla.errors import LoweringError
from oxla_lapack.targets import TARGETS
from oxla_lapack.threads import FLOPS_PER_THREAD, openblas_threads_address

SOURCE = Path(__file__).with_name("native.c")
NATIVE_KINDS = ("getrf", "trsm", "potrf", "geqrf", "orgqr", "syevd", "gesdd")
"""Kinds with a compiled handler, in ``native.c``'s enum order."""
_ROUTINES = {"orgqr": ("orgqr", "ungqr"), "syevd": ("syevd", "heevd")}
PREFIXES = "sdcz"


@cache
def available() -> bool:
    """True when the compiled handlers can be built here: a C compiler, XLA's FFI header
    and scipy's ``cython_lapack``, and ``$OXLA_LAPACK_NATIVE`` is not ``0``."""
    if os.environ.get("OXLA_LAPACK_NATIVE", "1") == "0":
        return False
    if shutil.which(os.environ.get("CC") or "cc") is None:
        return False
    try:
        import scipy.linalg.cython_lapack  # noqa: F401
        from oxla_backend_cpu.xla_ffi import include_dir

        include_dir()
    except Exception:  # noqa: BLE001 - any failure means "use the Python kernels"
        return False
    return True


def capsule_address(module: Any, name: str) -> int:
    """The function pointer of ``module.__pyx_capi__[name]`` (a scipy Cython module).

    Raises:
        KeyError: ``module`` exports no ``name``.
    """
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
    get_ptr.restype, get_ptr.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    cap = module.__pyx_capi__[name]
    return int(get_ptr(cap, get_name(cap)))


@cache
def library() -> ctypes.CDLL:
    """``native.c`` compiled (or found in the cache), loaded, its routines bound by name.

    Raises:
        LoweringError: no compiler, no FFI header, or the build failed.
    """
    from oxla_backend_cpu.xla_ffi import include_dir
    from oxla_kernels.native import compile_shared
    from scipy.linalg import cython_blas, cython_lapack

    path = compile_shared(SOURCE.read_text(), "c", flags=["-std=c11", "-Wall"],
                          include_dirs=[include_dir()])
    lib = ctypes.CDLL(str(path))
    if lib.oxla_lapack_nkinds() != len(NATIVE_KINDS):
        raise LoweringError(f"{path} is not this oxla-lapack's native.c")
    lib.oxla_lapack_bind.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    for p, prefix in enumerate(PREFIXES):
        for k, kind in enumerate(NATIVE_KINDS):
            real, cplx = _ROUTINES.get(kind, (kind, kind))
            name = prefix + (real if prefix in "sd" else cplx)
            module = cython_blas if kind == "trsm" else cython_lapack
            lib.oxla_lapack_bind(p, k, capsule_address(module, name))
    lib.oxla_lapack_bind_threads.argtypes = [ctypes.c_void_p, ctypes.c_double]
    lib.oxla_lapack_bind_threads(openblas_threads_address() or None,
                                 float(FLOPS_PER_THREAD))
    return lib


class Handler(ctypes.c_void_p):
    """The address of one compiled handler, resolved (built, bound) on first use by the
    cpu backend, which reads ``.value``; ``oxla_row_major`` tells it the handler takes
    row-major buffers whatever the site's layouts say."""

    oxla_row_major = True

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self._addr: int | None = None

    @property
    def value(self) -> int:  # type: ignore[override]
        if self._addr is None:
            fn = getattr(library(), f"oxla_lapack_{self.kind}")
            self._addr = ctypes.cast(fn, ctypes.c_void_p).value or 0
        return self._addr


def handler(target: str) -> Handler | None:
    """The compiled handler for ``target``, or None when it has none (or
    :func:`available` is False)."""
    kind = TARGETS[target][0]
    if kind not in NATIVE_KINDS or not available():
        return None
    return Handler(kind)
