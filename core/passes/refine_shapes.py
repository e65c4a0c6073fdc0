"""``stablehlo-refine-shapes``: static shapes propagated from the arguments."""

from __future__ import annotations

from dataclasses import dataclass

from oxla.errors import PassError
from oxla.ir import Module, Operation, TypeAttr, parse_type
from oxla.ir import types as T
from oxla.ir.types import FunctionType
from oxla.passes import canon_shape
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
    od = op.opdef
    if od is None or od.infer is None:
        return False
    try:
        inferred = od.infer([v.type for v in op.operands], op.attributes, op.regions)
    except Exception:  # noqa: BLE001 - a rule that cannot infer leaves the type
        return False
    changed = False
    for r, t in zip(op.results, inferred or ()):
        if (
            isinstance(t, T.TensorType)
            and t.is_static
            and isinstance(r.type, T.TensorType)
            and t.rank == r.type.rank
            and t != r.type
        ):
            r.type = t
            changed = True
    return changed


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
        patterns = PatternSet(p for p in CORE_PATTERNS if p.fn in _STATIC_PATTERNS)
        from oxla.passes.fold import fold_op

        for _ in range(self.max_iterations):
            changed = False
            for op in list(module.walk()):
                if op.parent is not None:
                    changed |= _refine_op(op)
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
