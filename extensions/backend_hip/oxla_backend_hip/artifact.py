"""``.oxla`` artifacts of the hip backend: the shared GPU artifact
(:mod:`oxla_codegen_llvm.gpu.artifact`) with a member ``<arch>.hsaco`` (an AMDGPU code
object) for each compiled arch; the manifest lists the archs, the first the default."""

from __future__ import annotations

import os
from typing import Any

from oxla_codegen_llvm.gpu.artifact import load_gpu_artifact
from oxla_codegen_llvm.simt.amdgpu import ARCHS

from oxla.artifact import read_members
from oxla_backend_hip.executable import BACKEND, HIPExecutable
from oxla_backend_hip.image import HIPImage


def _image(path: str, archs: list[str], kernels: list[Any]) -> HIPImage:
    files = read_members(path, [f"{a}.hsaco" for a in archs])
    return HIPImage({a: files[f"{a}.hsaco"] for a in archs}, kernels)


def load_artifact(path: str | os.PathLike[str]) -> HIPExecutable:
    """Reads a hip artifact (no recompilation).

    Raises:
        OxlaError: not a hip artifact, a corrupt member, a malformed program.
    """
    return load_gpu_artifact(path, BACKEND, ARCHS, _image, HIPExecutable)
