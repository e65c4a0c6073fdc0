"""The GPU policy shared by the cuda and hip backends: what :mod:`oxla.lowering` asks of
a backend that runs SIMT kernels and BLAS GEMMs.

* types: what the shared emitter holds in a buffer (:func:`oxla_codegen_llvm.llvm_type`),
  static shapes;
* fusion: what the shared loop emitter computes at an index (``is_fusible``); the SIMT
  kernels (``oxla_codegen_llvm.simt.kernels_for``) run every loop fusion on the grid;
* dots: f32/f64 GEMMs through the vendor BLAS (cuBLAS, rocBLAS), operands laid out
  ``[B,M,K]``/``[B,K,M]`` and ``[B,K,N]``/``[B,N,K]`` read in place, others copied into
  that layout first (a :class:`~oxla.lowering.PackKernel`);
* ``custom_call``: a plugin's GPU kernel, launched as it is
  (:mod:`oxla_codegen_llvm.gpu.custom_call`);
* every other op the op table has is its own kernel (an ``OpKernel``): whether simt has
  a GPU kernel for it is known at codegen, which raises ``NotSupportedError`` naming it;
* ``prepare``: inline composites, the core pipeline, the plugins' patterns for the
  backend, transposes absorbed into dots.

A backend subclasses :class:`GPUPolicy` with its ``name`` and its own stages.
"""

from __future__ import annotations

from typing import Any

from oxla.errors import NotSupportedError
from oxla.ir import Module, Operation, Value
from oxla.ir import types as T
from oxla.lowering import (
    CONTROL_OPS,
    LOWERED_OPS,
    Buf,
    DotKernel,
    Kernel,
    PolicyBase,
    Stage,
    blas_operand,
    dot_dims,  # noqa: F401 - re-exported (oxla_backend_cuda.policy)
    gemm_dims,
)
from oxla.lowering import unsupported as _unsupported
from oxla.passes import absorb_transposes, inline_composites, legalized_ops, run_pipeline
from oxla.protocols import CompileOptions
from oxla_codegen_llvm import EMITTERS, is_fusible, llvm_type
from oxla_codegen_llvm.fused import INDEX_RULES
from oxla_codegen_llvm.gpu import custom_call
from oxla_codegen_llvm.gpu.hostops import HOST_STEP_OPS
from oxla_codegen_llvm.simt.kernels import OP_KINDS
from oxla_codegen_llvm.simt.kernels import claim as simt_claim

DOTS = ("stablehlo.dot_general", "stablehlo.dot")
BLAS_TYPES = ("f32", "f64")
PREPARED_AWAY = frozenset({"func.call", "stablehlo.composite"})
LIBRARY_OPS = frozenset({"stablehlo.fft"})
"""Op kernels the launch program runs as a vendor-library call (:mod:`.program`)."""
HOST_OPS: frozenset[str] = frozenset()
"""Ops that need a host runtime this backend does not have yet (none: the collectives,
streaming and probe ops are host steps, ``hostops.HOST_STEP_OPS``; custom calls launch
their plugin's kernel, :mod:`.custom_call`)."""


def unsupported(op: Operation, why: str = "", backend: str = "cuda") -> NotSupportedError:
    """The error for an op, type or form ``backend`` cannot compile yet."""
    return _unsupported(op, backend, why)


def blas_dot(op: Operation) -> bool:
    """True when the vendor BLAS computes the dot: f32 x f32 -> f32 or f64 x f64 -> f64."""
    et = op.operands[0].type.element_type
    return et == op.operands[1].type.element_type == op.results[0].type.element_type and \
        isinstance(et, T.FloatType) and et.name in BLAS_TYPES


class GPUPolicy(PolicyBase):
    """A GPU backend's answers to fusion (module doc); ``name`` is the backend's."""

    name = "gpu"

    def check_type(self, op: Operation, v: Value) -> None:
        t = v.type
        if isinstance(t, T.TokenType):
            return
        if not isinstance(t, T.TensorType) or not t.is_static:
            raise unsupported(op, f"type {t}", self.name)
        try:
            llvm_type(t.element_type)
        except NotSupportedError:
            raise unsupported(op, f"element type {t.element_type}", self.name) from None

    def is_fusible(self, op: Operation) -> bool:
        return is_fusible(op)

    def claim(self, op: Operation) -> str | None:
        if op.name in HOST_STEP_OPS:  # replica_id/partition_id too: never fused as 0
            return "op"
        return simt_claim(op)  # what simt must take before fusion (bitcasts across widths)

    def classify(self, op: Operation) -> str | None:
        if op.name in DOTS and blas_dot(op):
            return "dot"
        if op.name == custom_call.OP:
            custom_call.implementation(op, self.name)  # a registered kernel, a form it takes
            return "op"
        if op.name in HOST_OPS or op.name in CONTROL_OPS:
            return None
        return "op"  # simt's kernels_for says at codegen whether it has a GPU kernel

    def dot_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                    counter: Any) -> list[Kernel]:
        return dot_kernels(op, vbuf, n, counter, self.name)

    def rules(self) -> set[str]:
        """The op names this backend has a rule for (``oxla plugins --coverage``): the
        shared emitter's elementwise and index rules, simt's op kernels
        (``simt.kernels.OP_KINDS``), dots, library calls (``LIBRARY_OPS``: fft), host
        steps (``HOST_STEP_OPS``), control flow, and what ``prepare`` removes."""
        return (set(EMITTERS) | set(INDEX_RULES) | set(OP_KINDS) | set(LOWERED_OPS) | set(DOTS)
                | set(CONTROL_OPS) | PREPARED_AWAY | LIBRARY_OPS | HOST_STEP_OPS
                | legalized_ops())

    def prepare(self, module: Module, options: CompileOptions) -> tuple[Module, list[str]]:
        """The IR passes before fusion; returns the module and the plan's first notes."""
        inline_composites(module, self.name)
        spec = options.pipeline or "default"
        out = run_pipeline(module, spec)
        module = out if isinstance(out, Module) else module
        run_pipeline(module, f"plugin-patterns{{backend={self.name}}}")
        absorbed = absorb_transposes(module, BLAS_TYPES)
        return module, [f"core pipeline: {spec}", f"plugin patterns: for {self.name}",
                        f"dot layout: {absorbed} transposed dot operands read in place"]

    def stages(self) -> list[Stage]:
        """The backend's own stages (kernels, its assembly, the executable)."""
        raise NotImplementedError


def dot_kernels(op: Operation, vbuf: dict[Value, Buf], n: int, counter,
                backend: str = "cuda") -> list[Kernel]:
    """A BLAS GEMM (``DotKernel``, strategy ``library``), after copies of operands
    whose layout BLAS cannot read (batch dims first, then free/contracting in either
    order); ``backend`` names the errors."""
    lhs, rhs = op.operands
    et = lhs.type.element_type
    if not blas_dot(op):
        raise unsupported(op, "dot other than f32 x f32 -> f32 or f64 x f64 -> f64", backend)
    g = gemm_dims(op)
    kernels: list[Kernel] = []
    lbuf, trans_l = blas_operand(lhs, vbuf, g.lb, g.lf, g.lc, True, kernels, n, counter)
    rbuf, trans_r = blas_operand(rhs, vbuf, g.rb, g.rf, g.rc, False, kernels, n, counter)
    kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, rbuf, vbuf[op.results[0]],
                             g.batch, g.m, g.n, g.k, trans_l, trans_r, et.name))
    return kernels
