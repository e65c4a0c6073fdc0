"""The ``cpu`` backend: StableHLO to native code through :mod:`oxla.lowering`'s pipeline.

``compile`` is ``pipeline.run(module, CPUPolicy(), CPUTarget.host(), options)``: the
target-free stages (verify, prepare, fusion, scheduling, buffer assignment) asking
:class:`~oxla_backend_cpu.policy.CPUPolicy`, then this backend's own stages (codegen,
JIT, executable: :mod:`oxla_backend_cpu.stages`).

A persistent compile cache (:mod:`oxla_backend_cpu.cache`) sits in front of all of it
unless ``CompileOptions(cache=False)`` or a ``dump_dir`` is given.

With ``CompileOptions.dump_dir`` each stage writes what it produced there.
"""

from __future__ import annotations

import dataclasses
import os
import time

from oxla_codegen_llvm import CPUTarget

from oxla.ir import Module
from oxla.lowering import pipeline
from oxla.protocols import CompileOptions
from oxla_backend_cpu import cache
from oxla_backend_cpu.collectives_runtime import run_parallel
from oxla_backend_cpu.executable import BACKEND, CPUExecutable, load_artifact
from oxla_backend_cpu.policy import CPUPolicy
from oxla_backend_cpu.profile import enabled


class CPUBackend:
    """Compiles StableHLO for the host CPU through LLVM; BLAS for dots."""

    name = BACKEND

    def available(self) -> tuple[bool, str]:
        try:
            import llvmlite.binding  # noqa: F401
            import scipy.linalg.cython_blas  # noqa: F401
        except ImportError as exc:
            return False, f"missing dependency: {exc.name}"
        return True, ""

    def compile(self, module: Module, options: CompileOptions | None = None) -> CPUExecutable:
        """Compiles ``module``'s ``main``.

        Raises:
            NotSupportedError: an op, type or form this backend cannot compile yet (the
                message names the op and its location).
            VerifyError: the module is invalid.
        """
        options = options or CompileOptions()
        if "profile" not in options.extra and enabled(options.extra):  # in the cache key
            options = dataclasses.replace(options, extra={**options.extra, "profile": True})
        t0 = time.perf_counter()
        key, known = None, {}
        if options.cache and not options.dump_dir:
            # An entry's text was verified when it was compiled: a hit skips verify.
            # Weights are hashed from their bytes, never printed (see cache.module_key).
            key, known = cache.module_key(module, options, CPUTarget.host())
            hit = cache.lookup(key, known)
            if hit is not None:
                hit.stats.update(cache="hit", compile_seconds=time.perf_counter() - t0)
                return hit
        exe = pipeline.run(module, CPUPolicy(), CPUTarget.host(), options, started=t0)
        if key:
            cache.store(key, exe, known)
        return exe

    def load(self, path: str | os.PathLike[str]) -> CPUExecutable:
        """Loads an artifact written by :meth:`CPUExecutable.save` (see
        :func:`~oxla_backend_cpu.executable.load_artifact`)."""
        return load_artifact(path)

    def run_parallel(self, programs, args, infeed=None) -> tuple[list, list]:
        """Runs a replica x partition grid of executables of this backend, one thread
        per process, with in-process collectives (see
        :func:`oxla_backend_cpu.collectives_runtime.run_parallel`)."""
        return run_parallel(programs, args, infeed)
