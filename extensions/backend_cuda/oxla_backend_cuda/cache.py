"""The persistent compile cache of the cuda backend, as the cpu backend's
(:mod:`oxla_backend_cpu.cache`) works.

An entry is the executable's ``.oxla`` artifact (:meth:`CUDAExecutable.save`: StableHLO,
launch program, PTX and a cubin per arch, constants), named ``cuda-<key>.oxla`` by a key
that hashes everything the code depends on:

* the module as given to ``compile``: its text printed by ``oxla.ir`` with constants
  over :data:`ELIDE_BYTES` elided, and the SHA-256 of each elided constant's bytes;
* the options that change code (``pipeline``, ``fast_math``, ``extra``) and the archs
  compiled for (``--cuda-arch``, else the current device's);
* the versions of oxla, oxla-backend-cuda, oxla-codegen-llvm and llvmlite, and a stamp
  of the source files (names, sizes, mtimes) of this backend, the LLVM emitters, the
  passes and the lowering, so an edited editable install never hits stale entries;
* the plugin rewrite patterns for cuda (names and their packages' source stamps).

A hit loads the artifact (no pipeline, no LLVM, no nvJitLink). Entries live in
``$OXLA_CACHE_DIR`` when set (next to the cpu backend's, which counts them in its size
limit), else ``$XDG_CACHE_HOME/oxla/cuda``. ``CompileOptions(cache=False)`` or a
``dump_dir`` neither reads nor writes it (``stats["cache"] == "off"``). A program that
cannot be saved as an artifact (custom-call kernels, host-staged ops) is compiled and
not stored: ``stats["cache"] == "miss"`` and ``stats["cache_note"]`` says why. An entry
that cannot be read is a miss, deleted and rewritten; writes go to a temporary file
renamed into place.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from typing import Any

import numpy as np
import oxla_codegen_llvm
from oxla_codegen_llvm import cache_keys, gpu

import oxla.lowering
import oxla.passes
import oxla_backend_cuda
from oxla.errors import NotSupportedError, OxlaError
from oxla.ir.printer import print_module_elided
from oxla_backend_cuda.artifact import load_artifact

ENV = cache_keys.ENV
DISTS = ("oxla", "oxla-backend-cuda", "oxla-codegen-llvm", "llvmlite")
PREFIX, SUFFIX = "cuda-", ".oxla"
ELIDE_BYTES = 256
"""Constants larger than this are hashed from their bytes, not printed into the key."""


def cache_dir() -> str:
    """The directory holding cache entries (not created here)."""
    return cache_keys.cache_dir("cuda")


def source_stamp() -> str:
    """A hash of the source files' names, sizes and mtimes (module doc)."""
    return cache_keys.source_stamp(
        (oxla_backend_cuda, oxla_codegen_llvm, gpu, oxla.passes, oxla.lowering))


def cache_key(module: Any, options: Any, archs: tuple[str, ...]) -> str:
    """The hex SHA-256 naming the entry of ``module`` compiled with ``options`` for
    ``archs`` (module doc). Cost: printing the module without its large constants and
    hashing their bytes."""
    text, arrays = print_module_elided(module, ELIDE_BYTES)
    meta = {"pipeline": options.pipeline, "fast_math": options.fast_math,
            "extra": repr(sorted(options.extra.items())), "archs": list(archs),
            "versions": cache_keys.dist_versions(DISTS), "source": source_stamp(),
            "patterns": cache_keys.patterns_stamp("cuda")}
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    h.update(b"\0" + text.encode())
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"\0{a.dtype.str}{a.shape}".encode())
        h.update(a.reshape(-1).view(np.uint8).data)
    return h.hexdigest()


def entry_path(key: str) -> str:
    return os.path.join(cache_dir(), PREFIX + key + SUFFIX)


def lookup(key: str) -> Any | None:
    """The executable stored under ``key``, or None (absent, or unreadable: deleted)."""
    path = entry_path(key)
    if not os.path.exists(path):
        return None
    try:
        exe = load_artifact(path)
    except OxlaError:
        with contextlib.suppress(OSError):
            os.remove(path)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used (the cpu cache's trim deletes oldest first)
    return exe


def store(key: str, exe: Any) -> str | None:
    """Writes ``exe`` under ``key`` (best effort: an unwritable directory is skipped).

    Returns:
        None when stored (or the directory is unwritable), else why ``exe`` cannot be
        stored (the artifact writer's ``NotSupportedError`` message).
    """
    d = cache_dir()
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        os.close(fd)
        try:
            exe.save(tmp)
            os.replace(tmp, entry_path(key))
        finally:
            with contextlib.suppress(OSError):
                os.remove(tmp)
    except NotSupportedError as e:
        return str(e)
    except OSError:
        return None
    return None
