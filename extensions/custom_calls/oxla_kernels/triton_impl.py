"""Triton implementations (:class:`TritonImpl`): ``@triton.jit`` kernels compiled with
``triton.compile`` to PTX/cubin (cuda) or hsaco (hip) at oxla compile time, the grid and
constexprs fixed then, as a :class:`~oxla_kernels.gpu.DeviceKernel`.

Triton never runs inside an oxla process: it is installed apart (``pip install --target
<venv>/oxla-triton triton``, what ``scripts/_venv.sh`` does; ``$OXLA_TRITON_PATH``
elsewhere) and used by a child process (:mod:`oxla_kernels.triton_worker`). In one
process its LLVM and TensorFlow's abort ("Option registered more than once"), and torch
imports Triton whenever it finds it, so a Triton on ``sys.path`` would break any program
that imports both TensorFlow and ``torch._dynamo``. The kernel is therefore named as
``"module:name"`` (importable in the child, which gets this process's ``sys.path``).
Its CPU semantics are checked with Triton's interpreter (``TRITON_INTERPRET=1``, torch
CPU tensors): :meth:`TritonImpl.run`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oxla.errors import LoweringError
from oxla.ir import types as T
from oxla_kernels.gpu import DeviceKernel, GpuImpl, Grid, dims3, triton_path
from oxla_kernels.kernel import scalar_values

_TYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64", "i32": "i32",
          "i64": "i64", "i8": "i8", "ui8": "u8", "i1": "i1"}


def triton_status() -> tuple[bool, str]:
    """``(True, path)`` when oxla's Triton is installed, else ``(False, why)``."""
    p = triton_path()
    if (p / "triton" / "__init__.py").exists():
        return True, str(p)
    return False, (f"Triton is not installed for oxla at {p} (pip install --target {p} "
                   "triton==3.9.0, as scripts/_venv.sh does, or set $OXLA_TRITON_PATH)")


def _worker(req: dict, env: Mapping[str, str] | None = None, timeout: int = 600) -> None:
    ok, why = triton_status()
    if not ok:
        raise LoweringError(why)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "request.json"
        path.write_text(json.dumps(req))
        paths = [str(triton_path()), *[p for p in sys.path if p]]
        res = subprocess.run([sys.executable, "-m", "oxla_kernels.triton_worker", str(path)],
                             capture_output=True, text=True, timeout=timeout,
                             env={**os.environ, **(env or {}),
                                  "PYTHONPATH": os.pathsep.join(paths)}, check=False)
        if res.returncode:
            raise LoweringError(f"Triton ({req['mode']}) of {req['fn']} failed",
                                notes=[res.stderr.strip()[-3000:]])


class TritonImpl(GpuImpl):
    """A ``@triton.jit`` kernel for cuda (or hip).

    The kernel takes the operands' pointers, the results' pointers, then ``scalars``
    (attribute names or ``fn(ins, attrs)``), then the constexprs that
    ``constexprs(ins, attrs)`` returns.

    Args:
        fn: ``"module:name"`` of the ``@triton.jit`` function.
        grid: ``grid(ins, attrs) -> (x, y, z)`` programs.
        constexprs: ``constexprs(ins, attrs) -> {name: value}``.
        scalars: scalar arguments after the pointers.
        num_warps: warps per program.
        backend: ``"cuda"`` or ``"hip"``.
    """

    language = "triton"

    def __init__(self, fn: str, grid: Grid, constexprs: Callable[..., dict] | None = None,
                 scalars: Sequence[Any] = (), num_warps: int = 4, backend: str = "cuda"):
        if not isinstance(fn, str) or ":" not in fn:
            raise ValueError("TritonImpl: give the kernel as 'module:name' (Triton runs "
                             "in a child process)")
        self.fn, self.grid, self.num_warps, self.backend = fn, grid, num_warps, backend
        self.constexprs = constexprs or (lambda ins, attrs: {})
        self.scalars = tuple(scalars)

    def _request(self, ins, outs, attrs) -> dict:
        vals = scalar_values(self.scalars, ins, attrs)
        return {"fn": self.fn, "num_warps": self.num_warps,
                "constexprs": dict(self.constexprs(ins, attrs)),
                "pointers": ["*" + _TYPES[str(t.element_type)] for t in [*ins, *outs]],
                "scalar_types": ["fp32" if isinstance(v, float) else "i64" for v in vals],
                "scalars": list(vals), "grid": list(dims3(self.grid(ins, attrs)))}

    def compile(self, ins: Sequence[T.TensorType], outs: Sequence[T.TensorType],
                attrs: Mapping[str, Any], target: str = "cuda:90") -> dict[str, Any]:
        """``triton.compile`` for ``target`` (``"cuda:90"``, ``"hip:gfx90a"``); returns
        ``{"ptx"/"cubin"/"hsaco": bytes, "name": entry, "shared": bytes}``.

        Raises:
            LoweringError: Triton is not installed for oxla, or it failed.
        """
        backend, _, arch = target.partition(":")
        with tempfile.TemporaryDirectory() as out:
            _worker({**self._request(ins, outs, attrs), "mode": "compile",
                     "backend": backend, "arch": arch, "out": out})
            res: dict[str, Any] = json.loads((Path(out) / "meta.json").read_text())
            for f in Path(out).iterdir():
                if f.name != "meta.json":
                    res[f.name] = f.read_bytes()
        return res

    def device_kernel(self, ins, outs, attrs, target: str = "") -> DeviceKernel:
        target = target or ("cuda:90" if self.backend == "cuda" else "hip:gfx90a")
        k = self.compile(ins, outs, attrs, target)
        backend = target.partition(":")[0]
        fmt = "cubin" if backend == "cuda" else "hsaco"
        extra = {"ptx": k["ptx"]} if "ptx" in k else {}
        req = self._request(ins, outs, attrs)
        dtypes = [np.dtype(t.element_type.dtype) for t in [*ins, *outs]]

        def host(buffers: list[np.ndarray]) -> None:  # a simulated device's launch
            typed = [b.view(d) for b, d in zip(buffers, dtypes)]
            res = interpret(req, typed[:len(ins)], typed[len(ins):])
            for b, r in zip(typed[len(ins):], res):
                b[...] = r.reshape(-1)

        return DeviceKernel(backend, fmt, k[fmt], k["name"], dims3(self.grid(ins, attrs)),
                            (32 * self.num_warps, 1, 1), int(k["shared"]),
                            scalar_values(self.scalars, ins, attrs), extra,
                            ("sm_" if backend == "cuda" else "") + target.partition(":")[2],
                            host)

    def run(self, arrays, ins, outs, attrs) -> list[np.ndarray]:
        """Runs on CPU tensors with Triton's interpreter (``TRITON_INTERPRET=1``)."""
        return interpret(self._request(ins, outs, attrs), arrays,
                         [np.zeros(t.shape, np.dtype(t.element_type.dtype)) for t in outs])


def interpret(req: dict, inputs: Sequence[np.ndarray],
              outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Runs the kernel of ``req`` (:meth:`TritonImpl._request`) with Triton's interpreter
    in the worker process, on copies of ``inputs`` and of ``outputs`` (their initial
    contents); returns the outputs it wrote.

    Raises:
        LoweringError: Triton is not installed for oxla, or the kernel failed.
    """
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(src, **{f"in{i}": a for i, a in enumerate(inputs)},
                 **{f"out{i}": a for i, a in enumerate(outputs)})
        _worker({**req, "mode": "interpret", "inputs": str(src), "outputs": str(dst),
                 "n_in": len(inputs), "n_out": len(outputs)}, env={"TRITON_INTERPRET": "1"})
        data = np.load(dst)
        return [data[f"out{i}"] for i in range(len(outputs))]
