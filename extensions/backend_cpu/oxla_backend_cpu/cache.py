"""The persistent compile cache of the cpu backend.

An entry is a ``.oxla`` artifact (the same zip as ``exe.save``: manifest with SHA-256
of every member, optimized StableHLO, LLVM IR, object code), named by a key that hashes
everything the machine code depends on:

* the module as given to ``compile``: its text printed by ``oxla.ir`` with constants
  over :data:`ELIDE_BYTES` elided, and the SHA-256 of each elided constant's raw bytes
  (hashed from the arrays in memory, on threads: weights are never printed);
* the options that change code (``pipeline``, ``fast_math``, ``extra``);
* the versions of oxla, oxla-backend-cpu, oxla-codegen-llvm, llvmlite and LLVM;
* the plugin rewrite patterns for cpu (``oxla_patterns``): names and their packages'
  source stamps (:func:`oxla_codegen_llvm.cache_keys.patterns_stamp`);
* the host's target triple, CPU name and CPU features;
* the thread count at compile time (:func:`oxla_backend_cpu.parallel.num_threads`):
  convolutions size their im2col chunks for it (:func:`oxla_backend_cpu.conv.chunk_budget`);
* ``$OXLA_CPU_INT8_GEMM``, the integer GEMM's instruction kind where it is forced
  (:data:`oxla_backend_cpu.int8_gemm.ISA_ENV`).

A hit loads the stored object code (no pass pipeline, no LLVM). Run-time constants
(weights) equal to a constant of the module are recorded in the entry by digest only and
taken from the module on a hit (an entry is only looked up with its module at hand), so
weights are neither written nor read back. Entries live in
``$OXLA_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/oxla/cpu`` (``~/.cache/oxla/cpu``).
``CompileOptions(cache=False)`` neither reads nor writes it. The directory is kept under
``$OXLA_CACHE_MAX_BYTES`` (default :data:`DEFAULT_MAX_BYTES`): when a write takes it
over (a process counts its own writes and looks at the directory again only then, see
:func:`_written`), the least recently used entries (a hit refreshes an entry's mtime)
are deleted down to three quarters of the limit. An entry that cannot be
read (corrupt, truncated, foreign) is a miss: it is deleted and rewritten. Writes go to
a temporary file renamed into place, so concurrent compiles never see half an entry.

The directory also keeps the parallel runtime's object code (:data:`RUNTIME_OBJECTS`,
``runtime-<key>.o``), which every process otherwise builds once at its first compile
(0.2-0.4 s), when the installed runtime library (:mod:`oxla_backend_cpu.rtlib`) does not
hold it; a compile with the cache off neither reads nor writes this directory, but it
does read the installed runtime library (program-independent code that belongs to the
installation, not to the cache).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from functools import cache
from typing import Any

from oxla_codegen_llvm import cache_keys

import oxla_backend_cpu
from oxla_backend_cpu.digests import digests
from oxla_backend_cpu.executable import load_artifact
from oxla_backend_cpu.int8_gemm import ISA_ENV as INT8_GEMM_ENV
from oxla_backend_cpu.parallel import num_threads

ENV = cache_keys.ENV
MAX_BYTES_ENV = "OXLA_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 << 30
"""The cache directory's size limit in bytes (2 GiB) unless ``$OXLA_CACHE_MAX_BYTES``
says otherwise."""
SUFFIX = ".oxla"
ELIDE_BYTES = 256
"""Constants larger than this are hashed from their bytes, not printed into the key."""


def cache_dir() -> str:
    """The directory holding cache entries (not created here)."""
    return cache_keys.cache_dir("cpu")


@cache
def _versions() -> dict[str, str]:
    import llvmlite.binding as llvm

    return {"llvm": ".".join(map(str, llvm.llvm_version_info)),
            **cache_keys.dist_versions(("oxla", "oxla-backend-cpu", "oxla-codegen-llvm",
                                        "llvmlite"))}


def source_stamp() -> str:
    """A hash of the backend's, emitters', passes' and lowering's source files (names,
    sizes, mtimes), so that an editable install
    whose code changed without a version bump never hits stale entries."""
    import oxla_codegen_llvm

    import oxla.lowering
    import oxla.passes

    return cache_keys.source_stamp((oxla_backend_cpu, oxla_codegen_llvm, oxla.passes,
                                    oxla.lowering))


def module_key(module: Any, options: Any, target: Any) -> tuple[str, dict[str, Any]]:
    """The key of ``module`` (see :func:`cache_key`) and its elided constants by digest.

    Cost: printing the module without its large constants plus hashing their bytes; the
    module is not changed.
    """
    from oxla.ir.printer import print_module_elided

    text, arrays = print_module_elided(module, ELIDE_BYTES)
    sums = digests(arrays)
    return cache_key(text, options, target, sums), dict(zip(sums, arrays))


def code_stamp() -> str:
    """The versions (oxla's distributions, llvmlite, LLVM) and the source stamp that
    every cache key covers, as one string: what a stored object made by this code
    (the FFT pass library's, :mod:`oxla_backend_cpu.fft_lib`) is keyed by instead of
    its generated IR text."""
    return json.dumps({"versions": _versions(), "source": source_stamp()}, sort_keys=True)


def cache_key(module_text: str, options: Any, target: Any, constants: Any = ()) -> str:
    """The hex SHA-256 naming the entry of ``module_text`` compiled with ``options`` for
    ``target`` (see the module doc for what it covers); ``constants``: the digests of
    the constants elided from ``module_text``, in print order."""
    meta = {
        "pipeline": options.pipeline,
        "fast_math": options.fast_math,
        "extra": repr(sorted(options.extra.items())),
        "versions": _versions(),
        "source": source_stamp(),
        "patterns": cache_keys.patterns_stamp("cpu"),
        "triple": target.triple,
        "cpu": target.cpu,
        "features": target.features,
        "threads": _threads(),
        "int8_gemm": os.environ.get(INT8_GEMM_ENV, ""),
    }
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    h.update(b"\0")
    h.update(module_text.encode())
    for d in constants:
        h.update(b"\0" + d.encode())
    return h.hexdigest()


def _threads() -> int:
    return num_threads()


def entry_path(key: str) -> str:
    return os.path.join(cache_dir(), key + SUFFIX)


def lookup(key: str, constants: dict[str, Any] | None = None) -> Any | None:
    """The executable stored under ``key``, or None (absent or unreadable: deleted).

    ``constants``: arrays by the digest of their bytes (:func:`module_key`); a stored
    run-time constant with one of these digests is taken from here, not read back."""
    from oxla.errors import OxlaError
    path = entry_path(key)
    if not os.path.exists(path):
        return None
    try:
        exe = load_artifact(path, constants)
    except OxlaError:
        with contextlib.suppress(OSError):
            os.remove(path)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: trimmed last
    return exe


def max_bytes() -> int:
    """The size limit of the cache directory in bytes (``$OXLA_CACHE_MAX_BYTES``, else
    :data:`DEFAULT_MAX_BYTES`; a value that is not a non-negative integer is ignored)."""
    raw = os.environ.get(MAX_BYTES_ENV, "")
    return int(raw) if raw.strip().isdigit() else DEFAULT_MAX_BYTES


def trim(limit: int | None = None) -> int:
    """Deletes the least recently used entries (oldest mtime first) when the entries
    hold more than ``limit`` bytes (default :func:`max_bytes`), down to 3/4 of it.

    Returns:
        The number of bytes freed (0 when under the limit or the directory is absent).
    """
    return _trim(max_bytes() if limit is None else limit)[0]


_TOTALS: dict[str, int] = {}
"""Cache directory -> bytes its entries held at this process's last scan, plus what
this process wrote since (see :func:`_written`)."""


def _written(nbytes: int) -> None:
    """Accounts for an entry of ``nbytes`` just written; scans the directory (and trims
    it) only on the process's first write there or when the running total passes the
    limit. A scan costs a ``stat`` per entry (50 ms at 9,000 entries): after every write
    it made a conformance run 2x slower. Other processes' writes are seen at the next
    scan, so the limit may be passed by what they wrote since."""
    d, limit = cache_dir(), max_bytes()
    total = _TOTALS.get(d)
    if total is not None and total + nbytes <= limit:
        _TOTALS[d] = total + nbytes
        return
    _TOTALS[d] = _trim(limit)[1]


def _trim(limit: int) -> tuple[int, int]:
    """:func:`trim`; returns (bytes freed, bytes the entries hold after)."""
    entries = []
    with contextlib.suppress(OSError), os.scandir(cache_dir()) as it:
        for e in it:
            if e.name.endswith(SUFFIX) or e.name.startswith(RuntimeObjects.PREFIX):
                with contextlib.suppress(OSError):
                    st = e.stat()
                    entries.append((st.st_mtime_ns, st.st_size, e.path))
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return 0, total
    freed = 0
    for _, size, path in sorted(entries):
        if total - freed <= limit * 3 // 4:
            break
        with contextlib.suppress(OSError):
            os.remove(path)
            freed += size
    return freed, total - freed


def write_atomically(path: str, data: bytes) -> None:
    """Writes ``data`` to ``path`` through a temporary file in its directory (created)
    renamed into place, so readers never see half a file.

    Raises:
        OSError: the directory cannot be written.
    """
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)


class RuntimeObjects:
    """The runtime object store of :func:`oxla_codegen_llvm.jit.runtime_object`: files
    ``runtime-<key>.o`` in :func:`cache_dir`, each the hex SHA-256 of the object code
    (64 bytes) then the code. A file that fails the check is deleted and counts as
    absent; writes are atomic and best effort, like entries'."""

    PREFIX = "runtime-"

    def path(self, key: str) -> str:
        return os.path.join(cache_dir(), f"{self.PREFIX}{key}.o")

    def load(self, key: str) -> bytes | None:
        """The object stored under ``key``, or None (absent, unreadable or corrupt)."""
        path = self.path(key)
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError:
            return None
        head, obj = blob[:64], blob[64:]
        if hashlib.sha256(obj).hexdigest().encode() != head:
            with contextlib.suppress(OSError):
                os.remove(path)
            return None
        return obj

    def save(self, key: str, obj: bytes) -> None:
        """Writes ``obj`` under ``key`` (an unwritable directory is skipped)."""
        with contextlib.suppress(OSError):
            write_atomically(self.path(key), hashlib.sha256(obj).hexdigest().encode() + obj)


RUNTIME_OBJECTS = RuntimeObjects()


def store(key: str, exe: Any, constants: Any = ()) -> None:
    """Writes ``exe`` under ``key`` (best effort: an unwritable directory is skipped;
    an executable calling Python custom-call kernels is not portable, never stored).

    ``constants``: the module's elided constants by digest (:func:`module_key`); run-time
    constants equal to one of them are recorded by digest only (a hit takes them from the
    module), so weights are neither written nor read back."""
    if not getattr(exe, "portable", True):
        return
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        os.close(fd)
        try:
            exe.save(tmp, omit_constants=dict(constants))
            size = os.path.getsize(tmp)
            os.replace(tmp, entry_path(key))
        finally:
            with contextlib.suppress(OSError):
                os.remove(tmp)
    except OSError:
        return
    _written(size)
