"""The ``cuda`` backend: StableHLO to GPU kernels and cuBLAS calls through
:mod:`oxla.lowering`'s pipeline.

``compile`` is ``pipeline.run(module, CUDAPolicy(), CUDATarget.for_options(options),
options)``: the target-free stages asking :class:`~oxla_backend_cuda.policy.CUDAPolicy`,
then this backend's own (:mod:`oxla_backend_cuda.stages`). Compiling needs no GPU and no
driver; running needs one, or the simulated device (``OXLA_CUDA_DEVICE=sim``).

``available()`` is true only where programs can run (a driver, or the simulated device
asked for), so the default-backend choice (:data:`oxla.plugins.BACKEND_PREFERENCE`)
never picks cuda on a machine without a GPU; ``compile_only()`` lets an explicit
``--backend cuda`` compile there. A persistent compile cache
(:mod:`oxla_backend_cuda.cache`) sits in front of the pipeline unless
``CompileOptions(cache=False)`` or a ``dump_dir`` is given.
"""

from __future__ import annotations

import os
import time

from oxla_codegen_llvm.gpu.hostops import run_parallel

from oxla.ir import Module
from oxla.lowering import pipeline
from oxla.protocols import CompileOptions
from oxla_backend_cuda import cache
from oxla_backend_cuda import device as devices
from oxla_backend_cuda.artifact import load_artifact
from oxla_backend_cuda.executable import BACKEND, CUDAExecutable
from oxla_backend_cuda.policy import CUDAPolicy, CUDATarget


class CUDABackend:
    """Compiles StableHLO for NVIDIA GPUs; runs on a GPU or the simulated device."""

    name = BACKEND

    def available(self) -> tuple[bool, str]:
        ok, why = devices.status()
        return (True, "") if ok else (False, f"{why}; compile-only")

    def compile_only(self) -> bool:
        """True: compiling needs neither a GPU nor a driver."""
        return True

    def compile(self, module: Module, options: CompileOptions | None = None) -> CUDAExecutable:
        """Compiles ``module``'s ``main``.

        Raises:
            NotSupportedError: an op, type or form this backend cannot compile yet (the
                message names the op and its location, or the kernel kind).
            VerifyError: the module is invalid.
        """
        options = options or CompileOptions()
        t0 = time.perf_counter()
        target = CUDATarget.for_options(options)
        if not options.cache or options.dump_dir:
            exe = pipeline.run(module, CUDAPolicy(), target, options, started=t0)
            exe.stats["cache"] = "off"
            return exe
        key = cache.cache_key(module, options, target.archs)
        hit = cache.lookup(key)
        if hit is not None:
            hit.stats.update(cache="hit", compile_seconds=time.perf_counter() - t0)
            return hit
        exe = pipeline.run(module, CUDAPolicy(), target, options, started=t0)
        exe.stats["cache"] = "miss"
        why = cache.store(key, exe)
        if why is not None:
            exe.stats["cache_note"] = f"not cached: {why}"
        return exe

    def load(self, path: str | os.PathLike[str]) -> CUDAExecutable:
        """Loads an artifact written by :meth:`CUDAExecutable.save`."""
        return load_artifact(path)

    def run_parallel(self, programs, args, infeed=None) -> tuple[list, list]:
        """Runs a replica x partition grid of executables of this backend on one device,
        one thread per process, collectives staged through the host
        (:func:`oxla_codegen_llvm.gpu.hostops.run_parallel`)."""
        return run_parallel(programs, args, infeed)
