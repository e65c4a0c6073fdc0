"""Runs Triton in a child process: ``python -m oxla_kernels.triton_worker REQUEST.json``.

Triton is kept out of oxla's own processes on purpose (see :mod:`oxla_kernels.gpu`):
its LLVM and TensorFlow's clash in one process, and torch imports Triton whenever it can
find it. The request names the ``@triton.jit`` function as ``module:name``; the worker
either compiles it (``"compile"``: writes the images and metadata to ``out``) or runs it
with Triton's interpreter on CPU tensors (``"interpret"``: arrays in and out as
``.npz``).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np


def _fn(ref: str):
    mod, _, name = ref.partition(":")
    return getattr(importlib.import_module(mod), name)


def compile_request(req: dict) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    fn = _fn(req["fn"])
    names = list(fn.arg_names)
    kinds = req["pointers"] + req["scalar_types"]
    sig = {n: ("constexpr" if n in req["constexprs"] else kinds[i] if i < len(kinds)
               else "constexpr") for i, n in enumerate(names)}
    backend, arch = req["backend"], req["arch"]
    gpu = GPUTarget(backend, int(arch) if backend == "cuda" else arch,
                    32 if backend == "cuda" else 64)
    consts = {(names.index(k),): v for k, v in req["constexprs"].items()}
    k = triton.compile(ASTSource(fn, sig, constexprs=consts), target=gpu,
                       options={"num_warps": req["num_warps"], "enable_fp_fusion": False})
    out = Path(req["out"])
    for key in ("ptx", "cubin", "hsaco", "amdgcn"):
        if key in k.asm:
            v = k.asm[key]
            (out / key).write_bytes(v.encode() if isinstance(v, str) else bytes(v))
    (out / "meta.json").write_text(json.dumps({"name": k.metadata.name,
                                               "shared": int(k.metadata.shared)}))


def interpret_request(req: dict) -> None:
    import torch

    fn = _fn(req["fn"])
    data = np.load(req["inputs"])
    ins = [torch.from_numpy(data[f"in{i}"].copy()) for i in range(req["n_in"])]
    outs = [torch.from_numpy(data[f"out{i}"].copy()) for i in range(req["n_out"])]
    fn[tuple(req["grid"])](*ins, *outs, *req["scalars"], **req["constexprs"])
    np.savez(req["outputs"], **{f"out{i}": o.numpy() for i, o in enumerate(outs)})


def main(argv: list[str]) -> int:
    req = json.loads(Path(argv[1]).read_text())
    if req["mode"] == "interpret" and os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("TRITON_INTERPRET=1 must be set before triton is imported")
    (compile_request if req["mode"] == "compile" else interpret_request)(req)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
