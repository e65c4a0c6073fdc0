"""``.oxla`` artifacts of the cuda backend (the container: :mod:`oxla.artifact`).

Members: ``module.mlir`` (the optimized StableHLO), ``program.json`` (the launch program,
:mod:`oxla_backend_cuda.program`), ``kernels.json`` (each SIMT kernel's name, launch
shape, parameters and LLVM IR), ``module.ptx``, ``<arch>.cubin`` for each compiled arch,
``const<i>.npy``. Loading on a GPU takes the cubin of its arch, else JITs the PTX; the
simulated device builds host twins from the kernels' IR. Nothing is recompiled from
StableHLO.
"""

from __future__ import annotations

import io
import json
import os
import time

import numpy as np

from oxla.errors import OxlaError
from oxla_backend_cuda.driver import ModuleImage
from oxla_backend_cuda.executable import BACKEND, CUDAExecutable
from oxla_backend_cuda.nvjit import ARCHS
from oxla_backend_cuda.program import Program


def load_artifact(path: str | os.PathLike[str]) -> CUDAExecutable:
    """Reads a cuda artifact (no recompilation).

    Raises:
        OxlaError: not a cuda artifact, a corrupt member, a malformed program.
    """
    from oxla_codegen_llvm.simt import Kernel, Param

    from oxla.artifact import read_manifest, read_members

    t0 = time.perf_counter()
    p = os.fspath(path)
    manifest = read_manifest(p)
    if manifest["backend"] != BACKEND:
        raise OxlaError(f"'{p}' was written by the '{manifest['backend']}' backend, "
                        f"expected '{BACKEND}'")
    archs = manifest.get("archs", [])
    if not isinstance(archs, list) or not all(a in ARCHS for a in archs):
        raise OxlaError(f"'{p}' is corrupt: 'archs' is not a list of CUDA archs")
    try:
        head = read_members(p, ["module.mlir", "program.json", "kernels.json", "module.ptx"])
        prog = json.loads(head["program.json"])
        kern = json.loads(head["kernels.json"])
        n_const = int(prog["constants"])
        steps, temp_bytes = prog["steps"], int(prog["temp_bytes"])
        if not isinstance(steps, list) or temp_bytes < 0 or n_const < 0:
            raise ValueError("bad program")
        kernels = [Kernel(k["name"], k["llvm_ir"],
                          tuple(Param(kind, None, int(v)) for kind, v in k["params"]),
                          tuple(k["grid"]), tuple(k["block"]), int(k["shared_bytes"]))
                   for k in kern]
    except (KeyError, TypeError, ValueError) as exc:
        raise OxlaError(f"'{p}' is corrupt: malformed launch program ({exc})") from None
    rest = read_members(p, [f"{a}.cubin" for a in archs] +
                        [f"const{i}.npy" for i in range(n_const)])
    constants = [np.load(io.BytesIO(rest[f"const{i}.npy"]), allow_pickle=False)
                 for i in range(n_const)]
    image = ModuleImage(head["module.ptx"].decode(), {a: rest[f"{a}.cubin"] for a in archs},
                        kernels)
    stats = dict(manifest.get("stats", {}))
    stats["load_seconds"] = time.perf_counter() - t0
    return CUDAExecutable(head["module.mlir"].decode(), Program(steps, constants, kernels,
                                                                temp_bytes),
                          image, stats, list(manifest.get("stages", [])))


