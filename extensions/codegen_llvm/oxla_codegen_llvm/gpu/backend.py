"""What the ``cuda`` and ``hip`` backends share as ``Backend`` objects: compile through
:mod:`oxla.lowering`'s pipeline with the backend's policy and target, an optional
compile cache, artifact loading, and replica x partition grids on one device.

A GPU backend subclass names five things: ``name``, ``policy`` (a
:class:`~oxla_codegen_llvm.gpu.policy.GPUPolicy` class), ``target`` (with
``for_options(options)`` and ``archs``), ``devices`` (a module whose ``status()`` says
whether programs can run here) and ``load_artifact``; ``cache`` (a module with
``cache_key``/``lookup``/``store``) is optional.
"""

from __future__ import annotations

import os
import time
from types import ModuleType
from typing import Any, ClassVar

from oxla.ir import Module
from oxla.lowering import pipeline
from oxla.protocols import CompileOptions
from oxla_codegen_llvm.gpu.hostops import run_parallel


class GPUBackend:
    """Compiles StableHLO for a GPU; runs on the GPU or on the simulated device.

    ``available()`` is true only where programs can run, so the default-backend choice
    never picks a GPU backend on a machine without that GPU; ``compile_only()`` lets an
    explicit ``--backend`` compile there.
    """

    name: ClassVar[str]
    policy: ClassVar[type]
    target: ClassVar[Any]
    devices: ClassVar[ModuleType]
    cache: ClassVar[ModuleType | None] = None

    def available(self) -> tuple[bool, str]:
        ok, why = self.devices.status()
        return (True, "") if ok else (False, f"{why}; compile-only")

    def compile_only(self) -> bool:
        """True: compiling needs neither a GPU nor its driver or runtime."""
        return True

    def compile(self, module: Module, options: CompileOptions | None = None) -> Any:
        """Compiles ``module``'s ``main``; with a ``cache`` module and
        ``options.cache`` (and no ``dump_dir``), a cached artifact is reused and a new
        one stored (``exe.stats["cache"]``: ``hit``/``miss``/``off``).

        Raises:
            NotSupportedError: an op, type or form this backend cannot compile yet (the
                message names the op and its location, or the kernel kind); a missing
                linker.
            VerifyError: the module is invalid.
            OxlaError: an unknown arch option.
        """
        options = options or CompileOptions()
        t0 = time.perf_counter()
        target = self.target.for_options(options)
        if self.cache is None or not options.cache or options.dump_dir:
            exe = pipeline.run(module, self.policy(), target, options, started=t0)
            exe.stats["cache"] = "off"
            return exe
        key = self.cache.cache_key(module, options, target.archs)
        hit = self.cache.lookup(key)
        if hit is not None:
            hit.stats.update(cache="hit", compile_seconds=time.perf_counter() - t0)
            return hit
        exe = pipeline.run(module, self.policy(), target, options, started=t0)
        exe.stats["cache"] = "miss"
        why = self.cache.store(key, exe)
        if why is not None:
            exe.stats["cache_note"] = f"not cached: {why}"
        return exe

    def load(self, path: str | os.PathLike[str]) -> Any:
        """Loads an artifact written by the executable's ``save``."""
        return type(self).load_artifact(path)

    def run_parallel(self, programs, args, infeed=None) -> tuple[list, list]:
        """Runs a replica x partition grid of this backend's executables on one device,
        one thread per process, collectives staged through the host
        (:func:`oxla_codegen_llvm.gpu.hostops.run_parallel`)."""
        return run_parallel(programs, args, infeed)
