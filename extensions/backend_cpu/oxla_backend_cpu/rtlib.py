"""The installed runtime library: the cpu backend's program-independent object code,
built once per installation instead of once per process.

Every program is loaded with objects that do not depend on it: the parallel runtime
with its registered extensions (:class:`oxla_backend_cpu.parallel.HostRuntime`: the
parallel-for and pool, the GEMM, row and convolution drivers, any later extension) and
the FFT radix passes it calls (:mod:`oxla_backend_cpu.fft_lib`). Building them costs
LLVM -O3 time (about 1 s of CPU for the whole runtime, 30-100 ms per FFT program) that
the first compile of every fresh process paid when the compile cache was off or cold.

``python -m oxla_backend_cpu.prebuild`` (run by ``scripts/_venv.sh`` after the install)
builds them for the host into :func:`library_dir`: ``$OXLA_RUNTIME_DIR`` when set (the
value ``off`` turns the library off), else ``_runtime/`` inside this package. A compile
reads them from there **whether or not the compile cache is on** (the cache setting is
about programs); what is not there is built in memory as before (and kept in the
compile cache's runtime store when the cache is on).

A file ``<key>.o`` holds :data:`MAGIC`, the hex SHA-256 of the rest, the length of a
JSON header, the header (the full key material, :func:`key_material`) and the object
code. The key covers everything the code depends on: the source stamp of
the code that generates it (:func:`_stamp`, plus that of any other package defining a
runtime extension), the llvmlite/LLVM version,
the target triple, CPU name and CPU features, and what the object holds (the runtime's
extension names, or the FFT pass's symbol). A file whose checksum fails, whose header
is not this key (a foreign or stale file) or that cannot be read is not used: the
object is built as if it were absent, never a wrong one. So the runtime's generating
code must depend on nothing but its source and the target (a test that patches it turns
the library off).

A program that needs part of the runtime (``HostRuntime.subset``) is loaded with the
library's object of exactly that part when there is one, else with the library's whole
runtime (a superset: the same code for the same symbols; loading it costs about the
same, ~3 ms), so the prebuild needs the whole runtime, not every subset.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
from functools import cache
from typing import Any

from oxla_backend_cpu.cache import source_stamp, write_atomically
from oxla_backend_cpu.parallel import runtime_extension_module, runtime_extensions

ENV = "OXLA_RUNTIME_DIR"
MAGIC = b"OXRTLIB1"
STATS = {"runtime_hits": 0, "runtime_misses": 0, "fft_hits": 0, "fft_misses": 0}
"""This process's library look-ups: a hit read the object from the library; a miss
found none usable (it was then built, or read from the compile cache)."""


def library_dir() -> str | None:
    """The library's directory (``$OXLA_RUNTIME_DIR``, else ``_runtime`` in this
    package; not created here), or None when ``$OXLA_RUNTIME_DIR`` is ``off``."""
    d = os.environ.get(ENV, "")
    if d.strip().lower() == "off":
        return None
    return d or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_runtime")


@cache
def _stamp() -> str:
    """The source stamp of the code that generates the objects (this backend, the
    emitters, passes and lowering: :func:`oxla_backend_cpu.cache.source_stamp`), once
    per process (the code loaded in it does not change). Unlike the compile cache's
    :func:`~oxla_backend_cpu.cache.code_stamp` it leaves out the distributions'
    versions: reading them through ``importlib.metadata`` cost ~25 ms of every fresh
    process's first compile, and the generated code depends on the sources (covered
    here, file by file) and on llvmlite/LLVM (the ``llvm`` field), not on a version
    string."""
    return source_stamp()


@cache
def _package_stamp(top: str) -> str:
    from oxla_codegen_llvm import cache_keys

    return cache_keys.source_stamp((sys.modules[top],))


def _extension_stamps(names: tuple[str, ...]) -> dict[str, str]:
    """Source stamps of the packages other than this backend that define the runtime
    extensions ``names`` (this backend's own source is in :func:`_stamp`)."""
    out = {}
    for name in names:
        mod = runtime_extension_module(name)
        top = mod.split(".")[0]
        if top and top != "oxla_backend_cpu" and top in sys.modules:
            out[top] = _package_stamp(top)
    return out


def key_material(target: Any, what: dict[str, Any]) -> dict[str, Any]:
    """The header of the library file holding ``what`` (``{"runtime": [names]}`` or
    ``{"fft": symbol}``) for ``target``: see the module doc.

    Raises:
        KeyError: a runtime extension name is not registered.
    """
    from oxla_codegen_llvm.jit import llvm_version

    meta = {"what": what, "code": _stamp(), "llvm": llvm_version(), "triple": target.triple,
            "cpu": target.cpu, "features": target.features}
    if "runtime" in what:
        meta["extensions"] = _extension_stamps(tuple(what["runtime"]))
    return meta


def _canon(meta: dict[str, Any]) -> bytes:
    return json.dumps(meta, sort_keys=True).encode()


def file_key(meta: dict[str, Any]) -> str:
    """The file name stem (hex SHA-256) of the object with header ``meta``."""
    return hashlib.sha256(_canon(meta)).hexdigest()


def encode(meta: dict[str, Any], obj: bytes) -> bytes:
    """The bytes of a library file (see the module doc)."""
    head = _canon(meta)
    body = struct.pack("<Q", len(head)) + head + obj
    return MAGIC + hashlib.sha256(body).hexdigest().encode() + body


def decode(blob: bytes, meta: dict[str, Any]) -> bytes | None:
    """The object code in ``blob`` when it is an intact library file whose header is
    ``meta``, else None."""
    n = len(MAGIC)
    if len(blob) < n + 72 or blob[:n] != MAGIC:
        return None
    digest, body = blob[n:n + 64], blob[n + 64:]
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    (size,) = struct.unpack("<Q", body[:8])
    if body[8:8 + size] != _canon(meta):
        return None
    return body[8 + size:] or None


def load(meta: dict[str, Any]) -> bytes | None:
    """The object with header ``meta`` from the library, or None (library off, file
    absent, unreadable, corrupt or foreign; such a file is left in place: the library
    belongs to the installation, the prebuild replaces it)."""
    d = library_dir()
    if d is None:
        return None
    try:
        with open(os.path.join(d, file_key(meta) + ".o"), "rb") as f:
            blob = f.read()
    except OSError:
        return None
    return decode(blob, meta)


def save(meta: dict[str, Any], obj: bytes, directory: str) -> str:
    """Writes the object with header ``meta`` into ``directory`` (created) atomically;
    returns its path.

    Raises:
        OSError: the directory cannot be written.
    """
    path = os.path.join(directory, file_key(meta) + ".o")
    write_atomically(path, encode(meta, obj))
    return path


class RuntimeLibrary:
    """The library as :func:`oxla_codegen_llvm.jit.runtime_object` (``runtime``) and
    :func:`oxla_backend_cpu.fft_lib.library_objects` (``fft``) take it."""

    def runtime(self, target: Any, runtime: Any) -> bytes | None:
        """The object of ``runtime`` (a :class:`~oxla_backend_cpu.parallel.HostRuntime`)
        for ``target``: the library's object of exactly its extensions, else that of all
        registered extensions (which contains them); None when neither is there."""
        names = tuple(runtime.key())
        for cand in dict.fromkeys((names, runtime_extensions())):
            if set(names) <= set(cand):
                obj = load(key_material(target, {"runtime": list(cand)}))
                if obj is not None:
                    STATS["runtime_hits"] += 1
                    return obj
        STATS["runtime_misses"] += 1
        return None

    def fft(self, target: Any, name: str) -> bytes | None:
        """The object of FFT pass ``name`` (:func:`oxla_backend_cpu.fft_lib.pass_symbol`)
        for ``target``, or None."""
        obj = load(key_material(target, {"fft": name}))
        STATS["fft_hits" if obj is not None else "fft_misses"] += 1
        return obj


LIBRARY = RuntimeLibrary()
"""The one instance the backend's compile stage passes on."""
