"""Dots the GEMM kernels do not take directly, rewritten into f32 GEMMs before fusion
(otherwise they run as scalar loops, 20-60x slower than XLA):

* ``bf16``/``f16`` operands (any mix with ``f32``), result ``bf16``/``f16``/``f32``: the
  operands converted to f32 (exact), an f32 ``dot_general`` (f32 accumulation, as XLA
  does on the CPU; the spec leaves a dot's accumulation precision to the
  implementation), the result converted back when it is not f32.
* 8-bit (and narrower) integer operands, signed or unsigned, result ``i32``/``i64``
  (``int8 x int8 -> int32`` and the dequantize-after forms that multiply that result by
  scales): exact. Every partial sum of at most ``C = floor(2^24 / (|a|max |b|max))``
  products is an integer of magnitude at most ``2^24``, which f32 holds exactly (1024
  terms for ``int8 x int8``, 258 for ``uint8 x uint8``), whatever order the GEMM sums
  in. The contracting dimension is split into chunks of at most ``C``; each chunk's f32
  GEMM is converted to the result type (exact) and the chunks are added in that type
  with its wrap-around, so the result equals the spec's integer dot bit for bit.

A batched dot whose rhs is a ``broadcast_in_dim`` that only adds the batch dimensions
(torch's LSTM/GRU input projection, ``x[T, B, D] @ W`` exported as ``bmm`` with ``W``
broadcast to ``[T, D, 4H]``) becomes one unbatched dot of the lhs with ``W``
(:func:`fold_broadcast_batch`): the broadcast copy is not materialized and a constant
``W`` reaches the packed-weight GEMM, with ``T * B`` rows.

A small constant weight read transposed (``dot_general(x, transpose(W))``, torch's
``nn.Linear`` with ``W [out, in]``) at fewer rows than the packed-weight GEMM takes
becomes the transposed constant (:func:`fold_transposed_weights`): BLAS then multiplies
it untransposed, 3x faster at 8 rows (8x256 . 256x256: 30 against 9.5 us, OpenBLAS).

Constant operands are converted at compile time, so constant int8 or bf16 weights reach
the packed-weight GEMM path. A dot with several contracting dimensions whose product
exceeds ``C`` is left as it is.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from oxla.ir import Builder, Module, Operation, Value
from oxla.ir import types as T

DOTS = ("stablehlo.dot_general", "stablehlo.dot")
HALF = ("bf16", "f16")
F32 = T.FloatType("f32")


def _dims(op: Operation) -> tuple[tuple[int, ...], ...]:
    lhs_rank = op.operands[0].type.rank
    if op.name == "stablehlo.dot":
        return (), (), (lhs_rank - 1,), (0,)
    d = op.attr("dot_dimension_numbers")
    return tuple(tuple(int(x) for x in d.get(k, ())) for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions",
        "lhs_contracting_dimensions", "rhs_contracting_dimensions"))


def _small_int_max(et) -> int | None:
    """The largest magnitude of an integer type of at most 8 bits (not ``i1``)."""
    if not isinstance(et, T.IntegerType) or et.width > 8 or et.width == 1:
        return None
    return (1 << et.width) - 1 if et.unsigned else 1 << (et.width - 1)


def _to_f32(b: Builder, v: Value) -> Value:
    """``v`` as f32: a new constant when ``v`` is one, else a ``convert``."""
    from ml_dtypes import bfloat16  # noqa: F401 - registers bf16 with numpy

    from oxla.passes.util import constant_array

    arr = constant_array(v)
    if arr is not None:
        return b.constant(np.asarray(arr, np.float32).reshape(v.type.shape),
                          v.type.with_element_type(F32))
    return b.convert(v, F32)


def _plan(op: Operation) -> str | None:
    lt, rt = op.operands[0].type.element_type, op.operands[1].type.element_type
    ot = op.results[0].type.element_type
    names = {getattr(t, "name", None) for t in (lt, rt)}
    if all(isinstance(t, T.FloatType) for t in (lt, rt, ot)) and names & set(HALF) \
            and names <= {*HALF, "f32"} and ot.name in (*HALF, "f32"):
        return "float"
    if _small_int_max(lt) and _small_int_max(rt) and isinstance(ot, T.IntegerType) \
            and not ot.unsigned and ot.width in (32, 64):
        return "int"
    return None


def widen_dots(module: Module, keep: Callable[[Operation], bool] = lambda op: False) -> int:
    """Rewrites the dots of ``module`` described in the module doc, except those
    ``keep`` holds for (the backend computes them as they are); returns how many."""
    count = 0
    for op in [o for o in module.walk() if o.name in DOTS]:
        kind = None if keep(op) else _plan(op)
        if kind is None or not all(v.type.is_static for v in (*op.operands, op.results[0])):
            continue
        lb, rb, lc, rc = _dims(op)
        lhs, rhs = op.operands
        ot = op.results[0].type.element_type
        k = math.prod(lhs.type.shape[d] for d in lc)
        chunk = k or 1
        if kind == "int":
            cap = (1 << 24) // (_small_int_max(lhs.type.element_type)
                                * _small_int_max(rhs.type.element_type))
            if k > cap and len(lc) != 1:
                continue
            chunk = min(k, cap) or 1
        b = Builder.before(op, op.loc)
        lf, rf = _to_f32(b, lhs), _to_f32(b, rhs)
        pieces = max(1, math.ceil(k / chunk))
        bounds = [round(i * k / pieces) for i in range(pieces + 1)]
        total = None
        for lo, hi in zip(bounds, bounds[1:]):
            a, c = lf, rf
            if pieces > 1:
                a = _cut(b, lf, lc[0], lo, hi)
                c = _cut(b, rf, rc[0], lo, hi)
            part = b.dot_general(a, c, (lc, rc), (lb, rb))
            if kind == "int" or ot != F32:
                part = b.convert(part, ot)
            total = part if total is None else b.add(total, part)
        op.results[0].replace_all_uses_with(total)
        op.erase()
        count += 1
    return count


def _cut(b: Builder, v: Value, dim: int, lo: int, hi: int) -> Value:
    shape = list(v.type.shape)
    start, limit = [0] * len(shape), list(shape)
    start[dim], limit[dim] = lo, hi
    return b.slice(v, start, limit)


def fold_broadcast_batch(module: Module) -> int:
    """Rewrites ``dot_general(lhs, broadcast_in_dim(w))`` whose batch dimensions come
    from the broadcast alone into ``dot_general(lhs, w)`` without batching (see the
    module doc). Only when the result's dimension order is unchanged: the lhs batch
    dimensions listed in ascending order, all before its free dimensions, and the
    broadcast keeping ``w``'s dimensions in order and size. Returns how many."""
    count = 0
    for op in [o for o in module.walk() if o.name == "stablehlo.dot_general"]:
        lhs, rhs = op.operands
        bc = rhs.owner_op
        if bc is None or bc.name != "stablehlo.broadcast_in_dim":
            continue
        lb, rb, lc, rc = _dims(op)
        if not lb:
            continue
        w = bc.operands[0]
        bdims = [int(d) for d in bc.attr("broadcast_dimensions").values]
        if bdims != sorted(bdims) or set(bdims) & set(rb) or \
                any(rhs.type.shape[d] != w.type.shape[i] for i, d in enumerate(bdims)):
            continue
        lf = [d for d in range(lhs.type.rank) if d not in lb + lc]
        if list(lb) != sorted(lb) or (lf and max(lb) > min(lf)):
            continue
        if not all(d in bdims for d in rc):
            continue
        wc = tuple(bdims.index(d) for d in rc)
        b = Builder.before(op, op.loc)
        new = b.dot_general(lhs, w, (lc, wc), ((), ()))
        if new.type != op.results[0].type:
            new.owner_op.erase()
            continue
        op.results[0].replace_all_uses_with(new)
        op.erase()
        if not bc.results[0].has_uses:
            bc.erase()
        count += 1
    return count


def fold_transposed_weights(module: Module, max_rows: int, max_elements: int) -> int:
    """Rewrites ``dot_general(x, transpose(c, [1, 0]))`` with a 2-D f32 constant ``c`` of
    fewer than ``max_elements`` elements, no batching and fewer than ``max_rows`` rows
    of ``x`` into ``dot_general(x, c')`` with ``c' = c.T`` computed now (see the module
    doc; the transpose stays for its other users). Returns how many."""
    from oxla.passes.util import constant_array

    count = 0
    for op in [o for o in module.walk() if o.name == "stablehlo.dot_general"]:
        lhs, rhs = op.operands
        tr = rhs.owner_op
        if tr is None or tr.name != "stablehlo.transpose" or rhs.type.rank != 2 \
                or rhs.type.element_type != F32:
            continue
        lb, rb, lc, _ = _dims(op)
        if lb or rb:
            continue
        c = constant_array(tr.operands[0])
        if c is None or c.size != math.prod(rhs.type.shape) or c.size >= max_elements:
            continue
        rows = math.prod(s for d, s in enumerate(lhs.type.shape) if d not in lc)
        if rows >= max_rows:
            continue
        b = Builder.before(op, op.loc)
        folded = b.constant(np.ascontiguousarray(np.transpose(c, [1, 0])), rhs.type)
        op.set_operand(1, folded)
        count += 1
        if not tr.results[0].has_uses:
            src = tr.operands[0].owner_op
            tr.erase()
            if src is not None and not src.results[0].has_uses:
                src.erase()
    return count
