"""The hip backend's own stages, after :mod:`oxla.lowering`'s target-free ones.

1. ``kernels``: the plan as a launch program (shared with cuda:
   :func:`oxla_codegen_llvm.gpu.stages.kernels_stage`);
2. ``amdgpu``: for each requested arch a module parsed afresh from the kernels' IR,
   lowered by :mod:`oxla_codegen_llvm.simt.amdgpu` and linked by ``ld.lld`` into a
   ``.hsaco``; each code object's metadata is then read back and checked against the
   program's launches (:func:`oxla_backend_hip.metadata.check_launches`). No GPU needed;
3. ``executable``: a :class:`~oxla_backend_hip.executable.HIPExecutable`.
"""

from __future__ import annotations

from oxla_codegen_llvm.gpu.stages import executable_stage, kernels_stage
from oxla_codegen_llvm.simt.amdgpu import to_hsaco

from oxla.lowering import Compilation, Stage
from oxla_backend_hip.executable import HIPExecutable
from oxla_backend_hip.image import HIPImage
from oxla_backend_hip.metadata import check_launches


def _amdgpu(c: Compilation) -> None:
    program = c.artifacts["program"]
    archs = c.target.archs
    hsacos: dict[str, bytes] = {}
    checked = 0
    if program.kernels:
        for arch in archs:
            hsacos[arch] = to_hsaco(program.kernels, arch)
            checked = check_launches(hsacos[arch], arch, program.steps)
    c.artifacts["image"] = HIPImage(hsacos, list(program.kernels))
    assert c.plan is not None
    c.plan.notes.append(f"amdgpu: {len(program.kernels)} kernels, code objects (v5) for "
                        f"{', '.join(archs)}; {checked} launches checked against their "
                        "descriptors")


STAGES = (Stage("kernels", kernels_stage), Stage("amdgpu", _amdgpu),
          executable_stage(HIPExecutable, "hip_graphs"))
"""The hip backend's stages, in order."""
