"""The hip backend's policy and target: what :mod:`oxla.lowering` asks of this backend.

The policy is the shared GPU policy (:class:`oxla_codegen_llvm.gpu.policy.GPUPolicy`:
types, fusion, f32/f64 dots through rocBLAS, op kernels from simt, ``prepare``) named
``hip``, with its own stages (:mod:`oxla_backend_hip.stages`).

:class:`HIPTarget` is the choice of archs: ``--hip-arch`` (``CompileOptions.extra
["hip_arch"]``: ``gfx90a,gfx942,gfx1100``), else ``$OXLA_HIP_ARCH`` (the same list: how
runs that pass no options, such as ``oxla conformance --backend hip``, choose), else the
current device's, else ``gfx942``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from oxla_codegen_llvm.gpu.policy import GPUPolicy
from oxla_codegen_llvm.simt.amdgpu import ARCHS

from oxla.errors import OxlaError
from oxla.lowering import Stage
from oxla.protocols import CompileOptions
from oxla_backend_hip import device as devices
from oxla_backend_hip.runtime import get_runtime
from oxla_backend_hip.stages import STAGES

BACKEND = "hip"
DEFAULT_ARCH = "gfx942"
ARCH_ENV = "OXLA_HIP_ARCH"


def parse_archs(text: str | None, default: str = DEFAULT_ARCH) -> tuple[str, ...]:
    """``"gfx90a,gfx942"`` as archs in the given order, without repeats; ``default`` when
    empty.

    Raises:
        OxlaError: an arch oxla does not emit for (the message lists the known ones).
    """
    names = [a.strip() for a in (text or "").split(",") if a.strip()] or [default]
    bad = [a for a in names if a not in ARCHS]
    if bad:
        raise OxlaError(f"unknown AMD GPU architecture '{bad[0]}' (--hip-arch); known: "
                        f"{', '.join(ARCHS)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class HIPTarget:
    """The archs a compile makes code objects for.

    Attributes:
        archs: ``("gfx942",)``; the first is the default (``--emit asm``, the simulated
            device's wavefront size).
    """

    archs: tuple[str, ...]

    @staticmethod
    def for_options(options: CompileOptions) -> HIPTarget:
        """``options.extra["hip_arch"]``, else ``$OXLA_HIP_ARCH``, else the current
        device's arch (a HIP runtime with a GPU), else ``gfx942``."""
        text = options.extra.get("hip_arch") or os.environ.get(ARCH_ENV)
        return HIPTarget(parse_archs(text, default_arch()))


def default_arch() -> str:
    """The arch of the device ``OXLA_HIP_DEVICE`` chooses when it is a GPU, else gfx942."""
    try:
        c = devices.choice()
        if c.kind == "driver" and devices.status()[0]:
            arch = get_runtime().device.arch
            return arch if arch in ARCHS else DEFAULT_ARCH
    except Exception:  # a runtime without a usable device: compile for the default
        pass
    return DEFAULT_ARCH


class HIPPolicy(GPUPolicy):
    """The hip backend's answers to fusion (module doc)."""

    name = BACKEND

    def stages(self) -> list[Stage]:
        return list(STAGES)
