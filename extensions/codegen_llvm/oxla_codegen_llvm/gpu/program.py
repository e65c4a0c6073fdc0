"""The plan as a launch program: what the executable replays on a device.

:func:`build_program` walks a placed :class:`~oxla.lowering.Plan` in schedule order:

* loop fusions, op kernels and layout copies -> GPU kernels from
  ``oxla_codegen_llvm.simt.kernels_for`` (``launch`` steps, in their launch order);
* dots -> one BLAS GEMM each (``gemm``; :func:`oxla_codegen_llvm.gpu.gemm.dot_call`
  maps it to the column-major call when it runs);
* ``stablehlo.fft`` -> one vendor-FFT call (``fft``; :func:`oxla_codegen_llvm.gpu.fft.fft_call`
  maps it to the library's arguments when it runs); the scratch copy an ``IRFFT`` reads
  lies in the arena past the plan's buffers;
* collectives, ``send``/``recv``, ``infeed``/``outfeed``, ``replica_id``/``partition_id``
  and ``interpreter.probe`` -> ``host`` steps (:mod:`oxla_codegen_llvm.gpu.hostops`): the
  op itself is kept in :attr:`Program.host_ops`, the step holds its operands' and
  results' refs;
* plain copies (control flow's loop-carried values) -> ``copy`` (``cuMemcpyDtoDAsync``);
* ``custom_call`` -> ``custom``, a plugin's GPU kernel launched from its own image
  (:mod:`oxla_codegen_llvm.gpu.custom_call`; the records are ``Program.custom``);
* ``while``/``if``/``case`` -> host-driven steps whose predicate is copied back to the
  host after the condition's kernels (``while``, ``if``, ``case``).

A step is JSON data (the artifact stores it). Buffers are **refs**: ``[region, index,
offset]`` with region ``arg`` (an input's pointer), ``result`` (a result's), ``arena``
(the executable's scratch, at buffer assignment's offset) or ``const`` (an uploaded
constant); a control region's temporaries resolve through their scratch buffer to the
arena.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla.ir import types as T
from oxla.lowering import Buf, ControlKernel, DotKernel, OpKernel, PackKernel, Plan
from oxla_codegen_llvm.gpu import custom_call
from oxla_codegen_llvm.gpu.fft import fft_call
from oxla_codegen_llvm.gpu.hostops import HOST_STEP_OPS, value_spec

Ref = list  # [region, index, offset]
SCRATCH_ALIGN = 256


@dataclass
class Program:
    """Steps, constants and kernels of one executable.

    Attributes:
        steps: the top-level steps (module doc).
        constants: the constant buffers' bytes, by ``const`` ref index.
        kernels: the SIMT kernels (``oxla_codegen_llvm.simt.Kernel``), in first-launch
            order, names unique.
        temp_bytes: the arena's size.
        custom: the custom calls' launch records (``oxla_kernels.DeviceKernel``), by a
            ``custom`` step's ``kernel`` index.
        host_ops: the ops of the ``host`` steps, by a step's ``index`` (an artifact
            keeps each as a function of its own: :func:`host_ops_text`).
    """

    steps: list[dict[str, Any]]
    constants: list[np.ndarray] = field(default_factory=list)
    kernels: list[Any] = field(default_factory=list)
    temp_bytes: int = 0
    custom: list[Any] = field(default_factory=list)
    host_ops: list[Any] = field(default_factory=list)

    @property
    def loop_free(self) -> bool:
        """True when no step is host-driven control flow, a host step or an FFT (whose
        plan is made at its first run, which a stream capture forbids): the program can
        be one graph."""
        return all(s["op"] in ("launch", "gemm", "copy", "zero", "custom")
                   for s in self.steps)


class _Builder:
    def __init__(self, simt: Any, backend: str):
        self.simt, self.backend = simt, backend
        self.consts: dict[int, int] = {}
        self.constants: list[np.ndarray] = []
        self.kernels: list[Any] = []
        self.names: set[str] = set()
        self.custom: list[Any] = []
        self.scratch_at = 0  # the arena offset of the FFTs' scratch
        self.scratch_bytes = 0
        self.host_ops: list[Any] = []

    def ref(self, buf: Buf) -> Ref:
        root, off = buf, 0
        while root.base is not None:
            off += root.offset
            root = root.base
        if root.kind == "temp":
            if root.offset < 0:
                raise OxlaError(f"internal: buffer {buf.name} was never placed")
            return ["arena", 0, root.offset + off]
        if root.kind in ("arg", "result"):
            return [root.kind, root.index, off]
        if root.kind == "const":
            j = self.consts.get(id(root))
            if j is None:
                assert root.data is not None
                j = self.consts[id(root)] = len(self.constants)
                self.constants.append(np.ascontiguousarray(root.data).reshape(-1).view(np.uint8))
            return ["const", j, off]
        raise OxlaError(f"internal: buffer {buf.name} of kind {root.kind}")

    def steps(self, plan: Plan) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k in plan.kernels:
            out += self.kernel_steps(k, plan)
        return out

    def kernel_steps(self, k: Any, plan: Plan) -> list[dict[str, Any]]:
        if isinstance(k, ControlKernel):
            return [self.control(k)]
        if isinstance(k, DotKernel):
            if k.batch * k.m * k.n == 0:
                return []
            if k.k == 0:  # an empty sum: zeros
                return [{"op": "zero", "dst": self.ref(k.out), "nbytes": k.out.nbytes}]
            return [{"op": "gemm", "batch": k.batch, "m": k.m, "n": k.n, "k": k.k,
                     "trans_lhs": k.trans_lhs, "trans_rhs": k.trans_rhs, "dtype": k.dtype,
                     "lhs": self.ref(k.lhs), "rhs": self.ref(k.rhs), "out": self.ref(k.out)}]
        if isinstance(k, OpKernel) and k.op.name == custom_call.OP:
            rec = custom_call.launch_record(k.op, self.backend)
            self.custom.append(rec)
            return [custom_call.custom_step(k.op, len(self.custom) - 1, self.ref, plan.vbuf,
                                            k.outs, rec)]
        if isinstance(k, PackKernel) and tuple(k.perm) == tuple(range(len(k.perm))):
            return [{"op": "copy", "src": self.ref(k.src_buf), "dst": self.ref(k.out),
                     "nbytes": k.out.nbytes}]
        op = getattr(k, "op", None)
        if op is not None and op.name == "stablehlo.fft" and type(k).__name__ == "OpKernel":
            return self.fft(k, plan)
        if op is not None and op.name in HOST_STEP_OPS and type(k).__name__ == "OpKernel":
            return self.host(k, plan)
        steps = []
        k.name = ptx_name(k.name)  # the entry symbols simt makes are the plan's names
        for g in self.simt.kernels_for(k, plan):
            if g.name in self.names:
                raise OxlaError(f"internal: two GPU kernels are named '{g.name}'")
            self.names.add(g.name)
            self.kernels.append(g)
            args = [["buf", self.ref(p.buf)] if p.kind == "buf" else ["i64", int(p.value)]
                    for p in g.params]
            steps.append({"op": "launch", "kernel": g.name, "grid": list(g.grid),
                          "block": list(g.block), "shared": int(g.shared_bytes), "args": args})
        return steps

    def fft(self, k: Any, plan: Plan) -> list[dict[str, Any]]:
        """The ``fft`` step of an ``OpKernel`` of ``stablehlo.fft`` (none when the
        operand or the result is empty; zeros when only the operand is)."""
        op = k.op
        x, y = op.operands[0], op.results[0]
        length = [int(n) for n in op.attr("fft_length").values]
        ftype = str(op.attr("fft_type").value)
        et = x.type.element_type
        real = et.element_type if isinstance(et, T.ComplexType) else et
        out = plan.vbuf[y]
        if out.nbytes == 0:
            return []
        if plan.vbuf[x].nbytes == 0 or 0 in length:
            return [{"op": "zero", "dst": self.ref(out), "nbytes": out.nbytes}]
        rank = len(length)
        batch = math.prod(x.type.shape[:x.type.rank - rank])
        call = fft_call(ftype, real.name, tuple(length), batch, 0, 0, 0)  # checks sizes
        if call.kind == "c2r":
            self.scratch_bytes = max(self.scratch_bytes, call.in_bytes)
        return [{"op": "fft", "type": ftype, "dtype": real.name, "length": length,
                 "batch": batch, "src": self.ref(plan.vbuf[x]), "dst": self.ref(out),
                 "work": ["arena", 0, self.scratch_at]}]

    def host(self, k: Any, plan: Plan) -> list[dict[str, Any]]:
        """The ``host`` step of an op kernel of a host op (tokens have no ref)."""
        op = k.op

        def refs(values) -> list[Ref | None]:
            return [self.ref(plan.vbuf[v]) if value_spec(v) is not None else None
                    for v in values]
        self.host_ops.append(op)
        return [{"op": "host", "index": len(self.host_ops) - 1, "name": op.name,
                 "ins": refs(op.operands), "outs": refs(op.results)}]

    def control(self, k: ControlKernel) -> dict[str, Any]:
        pred = self.ref(k.pred)
        if k.kind == "while":
            init: list[dict[str, Any]] = []
            for i in k.init:
                init += self.kernel_steps(i, k.plans[0])
            return {"op": "while", "init": init, "cond": self.steps(k.plans[0]),
                    "pred": pred, "pred_bytes": 1, "body": self.steps(k.plans[1])}
        width = 1 if k.kind == "if" else k.op.operands[0].type.element_type.width // 8
        return {"op": k.kind, "pred": pred, "pred_bytes": max(width, 1),
                "branches": [self.steps(p) for p in k.plans]}


def ptx_name(name: str) -> str:
    """``name`` as a PTX identifier (a control region's kernels are ``while0.body.loop3``:
    the dots become underscores)."""
    out = re.sub(r"[^A-Za-z0-9_$]", "_", name)
    return out if re.match(r"[A-Za-z_$]", out) else "k_" + out


def build_program(plan: Plan, simt: Any, backend: str = "cuda") -> Program:
    """The launch program of ``plan`` (module doc); ``simt`` is
    ``oxla_codegen_llvm.simt`` (passed in: the kernels are its); ``backend`` names the
    custom calls' implementations.

    Raises:
        NotSupportedError: a plan kernel simt has no GPU kernel for yet (its message
            names the op or kind).
    """
    b = _Builder(simt, backend)
    b.scratch_at = -(-plan.temp_bytes // SCRATCH_ALIGN) * SCRATCH_ALIGN
    steps = b.steps(plan)
    temp = b.scratch_at + b.scratch_bytes if b.scratch_bytes else plan.temp_bytes
    return Program(steps, b.constants, b.kernels, temp, b.custom, b.host_ops)


def count_steps(steps: list[dict[str, Any]], op: str) -> int:
    """How many steps of kind ``op`` ``steps`` holds, nested ones included."""
    n = 0
    for s in steps:
        n += s["op"] == op
        for key in ("init", "cond", "body"):
            n += count_steps(s.get(key, []), op)
        for branch in s.get("branches", []):
            n += count_steps(branch, op)
    return n


HOST_OPS_MEMBER = "host_ops.mlir"


def host_ops_text(ops: list[Any]) -> str:
    """The host-staged ops as one module: op ``i`` is the body of ``func.func @host<i>``
    (:func:`oxla.ir.printer.print_op_as_function`), read back by :func:`read_host_ops`.

    Raises:
        NotSupportedError: an op that does not read back alone (it names the op).
    """
    from oxla.errors import NotSupportedError, OxlaError
    from oxla.ir.printer import print_op_as_function

    text = "".join(print_op_as_function(op, f"host{i}") for i, op in enumerate(ops))
    try:
        back = read_host_ops(text, len(ops))
    except OxlaError as e:
        raise NotSupportedError(f"a host-staged op does not read back alone: {e.message}") \
            from None
    for a, b in zip(ops, back):
        if a.name != b.name or len(a.operands) != len(b.operands) or \
                [str(r.type) for r in a.results] != [str(r.type) for r in b.results]:
            raise NotSupportedError(f"'{a.name}' does not read back alone")
    return text


def read_host_ops(text: str, count: int) -> list[Any]:
    """The ``count`` host ops of :func:`host_ops_text`'s module, in order.

    Raises:
        OxlaError: the text does not parse or lacks a ``@host<i>``.
    """
    from oxla.errors import OxlaError
    from oxla.ir import parse_module

    module = parse_module(text, HOST_OPS_MEMBER)
    funcs = {}
    for op in module.walk():
        if op.name == "func.func":
            funcs[getattr(op.attr("sym_name"), "value", None)] = op
    out = []
    for i in range(count):
        f = funcs.get(f"host{i}")
        if f is None or not f.regions or not f.regions[0].blocks or \
                len(list(f.regions[0].blocks[0].ops)) != 2:
            raise OxlaError(f"{HOST_OPS_MEMBER} has no host op {i}")
        out.append(list(f.regions[0].blocks[0].ops)[0])
    return out
