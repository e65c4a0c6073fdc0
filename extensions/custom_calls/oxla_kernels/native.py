"""Host implementations: C/C++ compiled on first use (:class:`CImpl`), a prebuilt shared
library (:class:`SharedLibImpl`) and numpy for the interpreter (:class:`NumpyImpl`).

C kernels use XLA's cpu calling convention (``oxla_backend_cpu.custom_call``)::

    void fn(void** outputs, const void** inputs, const char* cfg, size_t cfg_len);

with shapes and attributes in ``cfg`` (read with ``oxla_kernel.h``, on the include
path). Sources are compiled with ``$CC`` (``cc``) or ``$CXX`` (``c++``), ``-O2 -shared
-fPIC``, into ``$OXLA_KERNEL_CACHE`` (default ``~/.cache/oxla/kernels``), named by the
SHA-256 of the source, language, flags and the compiler's version line: a second
process (or an edited source) finds or rebuilds its own library.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oxla.errors import LoweringError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla_kernels.kernel import decode_config, encode_config

INCLUDE_DIR = Path(__file__).parent / "include"
"""Holds ``oxla_kernel.h``."""
_CALL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                         ctypes.c_size_t)
_LIBS: dict[str, ctypes.CDLL] = {}


def cache_dir() -> Path:
    """Where compiled kernels are kept (``$OXLA_KERNEL_CACHE`` or
    ``~/.cache/oxla/kernels``)."""
    env = os.environ.get("OXLA_KERNEL_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME",
                                                     Path.home() / ".cache")) / "oxla"
    return base if env else base / "kernels"


def _compiler(language: str) -> str:
    name = os.environ.get("CXX" if language == "c++" else "CC") or (
        "c++" if language == "c++" else "cc")
    path = shutil.which(name)
    if path is None:
        raise LoweringError(f"no {language} compiler: '{name}' is not on PATH",
                            notes=["install one (apt-get install gcc g++) or set "
                                   f"${'CXX' if language == 'c++' else 'CC'}"])
    return path


def _version(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout.splitlines() or [""])[0]


def compile_shared(source: str, language: str = "c", flags: Sequence[str] = (),
                   include_dirs: Sequence[str | Path] = ()) -> Path:
    """Compiles ``source`` into a shared library, or finds it in the cache.

    Returns:
        The library's path (``<cache>/<sha256>.so``).

    Raises:
        LoweringError: no compiler, or the compiler failed (its output in the notes).
    """
    cc = _compiler(language)
    args = ["-O2", "-shared", "-fPIC", *flags, f"-I{INCLUDE_DIR}",
            *(f"-I{d}" for d in include_dirs)]
    key = hashlib.sha256("\0".join([source, language, *args, _version(cc)])
                         .encode()).hexdigest()
    out = cache_dir() / f"{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    ext = ".cc" if language == "c++" else ".c"
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        src = Path(tmp) / f"kernel{ext}"
        src.write_text(source)
        lib = Path(tmp) / "kernel.so"
        std = ["-std=c++17"] if language == "c++" else []
        res = subprocess.run([cc, *std, *args, str(src), "-o", str(lib)],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise LoweringError(f"compiling a {language} kernel failed ({cc}, exit "
                                f"{res.returncode})", notes=[res.stderr.strip()[-2000:]])
        os.replace(lib, out)  # atomic: a concurrent build of the same key is harmless
    return out


def load_symbol(path: str | Path, symbol: str) -> Any:
    """The ctypes function ``symbol`` of the shared library at ``path``.

    Raises:
        LoweringError: the library cannot be loaded or lacks the symbol.
    """
    key = str(path)
    try:
        lib = _LIBS.get(key) or ctypes.CDLL(key)
    except OSError as exc:
        raise LoweringError(f"cannot load kernel library '{path}': {exc}") from None
    _LIBS[key] = lib
    try:
        return getattr(lib, symbol)
    except AttributeError:
        raise LoweringError(f"kernel library '{path}' has no symbol '{symbol}' (for C++, "
                            "declare it extern \"C\")") from None


class LazyAddress(ctypes.c_void_p):
    """A native function address resolved on first use (the cpu backend reads
    ``.value`` when it binds a program's custom calls): compiling a package's kernels
    is left until a program calls one."""

    def __init__(self, resolve: Callable[[], Any]):
        super().__init__()
        self._resolve = resolve
        self._addr: int | None = None

    @property
    def value(self) -> int:  # type: ignore[override]
        if self._addr is None:
            self._addr = ctypes.cast(self._resolve(), ctypes.c_void_p).value or 0
        return self._addr


def call_native(fn: Any, arrays: Sequence[np.ndarray], outs: Sequence[T.TensorType],
                config: str) -> list[np.ndarray]:
    """Calls a cpu-convention function on numpy arrays; returns fresh result arrays."""
    results = [np.empty(t.shape, np.dtype(t.element_type.dtype)) for t in outs]
    ins = (ctypes.c_void_p * max(len(arrays), 1))(*[a.ctypes.data for a in arrays])
    res = (ctypes.c_void_p * max(len(results), 1))(*[r.ctypes.data for r in results])
    cfg = config.encode()
    f = ctypes.cast(fn if not isinstance(fn, int) else ctypes.c_void_p(fn), _CALL)
    f(ctypes.addressof(res), ctypes.addressof(ins), cfg, len(cfg))
    return results


class _HostImpl:
    backend = "cpu"
    language = "c"

    def bind(self, kernel: Any) -> None:
        self.kernel = kernel

    def function(self) -> Any:  # pragma: no cover - each subclass has one
        raise NotImplementedError

    def custom_call_fn(self) -> Any:
        return LazyAddress(self.function)

    def run(self, arrays: Sequence[np.ndarray], ins: Sequence[T.TensorType],
            outs: Sequence[T.TensorType], attrs: dict) -> list[np.ndarray]:
        return call_native(self.function(), arrays, outs, encode_config(attrs, ins, outs))


class CImpl(_HostImpl):
    """C or C++ source for the cpu backend, compiled on first use and cached by content
    hash (see the module doc).

    Args:
        source: the translation unit (it may ``#include "oxla_kernel.h"``).
        symbol: the exported function (``extern "C"`` in C++).
        language: ``"c"`` or ``"c++"``.
        flags: extra compiler flags (``-O3``, ``-march=native``...).
    """

    def __init__(self, source: str, symbol: str, language: str = "c",
                 flags: Sequence[str] = ()):
        if language not in ("c", "c++"):
            raise ValueError(f"CImpl language {language!r}: 'c' or 'c++'")
        self.source, self.symbol, self.language, self.flags = source, symbol, language, flags
        self._fn: Any = None

    def library(self) -> Path:
        """Compiles (or finds) the shared library."""
        return compile_shared(self.source, self.language, self.flags)

    def function(self) -> Any:
        if self._fn is None:
            self._fn = load_symbol(self.library(), self.symbol)
        return self._fn


class SharedLibImpl(_HostImpl):
    """A prebuilt shared library shipped in the package (``path`` absolute, or relative
    to the kernel package's directory given as ``package_dir``)."""

    language = "so"

    def __init__(self, path: str | Path, symbol: str, package_dir: str | Path | None = None):
        self.path = Path(package_dir or ".") / path
        self.symbol = symbol

    def function(self) -> Any:
        return load_symbol(self.path, self.symbol)


class NumpyImpl:
    """The reference implementation, for the interpreter: ``fn(*arrays, **attrs)``
    returning one array or a tuple, one per result."""

    backend = "interpreter"
    language = "numpy"

    def __init__(self, fn: Callable[..., Any]):
        self.fn = fn

    def bind(self, kernel: Any) -> None:
        self.kernel = kernel

    def custom_call_fn(self) -> Callable[..., list]:
        def run(ctx: Any, op: Any, args: list) -> list:
            cfg = op.attributes.get("backend_config")
            attrs = decode_config(str(A.to_python(cfg)) if cfg is not None else "",
                                  self.kernel.attributes)
            got = self.fn(*args, **attrs)
            got = list(got) if isinstance(got, tuple | list) else [got]
            return [np.asarray(g, np.dtype(r.type.element_type.dtype))
                    for g, r in zip(got, op.results)]

        return run

    def run(self, arrays: Sequence[np.ndarray], ins: Sequence[T.TensorType],
            outs: Sequence[T.TensorType], attrs: dict) -> list[np.ndarray]:
        got = self.fn(*arrays, **attrs)
        got = list(got) if isinstance(got, tuple | list) else [got]
        return [np.asarray(g, np.dtype(t.element_type.dtype)) for g, t in zip(got, outs)]
