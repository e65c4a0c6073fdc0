"""``inline-composites``: every ``stablehlo.composite`` replaced by its decomposition.

Spec ``composite``: its semantics are those of its ``decomposition`` function, so a
backend without a kernel for the composite's name compiles the decomposition's body.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxla.errors import LoweringError
from oxla.ir import Module
from oxla.passes.inline import inline_call

MAX_NESTING = 64


def inline_composites(module: Module, backend: str = "") -> int:
    """Replaces every ``composite`` by a copy of its ``decomposition`` function's body;
    returns how many (decompositions may hold composites themselves).

    Raises:
        LoweringError: the decomposition function is missing or has no body, or they
            nest more than :data:`MAX_NESTING` deep.
    """
    funcs = {f.attributes["sym_name"].value: f for f in module.functions}
    on = f" on the {backend} backend" if backend else ""
    n = 0
    for _ in range(MAX_NESTING):
        ops = [op for op in module.walk() if op.name == "stablehlo.composite"]
        if not ops:
            return n
        for op in ops:
            ref = op.attributes["decomposition"]
            name = getattr(ref, "value", str(ref)).lstrip("@")
            target = funcs.get(name)
            if target is None or not target.regions or not target.regions[0].blocks:
                raise LoweringError(f"'stablehlo.composite' at {op.loc}: decomposition "
                                    f"@{name} has no body to compile{on}")
            inline_call(op, target)
            n += 1
    raise LoweringError(f"'stablehlo.composite': decompositions nest more than "
                        f"{MAX_NESTING} deep")


@dataclass(frozen=True)
class InlineComposites:
    """Replaces every ``stablehlo.composite`` by its decomposition's body.

    Guarantees: no ``composite`` is left; the results are unchanged (spec
    ``composite``).
    """

    name: str = "inline-composites"

    def run(self, module: Module) -> None:
        inline_composites(module)
