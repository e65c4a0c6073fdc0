"""Shared pieces of ``chlo-legalize-to-stablehlo``: the pattern list, the op emitter
used by the decompositions, and the f16/bf16 → f32 widening wrappers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from oxla.ir import Operation, Value, enum
from oxla.ir import types as T
from oxla.ir.attributes import splat
from oxla.passes.rewrite import Pattern, Rewriter, source_of

LEGALIZATIONS: list[Pattern] = []
"""Every CHLO decomposition pattern (filled by the ``chlo_*`` modules)."""

F32 = T.FloatType("f32")


def legalizes(*names: str) -> Callable:
    """Registers the decorated ``fn(op, rewriter) -> bool`` for each CHLO op name."""

    def deco(fn: Callable) -> Callable:
        for n in names:
            LEGALIZATIONS.append(Pattern(n, fn, 1, fn.__name__, source_of(fn)))
        return fn

    return deco


class Emitter:
    """Emits StableHLO ops before ``anchor``.

    ``e.add(a, b)`` and friends create ``stablehlo.<name>`` with the first operand's
    type; :meth:`const` makes a splat constant shaped like a value.
    """

    def __init__(self, anchor: Operation, rw: Rewriter):
        self.anchor, self.rw = anchor, rw

    def op(
        self,
        name: str,
        operands: Sequence[Value],
        t: T.Type | None = None,
        regions: Sequence = (),
        **attrs,
    ) -> Value:
        return self.multi(name, operands, [t or operands[0].type], regions, **attrs)[0]

    def multi(
        self,
        name: str,
        operands: Sequence[Value],
        types: Sequence[T.Type],
        regions: Sequence = (),
        **attrs,
    ) -> list[Value]:
        op = self.rw.create_before(self.anchor, name, list(operands), list(types), attrs, regions)
        return list(op.results)

    def const(self, value, like: Value | T.TensorType, et: T.ElementType | None = None) -> Value:
        """A constant of ``like``'s shape (and element type unless ``et`` is given)."""
        t = like if isinstance(like, T.TensorType) else like.type
        if et is not None:
            t = t.with_element_type(et)
        return self.rw.create_before(
            self.anchor, "stablehlo.constant", [], [t], {"value": splat(value, t)}
        ).results[0]

    def __getattr__(self, short: str) -> Callable[..., Value]:
        if short.startswith("_"):
            raise AttributeError(short)
        return lambda *vs: self.op("stablehlo." + short, list(vs))

    def cmp(self, a: Value, b: Value, direction: str) -> Value:
        t = a.type.with_element_type(T.IntegerType(1))
        return self.op(
            "stablehlo.compare",
            [a, b],
            t,
            comparison_direction=enum("comparison_direction", direction),
        )

    def sel(self, p: Value, a: Value, b: Value) -> Value:
        return self.op("stablehlo.select", [p, a, b], a.type)

    def convert(self, x: Value, et: T.ElementType) -> Value:
        return self.op("stablehlo.convert", [x], x.type.with_element_type(et))

    def bitcast(self, x: Value, et: T.ElementType) -> Value:
        return self.op("stablehlo.bitcast_convert", [x], x.type.with_element_type(et))

    def poly(self, x: Value, coeffs: Sequence[float]) -> Value:
        """Horner evaluation, highest-degree coefficient first."""
        acc = self.const(coeffs[0], x)
        for c in coeffs[1:]:
            acc = self.add(self.multiply(acc, x), self.const(c, x))
        return acc

    def where(self, p: Value, a: float | Value, b: float | Value, like: Value) -> Value:
        """``select`` accepting Python numbers for either branch."""
        a = a if isinstance(a, Value) else self.const(a, like)
        b = b if isinstance(b, Value) else self.const(b, like)
        return self.sel(p, a, b)

    def isfinite(self, x: Value) -> Value:
        return self.op("stablehlo.is_finite", [x], x.type.with_element_type(T.IntegerType(1)))

    def and_(self, a: Value, b: Value) -> Value:
        return self.op("stablehlo.and", [a, b])

    def or_(self, a: Value, b: Value) -> Value:
        return self.op("stablehlo.or", [a, b])


def static_float(v: Value) -> bool:
    t = v.type
    return isinstance(t, T.TensorType) and t.is_static and isinstance(t.element_type, T.FloatType)


def float_rule(
    fn: Callable[..., Value], widths: tuple[str, ...] = ("f32", "f64")
) -> Callable[[Operation, Rewriter], bool]:
    """Wraps ``fn(emitter, *float_operands)`` into a pattern: f16/bf16 operands are
    computed in f32 and rounded back (as XLA does); ``widths`` lists the types ``fn``
    handles natively."""

    def rule(op: Operation, rw: Rewriter) -> bool:
        if not all(static_float(v) for v in op.operands):
            return False
        e = Emitter(op, rw)
        et = op.operands[0].type.element_type
        if et.name in widths:
            r = fn(e, *op.operands)
        elif et.name in ("f16", "bf16") and "f32" in widths:
            r = e.convert(fn(e, *(e.convert(v, F32) for v in op.operands)), et)
        else:
            return False
        rw.replace_op(op, [r])
        return True

    rule.__name__ = fn.__name__
    rule.__doc__ = fn.__doc__
    return rule


def register_float(name: str, fn: Callable[..., Value], widths=("f32", "f64")) -> None:
    """Registers :func:`float_rule` of ``fn`` for the CHLO op ``name``."""
    LEGALIZATIONS.append(Pattern(name, float_rule(fn, widths), 1, fn.__name__, source_of(fn)))
