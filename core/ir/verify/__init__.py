"""The StableHLO verifier: structure, then the spec's numbered constraints per op.

``verify(module_or_op)`` walks every op. Structural checks come from the op's
:class:`~oxla.ir.opdef.OpDef` row (operand/result counts per variadicity, region
arity, terminators, required attributes and their kinds); constraints come from one
function per op or op family, registered in :data:`VERIFIERS` with the fixed signature
``fn(op: Operation) -> None`` (raising :class:`~oxla.errors.VerifyError`).
"""

from __future__ import annotations

from collections.abc import Callable

from oxla.errors import VerifyError
from oxla.ir import attributes as A
from oxla.ir.gcpause import gc_paused
from oxla.ir.opdef import TERMINATOR
from oxla.ir.operation import Module, Operation
from oxla.ir.verify.helpers import fail

Verifier = Callable[[Operation], None]

#: op name -> constraint checker, one per op or family.
VERIFIERS: dict[str, Verifier] = {}


def register_verifier(*names: str) -> Callable[[Verifier], Verifier]:
    """Decorator: ``@register_verifier("stablehlo.add", ...)`` registers ``fn(op)``."""

    def deco(fn: Verifier) -> Verifier:
        for n in names:
            VERIFIERS[n] = fn
        return fn

    return deco


# attribute kind (AttrDef.kind) -> accepted attribute classes
_KINDS: dict[str, tuple[type, ...]] = {
    "i64": (A.IntegerAttr,),
    "i32": (A.IntegerAttr,),
    "f32": (A.FloatAttr, A.IntegerAttr),
    "f64": (A.FloatAttr, A.IntegerAttr),
    "float": (A.FloatAttr, A.IntegerAttr),
    "bool": (A.BoolAttr,),
    "unit": (A.UnitAttr,),
    "string": (A.StringAttr,),
    "symbol": (A.SymbolRefAttr, A.StringAttr),
    "type": (A.TypeAttr,),
    "dict": (A.DictionaryAttr,),
    "array": (A.ArrayAttr,),
    "dense": (A.DenseElementsAttr, A.OpaqueAttr),
    "i64_array": (A.DenseArrayAttr, A.DenseElementsAttr, A.ArrayAttr),
    "i32_array": (A.DenseArrayAttr, A.DenseElementsAttr, A.ArrayAttr),
    "bool_array": (A.DenseArrayAttr, A.DenseElementsAttr, A.ArrayAttr),
    "dense_i64_2d": (A.DenseElementsAttr,),
    "conv_dims": (A.ConvDimensionNumbers, A.StructAttr),
    "dot_dims": (A.StructAttr,),
    "gather_dims": (A.StructAttr,),
    "scatter_dims": (A.StructAttr,),
    "ragged_dot_dims": (A.StructAttr, A.OpaqueAttr),
    "channel_handle": (A.StructAttr,),
    "dot_algorithm": (A.StructAttr,),
    "result_accuracy": (A.StructAttr, A.EnumAttr, A.OpaqueAttr),
    "precision_array": (A.ArrayAttr,),
}

# ops without an OpDef that may still appear (the module itself)
_STRUCTURAL = {"builtin.module"}


def _check_structure(op: Operation) -> None:
    """Checks counts, regions, terminators and attributes against the op's OpDef."""
    od = op.opdef
    if od is None:
        if op.name in _STRUCTURAL:
            return
        fail(op, "", "is not a registered operation")
    try:
        od._group_ranges(od.operands, len(op.operands), "operands")
        od._group_ranges(od.results, len(op.results), "results")
    except ValueError as e:
        fail(op, "", str(e).split("' ", 1)[-1])
    nreg = len(op.regions)
    if any(r.variadic for r in od.regions):
        fixed = sum(1 for r in od.regions if not r.variadic)
        if nreg < fixed:
            fail(op, "", f"expects at least {fixed} regions, got {nreg}")
    elif nreg != len(od.regions):
        fail(op, "", f"expects {len(od.regions)} regions, got {nreg}")
    for region in op.regions:
        for block in region.blocks:
            if not block.ops:
                fail(op, "", "expects each region block to end with a terminator")
            for inner in block.ops[:-1]:
                if inner.has_trait(TERMINATOR):
                    fail(inner, "", "must be the last operation of its block")
            last = block.ops[-1]
            if not last.has_trait(TERMINATOR):
                raise VerifyError(
                    f"'{op.name}' op expects its region to end with a terminator, "
                    f"got '{last.name}'", last.loc)
    for ad in od.attributes:
        a = op.attributes.get(ad.name)
        if a is None:
            if not ad.optional and ad.default is None:
                fail(op, "", f"requires attribute '{ad.name}'")
            continue
        kind = ad.kind
        if kind.startswith("enum:"):
            if not isinstance(a, A.EnumAttr | A.StringAttr | A.OpaqueAttr):
                fail(op, "", f"attribute '{ad.name}' is {a}; expected a {kind[5:]} enum")
            continue
        ok = _KINDS.get(kind)
        if ok is not None and not isinstance(a, ok):
            fail(op, "", f"attribute '{ad.name}' is {a}; expected a {kind} attribute")


def verify_op(op: Operation) -> None:
    """Verifies one op (not its nested ops): structure, then its constraints."""
    _check_structure(op)
    fn = VERIFIERS.get(op.name)
    if fn is None and op.opdef is not None:
        fn = VERIFIERS.get(op.opdef.name)
    if fn is not None:
        fn(op)


def verify(module_or_op: Module | Operation) -> None:
    """Checks a module or op, and every op nested in it, against the spec.

    Raises:
        VerifyError: naming the op, the violated constraint (``C3``) and the location.
    """
    root = module_or_op.op if isinstance(module_or_op, Module) else module_or_op
    with gc_paused():
        for op in root.walk():
            verify_op(op)


# Fill the table (import for side effects).
from oxla.ir.verify import (  # noqa: E402
    control,  # noqa: F401
    elementwise,  # noqa: F401
    linalg,  # noqa: F401
    shape_ops,  # noqa: F401
)

__all__ = ["VERIFIERS", "register_verifier", "verify", "verify_op"]
