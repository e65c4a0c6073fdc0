"""Folds the elementwise ops JAX's cholesky lowering puts around ``potrf`` into the call.

``jnp.linalg.cholesky`` (``jax._src.lax.linalg``'s CPU lowering) emits, around
``lapack_?potrf_ffi``::

    h = (a + transpose(a)) / 2          # the Hermitian part (conj(transpose) if complex)
    c, info = potrf(h)
    c = select(info == 0, c, NaN)       # a failed factorization is all NaN
    c = select(iota_row >= iota_col, c, 0)   # the factor's triangle, zeros elsewhere

Run as separate loops these are three more passes over the batch than the call's own
copy. :func:`fold_potrf` (an ``oxla_patterns`` rewrite for the cpu backend) moves each
into the call as an attribute of its ``mhlo.backend_config``, which oxla-lapack's
kernels (compiled and Python) apply per matrix while it is in cache:

* ``oxla_hermitian_part = true``: the call factors ``(a + aᴴ) / 2``, computed as
  ``(a[i, j] + conj(a[j, i])) / 2`` per component. That is the exact quotient the
  folded ``divide`` by the splat 2 (or ``(2, 0)``) rounds, so real results are the
  same bits; a complex divide computes it the same way for finite values.
* ``oxla_nan_on_error = true``: a matrix whose ``info`` is not 0 comes out as the
  default quiet NaN everywhere (only the NaN jax's lowering uses is folded).
* ``oxla_zero_other = true``: the triangle other than ``uplo``'s is zeroed, after the
  NaN fill (the order of jax's selects; a NaN select above the mask is not folded).

Legality: each fold needs the value it replaces to have no other use (the select's
``on_true``, the call's result 0) or leaves the replaced ops in place for their other
users (the Hermitian part); the masks are matched structurally (iota compares over the
matrix dimensions, ``info == 0`` broadcast along the batch dimensions), so no other
program is rewritten. Spec: StableHLO ``select``, ``compare``, ``iota``,
``custom_call``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oxla.ir import Operation, Value
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes.util import i64s, splat_value
from oxla_lapack.targets import TARGETS

HERMITIAN, NAN_ON_ERROR, ZERO_OTHER = "oxla_hermitian_part", "oxla_nan_on_error", "oxla_zero_other"
FLAGS = (HERMITIAN, NAN_ON_ERROR, ZERO_OTHER)
POTRF = frozenset(t for t, (kind, _) in TARGETS.items() if kind == "potrf")


def _owner(v: Value, name: str) -> Operation | None:
    op = v.owner_op
    return op if op is not None and op.name == name else None


def _splat(v: Value) -> Any:
    """The element of a splat: a splat constant, or a broadcast_in_dim of a scalar one."""
    b = _owner(v, "stablehlo.broadcast_in_dim")
    if b is not None and not b.operands[0].type.shape:
        v = b.operands[0]
    return splat_value(v)


def _through_broadcasts(v: Value) -> tuple[Value, tuple[int, ...]]:
    """The value under a chain of broadcast_in_dims and where its dimensions land in
    ``v``'s (identity when there is no broadcast)."""
    dims = tuple(range(len(v.type.shape)))
    while (b := _owner(v, "stablehlo.broadcast_in_dim")) is not None:
        inner = i64s(b, "broadcast_dimensions")
        dims = tuple(dims[d] for d in inner)
        v = b.operands[0]
    return v, dims


def _swaps_matrix_dims(op: Operation | None, rank: int) -> bool:
    return op is not None and op.name == "stablehlo.transpose" and i64s(op, "permutation") == (
        *range(rank - 2), rank - 1, rank - 2)


def _hermitian_source(v: Value) -> Value | None:
    """``a`` when ``v`` is ``(a + H(a)) / 2`` with H the matrix transpose (conjugated for
    complex ``a``: ``complex(real(t), negate(imag(t)))`` of the transpose ``t``)."""
    div = _owner(v, "stablehlo.divide")
    if div is None or _splat(div.operands[1]) != 2:
        return None
    add = _owner(div.operands[0], "stablehlo.add")
    if add is None:
        return None
    rank = len(v.type.shape)
    cplx = isinstance(v.type.element_type, T.ComplexType)
    for a, h in (add.operands, add.operands[::-1]):
        if cplx:
            c = _owner(h, "stablehlo.complex")
            if c is None:
                continue
            re, neg = _owner(c.operands[0], "stablehlo.real"), _owner(c.operands[1],
                                                                         "stablehlo.negate")
            im = _owner(neg.operands[0], "stablehlo.imag") if neg is not None else None
            if re is None or im is None or re.operands[0] is not im.operands[0]:
                continue
            h = re.operands[0]
        t = h.owner_op
        if _swaps_matrix_dims(t, rank) and t.operands[0] is a:
            return a
    return None


def _is_info_ok(pred: Value, info: Value) -> bool:
    """``pred`` is ``info == 0`` broadcast along the batch dimensions."""
    cmp, dims = _through_broadcasts(pred)
    op = _owner(cmp, "stablehlo.compare")
    if op is None or str(A.to_python(op.attr("comparison_direction"))).upper() != "EQ":
        return False
    x, y = op.operands
    if y is info:
        x, y = y, x
    return x is info and _splat(y) == 0 and dims == tuple(range(len(info.type.shape)))


def _triangle(pred: Value) -> str | None:
    """``"L"`` when ``pred`` is ``row >= col`` over the last two dimensions (iota
    compares, an iota plus a splat 0 included, broadcast along the batch), ``"U"`` for
    ``row <= col``, else None."""
    cmp, dims = _through_broadcasts(pred)
    op = _owner(cmp, "stablehlo.compare")
    rank = len(pred.type.shape)
    if op is None or rank < 2:
        return None
    axes = []
    for x in op.operands:
        add = _owner(x, "stablehlo.add")  # jnp.tril's ``iota + k`` with k = 0
        if add is not None:
            y, z = add.operands
            x = y if _splat(z) == 0 else z if _splat(y) == 0 else x
        io = _owner(x, "stablehlo.iota")
        if io is None:
            return None
        axes.append(dims[int(A.to_python(io.attr("iota_dimension")))])
    direction = str(A.to_python(op.attr("comparison_direction"))).upper()
    rows, cols = rank - 2, rank - 1
    if axes == [cols, rows]:
        direction = {"GE": "LE", "LE": "GE"}.get(direction, direction)
    elif axes != [rows, cols]:
        return None
    return {"GE": "L", "LE": "U"}.get(direction)


def _is_default_nan(x: Any) -> bool:
    vals = [x.real, x.imag] if np.iscomplexobj(x) else [x]
    return all(np.asarray(v).tobytes() == np.asarray(np.nan, np.asarray(v).dtype).tobytes()
               for v in vals)


def _is_positive_zero(x: Any) -> bool:
    return np.asarray(x).tobytes() == bytes(np.asarray(x).nbytes)


def _config(op: Operation) -> dict[str, A.Attribute]:
    cfg = op.attributes.get("mhlo.backend_config")
    return dict(cfg.entries) if isinstance(cfg, A.DictionaryAttr) else {}


def _set_flag(op: Operation, flag: str) -> None:
    cfg = _config(op)
    cfg[flag] = A.BoolAttr(True)
    op.attributes["mhlo.backend_config"] = A.DictionaryAttr(tuple(cfg.items()))


def fold_potrf(op: Operation, rewriter: Any) -> bool:
    """The ``oxla_patterns`` rewrite rooted at ``stablehlo.custom_call``: folds into a
    typed-FFI ``lapack_?potrf_ffi`` call the Hermitian part of its operand and the NaN
    and triangle selects of its factor (module doc). Returns True when it changed
    anything."""
    target = op.attributes.get("call_target_name")
    if target is None or str(A.to_python(target)) not in POTRF or len(op.results) != 2:
        return False
    cfg = _config(op)
    if not isinstance(op.attributes.get("mhlo.backend_config"), A.DictionaryAttr):
        return False
    uplo = chr(int(A.to_python(cfg["uplo"]))) if "uplo" in cfg else "L"
    changed = False
    if HERMITIAN not in cfg and (a := _hermitian_source(op.operands[0])) is not None:
        old = op.operands[0].owner_op
        op.set_operand(0, a)
        _set_flag(op, HERMITIAN)
        rewriter.modified(old)  # the divide may be dead now
        changed = True
    factor, info = op.results
    while len(factor.uses) == 1:
        sel = next(iter(factor.uses)).owner
        if sel.name != "stablehlo.select" or sel.operands[1] is not factor or (
                sel.operands[0] is factor):
            break
        flags = _config(op)
        pred, other = sel.operands[0], _splat(sel.operands[2])
        if other is None:
            break
        if (NAN_ON_ERROR not in flags and ZERO_OTHER not in flags and _is_default_nan(other)
                and _is_info_ok(pred, info)):
            _set_flag(op, NAN_ON_ERROR)
        elif ZERO_OTHER not in flags and _is_positive_zero(other) and _triangle(pred) == uplo:
            _set_flag(op, ZERO_OTHER)
        else:
            break
        rewriter.replace_op(sel, [factor])
        changed = True
    if changed:
        rewriter.modified(op)
    return changed
