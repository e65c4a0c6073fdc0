"""``stablehlo.custom_call`` on the GPU backends (cuda, hip): kernels bound through the
``oxla_custom_calls`` hook (``CustomCallInfo(target, backend, fn)``), launched on the
executable's stream.

``fn`` is a GPU implementation (``oxla_kernels.CudaImpl`` for CUDA C, ``HipImpl`` for
HIP, ``TritonImpl`` for Triton): an object whose ``for_call(ins, outs, backend_config)``
returns, at compile time, the call site's launch record (``oxla_kernels.DeviceKernel``:
``format`` (cuda: ``ptx`` or ``cubin``; hip: ``hsaco``), ``image``, ``entry``, ``arch``,
``grid``, ``block``, ``shared_mem``, ``scalars``, ``extra["ptx"]``, ``host``). The program gets one ``custom`` step per call
(:func:`custom_step`): the kernel is launched with the operands' device pointers, then
the results', then the scalars (a Python ``float`` as a 32-bit float, an ``int`` as a
64-bit integer).

* **A device**: the backend's ``load_custom``/``launch_custom`` (cuda: the cubin when it
  is for the device's arch, else the PTX JIT-compiled for it, through
  ``cuModuleLoadData``; ``cuLaunchKernel`` with the declared grid, block and dynamic
  shared memory).
* **The simulated device** (``OXLA_CUDA_DEVICE=sim``, ``OXLA_HIP_DEVICE=sim``): a record
  with a ``host`` function runs it on the buffers' bytes (Triton: Triton's interpreter,
  ``TRITON_INTERPRET=1``, in its worker process); otherwise a cuda record's PTX runs in
  gpuocelot (``oxla_codegen_llvm.simt.ocelot``), its ``.target`` rewritten to ``sm_35``.
  PTX that uses what gpuocelot lacks (:data:`OCELOT_LACKS`: f16 arithmetic, warp
  shuffles and votes, tensor cores, async copies, clusters) is refused with a
  ``NotSupportedError`` naming the instructions, when the executable is first loaded;
  so is a HIP code object (no AMDGPU emulator exists).

What compiles: string ``backend_config`` (``api_version`` unset or 1-3), static tensor
(and token) operands and results, ``has_side_effect``. Refused with a
``NotSupportedError``: typed FFI calls (``api_version = 4`` or a dictionary
``mhlo.backend_config``), ``called_computations``, ``output_operand_aliases``,
non-row-major layouts, tuple or dynamic types. A target without an implementation for
the backend is a ``LoweringError`` saying how to supply one. Executables with custom calls cannot
be saved as artifacts yet (the records are not serialized).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla import plugins
from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import Operation
from oxla.ir import attributes as A
from oxla.ir import types as T

OP = "stablehlo.custom_call"
FORMATS = {"cuda": ("ptx", "cubin"), "hip": ("hsaco",)}
"""The image formats each backend launches."""
OCELOT_LACKS = {
    r"\.f16x2\b|\.f16\b": "f16 arithmetic",
    r"\bshfl\.": "warp shuffles (shfl)",
    r"\bvote\.|\bredux\.|\bmatch\.": "warp votes and reductions",
    r"\b(?:wmma|mma|wgmma|ldmatrix|stmatrix)\.": "tensor-core instructions",
    r"\bcp\.async\b|\bcp\.async\.bulk|\bmbarrier\.": "asynchronous copies",
    r"%cluster|\bbarrier\.cluster\b": "thread-block clusters",
}
"""PTX gpuocelot cannot run (``../shared/tools/gpuocelot/README.md``), by what it is."""


def _target(op: Operation) -> str:
    return str(A.to_python(op.attributes["call_target_name"]))


def _tensor(v: Any) -> bool:
    return isinstance(v.type, T.TensorType) and v.type.is_static


def _reject(op: Operation, what: str, backend: str) -> NotSupportedError:
    return NotSupportedError(f"stablehlo.custom_call @{_target(op)} with {what} is not "
                             f"supported on {backend}", loc=op.loc)


def implementation(op: Operation, backend: str) -> Any:
    """The ``backend`` implementation of ``op``'s target, after checking the forms the
    module doc refuses (fusion calls this before any code is generated).

    Raises:
        LoweringError: no plugin implements the target for ``backend``.
        NotSupportedError: a refused form.
    """
    api = A.to_python(op.attributes["api_version"]) if "api_version" in op.attributes else 0
    cfg = op.attributes.get("backend_config")
    if api in (4, "API_VERSION_TYPED_FFI") or (cfg is not None and not isinstance(
            A.to_python(cfg), str | bytes)):
        raise _reject(op, "a typed FFI call (api_version 4 / an mhlo.backend_config "
                          "dictionary)", backend)
    for name in ("called_computations", "output_operand_aliases"):
        a = op.attributes.get(name)
        if a is not None and len(A.to_python(a)):
            raise _reject(op, name, backend)
    for vals, kind in ((op.operands, "operand"), (op.results, "result")):
        for v in vals:
            if not _tensor(v) and not isinstance(v.type, T.TokenType):
                raise _reject(op, f"a {kind} of type {v.type}", backend)
        lay = op.attributes.get(f"{kind}_layouts")
        if lay is not None:
            for v, layout in zip(vals, A.to_python(lay)):
                got = [int(x) for x in np.asarray(layout).reshape(-1)]
                if _tensor(v) and got != list(range(v.type.rank - 1, -1, -1)):
                    raise _reject(op, f"a non-row-major {kind} layout", backend)
    info = plugins.custom_calls(backend).get(_target(op))
    impls = "CudaImpl or TritonImpl" if backend == "cuda" else "HipImpl or TritonImpl"
    if info is None:
        raise LoweringError(
            f"no implementation of custom call target '{_target(op)}' for the {backend} "
            "backend", loc=op.loc,
            notes=["supply one with a plugin: an `oxla_custom_calls` hookimpl returning "
                   f"CustomCallInfo(target={_target(op)!r}, backend={backend!r}, fn=...), "
                   f"fn an oxla_kernels {impls} (see oxla_codegen_llvm.gpu.custom_call)"])
    if not callable(getattr(info.fn, "for_call", None)):
        raise LoweringError(f"the {backend} implementation of '{_target(op)}' is not a GPU "
                            f"kernel: {info.fn!r} has no for_call(ins, outs, "
                            f"backend_config) (use oxla_kernels' {impls})", loc=op.loc)
    return info.fn


def launch_record(op: Operation, backend: str) -> Any:
    """The launch record of one call site (module doc).

    Raises:
        LoweringError: as :func:`implementation`, or the kernel did not compile.
        NotSupportedError: as :func:`implementation`.
    """
    fn = implementation(op, backend)
    ins = [v.type for v in op.operands if _tensor(v)]
    outs = [v.type for v in op.results if _tensor(v)]
    cfg = A.to_python(op.attributes["backend_config"]) if "backend_config" in \
        op.attributes else ""
    rec = fn.for_call(ins, outs, cfg.decode() if isinstance(cfg, bytes) else str(cfg))
    if getattr(rec, "backend", backend) != backend or rec.format not in FORMATS[backend]:
        raise LoweringError(f"the {backend} implementation of '{_target(op)}' gave a "
                            f"{rec.backend} {rec.format} kernel, not one of "
                            f"{backend}'s {', '.join(FORMATS[backend])}", loc=op.loc)
    return rec


def custom_step(op: Operation, index: int, ref: Any, vbuf: dict, outs: Sequence[Any],
                rec: Any) -> dict[str, Any]:
    """The program step launching record ``index`` for ``op``: ``args`` are
    ``["in"|"out", ref, nbytes]`` buffers, then ``["f32"|"i64", value]`` scalars."""
    args: list[list[Any]] = []
    for v in op.operands:
        if _tensor(v):
            args.append(["in", ref(vbuf[v]), vbuf[v].nbytes])
    for r, b in zip(op.results, outs):
        if _tensor(r):
            args.append(["out", ref(b), b.nbytes])
    for s in rec.scalars:
        if isinstance(s, bool | int | np.integer):
            args.append(["i64", int(s)])
        else:
            args.append(["f32", float(s)])
    return {"op": "custom", "kernel": index, "target": _target(op), "grid": list(rec.grid),
            "block": list(rec.block), "shared": int(rec.shared_mem), "args": args}


def ocelot_ptx(rec: Any, target: str = "") -> str:
    """The record's PTX for gpuocelot: its ``.target`` set to ``sm_35``.

    Raises:
        NotSupportedError: the record has no PTX, or the PTX uses what gpuocelot lacks
            (the message names each feature and its first instruction).
    """
    ptx = rec.extra.get("ptx") or (rec.image if rec.format == "ptx" else None)
    what = f"kernel {rec.entry}" + (f" of custom call '{target}'" if target else "")
    if rec.backend == "hip":
        raise NotSupportedError(f"{what}: a HIP code object cannot run on the simulated "
                                "device (no AMDGPU emulator exists); run it on a ROCm GPU")
    if ptx is None:
        raise NotSupportedError(f"{what}: the simulated cuda device runs PTX, and this "
                                "record has only a cubin")
    text = ptx.decode() if isinstance(ptx, bytes) else ptx
    body = "\n".join(line.split("//")[0] for line in text.splitlines())
    lacks = []
    for pattern, name in OCELOT_LACKS.items():
        m = re.search(pattern, body)
        if m is not None:
            line = body[body.rfind("\n", 0, m.start()) + 1:body.find("\n", m.end())].strip()
            lacks.append(f"{name} (`{line}`)")
    if lacks:
        raise NotSupportedError(f"{what} cannot run on the simulated cuda device: "
                                f"gpuocelot lacks {'; '.join(lacks)}; run it on a GPU")
    return re.sub(r"^\s*\.target\s+sm_\w+", ".target sm_35", text, count=1, flags=re.M)
