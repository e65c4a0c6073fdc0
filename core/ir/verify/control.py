"""Ops with regions and functions: reduce, reduce_window, sort, map, while, if, case,
collectives, func.func/return/call (spec "Ops" and "Module, Function, Call and Return")."""

from __future__ import annotations

from oxla.errors import VerifyError
from oxla.ir.attributes import DenseElementsAttr, SymbolRefAttr, TypeAttr
from oxla.ir.operation import Operation, Region
from oxla.ir.types import FunctionType, Type
from oxla.ir.verify import register_verifier
from oxla.ir.verify.helpers import (
    elem,
    elems_ok,
    fail,
    fmt,
    in_range,
    int_attr,
    ints,
    is_bool,
    rank,
    shape,
    shapes_ok,
    types_ok,
    unique,
)


def region_inputs(region: Region) -> list[Type]:
    return [a.type for a in region.blocks[0].args] if region.blocks else []


def region_outputs(region: Region) -> list[Type]:
    if not region.blocks or not region.blocks[0].ops:
        return []
    return [v.type for v in region.blocks[0].ops[-1].operands]


def _all_ok(a: list[Type], b: list[Type]) -> bool:
    return len(a) == len(b) and all(types_ok(x, y) for x, y in zip(a, b))


def _scalar_body(op: Operation, cid: str, region: Region, elems: list, name: str) -> None:
    """``body`` has type ``(tensor<E0>, ..., tensor<E0>, ...) -> (tensor<E0>, ...)``."""
    ins, outs = region_inputs(region), region_outputs(region)
    n = len(elems)
    sig = f"({fmt(ins)}) -> ({fmt(outs)})"
    if len(ins) != 2 * n or len(outs) != n:
        fail(op, cid, f"{name} has type {sig}; expected {2 * n} scalar arguments and {n} "
                      "results")
    for t in [*ins, *outs]:
        if rank(t) not in (None, 0):
            fail(op, cid, f"{name} has type {sig}; expected rank-0 tensors")
    for i in range(n):
        if not (elems_ok(ins[i], ins[n + i]) and elems_ok(ins[i], outs[i])):
            fail(op, cid, f"{name} has type {sig}; expected argument {i}, argument {n + i} "
                          f"and result {i} of the same element type")


def _split(op: Operation) -> tuple[list, list]:
    n = len(op.operands) // 2
    return list(op.operands[:n]), list(op.operands[n:])


@register_verifier("stablehlo.reduce")
def verify_reduce(op: Operation) -> None:
    """``reduce`` (C1-C8)."""
    ins, inits = _split(op)
    if not ins or len(op.results) != len(ins) or len(op.operands) % 2:
        fail(op, "C3", f"{len(ins)} inputs, {len(inits)} init values and {len(op.results)} "
                       "results; expected the same positive number")
    for v in ins[1:]:
        if not shapes_ok(shape(ins[0].type), shape(v.type)):
            fail(op, "C1", f"inputs have types {ins[0].type} and {v.type}; expected the same "
                           "shape")
    for a, b in zip(ins, inits):
        if not elems_ok(a.type, b.type):
            fail(op, "C2", f"input has type {a.type} and init value {b.type}; expected the "
                           "same element type")
    dims = ints(op.attributes.get("dimensions"))
    s0 = shape(ins[0].type)
    if s0 is not None and not in_range(dims, 0, len(s0)):
        fail(op, "C4", f"dimensions {list(dims)} out of range for rank {len(s0)}")
    if not unique(dims):
        fail(op, "C5", f"dimensions {list(dims)} are not unique")
    _scalar_body(op, "C6", op.regions[0], [elem(v.type) for v in ins], "body")
    if s0 is not None:
        want = tuple(n for k, n in enumerate(s0) if k not in dims)
        for r in op.results:
            if not shapes_ok(want, shape(r.type)):
                fail(op, "C7", f"result has type {r.type}; expected shape {list(want)}")
    outs = region_outputs(op.regions[0])
    for r, t in zip(op.results, outs):
        if not elems_ok(r.type, t):
            fail(op, "C8", f"result has type {r.type}; expected the element type of {t}")


@register_verifier("stablehlo.reduce_window")
def verify_reduce_window(op: Operation) -> None:
    """``reduce_window`` (C1-C16)."""
    ins, inits = _split(op)
    if not ins or len(op.results) != len(ins) or len(op.operands) % 2:
        fail(op, "C1", f"{len(ins)} inputs, {len(inits)} init values and {len(op.results)} "
                       "results; expected the same positive number")
    for v in ins[1:]:
        if not shapes_ok(shape(ins[0].type), shape(v.type)):
            fail(op, "C2", f"inputs have types {ins[0].type} and {v.type}; expected the same "
                           "shape")
    for a, b in zip(ins, inits):
        if not elems_ok(a.type, b.type):
            fail(op, "C3", f"input has type {a.type} and init value {b.type}; expected the "
                           "same element type")
    s0 = shape(ins[0].type)
    if s0 is None:
        return
    n = len(s0)
    wd = ints(op.attributes.get("window_dimensions"))
    checks = [("window_dimensions", wd, "C4", "C5")]
    ws = ints(op.attributes.get("window_strides")) or (1,) * n
    bd = ints(op.attributes.get("base_dilations")) or (1,) * n
    wdl = ints(op.attributes.get("window_dilations")) or (1,) * n
    checks += [("window_strides", ws, "C6", "C7"), ("base_dilations", bd, "C8", "C9"),
               ("window_dilations", wdl, "C10", "C11")]
    for name, vals, c_size, c_pos in checks:
        if len(vals) != n:
            fail(op, c_size, f"{name} has size {len(vals)}; expected the input rank {n}")
        if any(v <= 0 for v in vals):
            fail(op, c_pos, f"{name} {list(vals)} must be positive")
    pad = op.attributes.get("padding")
    pads = [(0, 0)] * n
    if isinstance(pad, DenseElementsAttr):
        if pad.type.shape not in ((n, 2),) and not (n == 0 and pad.array.size == 0):
            fail(op, "C12", f"padding has type {pad.type}; expected shape [{n}, 2]")
        pads = [tuple(int(x) for x in row) for row in pad.array.reshape(n, 2)]
    _scalar_body(op, "C13", op.regions[0], [elem(v.type) for v in ins], "body")
    want = []
    for size, w, s, b, d, (lo, hi) in zip(s0, wd, ws, bd, wdl, pads):
        if size is None:
            want.append(None)
            continue
        dil = 0 if size == 0 else (size - 1) * b + 1
        padded = lo + dil + hi
        win = (w - 1) * d + 1
        want.append(0 if padded == 0 or win > padded else (padded - win) // s + 1)
    for r in op.results:
        if not shapes_ok(tuple(want), shape(r.type)):
            fail(op, "C15", f"result has type {r.type}; expected shape {want}")


@register_verifier("stablehlo.sort")
def verify_sort(op: Operation) -> None:
    """``sort`` (C1-C5)."""
    ins = op.operands
    if not ins:
        fail(op, "C1", "expects at least one input")
    if not _all_ok([v.type for v in ins], [r.type for r in op.results]):
        fail(op, "C2", f"inputs have types {fmt(v.type for v in ins)} and results "
                       f"{fmt(r.type for r in op.results)}; expected the same")
    for v in ins[1:]:
        if not shapes_ok(shape(ins[0].type), shape(v.type)):
            fail(op, "C3", f"inputs have types {ins[0].type} and {v.type}; expected the same "
                           "shape")
    rk = rank(ins[0].type)
    d = int_attr(op, "dimension", -1)
    if rk is not None and not -rk <= d < max(rk, 1):
        fail(op, "C4", f"dimension {d} out of range for rank {rk}")
    cin, cout = region_inputs(op.regions[0]), region_outputs(op.regions[0])
    ok = len(cin) == 2 * len(ins) and len(cout) == 1 and is_bool(elem(cout[0])) and rank(
        cout[0]) in (None, 0)
    ok = ok and all(elems_ok(cin[2 * i], v.type) and elems_ok(cin[2 * i + 1], v.type)
                    for i, v in enumerate(ins))
    if not ok:
        fail(op, "C5", f"comparator has type ({fmt(cin)}) -> ({fmt(cout)}); expected "
                       f"{2 * len(ins)} scalars of the input element types -> tensor<i1>")


@register_verifier("stablehlo.map")
def verify_map(op: Operation) -> None:
    """``map`` (C1-C4)."""
    ins, r = op.operands, op.results[0]
    if not ins:
        fail(op, "C2", "expects at least one input")
    for v in ins:
        if not shapes_ok(shape(v.type), shape(r.type)):
            fail(op, "C1", f"input has type {v.type} and result {r.type}; expected the same "
                           "shape")
    rk = rank(ins[0].type)
    dims = ints(op.attributes.get("dimensions"))
    if rk is not None and list(dims) != list(range(rk)):
        fail(op, "C3", f"dimensions {list(dims)}; expected {list(range(rk))}")
    cin, cout = region_inputs(op.regions[0]), region_outputs(op.regions[0])
    if len(cin) != len(ins) or len(cout) != 1 or not all(
            elems_ok(a, v.type) for a, v in zip(cin, ins)) or not elems_ok(cout[0], r.type):
        fail(op, "C4", f"computation has type ({fmt(cin)}) -> ({fmt(cout)}); expected "
                       "scalars of the input element types -> the result element type")


@register_verifier("stablehlo.while")
def verify_while(op: Operation) -> None:
    """``while`` (C1) cond signature, (C2) body signature, (C3) result types."""
    ts = [v.type for v in op.operands]
    cond, body = op.regions
    cin, cout = region_inputs(cond), region_outputs(cond)
    if not _all_ok(cin, ts) or len(cout) != 1 or not is_bool(elem(cout[0])) or rank(
            cout[0]) not in (None, 0):
        fail(op, "C1", f"cond has type ({fmt(cin)}) -> ({fmt(cout)}); expected "
                       f"({fmt(ts)}) -> tensor<i1>")
    bin_, bout = region_inputs(body), region_outputs(body)
    if not (_all_ok(bin_, ts) and _all_ok(bout, ts)):
        fail(op, "C2", f"body has type ({fmt(bin_)}) -> ({fmt(bout)}); expected "
                       f"({fmt(ts)}) -> ({fmt(ts)})")
    if not _all_ok([r.type for r in op.results], ts):
        fail(op, "C3", f"results have types {fmt(r.type for r in op.results)}; expected "
                       f"{fmt(ts)}")


def _branches(op: Operation, regions: list[Region], c_in: str, c_same: str, c_res: str):
    for r in regions:
        if region_inputs(r):
            fail(op, c_in, f"branch has arguments ({fmt(region_inputs(r))}); expected none")
    outs0 = region_outputs(regions[0])
    for r in regions[1:]:
        if not _all_ok(region_outputs(r), outs0):
            fail(op, c_same, f"branches return ({fmt(outs0)}) and ({fmt(region_outputs(r))})"
                             "; expected the same types")
    if not _all_ok([r.type for r in op.results], outs0):
        fail(op, c_res, f"results have types ({fmt(r.type for r in op.results)}); expected "
                        f"({fmt(outs0)})")


@register_verifier("stablehlo.if")
def verify_if(op: Operation) -> None:
    """``if`` (C1) no branch arguments, (C2) same branch outputs, (C3) result types."""
    p = op.operands[0].type
    if not is_bool(elem(p)) or rank(p) not in (None, 0):
        fail(op, "C1", f"pred has type {p}; expected tensor<i1>")
    _branches(op, list(op.regions), "C1", "C2", "C3")


@register_verifier("stablehlo.case")
def verify_case(op: Operation) -> None:
    """``case`` (C1) branches, (C2) no arguments, (C3-C4) output types."""
    if not op.regions:
        fail(op, "C1", "expects at least one branch")
    _branches(op, list(op.regions), "C2", "C3", "C4")


def _replica_groups(op: Operation, name: str = "replica_groups", cid: str = "C1") -> None:
    g = op.attributes.get(name)
    if not isinstance(g, DenseElementsAttr):
        return
    if len(g.type.shape) != 2:
        fail(op, "", f"{name} has type {g.type}; expected a 2-D tensor")
    vals = [int(v) for v in g.array.reshape(-1) if int(v) != -1]
    if name == "replica_groups" and not unique(vals):
        fail(op, cid, f"{name} has repeated ids")
    if any(v < 0 for v in vals):
        fail(op, cid, f"{name} has negative ids")


def _compute_body(op: Operation, cid: str) -> None:
    cin, cout = region_inputs(op.regions[0]), region_outputs(op.regions[0])
    if len(cin) != 2 or len(cout) != 1 or any(rank(t) not in (None, 0) for t in cin):
        fail(op, cid, f"computation has type ({fmt(cin)}) -> ({fmt(cout)}); expected "
                      "(tensor<E>, tensor<E>) -> tensor<E>")


@register_verifier("stablehlo.all_reduce")
def verify_all_reduce(op: Operation) -> None:
    """``all_reduce`` (C1) unique replica groups, (C5) computation, (C6) shapes."""
    _replica_groups(op, cid="C1")
    _compute_body(op, "C5")
    for a, r in zip(op.operands, op.results):
        if not shapes_ok(shape(a.type), shape(r.type)):
            fail(op, "C6", f"operand has type {a.type} and result {r.type}; expected the "
                           "same shape")


@register_verifier("stablehlo.reduce_scatter", "stablehlo.collective_reduce")
def verify_reduce_scatter(op: Operation) -> None:
    """``reduce_scatter`` (C2) unique replica groups, (C7) computation."""
    _replica_groups(op, cid="C2")
    _compute_body(op, "C7")


@register_verifier("stablehlo.all_gather")
def verify_all_gather(op: Operation) -> None:
    """``all_gather`` (C1) all_gather_dim in range, (C2) unique replica groups."""
    d = int_attr(op, "all_gather_dim")
    for v in op.operands:
        rk = rank(v.type)
        if rk is not None and not 0 <= d < rk:
            fail(op, "C1", f"all_gather_dim {d} out of range for {v.type}")
    _replica_groups(op, cid="C2")


@register_verifier("stablehlo.all_to_all")
def verify_all_to_all(op: Operation) -> None:
    """``all_to_all`` (C1-C2) dims in range, (C3) split_count > 0, (C5) groups."""
    for v in op.operands:
        rk = rank(v.type)
        for cid, name in (("C1", "split_dimension"), ("C4", "concat_dimension")):
            d = int_attr(op, name)
            if rk is not None and not 0 <= d < rk:
                fail(op, cid, f"{name} {d} out of range for {v.type}")
    if int_attr(op, "split_count", 1) <= 0:
        fail(op, "C3", "split_count must be positive")
    _replica_groups(op, cid="C5")


@register_verifier("stablehlo.cross-replica-sum")
def verify_cross_replica_sum(op: Operation) -> None:
    """``cross-replica-sum``: unique replica groups, result of the operand's type."""
    _replica_groups(op, cid="C1")
    if op.results and not types_ok(op.operands[0].type, op.results[0].type):
        fail(op, "C3", f"result has type {op.results[0].type}; expected "
                       f"{op.operands[0].type}")


@register_verifier("stablehlo.collective_broadcast")
def verify_collective_broadcast(op: Operation) -> None:
    """``collective_broadcast`` (C1) unique replica groups, (C3-C5) one result per data
    operand, of its type; with ``has_dynamic_root`` the last operand is the roots."""
    _replica_groups(op, cid="C1")
    dynamic = getattr(op.attributes.get("has_dynamic_root"), "value", False) is True
    data = op.operands[:-1] if dynamic else op.operands
    if not data:
        fail(op, "C4" if dynamic else "C3", "expected at least one data operand")
    if len(op.results) != len(data):
        fail(op, "C5", f"{len(op.results)} results for {len(data)} data operands")
    if dynamic:
        t = op.operands[-1].type
        if shape(t) != (len(data),) or str(elem(t)) != "i32":
            fail(op, "C4", f"roots operand has type {t}; expected tensor<{len(data)}xi32>")
    for i, (v, r) in enumerate(zip(data, op.results)):
        if not types_ok(v.type, r.type):
            fail(op, "C3", f"result #{i} has type {r.type}; expected {v.type}")


@register_verifier("stablehlo.collective_permute")
def verify_collective_permute(op: Operation) -> None:
    """``collective_permute`` (C1) pairs shape [N, 2], (C2-C3) unique, (C5) same type."""
    p = op.attributes.get("source_target_pairs")
    if isinstance(p, DenseElementsAttr):
        if len(p.type.shape) != 2 or p.type.shape[1] != 2:
            fail(op, "C1", f"source_target_pairs has type {p.type}; expected shape [N, 2]")
        arr = p.array.reshape(-1, 2)
        if not unique(int(x) for x in arr[:, 0]):
            fail(op, "C2", "source_target_pairs has repeated sources")
        if not unique(int(x) for x in arr[:, 1]):
            fail(op, "C3", "source_target_pairs has repeated targets")
    if not types_ok(op.operands[0].type, op.results[0].type):
        fail(op, "C5", f"result has type {op.results[0].type}; expected "
                       f"{op.operands[0].type}")


@register_verifier("stablehlo.optimization_barrier")
def verify_optimization_barrier(op: Operation) -> None:
    """``optimization_barrier`` (C1): ``type(operand...) = type(result...)``."""
    if not _all_ok([v.type for v in op.operands], [r.type for r in op.results]):
        fail(op, "C1", "operand and result types differ")


def _func_type(op: Operation) -> FunctionType | None:
    a = op.attributes.get("function_type")
    return a.type if isinstance(a, TypeAttr) and isinstance(a.type, FunctionType) else None


@register_verifier("func.func")
def verify_func(op: Operation) -> None:
    """``func.func``: entry block arguments match the function type's inputs."""
    ft = _func_type(op)
    if ft is None:
        fail(op, "", "requires a function_type attribute of function type")
    if op.regions and op.regions[0].blocks:
        args = region_inputs(op.regions[0])
        if not _all_ok(args, list(ft.inputs)):
            fail(op, "", f"entry block has arguments ({fmt(args)}); expected "
                         f"({fmt(ft.inputs)})")


@register_verifier("func.return")
def verify_return(op: Operation) -> None:
    """``func.return``: operand types match the enclosing function's result types."""
    parent = op.parent_op
    if parent is None or parent.name != "func.func":
        return
    ft = _func_type(parent)
    got = [v.type for v in op.operands]
    if ft is not None and not _all_ok(got, list(ft.results)):
        fail(op, "", f"has operand types ({fmt(got)}); expected the function result types "
                     f"({fmt(ft.results)})")


def _module_of(op: Operation) -> Operation | None:
    p = op.parent_op
    while p is not None and p.name != "builtin.module":
        p = p.parent_op
    return p


@register_verifier("func.call")
def verify_call(op: Operation) -> None:
    """``func.call``: the callee exists and its type matches operands and results."""
    c = op.attributes.get("callee")
    mod = _module_of(op)
    if not isinstance(c, SymbolRefAttr) or mod is None:
        return
    callee = next((f for f in mod.regions[0].blocks[0].ops
                   if getattr(f.attributes.get("sym_name"), "value", None) == c.root), None)
    if callee is None:
        fail(op, "", f"calls @{c.root}, which is not defined in the module")
    ft = _func_type(callee)
    if ft is None:
        return
    ins, outs = [v.type for v in op.operands], [r.type for r in op.results]
    if not (_all_ok(ins, list(ft.inputs)) and _all_ok(outs, list(ft.results))):
        fail(op, "", f"has type ({fmt(ins)}) -> ({fmt(outs)}); expected the callee type {ft}")


@register_verifier("builtin.module")
def verify_symbol_table(op: Operation) -> None:
    """``builtin.module`` is a symbol table: no two ops in its body share a ``sym_name``
    (MLIR's "redefinition of symbol"); otherwise callers and ``main`` would silently pick
    one of them."""
    seen: dict[str, Operation] = {}
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                name = getattr(inner.attributes.get("sym_name"), "value", None)
                if not isinstance(name, str):
                    continue
                first = seen.setdefault(name, inner)
                if first is not inner:
                    where = "" if first.loc.is_unknown() else f" at {first.loc}"
                    raise VerifyError(f"redefinition of symbol '{name}'", inner.loc,
                                      notes=[f"see existing symbol definition{where}"])


__all__ = ["region_inputs", "region_outputs", "VerifyError"]
