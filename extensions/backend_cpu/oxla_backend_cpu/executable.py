"""Stage 6: the executable (calls, buffers, threads, artifacts).

Calling convention: one ctypes call of ``entry(args, results, arena)``. Each calling
thread owns its arena and its output buffers (``threading.local``), allocated on its
first call and reused afterwards, so concurrent calls never share scratch memory and
no lock is taken. Each call returns **fresh copies** of the outputs (a caller may keep
them), so the reused output buffers are never visible to the caller.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import threading
import zipfile
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla.ir import func_type, parse_module
from oxla.protocols import Signature

BACKEND = "cpu"
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class CPUExecutable:
    """A program compiled to native code for this machine.

    Attributes:
        signature: argument and result types.
        stats: ``compile_seconds`` (s), ``kernel_count``, ``temp_bytes`` (arena bytes).
        stages: one line per compile stage (what ran, what it did).
        llvm_ir: the optimized LLVM IR of the program.
    """

    backend = BACKEND

    def __init__(self, module_text: str, llvm_ir: str, jit: Any, target: Any,
                 stats: dict[str, Any], stages: list[str]):
        self.module_text = module_text
        self.llvm_ir = llvm_ir
        self.stats = stats
        self.stages = stages
        self._jit = jit  # keeps the machine code alive
        self._target = target
        ft = func_type(parse_module(module_text).main)
        self.signature = Signature(tuple(ft.inputs), tuple(ft.results))
        self._entry = _ENTRY(jit.address("entry"))
        self._local = threading.local()

    def _buffers(self) -> tuple[np.ndarray, list[np.ndarray], Any]:
        loc = self._local
        if not hasattr(loc, "arena"):
            loc.arena = np.empty(max(int(self.stats["temp_bytes"]), 1), np.uint8)
            loc.outs = [np.empty(t.shape, t.element_type.dtype) for t in self.signature.outputs]
            loc.out_ptrs = (ctypes.c_void_p * max(len(loc.outs), 1))(
                *[o.ctypes.data for o in loc.outs])
        return loc.arena, loc.outs, loc.out_ptrs

    def __call__(self, *args: Any) -> list[np.ndarray]:
        """Runs the program on numpy arrays (or objects with ``__array__``/DLPack).

        Returns:
            One new numpy array per result.

        Raises:
            RuntimeInputError: wrong number, shapes or dtypes of arguments.
        """
        from oxla.interpreter import check_inputs

        vals = [np.ascontiguousarray(v) for v in check_inputs(self.signature.inputs, args)]
        arena, outs, out_ptrs = self._buffers()
        in_ptrs = (ctypes.c_void_p * max(len(vals), 1))(*[v.ctypes.data for v in vals])
        self._entry(ctypes.addressof(in_ptrs), ctypes.addressof(out_ptrs), arena.ctypes.data)
        return [o.copy() for o in outs]

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes a ``.oxla`` artifact: manifest, optimized StableHLO, LLVM IR and object
        code, each member's SHA-256 in the manifest."""
        from oxla_codegen_llvm.jit import emit_object

        from oxla.artifact import write_artifact

        files = {
            "module.mlir": self.module_text.encode(),
            "program.ll": self.llvm_ir.encode(),
            "program.o": emit_object(self.llvm_ir, self._target),
        }
        meta = {
            "target_triple": self._target.triple,
            "cpu": self._target.cpu,
            "cpu_features": sorted(self._target.feature_set()),
            "signature": {"inputs": [str(t) for t in self.signature.inputs],
                          "outputs": [str(t) for t in self.signature.outputs]},
            "stats": {k: v for k, v in self.stats.items() if k != "compile_seconds"},
            "stages": self.stages,
            "sha256": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()},
        }
        write_artifact(path, BACKEND, files, meta)


def load_artifact(path: str | os.PathLike[str]) -> CPUExecutable:
    """Reads a cpu artifact and re-JITs its LLVM IR for this machine.

    The object code is kept for inspection and other linkers; loading recompiles the
    stored LLVM IR (same result, no relocation handling) after checking that this CPU has
    every feature the code was compiled for.

    Raises:
        OxlaError: not a cpu artifact, corrupt or truncated members, a checksum
            mismatch, another target triple, or missing CPU features.
    """
    import time

    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import compile_ir

    from oxla.artifact import read_manifest
    from oxla_backend_cpu.blas import blas_symbols

    p = os.fspath(path)
    manifest = read_manifest(p)
    if manifest["backend"] != BACKEND:
        raise OxlaError(f"'{p}' was written by the '{manifest['backend']}' backend, "
                        f"expected '{BACKEND}'")
    host = CPUTarget.host()
    if manifest.get("target_triple") != host.triple:
        raise OxlaError(f"'{p}' targets {manifest.get('target_triple')}, "
                        f"but this machine is {host.triple}")
    missing = sorted(set(manifest.get("cpu_features", [])) - host.feature_set())
    if missing:
        raise OxlaError(f"'{p}' needs CPU features this machine lacks: {', '.join(missing)}",
                        notes=["recompile the module on this machine"])
    sums = manifest.get("sha256")
    if not isinstance(sums, dict):
        raise OxlaError(f"'{p}' is not a valid cpu artifact: manifest has no checksums")
    data: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(p) as zf:
            for name in ("module.mlir", "program.ll", "program.o"):
                data[name] = zf.read(name)
    except (KeyError, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise OxlaError(f"'{p}' is corrupt: {exc}") from exc
    for name, blob in data.items():
        if hashlib.sha256(blob).hexdigest() != sums.get(name):
            raise OxlaError(f"'{p}' is corrupt: checksum mismatch in member '{name}'")
    t0 = time.perf_counter()
    host = CPUTarget(manifest["target_triple"], manifest.get("cpu", ""), host.features)
    jit = compile_ir(data["program.ll"].decode(), host, blas_symbols())
    stats = dict(manifest.get("stats", {}))
    stats["compile_seconds"] = time.perf_counter() - t0
    return CPUExecutable(data["module.mlir"].decode(), jit.ir_text, jit, host, stats,
                         list(manifest.get("stages", [])))


def describe_manifest(path: str | os.PathLike[str]) -> str:
    """The manifest of an artifact as indented JSON (for debugging)."""
    from oxla.artifact import read_manifest

    return json.dumps(read_manifest(path), indent=2)
