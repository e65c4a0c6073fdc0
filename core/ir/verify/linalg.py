"""Index and linear-algebra ops: dot_general, convolution, gather, scatter,
triangular_solve, cholesky, batch_norm_*, rng_bit_generator, custom_call
(spec "Ops", each op's "Constraints")."""

from __future__ import annotations

from oxla.ir.attributes import ArrayAttr, ConvDimensionNumbers, DenseElementsAttr
from oxla.ir.operation import Operation
from oxla.ir.verify import register_verifier
from oxla.ir.verify.control import _scalar_body
from oxla.ir.verify.helpers import (
    dim_ok,
    elem,
    elems_ok,
    fail,
    field,
    in_range,
    int_attr,
    ints,
    is_quant,
    rank,
    shape,
    shapes_ok,
    types_ok,
    unique,
)


def _sorted(xs) -> bool:
    return list(xs) == sorted(xs)


@register_verifier("stablehlo.dot_general")
def verify_dot_general(op: Operation) -> None:
    """``dot_general`` (C1-C13)."""
    lhs, rhs = op.operands
    dn = op.attributes.get("dot_dimension_numbers")
    lb, rb = field(dn, "lhs_batching_dimensions"), field(dn, "rhs_batching_dimensions")
    lc, rc = field(dn, "lhs_contracting_dimensions"), field(dn, "rhs_contracting_dimensions")
    if len(lb) != len(rb):
        fail(op, "C1", f"lhs_batching_dimensions {list(lb)} and rhs_batching_dimensions "
                       f"{list(rb)} have different sizes")
    if len(lc) != len(rc):
        fail(op, "C2", f"lhs_contracting_dimensions {list(lc)} and "
                       f"rhs_contracting_dimensions {list(rc)} have different sizes")
    if not unique([*lb, *lc]):
        fail(op, "C3", "lhs batching and contracting dimensions are not unique")
    if not unique([*rb, *rc]):
        fail(op, "C4", "rhs batching and contracting dimensions are not unique")
    sl, sr = shape(lhs.type), shape(rhs.type)
    if sl is not None:
        if not in_range(lb, 0, len(sl)):
            fail(op, "C5", f"lhs_batching_dimensions {list(lb)} out of range for {lhs.type}")
        if not in_range(lc, 0, len(sl)):
            fail(op, "C6", f"lhs_contracting_dimensions {list(lc)} out of range for "
                           f"{lhs.type}")
    if sr is not None:
        if not in_range(rb, 0, len(sr)):
            fail(op, "C7", f"rhs_batching_dimensions {list(rb)} out of range for {rhs.type}")
        if not in_range(rc, 0, len(sr)):
            fail(op, "C8", f"rhs_contracting_dimensions {list(rc)} out of range for "
                           f"{rhs.type}")
    if sl is None or sr is None:
        return
    for a, b in zip(lb, rb):
        if not dim_ok(sl[a], sr[b]):
            fail(op, "C9", f"batching dimensions {a} of {lhs.type} and {b} of {rhs.type} "
                           "differ")
    for a, b in zip(lc, rc):
        if not dim_ok(sl[a], sr[b]):
            fail(op, "C10", f"contracting dimensions {a} of {lhs.type} and {b} of {rhs.type}"
                            " differ")
    pc = op.attributes.get("precision_config")
    if isinstance(pc, ArrayAttr) and len(pc) not in (0, 2):
        fail(op, "C11", f"precision_config has {len(pc)} entries; expected 2")
    want = ([sl[d] for d in lb] + [n for k, n in enumerate(sl) if k not in (*lb, *lc)]
            + [n for k, n in enumerate(sr) if k not in (*rb, *rc)])
    if not shapes_ok(tuple(want), shape(op.results[0].type)):
        fail(op, "C12", f"result has type {op.results[0].type}; expected shape {want}")
    el, er = elem(lhs.type), elem(rhs.type)
    if not is_quant(el) and not is_quant(er) and el != er:
        fail(op, "C13", f"lhs has type {lhs.type} and rhs {rhs.type}; expected the same "
                        "element type")


@register_verifier("stablehlo.dot")
def verify_dot(op: Operation) -> None:
    """Deprecated ``dot``: vector/matrix product of rank <= 2 operands."""
    sl, sr = shape(op.operands[0].type), shape(op.operands[1].type)
    if sl is None or sr is None:
        return
    if not (1 <= len(sl) <= 2 and 1 <= len(sr) <= 2) or not dim_ok(sl[-1], sr[0]):
        fail(op, "C1", f"cannot multiply {op.operands[0].type} by {op.operands[1].type}")


def _conv_dims(op: Operation):
    d = op.attributes.get("dimension_numbers")
    return d if isinstance(d, ConvDimensionNumbers) else None


@register_verifier("stablehlo.convolution")
def verify_convolution(op: Operation) -> None:
    """``convolution`` (C1-C25)."""
    lhs, rhs = op.operands
    sl, sr = shape(lhs.type), shape(rhs.type)
    d = _conv_dims(op)
    if sl is None or sr is None or d is None:
        return
    n = len(sl)
    if len(sr) != n:
        fail(op, "C1", f"lhs has type {lhs.type} and rhs {rhs.type}; expected the same rank")
    ws = ints(op.attributes.get("window_strides")) or (1,) * (n - 2)
    ld = ints(op.attributes.get("lhs_dilation")) or (1,) * (n - 2)
    rd = ints(op.attributes.get("rhs_dilation")) or (1,) * (n - 2)
    for cs, cp, name, v in (("C2", "C3", "window_strides", ws), ("C5", "C6", "lhs_dilation", ld),
                            ("C7", "C8", "rhs_dilation", rd)):
        if len(v) != n - 2:
            fail(op, cs, f"{name} has size {len(v)}; expected {n - 2}")
        if any(x <= 0 for x in v):
            fail(op, cp, f"{name} {list(v)} must be positive")
    pad = op.attributes.get("padding")
    pads = [(0, 0)] * (n - 2)
    if isinstance(pad, DenseElementsAttr):
        if pad.array.size != 2 * (n - 2):
            fail(op, "C4", f"padding has type {pad.type}; expected shape [{n - 2}, 2]")
        pads = [tuple(int(x) for x in row) for row in pad.array.reshape(n - 2, 2)]
    fgc, bgc = int_attr(op, "feature_group_count", 1), int_attr(op, "batch_group_count", 1)
    if fgc <= 0:
        fail(op, "C21", f"feature_group_count {fgc} must be positive")
    if bgc <= 0:
        fail(op, "C22", f"batch_group_count {bgc} must be positive")
    if fgc != 1 and bgc != 1:
        fail(op, "C23", "feature_group_count or batch_group_count must be 1")
    ib, if_ = sl[d.input_batch_dimension], sl[d.input_feature_dimension]
    if ib is not None and ib % bgc:
        fail(op, "C10", f"input batch size {ib} is not a multiple of batch_group_count {bgc}")
    if if_ is not None and if_ % fgc:
        fail(op, "C11", f"input feature size {if_} is not a multiple of feature_group_count "
                        f"{fgc}")
    for cid, dims in (("C13", [d.input_batch_dimension, *d.input_spatial_dimensions,
                               d.input_feature_dimension]),
                      ("C18", [*d.kernel_spatial_dimensions, d.kernel_input_feature_dimension,
                               d.kernel_output_feature_dimension]),
                      ("C20", [d.output_batch_dimension, *d.output_spatial_dimensions,
                               d.output_feature_dimension])):
        if len(dims) != n or not unique(dims) or not in_range(dims, 0, n):
            fail(op, cid, f"dimension numbers {dims} are not a permutation of range({n})")
    kif, kof = sr[d.kernel_input_feature_dimension], sr[d.kernel_output_feature_dimension]
    if if_ is not None and kif is not None and kif != if_ // fgc:
        fail(op, "C14", f"kernel input feature size {kif}; expected {if_ // fgc}")
    if kof is not None and kof % bgc:
        fail(op, "C15", f"kernel output feature size {kof} is not a multiple of "
                        f"batch_group_count {bgc}")
    if kof is not None and kof % fgc:
        fail(op, "C16", f"kernel output feature size {kof} is not a multiple of "
                        f"feature_group_count {fgc}")
    pc = op.attributes.get("precision_config")
    if isinstance(pc, ArrayAttr) and len(pc) not in (0, 2):
        fail(op, "C24", f"precision_config has {len(pc)} entries; expected 2")
    so = shape(op.results[0].type)
    if so is None or len(so) != n:
        return
    want: list[int | None] = [None] * n
    want[d.output_batch_dimension] = None if ib is None else ib // bgc
    want[d.output_feature_dimension] = kof
    for i, (li, ki, oi) in enumerate(zip(d.input_spatial_dimensions,
                                         d.kernel_spatial_dimensions,
                                         d.output_spatial_dimensions)):
        a, k = sl[li], sr[ki]
        if a is None or k is None:
            continue
        dil = 0 if a == 0 else (a - 1) * ld[i] + 1
        padded = pads[i][0] + dil + pads[i][1]
        win = 0 if k == 0 else (k - 1) * rd[i] + 1
        want[oi] = 0 if padded == 0 or win > padded else (padded - win) // ws[i] + 1
    if not shapes_ok(tuple(want), so):
        fail(op, "C25", f"result has type {op.results[0].type}; expected shape {want}")


def _batch_dims(rank_: int, offset: tuple) -> list[int]:
    return [k for k in range(rank_) if k not in offset]


@register_verifier("stablehlo.gather", "stablehlo.dynamic_gather")
def verify_gather(op: Operation) -> None:
    """``gather`` (C1-C23)."""
    x, idx = op.operands[0], op.operands[1]
    dn = op.attributes.get("dimension_numbers")
    od, cd = field(dn, "offset_dims"), field(dn, "collapsed_slice_dims")
    ob, sb = field(dn, "operand_batching_dims"), field(dn, "start_indices_batching_dims")
    sim, ivd = field(dn, "start_index_map"), field(dn, "index_vector_dim", 0)
    sx, si = shape(x.type), shape(idx.type)
    if sx is None or si is None:
        return
    if len(sx) != len(od) + len(cd) + len(ob):
        fail(op, "C1", f"operand rank {len(sx)} is not size(offset_dims) + "
                       "size(collapsed_slice_dims) + size(operand_batching_dims)")
    if not 0 <= ivd <= len(si):
        fail(op, "C2", f"index_vector_dim {ivd} out of range for {idx.type}")
    nidx = si[ivd] if ivd < len(si) else 1
    if nidx is not None and len(sim) != nidx:
        fail(op, "C3", f"start_index_map has size {len(sim)}; expected {nidx}")
    if not (unique(od) and _sorted(od)):
        fail(op, "C4", f"offset_dims {list(od)} must be unique and sorted")
    if not unique([*cd, *ob]):
        fail(op, "C6", "collapsed_slice_dims and operand_batching_dims are not unique")
    if not _sorted(cd):
        fail(op, "C7", f"collapsed_slice_dims {list(cd)} must be sorted")
    if not in_range(cd, 0, len(sx)):
        fail(op, "C8", f"collapsed_slice_dims {list(cd)} out of range")
    if not in_range(ob, 0, len(sx)):
        fail(op, "C11", f"operand_batching_dims {list(ob)} out of range")
    if not unique(sb):
        fail(op, "C13", f"start_indices_batching_dims {list(sb)} are not unique")
    if not in_range(sb, 0, len(si)):
        fail(op, "C14", f"start_indices_batching_dims {list(sb)} out of range")
    if ivd in sb:
        fail(op, "C15", f"index_vector_dim {ivd} is in start_indices_batching_dims")
    if len(ob) != len(sb):
        fail(op, "C16", "operand_batching_dims and start_indices_batching_dims differ in size")
    if not unique([*sim, *ob]):
        fail(op, "C18", "start_index_map and operand_batching_dims are not unique")
    if not in_range(sim, 0, len(sx)):
        fail(op, "C19", f"start_index_map {list(sim)} out of range")
    if op.name == "stablehlo.dynamic_gather":
        return
    ss = ints(op.attributes.get("slice_sizes"))
    if any(ss[k] > 1 for k in cd if k < len(ss)):
        fail(op, "C9", "slice sizes of collapsed_slice_dims must be at most 1")
    if any(ss[k] > 1 for k in ob if k < len(ss)):
        fail(op, "C12", "slice sizes of operand_batching_dims must be at most 1")
    if len(ss) != len(sx):
        fail(op, "C20", f"slice_sizes has size {len(ss)}; expected the operand rank {len(sx)}")
    for k, (s, n) in enumerate(zip(ss, sx)):
        if s < 0 or (n is not None and s > n):
            fail(op, "C21", f"slice size {s} of dimension {k} not in [0, {n}]")
    sr = shape(op.results[0].type)
    if sr is None:
        return
    if not in_range(od, 0, len(sr)):
        fail(op, "C5", f"offset_dims {list(od)} out of range for {op.results[0].type}")
    batch = [n for k, n in enumerate(si) if k != ivd]
    offs = [s for k, s in enumerate(ss) if k not in cd and k not in ob]
    want: list[int | None] = []
    bi = oi = 0
    for k in range(len(batch) + len(offs)):
        if k in od:
            want.append(offs[oi] if oi < len(offs) else None)
            oi += 1
        else:
            want.append(batch[bi] if bi < len(batch) else None)
            bi += 1
    if not shapes_ok(tuple(want), sr):
        fail(op, "C22", f"result has type {op.results[0].type}; expected shape {want}")
    if not elems_ok(x.type, op.results[0].type):
        fail(op, "C23", f"result has type {op.results[0].type}; expected the element type of "
                        f"{x.type}")


@register_verifier("stablehlo.scatter")
def verify_scatter(op: Operation) -> None:
    """``scatter`` (C1-C25)."""
    n = (len(op.operands) - 1) // 2
    ins, idx, ups = op.operands[:n], op.operands[n], op.operands[n + 1:]
    if n == 0 or len(ups) != n:
        fail(op, "C5", f"{n} inputs and {len(ups)} updates; expected the same positive number")
    dn = op.attributes.get("scatter_dimension_numbers")
    uwd, iwd = field(dn, "update_window_dims"), field(dn, "inserted_window_dims")
    ib, sib = field(dn, "input_batching_dims"), field(dn, "scatter_indices_batching_dims")
    sdod, ivd = field(dn, "scatter_dims_to_operand_dims"), field(dn, "index_vector_dim", 0)
    for v in ins[1:]:
        if not shapes_ok(shape(ins[0].type), shape(v.type)):
            fail(op, "C1", "inputs have different shapes")
    for v in ups[1:]:
        if not shapes_ok(shape(ups[0].type), shape(v.type)):
            fail(op, "C3", "updates have different shapes")
    for a, b in zip(ins, ups):
        if not elems_ok(a.type, b.type):
            fail(op, "C6", f"update has type {b.type}; expected the element type of {a.type}")
    sx, si, su = shape(ins[0].type), shape(idx.type), shape(ups[0].type)
    if sx is None or si is None or su is None:
        return
    if len(sx) != len(uwd) + len(iwd) + len(ib):
        fail(op, "C2", f"input rank {len(sx)} is not size(update_window_dims) + "
                       "size(inserted_window_dims) + size(input_batching_dims)")
    if not (unique(uwd) and _sorted(uwd)):
        fail(op, "C7", f"update_window_dims {list(uwd)} must be unique and sorted")
    if not in_range(uwd, 0, len(su)):
        fail(op, "C8", f"update_window_dims {list(uwd)} out of range")
    if not unique([*iwd, *ib]):
        fail(op, "C9", "inserted_window_dims and input_batching_dims are not unique")
    if not _sorted(iwd):
        fail(op, "C10", f"inserted_window_dims {list(iwd)} must be sorted")
    if not in_range(iwd, 0, len(sx)):
        fail(op, "C11", f"inserted_window_dims {list(iwd)} out of range")
    if not in_range(ib, 0, len(sx)):
        fail(op, "C13", f"input_batching_dims {list(ib)} out of range")
    if not unique(sib) or not in_range(sib, 0, len(si)):
        fail(op, "C14", f"scatter_indices_batching_dims {list(sib)} invalid")
    if ivd in sib:
        fail(op, "C16", f"index_vector_dim {ivd} is in scatter_indices_batching_dims")
    if len(ib) != len(sib):
        fail(op, "C17", "input_batching_dims and scatter_indices_batching_dims differ in size")
    if not 0 <= ivd <= len(si):
        fail(op, "C22", f"index_vector_dim {ivd} out of range for {idx.type}")
    nidx = si[ivd] if ivd < len(si) else 1
    if nidx is not None and len(sdod) != nidx:
        fail(op, "C19", f"scatter_dims_to_operand_dims has size {len(sdod)}; expected {nidx}")
    if not unique([*sdod, *ib]):
        fail(op, "C20", "scatter_dims_to_operand_dims and input_batching_dims are not unique")
    if not in_range(sdod, 0, len(sx)):
        fail(op, "C21", f"scatter_dims_to_operand_dims {list(sdod)} out of range")
    scat = [d for k, d in enumerate(si) if k != ivd]
    upd_scatter = [d for k, d in enumerate(su) if k not in uwd]
    if len(upd_scatter) != len(scat) or not shapes_ok(tuple(upd_scatter), tuple(scat)):
        fail(op, "C4", f"updates have type {ups[0].type}; expected scatter dimensions {scat}")
    _scalar_body(op, "C23", op.regions[0], [elem(v.type) for v in ins], "update_computation")
    for a, r in zip(ins, op.results):
        if not shapes_ok(shape(a.type), shape(r.type)):
            fail(op, "C24", f"result has type {r.type}; expected the shape of {a.type}")


@register_verifier("stablehlo.triangular_solve")
def verify_triangular_solve(op: Operation) -> None:
    """``triangular_solve`` (C1-C4)."""
    a, b = op.operands
    if not elems_ok(a.type, b.type):
        fail(op, "C1", f"a has type {a.type} and b {b.type}; expected the same element type")
    sa, sb = shape(a.type), shape(b.type)
    if sa is None or sb is None:
        return
    if not (2 <= len(sa) == len(sb)):
        fail(op, "C2", f"a has type {a.type} and b {b.type}; expected the same rank >= 2")
    left = getattr(op.attributes.get("left_side"), "value", False)
    k = sb[-2] if left else sb[-1]
    if not (dim_ok(sa[-2], sa[-1]) and dim_ok(sa[-1], k) and shapes_ok(sa[:-2], sb[:-2])):
        fail(op, "C3", f"a has type {a.type} and b {b.type}; shapes are incompatible")
    if not types_ok(b.type, op.results[0].type):
        fail(op, "C4", f"result has type {op.results[0].type}; expected {b.type}")


@register_verifier("stablehlo.cholesky")
def verify_cholesky(op: Operation) -> None:
    """``cholesky`` (C1) same type, (C2) rank >= 2, (C3) square."""
    a = op.operands[0]
    if not types_ok(a.type, op.results[0].type):
        fail(op, "C1", f"result has type {op.results[0].type}; expected {a.type}")
    sa = shape(a.type)
    if sa is None:
        return
    if len(sa) < 2:
        fail(op, "C2", f"a has type {a.type}; expected rank >= 2")
    if not dim_ok(sa[-2], sa[-1]):
        fail(op, "C3", f"a has type {a.type}; expected square matrices")


def _batch_norm(op: Operation, per_feature: list, same_shape: list, c_sizes: list[str],
                c_type: str) -> None:
    x = op.operands[0]
    fi = int_attr(op, "feature_index")
    rk = rank(x.type)
    if rk is not None and not 0 <= fi < rk:
        fail(op, "C1", f"feature_index {fi} out of range for {x.type}")
    for v in [*per_feature, *same_shape]:
        if not elems_ok(x.type, v.type):
            fail(op, "C2", f"{v.type} and {x.type}; expected the same element type")
    sx = shape(x.type)
    if sx is None or rk is None:
        return
    for cid, v in zip(c_sizes, per_feature):
        sv = shape(v.type)
        if sv is not None and (len(sv) != 1 or not dim_ok(sv[0], sx[fi])):
            fail(op, cid, f"{v.type}; expected a 1-D tensor of size {sx[fi]}")
    for v in same_shape:
        if not shapes_ok(sx, shape(v.type)):
            fail(op, c_type, f"{v.type}; expected the shape of {x.type}")


@register_verifier("stablehlo.batch_norm_inference")
def verify_batch_norm_inference(op: Operation) -> None:
    """``batch_norm_inference`` (C1-C7)."""
    _batch_norm(op, list(op.operands[1:]), [op.results[0]], ["C3", "C4", "C5", "C6"], "C7")


@register_verifier("stablehlo.batch_norm_training")
def verify_batch_norm_training(op: Operation) -> None:
    """``batch_norm_training`` (C1-C7)."""
    _batch_norm(op, [*op.operands[1:], *op.results[1:]], [op.results[0]],
                ["C3", "C4", "C5", "C6"], "C7")


@register_verifier("stablehlo.batch_norm_grad")
def verify_batch_norm_grad(op: Operation) -> None:
    """``batch_norm_grad`` (C1-C5)."""
    x, scale, mean, var, go = op.operands
    _batch_norm(op, [scale, mean, var, *op.results[1:]], [go, op.results[0]],
                ["C5"] * 5, "C3")


@register_verifier("stablehlo.rng_bit_generator")
def verify_rng_bit_generator(op: Operation) -> None:
    """``rng_bit_generator`` (C1) state types, (C2) state size per algorithm."""
    s, out = op.operands[0], op.results[0]
    if not types_ok(s.type, out.type):
        fail(op, "C1", f"output_state has type {out.type}; expected {s.type}")
    alg = getattr(op.attributes.get("rng_algorithm"), "value", "DEFAULT")
    ss = shape(s.type)
    if ss is None or None in ss:
        return
    size = 1
    for d in ss:
        size *= d
    if (alg == "THREE_FRY" and size != 2) or (alg == "PHILOX" and size not in (2, 3)):
        fail(op, "C2", f"initial_state has type {s.type}; {alg} expects 2"
                       f"{' or 3' if alg == 'PHILOX' else ''} elements")


@register_verifier("stablehlo.custom_call")
def verify_custom_call(op: Operation) -> None:
    """``custom_call``: layouts, when given, have one entry per operand and result."""
    for name, vals in (("operand_layouts", op.operands), ("result_layouts", op.results)):
        lay = op.attributes.get(name)
        if isinstance(lay, ArrayAttr) and len(lay) != len(vals):
            fail(op, "", f"{name} has {len(lay)} entries; expected {len(vals)}")


__all__ = ["verify_dot_general", "verify_gather", "verify_scatter"]
