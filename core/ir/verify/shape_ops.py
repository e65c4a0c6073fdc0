"""Shape-manipulating ops: broadcast_in_dim, reshape, transpose, slice, dynamic_slice,
dynamic_update_slice, concatenate, pad, iota, reverse, get_dimension_size, fft, tuples
(spec "Ops", each op's "Constraints")."""

from __future__ import annotations

from oxla.ir.operation import Operation
from oxla.ir.types import ComplexType, TensorType, TupleType
from oxla.ir.verify import register_verifier
from oxla.ir.verify.helpers import (
    dim_ok,
    elem,
    elems_ok,
    fail,
    in_range,
    int_attr,
    ints,
    is_complex,
    is_float,
    rank,
    shape,
    shapes_ok,
    types_ok,
    unique,
)


def _elem_same(op: Operation, cid: str, a, b) -> None:
    if not elems_ok(a.type, b.type):
        fail(op, cid, f"operand has type {a.type} and result {b.type}; "
                      "expected the same element type")


@register_verifier("stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim")
def verify_broadcast_in_dim(op: Operation) -> None:
    """``broadcast_in_dim`` (C1) element type, (C2-C4) dims, (C5) sizes."""
    x, r = op.operands[0], op.results[0]
    _elem_same(op, "C1", x, r)
    dims = ints(op.attributes.get("broadcast_dimensions"))
    sx, sr = shape(x.type), shape(r.type)
    if sx is None:
        return
    if len(dims) != len(sx):
        fail(op, "C2", f"broadcast_dimensions has size {len(dims)}; expected the operand "
                       f"rank {len(sx)}")
    if sr is None:
        return
    if not in_range(dims, 0, len(sr)):
        fail(op, "C3", f"broadcast_dimensions {list(dims)} out of range for result rank "
                       f"{len(sr)}")
    if not unique(dims):
        fail(op, "C4", f"broadcast_dimensions {list(dims)} are not unique")
    for d, (n, rd) in enumerate(zip(sx, dims)):
        if n != 1 and not dim_ok(n, sr[rd]):
            fail(op, "C5", f"operand dimension {d} has size {n}; expected 1 or "
                           f"{sr[rd]} (result dimension {rd})")


@register_verifier("stablehlo.broadcast")
def verify_broadcast(op: Operation) -> None:
    """Deprecated ``broadcast``: result shape is broadcast_sizes + operand shape."""
    x, r = op.operands[0], op.results[0]
    _elem_same(op, "C1", x, r)
    sizes = ints(op.attributes.get("broadcast_sizes"))
    sx, sr = shape(x.type), shape(r.type)
    if sx is not None and sr is not None and not shapes_ok((*sizes, *sx), sr):
        fail(op, "C2", f"result has type {r.type}; expected shape {[*sizes, *sx]}")


@register_verifier("stablehlo.reshape")
def verify_reshape(op: Operation) -> None:
    """``reshape`` (C1) element type, (C2) ``size(operand) = size(result)``."""
    x, r = op.operands[0], op.results[0]
    _elem_same(op, "C1", x, r)
    if (isinstance(x.type, TensorType) and isinstance(r.type, TensorType)
            and x.type.is_static and r.type.is_static
            and x.type.num_elements != r.type.num_elements):
        fail(op, "C2", f"operand has type {x.type} and result {r.type}; expected the same "
                       "number of elements")


@register_verifier("stablehlo.transpose")
def verify_transpose(op: Operation) -> None:
    """``transpose`` (C1) element type, (C2) permutation, (C3) result shape."""
    x, r = op.operands[0], op.results[0]
    _elem_same(op, "C1", x, r)
    perm = ints(op.attributes.get("permutation"))
    sx = shape(x.type)
    if sx is None:
        return
    if sorted(perm) != list(range(len(sx))):
        fail(op, "C2", f"permutation {list(perm)} is not a permutation of range({len(sx)})")
    want = tuple(sx[p] for p in perm)
    if not shapes_ok(want, shape(r.type)):
        fail(op, "C3", f"result has type {r.type}; expected shape {_s(want)}")


def _s(dims) -> str:
    return "x".join("?" if d is None else str(d) for d in dims) or "scalar"


@register_verifier("stablehlo.slice")
def verify_slice(op: Operation) -> None:
    """``slice`` (C1) element type, (C2) sizes, (C3) bounds, (C4) strides, (C5) shape."""
    x, r = op.operands[0], op.results[0]
    _elem_same(op, "C1", x, r)
    st = ints(op.attributes.get("start_indices"))
    li = ints(op.attributes.get("limit_indices"))
    sd = ints(op.attributes.get("strides"))
    sx = shape(x.type)
    if sx is None:
        return
    if not len(st) == len(li) == len(sd) == len(sx):
        fail(op, "C2", f"start_indices, limit_indices and strides have sizes {len(st)}, "
                       f"{len(li)}, {len(sd)}; expected the operand rank {len(sx)}")
    for d, (a, b, n) in enumerate(zip(st, li, sx)):
        if not (0 <= a <= b and (n is None or b <= n)):
            fail(op, "C3", f"dimension {d}: expected 0 <= start ({a}) <= limit ({b}) <= "
                           f"size ({'?' if n is None else n})")
    if any(s <= 0 for s in sd):
        fail(op, "C4", f"strides {list(sd)} must be positive")
    want = tuple(-(-(b - a) // s) for a, b, s in zip(st, li, sd))
    if not shapes_ok(want, shape(r.type)):
        fail(op, "C5", f"result has type {r.type}; expected shape {_s(want)}")


@register_verifier("stablehlo.dynamic_slice")
def verify_dynamic_slice(op: Operation) -> None:
    """``dynamic_slice`` (C1) element type, (C2) sizes, (C3) index types, (C4-C5)."""
    x, *idx = op.operands
    r = op.results[0]
    _elem_same(op, "C1", x, r)
    sizes = ints(op.attributes.get("slice_sizes"))
    sx = shape(x.type)
    if sx is None:
        return
    if not len(idx) == len(sizes) == len(sx):
        fail(op, "C2", f"{len(idx)} start indices and {len(sizes)} slice sizes; expected the "
                       f"operand rank {len(sx)}")
    if len({str(v.type) for v in idx}) > 1:
        fail(op, "C3", "start indices have different types")
    for d, (s, n) in enumerate(zip(sizes, sx)):
        if s < 0 or (n is not None and s > n):
            fail(op, "C4", f"slice size {s} of dimension {d} not in [0, {n}]")
    if not shapes_ok(sizes, shape(r.type)):
        fail(op, "C5", f"result has type {r.type}; expected shape {_s(sizes)}")


@register_verifier("stablehlo.dynamic_update_slice")
def verify_dynamic_update_slice(op: Operation) -> None:
    """``dynamic_update_slice`` (C1-C6)."""
    x, u, *idx = op.operands
    r = op.results[0]
    if not types_ok(x.type, r.type):
        fail(op, "C1", f"operand has type {x.type} and result {r.type}; expected the same")
    if not elems_ok(u.type, x.type):
        fail(op, "C2", f"update has type {u.type}; expected element type of {x.type}")
    sx, su = shape(x.type), shape(u.type)
    if sx is None or su is None:
        return
    if len(su) != len(sx):
        fail(op, "C3", f"update has type {u.type}; expected rank {len(sx)}")
    if len(idx) != len(sx):
        fail(op, "C4", f"{len(idx)} start indices; expected the operand rank {len(sx)}")
    if len({str(v.type) for v in idx}) > 1:
        fail(op, "C5", "start indices have different types")
    for d, (a, b) in enumerate(zip(su, sx)):
        if a is not None and b is not None and a > b:
            fail(op, "C6", f"update dimension {d} has size {a}; expected at most {b}")


@register_verifier("stablehlo.concatenate")
def verify_concatenate(op: Operation) -> None:
    """``concatenate`` (C1-C6)."""
    ins, r = op.operands, op.results[0]
    if not ins:
        fail(op, "C3", "expects at least one input")
    for v in ins[1:]:
        if not elems_ok(ins[0].type, v.type):
            fail(op, "C1", f"inputs have types {ins[0].type} and {v.type}; expected the "
                           "same element type")
    dim = int_attr(op, "dimension")
    s0 = shape(ins[0].type)
    if s0 is None:
        return
    if not 0 <= dim < len(s0):
        fail(op, "C4", f"dimension {dim} out of range for rank {len(s0)}")
    total: int | None = 0
    for v in ins:
        sv = shape(v.type)
        if sv is None:
            total = None
            continue
        if len(sv) != len(s0) or not all(
                dim_ok(a, b) for k, (a, b) in enumerate(zip(s0, sv)) if k != dim):
            fail(op, "C2", f"inputs have types {ins[0].type} and {v.type}; expected the same "
                           f"shape except dimension {dim}")
        total = None if total is None or sv[dim] is None else total + sv[dim]
    _elem_same(op, "C5", ins[0], r)
    want = tuple(total if k == dim else n for k, n in enumerate(s0))
    if not shapes_ok(want, shape(r.type)):
        fail(op, "C6", f"result has type {r.type}; expected shape {_s(want)}")


@register_verifier("stablehlo.pad")
def verify_pad(op: Operation) -> None:
    """``pad`` (C1) element types, (C2) sizes, (C3) interior >= 0, (C4) result shape."""
    x, pv = op.operands
    r = op.results[0]
    if not (elems_ok(x.type, pv.type) and elems_ok(x.type, r.type)):
        fail(op, "C1", f"operand, padding_value and result have types {x.type}, {pv.type}, "
                       f"{r.type}; expected the same element type")
    lo = ints(op.attributes.get("edge_padding_low"))
    hi = ints(op.attributes.get("edge_padding_high"))
    it = ints(op.attributes.get("interior_padding"))
    sx = shape(x.type)
    if sx is None:
        return
    if not len(lo) == len(hi) == len(it) == len(sx):
        fail(op, "C2", f"padding sizes {len(lo)}, {len(hi)}, {len(it)}; expected the operand "
                       f"rank {len(sx)}")
    if any(i < 0 for i in it):
        fail(op, "C3", f"interior_padding {list(it)} must be non-negative")
    want = tuple(None if n is None else a + n + max(n - 1, 0) * i + b
                 for n, a, b, i in zip(sx, lo, hi, it))
    if not shapes_ok(want, shape(r.type)):
        fail(op, "C4", f"result has type {r.type}; expected shape {_s(want)}")


@register_verifier("stablehlo.iota", "stablehlo.dynamic_iota")
def verify_iota(op: Operation) -> None:
    """``iota`` (C1): ``0 <= iota_dimension < rank(output)``."""
    d = int_attr(op, "iota_dimension")
    rk = rank(op.results[0].type)
    if rk is not None and not 0 <= d < rk:
        fail(op, "C1", f"iota_dimension {d} out of range for rank {rk}")


@register_verifier("stablehlo.reverse")
def verify_reverse(op: Operation) -> None:
    """``reverse`` (C1) same type, (C2) unique dims, (C3) dims in range."""
    x, r = op.operands[0], op.results[0]
    if not types_ok(x.type, r.type):
        fail(op, "C1", f"operand has type {x.type} and result {r.type}; expected the same")
    dims = ints(op.attributes.get("dimensions"))
    if not unique(dims):
        fail(op, "C2", f"dimensions {list(dims)} are not unique")
    rk = rank(r.type)
    if rk is not None and not in_range(dims, 0, rk):
        fail(op, "C3", f"dimensions {list(dims)} out of range for rank {rk}")


@register_verifier("stablehlo.get_dimension_size")
def verify_get_dimension_size(op: Operation) -> None:
    """``get_dimension_size`` (C1): ``0 <= dimension < rank(operand)``."""
    d = int_attr(op, "dimension")
    rk = rank(op.operands[0].type)
    if rk is not None and not 0 <= d < rk:
        fail(op, "C1", f"dimension {d} out of range for rank {rk}")


@register_verifier("stablehlo.fft")
def verify_fft(op: Operation) -> None:
    """``fft`` (C1, C3) fft_length size, (C2) element types, (C4-C5) shapes."""
    x, r = op.operands[0].type, op.results[0].type
    ln = ints(op.attributes.get("fft_length"))
    kind = getattr(op.attributes.get("fft_type"), "value", "FFT")
    sx, sr = shape(x), shape(r)
    if sx is not None and len(ln) > len(sx):
        fail(op, "C1", f"fft_length {list(ln)} is longer than the operand rank {len(sx)}")
    if not 1 <= len(ln) <= 3:
        fail(op, "C3", f"fft_length {list(ln)} must have 1 to 3 entries")
    e, er = elem(x), elem(r)
    if e is None or er is None:
        return
    ok = {
        "FFT": is_complex(e) and e == er, "IFFT": is_complex(e) and e == er,
        "RFFT": is_float(e) and er == ComplexType(e),  # type: ignore[arg-type]
        "IRFFT": is_complex(e) and e == ComplexType(er),  # type: ignore[arg-type]
    }.get(kind, True)
    if not ok:
        fail(op, "C2", f"{kind} of {x} cannot give {r}")
    if sx is None or sr is None:
        return
    real = sx if kind == "RFFT" else sr if kind == "IRFFT" else None
    if real is not None and not shapes_ok(real[len(real) - len(ln):], ln):
        fail(op, "C4", f"trailing dimensions of the real tensor must be {list(ln)}")
    want = list(sx)
    if kind == "RFFT" and want and want[-1] is not None:
        want[-1] = 0 if want[-1] == 0 else want[-1] // 2 + 1
    if kind == "IRFFT" and sr:
        want[-1] = sr[-1]
    if not shapes_ok(tuple(want), sr):
        fail(op, "C5", f"result has type {r}; expected shape {_s(want)}")


@register_verifier("stablehlo.get_tuple_element")
def verify_get_tuple_element(op: Operation) -> None:
    """``get_tuple_element`` (C1) index in range, (C2) result type."""
    t = op.operands[0].type
    i = int_attr(op, "index")
    if not isinstance(t, TupleType):
        return
    if not 0 <= i < len(t.types):
        fail(op, "C1", f"index {i} out of range for {t}")
    if op.results[0].type != t.types[i]:
        fail(op, "C2", f"result has type {op.results[0].type}; expected {t.types[i]}")


@register_verifier("stablehlo.tuple")
def verify_tuple(op: Operation) -> None:
    """``tuple`` (C1): ``result`` has type ``tuple<type(val)...>``."""
    want = TupleType(tuple(v.type for v in op.operands))
    if op.results[0].type != want:
        fail(op, "C1", f"result has type {op.results[0].type}; expected {want}")


__all__ = ["verify_broadcast_in_dim", "verify_slice"]
