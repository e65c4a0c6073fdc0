"""Running a whole plan through the SIMT kernels without a GPU (tests, gpuocelot checks).

:class:`SimtPolicy` is a minimal GPU policy (the shared loop emitter fuses, the op kinds
of :data:`~oxla_codegen_llvm.simt.kernels.OP_KINDS` are kernels; no dots); the CUDA
backend has its own (``CUDAPolicy``) with libraries. :func:`plan_for` runs the target-free
stages; :func:`run_plan` runs every kernel of the plan on a launcher (the host twin or
gpuocelot) over host memory laid out as the plan's buffer assignment says.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence

import numpy as np

from oxla.ir import Module, Operation, parse_module
from oxla.lowering import Buf, ControlKernel, Plan, PolicyBase, pipeline
from oxla.passes import inline_composites, run_pipeline
from oxla.protocols import CompileOptions
from oxla_codegen_llvm.fused import is_fusible
from oxla_codegen_llvm.simt.kernels import OP_KINDS, claim, kernels_for
from oxla_codegen_llvm.simt.model import Kernel

Launch = Callable[[Kernel, list[int]], None]


class SimtPolicy(PolicyBase):
    """What fusion asks for the SIMT kernels (module doc)."""

    name = "simt"

    def is_fusible(self, op: Operation) -> bool:
        return is_fusible(op)

    def claim(self, op: Operation) -> str | None:
        return claim(op)

    def classify(self, op: Operation) -> str | None:
        return "op" if op.name in OP_KINDS else None

    def prepare(self, module: Module, options: CompileOptions) -> tuple[Module, list[str]]:
        inline_composites(module, self.name)
        out = run_pipeline(module, options.pipeline or "default")
        return (out if isinstance(out, Module) else module), []

    def stages(self) -> list:
        return []


def plan_for(text: str, policy: PolicyBase | None = None) -> Plan:
    """The placed plan of StableHLO ``text`` (the target-free stages only)."""
    c = pipeline.Compilation(parse_module(text, "simt.mlir"), policy or SimtPolicy(), None,
                             CompileOptions())
    for stage in pipeline.TARGET_FREE:
        stage.run(c)
    assert c.plan is not None
    return c.plan


GpuKernels = dict[int, list[Kernel]]


def gpu_kernels(plan: Plan, out: GpuKernels | None = None) -> GpuKernels:
    """``id(plan kernel) -> its GPU kernels`` for every kernel of ``plan``, control-flow
    regions' included, in plan order."""
    out = {} if out is None else out
    for k in plan.kernels:
        if isinstance(k, ControlKernel):
            for i in k.init:
                out[id(i)] = kernels_for(i, plan)
            for p in k.plans:
                gpu_kernels(p, out)
        else:
            out[id(k)] = kernels_for(k, plan)
    return out


def plan_kernels(plan: Plan) -> list[Kernel]:
    """Every GPU kernel of ``plan`` (see :func:`gpu_kernels`), in plan order."""
    return [g for gs in gpu_kernels(plan).values() for g in gs]


def run_plan(plan: Plan, inputs: Sequence[np.ndarray], launch: Launch,
             gpu: GpuKernels | None = None,
             alloc: Callable[[int], np.ndarray] | None = None) -> list[np.ndarray]:
    """Runs ``plan`` on ``inputs`` with ``launch(kernel, args)`` per GPU kernel; returns
    each result's raw bytes (uint8; see :func:`as_like`). ``alloc(nbytes)`` gives the
    device's byte arrays (default: numpy's). Control flow runs on the host: a ``while``
    reads its predicate after each condition plan, ``if``/``case`` their operand."""
    gpu = gpu if gpu is not None else gpu_kernels(plan)
    new = alloc or (lambda n: np.zeros(max(n, 16), dtype=np.uint8))

    def put(x: np.ndarray) -> np.ndarray:
        a = np.ascontiguousarray(x)
        buf = new(a.nbytes)
        buf[: a.nbytes] = a.reshape(-1).view(np.uint8)
        return buf

    arena = new(plan.temp_bytes)
    ins = [put(np.asarray(x)) for x in inputs]
    outs = [new(b.nbytes) for b in plan.results]
    consts: dict[int, np.ndarray] = {}

    def address(buf: Buf) -> int:
        if buf.base is not None:
            return address(buf.base) + buf.offset
        if buf.kind == "arg":
            return ins[buf.index].ctypes.data
        if buf.kind == "result":
            return outs[buf.index].ctypes.data
        if buf.kind == "temp":
            return arena.ctypes.data + buf.offset
        if id(buf) not in consts:
            consts[id(buf)] = put(np.asarray(buf.data))
        return consts[id(buf)].ctypes.data

    def read(buf: Buf, nbytes: int) -> int:
        raw = (ctypes.c_uint8 * nbytes).from_address(address(buf))
        return int.from_bytes(bytes(raw), "little", signed=nbytes > 1)

    def call(k) -> None:
        for g in gpu[id(k)]:
            launch(g, [address(x.buf) if x.kind == "buf" else int(x.value)
                       for x in g.params])

    def run(p: Plan) -> None:
        for k in p.kernels:
            if not isinstance(k, ControlKernel):
                call(k)
            elif k.kind == "while":
                for i in k.init:
                    call(i)
                while True:
                    run(k.plans[0])
                    if not read(k.pred, 1) & 1:
                        break
                    run(k.plans[1])
            elif k.kind == "if":
                run(k.plans[0] if read(k.pred, 1) & 1 else k.plans[1])
            else:
                width = max(k.op.operands[0].type.element_type.width // 8, 1)
                i = read(k.pred, width)
                run(k.plans[i] if 0 <= i < len(k.plans) - 1 else k.plans[-1])

    run(plan)
    return [np.array(o) for o in outs]


def as_like(raw: np.ndarray, want: np.ndarray) -> np.ndarray:
    """The raw bytes of a result of :func:`run_plan` viewed as ``want``'s dtype and shape."""
    want = np.asarray(want)
    return raw[: want.nbytes].view(want.dtype).reshape(want.shape)


def interpret(text: str, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The reference interpreter's results of ``text`` (the oracle)."""
    from oxla.interpreter import InterpreterBackend

    exe = InterpreterBackend().compile(parse_module(text, "simt.mlir"))
    return [np.asarray(x) for x in exe(*inputs)]
