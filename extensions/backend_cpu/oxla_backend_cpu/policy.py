"""The cpu backend's policy: what :mod:`oxla.lowering` asks of this backend.

* types: what LLVM holds in a buffer (:func:`oxla_codegen_llvm.llvm_type`), static shapes;
* fusion: what the shared loop emitter computes at an index (``is_fusible``);
* claimed before fusion: ops computed by a call into the runtime (collectives, ids:
  they depend on the process that runs the code) and reshaping bitcasts;
* dots: 8-bit integer x 8-bit integer -> i32 dots as oxla's integer GEMM where the host
  has VNNI, AVX-512BW or AVX2 (:mod:`oxla_backend_cpu.int8_gemm`); bf16/f16 and the
  other 8-bit integer dots rewritten into f32 GEMMs (exact for integers,
  :mod:`oxla_backend_cpu.widen_dots`); f32/f64 GEMMs (except tiny f32 ones, :func:`oxla_backend_cpu.linalg.small_f32_dot`)
  through BLAS, or oxla's own microkernel with weights packed at compile time
  (strategy ``packed``, :mod:`oxla_backend_cpu.packed_gemm`) or per GEMM of a batch
  (strategy ``batched``, :mod:`oxla_backend_cpu.batched_gemm`); matrix-vector products
  (``M`` or ``N`` 1) as oxla's GEMV loops (strategy ``gemv``, :mod:`oxla_backend_cpu.gemv`);
* convolutions: im2col + GEMM or a direct kernel (:mod:`oxla_backend_cpu.conv`); patch
  convolutions (window = stride) as a transpose and one GEMM
  (:mod:`oxla_backend_cpu.patch_conv`), and those with at most 16 output pixels per image
  as an explicit im2col and one GEMM over the batch (:mod:`oxla_backend_cpu.im2col_conv`);
  depthwise ones on small NCHW planes computed feature-innermost
  (:mod:`oxla_backend_cpu.depthwise_layout`);
* sliding-window ``reduce_window``s (pooling): pad, window slices and the body op,
  fused into one loop kernel (:mod:`oxla_backend_cpu.window_slices`); prefix windows
  as scans (:mod:`oxla_backend_cpu.scan`);
* every op with an op emitter (:data:`oxla_backend_cpu.opkernels.OP_EMITTERS`) and every
  registered ``custom_call`` target is its own kernel;
* ``while`` bodies: loop-invariant kernels run once before the loop, and loop-invariant
  GEMM weights packed there for the packed microkernel
  (:func:`oxla_backend_cpu.packed_gemm.hoist_invariant_packing`);
* after fusion: convolution epilogues, then row kernels (softmax, layer norm,
  :mod:`oxla_backend_cpu.rowfusion`);
* ``prepare``: inline composites, probes to custom calls, the core pipeline, the
  plugins' rewrite patterns for ``cpu`` (``plugin-patterns{backend=cpu}``), transposes
  absorbed into dots (passes of :mod:`oxla.passes`);
* its own stages: codegen, JIT, executable (:mod:`oxla_backend_cpu.stages`).
"""

from __future__ import annotations

from typing import Any

from oxla_codegen_llvm import EMITTERS, is_fusible, llvm_type
from oxla_codegen_llvm.fused import INDEX_RULES

from oxla.errors import NotSupportedError
from oxla.ir import Module, Operation, Value
from oxla.ir import types as T
from oxla.lowering import (
    LOWERED_OPS,
    Buf,
    DotKernel,
    Kernel,
    Plan,
    PolicyBase,
    Stage,
    blas_operand,
    gemm_dims,
)
from oxla.lowering import unsupported as _unsupported
from oxla.passes import (
    absorb_transposes,
    inline_composites,
    legalized_ops,
    probes_to_custom_calls,
    run_pipeline,
)
from oxla.protocols import CompileOptions
from oxla_backend_cpu import collectives, linalg, misc_ops, rng, rowlib, spectral  # noqa: F401
from oxla_backend_cpu.batched_gemm import batched_tile
from oxla_backend_cpu.conv import CONV_OPS, conv_kernels, fuse_conv_epilogues
from oxla_backend_cpu.conv_phases import split_transposed_convs
from oxla_backend_cpu.custom_call import check_custom_call
from oxla_backend_cpu.depthwise_layout import rewrite_small_depthwise
from oxla_backend_cpu.gemv import is_gemv
from oxla_backend_cpu.im2col_conv import rewrite_im2col_convs
from oxla_backend_cpu.int8_conv import rewrite_int8_convs
from oxla_backend_cpu.int8_gemm import int8_dot_kernels, int8_gemm_isa
from oxla_backend_cpu.opkernels import OP_EMITTERS
from oxla_backend_cpu.packed_gemm import (
    LARGE_WEIGHT,
    blas_rows,
    hoist_invariant_packing,
    pack_constant_rhs,
)
from oxla_backend_cpu.patch_conv import rewrite_patch_convs
from oxla_backend_cpu.rowfusion import fuse_rows
from oxla_backend_cpu.stages import STAGES
from oxla_backend_cpu.wide_conv import rewrite_wide_convs
from oxla_backend_cpu.widen_dots import fold_broadcast_batch, fold_transposed_weights, widen_dots
from oxla_backend_cpu.window_slices import rewrite_window_slices

BACKEND = "cpu"
DOTS = ("stablehlo.dot_general", "stablehlo.dot")
BLAS_TYPES = ("f32", "f64")
PREPARED_AWAY = frozenset({"func.call", "stablehlo.composite", "interpreter.probe"})
"""Ops :meth:`CPUPolicy.prepare` removes (inline, inline-composites,
probes-to-custom-calls); CHLO ops go with ``chlo-legalize-to-stablehlo``."""


def unsupported(op: Operation, why: str = "") -> NotSupportedError:
    """The error for an op, type or form this backend cannot compile yet."""
    return _unsupported(op, BACKEND, why)


def blas_dot(op: Operation) -> bool:
    """True when BLAS computes the dot: f32 x f32 -> f32 or f64 x f64 -> f64, except
    tiny f32 dots (:func:`oxla_backend_cpu.linalg.small_f32_dot`)."""
    et = op.operands[0].type.element_type
    return et == op.operands[1].type.element_type == op.results[0].type.element_type and \
        isinstance(et, T.FloatType) and et.name in BLAS_TYPES and not linalg.small_f32_dot(op)


class CPUPolicy(PolicyBase):
    """The cpu backend's answers to fusion (module doc)."""

    name = BACKEND

    def check_type(self, op: Operation, v: Value) -> None:
        t = v.type
        if isinstance(t, T.TokenType):
            return
        if not isinstance(t, T.TensorType) or not t.is_static:
            raise unsupported(op, f"type {t}")
        try:
            llvm_type(t.element_type)
        except NotSupportedError:
            raise unsupported(op, f"element type {t.element_type}") from None

    def is_fusible(self, op: Operation) -> bool:
        return is_fusible(op)

    def claim(self, op: Operation) -> str | None:
        if op.name in collectives.RUNTIME_OPS or misc_ops.reshaping_bitcast(op):
            return "op"
        return None

    def classify(self, op: Operation) -> str | None:
        if op.name in DOTS and (blas_dot(op) or int8_gemm_isa(op)):
            return "dot"
        if op.name == "stablehlo.custom_call":  # a target from the oxla_custom_calls hook
            check_custom_call(op)
            return "op"
        return "op" if op.name in OP_EMITTERS else None

    def op_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                   counter: Any) -> list[Kernel] | None:
        return conv_kernels(op, vbuf, n, counter) if op.name in CONV_OPS else None

    def dot_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                    counter: Any) -> list[Kernel]:
        return _dot_kernels(op, vbuf, n, counter)

    def after_fusion(self, kernels: list[Kernel], vbuf: dict[Value, Buf]) -> list[Kernel]:
        return fuse_rows(fuse_conv_epilogues(kernels, vbuf), vbuf)

    def hoist_invariants(self, body: Plan, invariant: set[int], counter: Any) -> list[Kernel]:
        """A ``while``'s loop-invariant kernels, and its invariant GEMM weights packed
        once (:func:`oxla_backend_cpu.packed_gemm.hoist_invariant_packing`)."""
        return hoist_invariant_packing(body, invariant, counter)

    def rules(self) -> set[str]:
        """The op names this backend compiles, from its rule tables, plus those its
        ``prepare`` passes remove (what ``oxla plugins --coverage`` compares with the op
        table)."""
        return (set(EMITTERS) | set(INDEX_RULES) | set(OP_EMITTERS) | set(LOWERED_OPS)
                | set(collectives.RUNTIME_OPS) | set(DOTS) | set(CONV_OPS)
                | {"stablehlo.custom_call"} | PREPARED_AWAY | legalized_ops())

    def prepare(self, module: Module, options: CompileOptions) -> tuple[Module, list[str]]:
        """The IR passes before fusion; returns the module and the plan's first notes."""
        inline_composites(module, BACKEND)
        probes_to_custom_calls(module)  # interpreter.probe: identity that records
        spec = options.pipeline or "default"
        out = run_pipeline(module, spec)
        module = out if isinstance(out, Module) else module
        run_pipeline(module, f"plugin-patterns{{backend={BACKEND}}}")
        int_convs = rewrite_int8_convs(module)
        patch_convs = rewrite_patch_convs(module)
        im2col_convs = rewrite_im2col_convs(module)
        depthwise = rewrite_small_depthwise(module)
        wide_convs = rewrite_wide_convs(module)
        window_slices = rewrite_window_slices(module)
        widened = widen_dots(module, keep=lambda op: int8_gemm_isa(op) is not None)
        unbatched = fold_broadcast_batch(module)
        untransposed = fold_transposed_weights(module, blas_rows(), LARGE_WEIGHT)
        phased = split_transposed_convs(module)
        absorbed = absorb_transposes(module, BLAS_TYPES)
        return module, [f"core pipeline: {spec}",
                        f"plugin patterns: for {BACKEND}",
                        f"dot layout: {absorbed} transposed dot operands read in place",
                        f"integer convolutions as 8-bit im2col + integer GEMM: {int_convs}",
                        f"patch convolutions as one GEMM: {patch_convs}",
                        f"few-pixel convolutions as im2col + one GEMM: {im2col_convs}",
                        f"small-plane depthwise convolutions feature-innermost: {depthwise}",
                        f"small f32 convolutions accumulated in f64: {wide_convs}",
                        f"reduce_window as fused window slices: {window_slices}",
                        f"dots widened to f32 GEMMs: {widened}",
                        f"batched dots of a broadcast rhs unbatched: {unbatched}",
                        f"small transposed weights folded for BLAS: {untransposed}",
                        f"transposed convolutions split into phases: {phased}"]

    def stages(self) -> list[Stage]:
        return list(STAGES)


def _dot_kernels(op: Operation, vbuf: dict[Value, Buf], n: int, counter) -> list[Kernel]:
    isa = int8_gemm_isa(op)
    if isa is not None:
        return int8_dot_kernels(op, isa, vbuf, n, counter)
    lhs, rhs = op.operands
    et = lhs.type.element_type
    if et != rhs.type.element_type or et != op.results[0].type.element_type or not (
            isinstance(et, T.FloatType) and et.name in BLAS_TYPES):
        raise unsupported(op, "dot other than f32 x f32 -> f32 or f64 x f64 -> f64")
    g = gemm_dims(op)
    lb, rb, lc, rc, lf, rf = g.lb, g.rb, g.lc, g.rc, g.lf, g.rf
    batch, m, nn, k = g.batch, g.m, g.n, g.k
    rs = rhs.type.shape
    kernels: list[Kernel] = []
    lbuf, trans_l = blas_operand(lhs, vbuf, lb, lf, lc, True, kernels, n, counter)
    packed = pack_constant_rhs(vbuf[rhs], rs, rc, rf, m, nn, k) if not rb else None
    if packed is not None:
        kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, packed[0],
                                 vbuf[op.results[0]], 1, m, nn, k, trans_l, False, et.name,
                                 strategy="packed", tile=packed[1]))
        return kernels
    rbuf, trans_r = blas_operand(rhs, vbuf, rb, rf, rc, False, kernels, n, counter)
    if is_gemv(batch, m, nn):
        kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, rbuf,
                                 vbuf[op.results[0]], 1, m, nn, k, trans_l, trans_r, et.name,
                                 strategy="gemv"))
        return kernels
    tile = batched_tile(et.name, batch, m, nn, k)
    kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, rbuf, vbuf[op.results[0]],
                             batch, m, nn, k, trans_l, trans_r, et.name,
                             strategy="batched" if tile else "library", tile=tile))
    return kernels
