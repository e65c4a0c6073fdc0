"""Prefix ``reduce_window``s (cumsum, cumprod, cummax, cummin, either direction) as O(n)
scans instead of one window reduction per output (O(n^2)).

A ``reduce_window`` is a prefix scan along dimension ``d`` when it has one operand, its
window is 1 (no padding) along every other dimension, and along ``d`` the window covers
the whole prefix: window ``w >= n`` with padding ``(w - 1, 0)`` (forward: output ``i``
reduces ``x[0..i]``) or ``(0, w - 1)`` (reverse: ``x[i..n-1]``), strides and dilations 1.
This is what ``jax.lax.cumsum``/``cumprod``/``cummax``/``cummin`` (``jnp.cumsum`` ...)
emit on the CPU.

Order (spec ``reduce_window``: the window is reduced in row-major order, padding read as
the init value):

* forward: ``out[i] = body(out[i-1], x[i])``, ``out[-1] = init``. This is exactly the
  spec's order whenever ``body(init, init) == init`` (the leading padding then folds to
  ``init``), which the constant ``init`` is checked for at compile time (0 for add, 0 or
  1 for multiply, any value for max/min/and/or). Exact for every element type.
* reverse: ``out[i] = body(out[i+1], x[i])``, accumulating from the end. For integers
  and booleans (wrap-around add/multiply, max/min, and/or/xor: associative and
  commutative) this equals the spec's result exactly; for floats it is the documented
  order: the sum of ``x[i..n-1]`` is accumulated from ``x[n-1]`` down to ``x[i]``
  (rounding can differ from the row-major window order; NaNs propagate alike).

Anything else (a non-constant init, a two-operand body, a sliding window) keeps the
general emitter of :mod:`oxla_backend_cpu.opkernels`. The loops run over the dimensions
before ``d``, then ``d``, then the dimensions after it, so a scan along a non-innermost
dimension is vectorized across the contiguous inner dimensions; the outermost dimension
before ``d`` is split across threads when the work is large enough.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, loop_nest, shape_of
from oxla_codegen_llvm.fused import emit_region
from oxla_codegen_llvm.fused import load as load_elem
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla_backend_cpu.parallel import grain_for, worth_parallel

I64 = ir.IntType(64)

_NP_BODY = {
    "stablehlo.add": np.add, "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum,
    "stablehlo.and": np.bitwise_and, "stablehlo.or": np.bitwise_or,
    "stablehlo.xor": np.bitwise_xor,
}


@dataclass(frozen=True)
class PrefixScan:
    """A recognised prefix scan: along ``dim``, ``reverse`` for suffixes."""

    dim: int
    reverse: bool


def _init_constant(v) -> np.ndarray | None:
    """The scalar constant defining ``v`` (through a rank-0 broadcast), else None."""
    from oxla.passes.util import constant_array

    op = v.owner_op
    while op is not None and op.name in ("stablehlo.broadcast_in_dim", "stablehlo.reshape") \
            and not shape_of(op.results[0]):
        v = op.operands[0]
        op = v.owner_op
    a = constant_array(v)
    return None if a is None or a.size != 1 else a.reshape(())


def window_params(op, rank: int) -> tuple[tuple[int, ...], ...]:
    """``(window_dimensions, strides, base_dilations, window_dilations, pad_lo, pad_hi)``
    of a windowed op, defaults filled in (spec ``reduce_window``)."""
    def get(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
        a = op.attr(name)
        v = A.to_python(a) if a is not None else None
        return tuple(int(x) for x in v) if v else default

    ones = (1,) * rank
    pad = op.attr("padding")
    pad = (pad.array if isinstance(pad, A.DenseElementsAttr) else
           np.asarray(A.to_python(pad) if pad is not None else [], np.int64))
    pad = np.asarray(pad, np.int64).reshape(rank, 2) if np.size(pad) else \
        np.zeros((rank, 2), np.int64)
    return (get("window_dimensions", ones), get("window_strides", ones),
            get("base_dilations", ones), get("window_dilations", ones),
            tuple(int(x) for x in pad[:, 0]), tuple(int(x) for x in pad[:, 1]))


def prefix_scan(op) -> PrefixScan | None:
    """The :class:`PrefixScan` a ``reduce_window`` is, else None (see the module doc)."""
    if len(op.results) != 1 or len(op.operands) != 2:
        return None
    shape, out_shape = shape_of(op.operands[0]), shape_of(op.results[0])
    if shape != out_shape or not shape:
        return None
    wd, ws, bd, wdl, lo, hi = window_params(op, len(shape))
    if any(x != 1 for x in ws + bd + wdl):
        return None
    dims = [d for d in range(len(shape)) if (wd[d], lo[d], hi[d]) != (1, 0, 0)]
    if len(dims) != 1:
        return None
    d = dims[0]
    w, n = wd[d], shape[d]
    if w < n or (lo[d], hi[d]) not in ((w - 1, 0), (0, w - 1)) or w == 1:
        return None
    reverse = lo[d] == 0
    body = list(op.regions[0].blocks[0].ops)
    if len(body) != 2 or body[0].name not in _NP_BODY or body[1].name != "stablehlo.return":
        return None
    args = list(op.regions[0].blocks[0].args)
    if set(body[0].operands) != set(args) or len(args) != 2 or \
            body[1].operands[0] is not body[0].results[0]:
        return None
    init = _init_constant(op.operands[1])
    if init is None:
        return None
    et = op.results[0].type.element_type
    is_float = isinstance(et, T.FloatType)
    if is_float and body[0].name in ("stablehlo.and", "stablehlo.or", "stablehlo.xor"):
        return None
    if init.dtype == np.bool_ and body[0].name in ("stablehlo.add", "stablehlo.multiply"):
        return None
    with np.errstate(all="ignore"):
        twice = _NP_BODY[body[0].name](init, init)
    same = np.array_equal(twice, init, equal_nan=is_float)
    if is_float:
        same = same and bool(np.signbit(twice) == np.signbit(init))
    if not same:
        return None
    return PrefixScan(d, reverse)


def scan_parallel(op, scan: PrefixScan) -> tuple[int, int] | None:
    """``(n, grain)`` of a parallel-for over the outermost dimension (one before the
    scan dimension: each chunk scans whole lines), or None."""
    shape = shape_of(op.operands[0])
    if scan.dim == 0:
        return None
    n = shape[0]
    per = math.prod(shape) // max(n, 1)
    return (n, grain_for(n, per)) if worth_parallel(n, per) else None


def emit_scan(s: Scalar, op, scan: PrefixScan, buffers: dict, outs: list) -> None:
    """The O(n) scan of a prefix ``reduce_window`` (see the module doc for its order)."""
    b = s.b
    x, init = op.operands
    shape = shape_of(x)
    if 0 in shape:
        return
    et = op.results[0].type.element_type
    d, n = scan.dim, shape[scan.dim]
    pre, post = list(shape[:d]), list(shape[d + 1:])
    out = outs[0]
    f = FusedEmitter(s, buffers)
    fn, outer = b.function, None
    if pre and len(fn.args) >= 2 and fn.args[-1].type == I64:
        fn.oxla_parallel = scan_parallel(op, scan)
        outer = (fn.args[-2], fn.args[-1])
    first = n - 1 if scan.reverse else 0
    step = -1 if scan.reverse else 1
    with loop_nest(b, pre, "p", outer=outer) as pidx:
        f.reset()
        start = f.value_at(init, [])
        with loop_nest(b, post, "q") as qidx:
            f.reset()
            idx = list(pidx) + [ir.Constant(I64, first)] + list(qidx)
            v = emit_region(s, op.regions[0], [start, f.value_at(x, idx)])[0]
            store_elem(s, out, et, linearize(b, idx, shape), v)
        with for_range(b, n - 1, "j") as j:
            pos = b.sub(ir.Constant(I64, n - 1), b.add(j, ir.Constant(I64, 1))) \
                if scan.reverse else b.add(j, ir.Constant(I64, 1))
            prev_pos = b.add(pos, ir.Constant(I64, -step))
            with loop_nest(b, post, "q") as qidx:
                f.reset()
                idx = list(pidx) + [pos] + list(qidx)
                flat = linearize(b, idx, shape)
                prev = load_elem(s, out, et,
                                 linearize(b, list(pidx) + [prev_pos] + list(qidx), shape))
                v = emit_region(s, op.regions[0], [prev, f.value_at(x, idx)])[0]
                store_elem(s, out, et, flat, v)
        f.reset()
