"""The ``hip`` backend: StableHLO to AMDGPU code objects and rocBLAS calls through
:mod:`oxla.lowering`'s pipeline.

``compile`` is ``pipeline.run(module, HIPPolicy(), HIPTarget.for_options(options),
options)``. Compiling needs no GPU and no ROCm (llvmlite and ``ld.lld``); running needs
ROCm's HIP runtime, or the simulated device (``OXLA_HIP_DEVICE=sim``).

``available()`` is true only where programs can run, so the default-backend choice never
picks hip on a machine without an AMD GPU; ``compile_only()`` lets an explicit
``--backend hip`` compile there.
"""

from __future__ import annotations

import os
import time

from oxla.ir import Module
from oxla.lowering import pipeline
from oxla.protocols import CompileOptions
from oxla_backend_hip import device as devices
from oxla_backend_hip.artifact import load_artifact
from oxla_backend_hip.executable import BACKEND, HIPExecutable
from oxla_backend_hip.policy import HIPPolicy, HIPTarget


class HIPBackend:
    """Compiles StableHLO for AMD GPUs; runs on a GPU or the simulated device."""

    name = BACKEND

    def available(self) -> tuple[bool, str]:
        ok, why = devices.status()
        return (True, "") if ok else (False, f"{why}; compile-only")

    def compile_only(self) -> bool:
        """True: compiling needs neither a GPU nor ROCm."""
        return True

    def compile(self, module: Module, options: CompileOptions | None = None) -> HIPExecutable:
        """Compiles ``module``'s ``main``.

        Raises:
            NotSupportedError: an op, type or form this backend cannot compile yet (the
                message names the op and its location, or the kernel kind); ``ld.lld``
                missing.
            VerifyError: the module is invalid.
            OxlaError: an unknown ``--hip-arch``.
        """
        options = options or CompileOptions()
        t0 = time.perf_counter()
        return pipeline.run(module, HIPPolicy(), HIPTarget.for_options(options), options,
                            started=t0)

    def load(self, path: str | os.PathLike[str]) -> HIPExecutable:
        """Loads an artifact written by :meth:`HIPExecutable.save`."""
        return load_artifact(path)
