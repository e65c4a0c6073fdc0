"""Side effects of ops, read from the op table's traits (never from lists of names).

An op *has an effect* when it, or an op in its regions, communicates (trait
``COLLECTIVE``: all_reduce, all_gather, ...) or has a side effect (trait
``SIDE_EFFECT``: send, recv, infeed, outfeed; a ``custom_call`` only with
``has_side_effect = true``, spec ``custom_call``). Such ops are never dropped as dead
code and keep their program order among each other (scheduling).
"""

from __future__ import annotations

from oxla.ir import Operation
from oxla.ir import attributes as A
from oxla.ir.opdef import COLLECTIVE, SIDE_EFFECT, lookup_opdef

CUSTOM_CALL = "stablehlo.custom_call"


def op_has_effect(op: Operation) -> bool:
    """True when ``op`` itself (not its regions) communicates or has a side effect."""
    d = lookup_opdef(op.name)
    if d is None:
        return False
    if COLLECTIVE in d.traits:
        return True
    if SIDE_EFFECT not in d.traits:
        return False
    if op.name == CUSTOM_CALL:
        a = op.attributes.get("has_side_effect")
        return a is not None and bool(A.to_python(a))
    return True


def has_effect(op: Operation) -> bool:
    """True when ``op`` or an op nested in its regions has an effect (module doc)."""
    return any(op_has_effect(inner) for inner in op.walk())
