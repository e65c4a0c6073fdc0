"""Result-type inference where the spec defines it (used by the builder).

``infer_result_types(op_name, operand_types, attributes)`` returns the result types of
ops whose results follow from their operands and attributes: elementwise ops, compare,
select, clamp, transpose, slice, concatenate, pad, reduce, dot_general, dynamic_slice,
gather, get_dimension_size, ... Each rule is registered per op with one signature,
``rule(operand_types, attributes) -> list[Type]``; the formulas are the "Constraints"
of each op in ``stablehlo-spec.md`` read forwards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oxla.errors import VerifyError
from oxla.ir.attributes import Attribute, IntegerAttr, StructAttr
from oxla.ir.types import (
    ComplexType,
    IntegerType,
    TensorType,
    TokenType,
    TupleType,
    Type,
)
from oxla.ir.verify.helpers import ints

Rule = Callable[[Sequence[Type], dict[str, Attribute]], list[Type]]

#: op name -> inference rule.
INFER_RULES: dict[str, Rule] = {}

I1 = IntegerType(1)
I32 = IntegerType(32)


def infer_rule(*names: str) -> Callable[[Rule], Rule]:
    """Decorator registering ``rule(operand_types, attributes)`` for ``names``."""

    def deco(fn: Rule) -> Rule:
        for n in names:
            INFER_RULES[n] = fn
        return fn

    return deco


def can_infer(op_name: str) -> bool:
    """True when :func:`infer_result_types` has a rule for ``op_name``."""
    return op_name in INFER_RULES


def infer_result_types(
    op_name: str, operand_types: Sequence[Type], attributes: dict[str, Attribute] | None = None
) -> list[Type]:
    """The result types of ``op_name`` applied to ``operand_types`` with ``attributes``.

    Raises:
        VerifyError: when the op has no inference rule or the inputs are not tensors of
            the expected ranks.
    """
    rule = INFER_RULES.get(op_name)
    if rule is None:
        raise VerifyError(f"cannot infer the result types of '{op_name}'; pass result_types")
    try:
        return rule(list(operand_types), dict(attributes or {}))
    except (AttributeError, IndexError, KeyError, TypeError) as e:
        raise VerifyError(
            f"cannot infer the result types of '{op_name}' from "
            f"({', '.join(map(str, operand_types))}): {e}") from None


def _t(t: Type) -> TensorType:
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a ranked tensor, got {t}")
    return t


def _field(attr: Any, name: str, default: Any = ()) -> Any:
    return attr.get(name, default) if isinstance(attr, StructAttr) else default


def _int(attrs: dict, name: str, default: int = 0) -> int:
    a = attrs.get(name)
    return int(a.value) if isinstance(a, IntegerAttr) else default


def _register_elementwise() -> None:
    from oxla.ir.ops.chlo import CHLO_BINARY, CHLO_UNARY
    from oxla.ir.ops.stablehlo import BINARY, UNARY

    names = [f"stablehlo.{n}" for n in [*UNARY, *BINARY] if n not in ("abs", "real", "imag")]
    names += [f"chlo.{n}" for n in [*CHLO_UNARY, *CHLO_BINARY]
              if n not in ("is_inf", "is_neg_inf", "is_pos_inf")]
    names += ["stablehlo.reduce_precision", "stablehlo.cholesky", "stablehlo.reverse",
              "chlo.mulhi"]
    infer_rule(*names)(lambda ts, a: [ts[0]])


_register_elementwise()


@infer_rule("stablehlo.abs", "stablehlo.real", "stablehlo.imag")
def _to_real(ts, attrs):
    t = _t(ts[0])
    e = t.element_type
    return [t.with_element_type(e.element_type) if isinstance(e, ComplexType) else t]


@infer_rule("stablehlo.compare", "stablehlo.is_finite", "chlo.is_inf", "chlo.is_neg_inf",
            "chlo.is_pos_inf")
def _to_bool(ts, attrs):
    return [_t(ts[0]).with_element_type(I1)]


@infer_rule("stablehlo.complex")
def _complex(ts, attrs):
    t = _t(ts[0])
    return [t.with_element_type(ComplexType(t.element_type))]


@infer_rule("stablehlo.select")
def _select(ts, attrs):
    return [ts[1]]


@infer_rule("stablehlo.clamp")
def _clamp(ts, attrs):
    return [ts[1]]


@infer_rule("stablehlo.dynamic_update_slice")
def _first(ts, attrs):
    return [ts[0]]


@infer_rule("stablehlo.transpose")
def _transpose(ts, attrs):
    t = _t(ts[0])
    return [t.with_shape(tuple(t.shape[p] for p in ints(attrs["permutation"])))]


@infer_rule("stablehlo.slice")
def _slice(ts, attrs):
    t = _t(ts[0])
    st, li = ints(attrs["start_indices"]), ints(attrs["limit_indices"])
    sd = ints(attrs.get("strides")) or (1,) * len(st)
    return [t.with_shape(tuple(-(-(b - a) // s) for a, b, s in zip(st, li, sd)))]


@infer_rule("stablehlo.concatenate")
def _concatenate(ts, attrs):
    d = _int(attrs, "dimension")
    t0 = _t(ts[0])
    sizes = [_t(t).shape[d] for t in ts]
    total = None if None in sizes else sum(sizes)  # type: ignore[arg-type]
    return [t0.with_shape(tuple(total if k == d else n for k, n in enumerate(t0.shape)))]


@infer_rule("stablehlo.pad")
def _pad(ts, attrs):
    t = _t(ts[0])
    lo, hi = ints(attrs["edge_padding_low"]), ints(attrs["edge_padding_high"])
    it = ints(attrs.get("interior_padding")) or (0,) * t.rank
    return [t.with_shape(tuple(None if n is None else a + n + max(n - 1, 0) * i + b
                               for n, a, b, i in zip(t.shape, lo, hi, it)))]


@infer_rule("stablehlo.reduce")
def _reduce(ts, attrs):
    n = len(ts) // 2
    dims = set(ints(attrs["dimensions"]))
    out = []
    for x, init in zip(ts[:n], ts[n:]):
        x = _t(x)
        shape = tuple(d for k, d in enumerate(x.shape) if k not in dims)
        out.append(TensorType(shape, _t(init).element_type))
    return out


@infer_rule("stablehlo.dot_general")
def _dot_general(ts, attrs):
    lhs, rhs = _t(ts[0]), _t(ts[1])
    dn = attrs["dot_dimension_numbers"]
    lb, rb = _field(dn, "lhs_batching_dimensions"), _field(dn, "rhs_batching_dimensions")
    lc, rc = _field(dn, "lhs_contracting_dimensions"), _field(dn, "rhs_contracting_dimensions")
    shape = ([lhs.shape[d] for d in lb]
             + [n for k, n in enumerate(lhs.shape) if k not in (*lb, *lc)]
             + [n for k, n in enumerate(rhs.shape) if k not in (*rb, *rc)])
    return [TensorType(tuple(shape), lhs.element_type)]


@infer_rule("stablehlo.dynamic_slice")
def _dynamic_slice(ts, attrs):
    return [_t(ts[0]).with_shape(ints(attrs["slice_sizes"]))]


@infer_rule("stablehlo.get_dimension_size")
def _get_dimension_size(ts, attrs):
    return [TensorType((), I32)]


@infer_rule("stablehlo.gather")
def _gather(ts, attrs):
    x, idx = _t(ts[0]), _t(ts[1])
    dn = attrs["dimension_numbers"]
    od, cd = _field(dn, "offset_dims"), _field(dn, "collapsed_slice_dims")
    ob, ivd = _field(dn, "operand_batching_dims"), _field(dn, "index_vector_dim", 0)
    ss = ints(attrs["slice_sizes"])
    batch = [n for k, n in enumerate(idx.shape) if k != ivd]
    offs = [s for k, s in enumerate(ss) if k not in cd and k not in ob]
    shape: list[int | None] = []
    bi = oi = 0
    for k in range(len(batch) + len(offs)):
        if k in od:
            shape.append(offs[oi])
            oi += 1
        else:
            shape.append(batch[bi])
            bi += 1
    return [TensorType(tuple(shape), x.element_type)]


@infer_rule("stablehlo.sort", "stablehlo.while", "stablehlo.optimization_barrier",
            "stablehlo.all_reduce")
def _same_as_operands(ts, attrs):
    return list(ts)


@infer_rule("stablehlo.triangular_solve")
def _triangular_solve(ts, attrs):
    return [ts[1]]


@infer_rule("stablehlo.tuple")
def _tuple(ts, attrs):
    return [TupleType(tuple(ts))]


@infer_rule("stablehlo.get_tuple_element")
def _get_tuple_element(ts, attrs):
    t = ts[0]
    if not isinstance(t, TupleType):
        raise TypeError(f"expected a tuple, got {t}")
    return [t.types[_int(attrs, "index")]]


@infer_rule("stablehlo.after_all", "stablehlo.create_token")
def _token(ts, attrs):
    return [TokenType()]


@infer_rule("stablehlo.broadcast")
def _broadcast(ts, attrs):
    t = _t(ts[0])
    return [t.with_shape((*ints(attrs["broadcast_sizes"]), *t.shape))]


@infer_rule("stablehlo.batch_norm_training")
def _bn_training(ts, attrs):
    return [ts[0], ts[1], ts[1]]


@infer_rule("stablehlo.batch_norm_inference")
def _bn_inference(ts, attrs):
    return [ts[0]]


@infer_rule("stablehlo.batch_norm_grad")
def _bn_grad(ts, attrs):
    return [ts[0], ts[1], ts[1]]


__all__ = ["INFER_RULES", "can_infer", "infer_result_types", "infer_rule"]
