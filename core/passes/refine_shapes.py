"""``stablehlo-refine-shapes``: static shapes propagated from the arguments."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxla.errors import PassError
from oxla.ir import Module, Operation, TypeAttr, parse_type
from oxla.ir import types as T
from oxla.ir.opdef import ELEMENTWISE, SAME_OPERANDS_AND_RESULT_SHAPE
from oxla.ir.types import FunctionType
from oxla.passes import canon_shape
from oxla.passes.refine_dynamic import REFINE_PATTERNS, conv_shape, real_dynamic_slice_shape
from oxla.passes.rewrite import CORE_PATTERNS, GreedyDriver, PatternSet
from oxla.passes.util import constant_array

_STATIC_PATTERNS = {
    canon_shape.dynamic_reshape_static,
    canon_shape.dynamic_broadcast_static,
    canon_shape.dynamic_iota_static,
    canon_shape.dynamic_slice_constant,
}


_SHAPE_OPERAND = {
    "stablehlo.dynamic_reshape": 1,
    "stablehlo.dynamic_broadcast_in_dim": 1,
    "stablehlo.dynamic_iota": 0,
}
"""Dynamic ops whose result shape is the value of one operand."""


def _refine_op(op: Operation) -> bool:
    """Gives ``op`` the static result types its type rule infers; True on a change."""
    if all(not isinstance(r.type, T.TensorType) or r.type.is_static for r in op.results):
        return False
    shape_operand = _SHAPE_OPERAND.get(op.name)
    if shape_operand is not None:
        arr = constant_array(op.operands[shape_operand])
        r = op.results[0]
        if arr is not None and isinstance(r.type, T.TensorType) and arr.size == r.type.rank:
            r.type = r.type.with_shape(tuple(int(d) for d in arr.reshape(-1)))
            return True
        return False
    try:
        inferred = _infer(op)
    except Exception:  # noqa: BLE001 - a rule that cannot infer leaves the type
        return False
    changed = False
    for r, t in zip(op.results, inferred or ()):
        if (
            isinstance(t, T.TensorType)
            and t.is_static
            and isinstance(r.type, T.TensorType)
            and t.rank == r.type.rank
            and t.shape != r.type.shape
            and all(d is None or d == n for d, n in zip(r.type.shape, t.shape))
        ):
            # Only the shape is refined: the element type stays what the program says
            # (dot_general's result type may be wider than its operands').
            r.type = r.type.with_shape(t.shape)
            changed = True
    return changed


def _fold_dimension_size(op: Operation) -> bool:
    """``get_dimension_size`` of a static dimension becomes a constant; True if so."""
    if op.name != "stablehlo.get_dimension_size":
        return False
    shape = _static_shape(op.operands[0])
    if shape is None:
        return False
    from oxla.passes.util import make_constant

    r = op.results[0]
    c = make_constant(np.array(shape[int(op.attributes["dimension"].value)], r.type.element_type.dtype),
                      r.type, op.loc)
    op.parent.insert_before(op, c)
    r.replace_all_uses_with(c.results[0])
    op.erase()
    return True


def _static_shape(v) -> tuple[int, ...] | None:
    t = v.type
    return tuple(t.shape) if isinstance(t, T.TensorType) and t.is_static else None


def _infer(op: Operation) -> list | None:
    """Result types for ``op`` from its operands: the op table's rule, else the
    builder's (``oxla.ir.infer``), else the shape of a same-shaped operand
    (elementwise ops, ``scatter``, ``select_and_scatter``), ``reduce_window``'s
    window arithmetic (spec ``reduce_window`` C16), ``convolution``'s (C25-C27) or
    ``real_dynamic_slice``'s sizes (:mod:`oxla.passes.refine_dynamic`). Only shapes matter here: the
    caller keeps each result's element type and rank."""
    od = op.opdef
    if od is not None and od.infer is not None:
        return od.infer([v.type for v in op.operands], op.attributes, op.regions)
    from oxla.ir.infer import INFER_RULES, infer_result_types

    if op.name in INFER_RULES:  # the builder's rules: take only the shapes
        shapes = [getattr(t, "shape", None)
                  for t in infer_result_types(op.name, [v.type for v in op.operands],
                                              op.attributes)]
        return [r.type.with_shape(tuple(s)) if s is not None
                and isinstance(r.type, T.TensorType) and len(s) == r.type.rank else r.type
                for r, s in zip(op.results, shapes)]
    shapes: list = []
    if op.has_trait(SAME_OPERANDS_AND_RESULT_SHAPE) or op.has_trait(ELEMENTWISE):
        shape = next((s for v in op.operands if (s := _static_shape(v)) is not None
                      and len(s) == op.results[0].type.rank), None)
        shapes = [shape] * len(op.results)
    elif op.name == "stablehlo.scatter":
        shapes = [_static_shape(v) for v in op.operands[:len(op.results)]]
    elif op.name == "stablehlo.select_and_scatter":
        shapes = [_static_shape(op.operands[0])]
    elif op.name == "stablehlo.reduce_window":
        shapes = [_reduce_window_shape(op)] * len(op.results)
    elif op.name == "stablehlo.real_dynamic_slice":
        shapes = [real_dynamic_slice_shape(op)]
    elif op.name == "stablehlo.convolution":
        shapes = [conv_shape(op)]
    return [r.type.with_shape(s) if s is not None and isinstance(r.type, T.TensorType)
            and len(s) == r.type.rank else r.type for r, s in zip(op.results, shapes)]


def _reduce_window_shape(op: Operation) -> tuple[int, ...] | None:
    shape = _static_shape(op.operands[0])
    if shape is None:
        return None
    rank = len(shape)

    def ints(name: str, default: int) -> list[int]:
        v = op.attr(name)
        return [int(x) for x in v] if v is not None else [default] * rank

    wd, ws = ints("window_dimensions", 1), ints("window_strides", 1)
    bd, wdl = ints("base_dilations", 1), ints("window_dilations", 1)
    pad = op.attributes.get("padding")
    pad = getattr(pad, "array", None)
    pad = pad.reshape(rank, 2).tolist() if pad is not None and pad.size else [[0, 0]] * rank
    out = []
    for n, w, st, b, d, (lo, hi) in zip(shape, wd, ws, bd, wdl, pad):
        padded = (0 if n == 0 else (n - 1) * b + 1) + lo + hi
        span = (w - 1) * d + 1
        out.append(0 if padded < span else (padded - span) // st + 1)
    return tuple(out)


@dataclass(frozen=True)
class RefineShapes:
    """Makes shapes static, starting from the entry function's argument types.

    ``arg_shapes`` (``"tensor<2x3xf32>;tensor<4xi32>"``) replaces the argument types of
    ``main`` first; otherwise the signature's static types are used. Each op's type
    rule then gives static result types; dynamic ops whose shape operands became
    constants turn into static ones; function result types are updated.

    Assumes: the given argument types are compatible with the existing ones.
    """

    name: str = "stablehlo-refine-shapes"
    arg_shapes: str = ""
    max_iterations: int = 8

    def run(self, module: Module) -> None:
        if self.arg_shapes:
            self._set_args(module)
        patterns = PatternSet([p for p in CORE_PATTERNS if p.fn in _STATIC_PATTERNS]
                              + REFINE_PATTERNS)
        from oxla.passes.fold import fold_op

        for _ in range(self.max_iterations):
            changed = False
            for op in list(module.walk()):
                if op.parent is not None:
                    changed |= _refine_op(op) or _fold_dimension_size(op)
            changed |= GreedyDriver(patterns, 2, fold=lambda o, rw: fold_op(o, rw, 1024)).run(
                module.op
            )
            if not changed:
                break
        for f in module.functions:
            self._update_signature(f)

    def _set_args(self, module: Module) -> None:
        f = module.main
        types = [parse_type(s.strip()) for s in self.arg_shapes.split(";") if s.strip()]
        args = f.regions[0].blocks[0].args
        if len(types) != len(args):
            raise PassError(f"arg-shapes gives {len(types)} types for {len(args)} arguments")
        for a, t in zip(args, types):
            a.type = t

    @staticmethod
    def _update_signature(f: Operation) -> None:
        if not f.regions or not f.regions[0].blocks:
            return
        block = f.regions[0].blocks[0]
        ret = block.ops[-1]
        ft = FunctionType(tuple(a.type for a in block.args), tuple(v.type for v in ret.operands))
        f.attributes["function_type"] = TypeAttr(ft)
