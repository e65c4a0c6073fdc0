"""What a hip module is loaded from: one code object (``.hsaco``) per arch, and the
kernels' SIMT descriptions (the simulated device builds their host twins from them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oxla_codegen_llvm.simt.amdgpu import to_amdgcn


@dataclass
class HIPImage:
    """Code objects by arch (``gfx942`` -> ELF bytes) and the kernels.

    Attributes:
        hsacos: the code objects, by arch (first: the default arch).
        kernels: the SIMT kernels (``oxla_codegen_llvm.simt.Kernel``).
    """

    hsacos: dict[str, bytes] = field(default_factory=dict)
    kernels: list[Any] = field(default_factory=list)

    @property
    def archs(self) -> list[str]:
        return list(self.hsacos)

    @property
    def asm(self) -> str:
        """The AMDGCN assembly for the first arch (``--emit asm``; generated afresh from
        the kernels' IR)."""
        if not self.kernels or not self.hsacos:
            return ""
        return to_amdgcn(self.kernels, self.archs[0])

    def members(self) -> dict[str, bytes]:
        """The artifact members: ``<arch>.hsaco`` per arch."""
        return {f"{arch}.hsaco": h for arch, h in self.hsacos.items()}
