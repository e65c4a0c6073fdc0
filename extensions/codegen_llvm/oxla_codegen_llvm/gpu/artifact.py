"""Reading ``.oxla`` artifacts of a GPU backend (the container: :mod:`oxla.artifact`;
writing: :func:`oxla_codegen_llvm.gpu.executable.save_artifact`).

Members: ``module.mlir`` (the optimized StableHLO), ``program.json`` (the launch program,
:mod:`oxla_codegen_llvm.gpu.program`), ``kernels.json`` (each SIMT kernel's name, launch
shape, parameters and LLVM IR), the backend's image members (cuda: ``module.ptx`` and
``<arch>.cubin``; hip: ``<arch>.hsaco``), ``const<i>.npy``, and ``host_ops.mlir`` when
the program has host-staged steps (collectives, streaming, probes: each op a function of
its own, :func:`~oxla_codegen_llvm.gpu.program.host_ops_text`). The simulated device builds
host twins from the kernels' IR. Nothing is recompiled from StableHLO.
"""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from oxla.artifact import read_manifest, read_members
from oxla.errors import OxlaError
from oxla_codegen_llvm.gpu.program import HOST_OPS_MEMBER, Program, read_host_ops
from oxla_codegen_llvm.simt.model import Kernel, Param

ImageReader = Callable[[str, list[str], list[Any]], Any]
"""``(path, archs, kernels) -> image``: reads the backend's own members of an artifact."""


def load_gpu_artifact(path: str | os.PathLike[str], backend: str, known_archs: Collection[str],
                      read_image: ImageReader, make: Callable[..., Any]) -> Any:
    """Reads a GPU backend's artifact (no recompilation).

    Args:
        path: the ``.oxla`` file.
        backend: the backend that must have written it (``cuda``, ``hip``).
        known_archs: the archs its manifest may list.
        read_image: reads the image members (``(path, archs, kernels) -> image``).
        make: the executable class (``(module_text, program, image, stats, stages)``).

    Raises:
        OxlaError: not an artifact of ``backend``, a corrupt member, a malformed program.
    """
    t0 = time.perf_counter()
    p = os.fspath(path)
    manifest = read_manifest(p)
    if manifest["backend"] != backend:
        raise OxlaError(f"'{p}' was written by the '{manifest['backend']}' backend, "
                        f"expected '{backend}'")
    archs = manifest.get("archs", [])
    if not isinstance(archs, list) or not all(a in known_archs for a in archs):
        raise OxlaError(f"'{p}' is corrupt: 'archs' is not a list of {backend} archs")
    try:
        head = read_members(p, ["module.mlir", "program.json", "kernels.json"])
        prog = json.loads(head["program.json"])
        kern = json.loads(head["kernels.json"])
        n_const = int(prog["constants"])
        n_host = int(prog.get("host_ops", 0))
        steps, temp_bytes = prog["steps"], int(prog["temp_bytes"])
        if not isinstance(steps, list) or temp_bytes < 0 or n_const < 0 or n_host < 0:
            raise ValueError("bad program")
        kernels = [Kernel(k["name"], k["llvm_ir"],
                          tuple(Param(kind, None, int(v)) for kind, v in k["params"]),
                          tuple(k["grid"]), tuple(k["block"]), int(k["shared_bytes"]))
                   for k in kern]
    except (KeyError, TypeError, ValueError) as exc:
        raise OxlaError(f"'{p}' is corrupt: malformed launch program ({exc})") from None
    rest = read_members(p, [f"const{i}.npy" for i in range(n_const)])
    constants = [np.load(io.BytesIO(rest[f"const{i}.npy"]), allow_pickle=False)
                 for i in range(n_const)]
    host_ops = []
    if n_host:
        text = read_members(p, [HOST_OPS_MEMBER])[HOST_OPS_MEMBER].decode()
        try:
            host_ops = read_host_ops(text, n_host)
        except OxlaError as exc:
            raise OxlaError(f"'{p}' is corrupt: {exc.message}") from None
    image = read_image(p, archs, kernels)
    stats = dict(manifest.get("stats", {}))
    stats["load_seconds"] = time.perf_counter() - t0
    return make(head["module.mlir"].decode(),
                Program(steps, constants, kernels, temp_bytes, host_ops=host_ops),
                image, stats, list(manifest.get("stages", [])))
