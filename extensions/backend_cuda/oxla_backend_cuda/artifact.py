"""``.oxla`` artifacts of the cuda backend: the shared GPU artifact
(:mod:`oxla_codegen_llvm.gpu.artifact`) with members ``module.ptx`` and ``<arch>.cubin``
for each compiled arch. Loading on a GPU takes the cubin of its arch, else JITs the PTX.
"""

from __future__ import annotations

import os
from typing import Any

from oxla_codegen_llvm.gpu.artifact import load_gpu_artifact

from oxla.artifact import read_members
from oxla_backend_cuda.driver import ModuleImage
from oxla_backend_cuda.executable import BACKEND, CUDAExecutable
from oxla_backend_cuda.nvjit import ARCHS


def _image(path: str, archs: list[str], kernels: list[Any]) -> ModuleImage:
    files = read_members(path, ["module.ptx"] + [f"{a}.cubin" for a in archs])
    return ModuleImage(files["module.ptx"].decode(), {a: files[f"{a}.cubin"] for a in archs},
                       kernels)


def load_artifact(path: str | os.PathLike[str]) -> CUDAExecutable:
    """Reads a cuda artifact (no recompilation).

    Raises:
        OxlaError: not a cuda artifact, a corrupt member, a malformed program.
    """
    return load_gpu_artifact(path, BACKEND, ARCHS, _image, CUDAExecutable)
