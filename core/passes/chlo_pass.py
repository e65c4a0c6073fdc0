"""The ``chlo-legalize-to-stablehlo`` pass as the pipeline names it: a module without
CHLO ops (most of them, JAX's ``jit`` text included) skips the decompositions, whose
rule modules (:mod:`oxla.passes.chlo_legalize` and the modules it loads, ~3 ms to
import) are imported by the first module that has one."""

from __future__ import annotations

from dataclasses import dataclass

from oxla.ir import Module


@dataclass(frozen=True)
class ChloLegalizeToStablehlo:
    """Decomposes CHLO ops into StableHLO.

    Assumes and guarantees what :class:`oxla.passes.chlo_legalize.ChloLegalizeToStablehlo`
    does (every decomposition is rooted at a ``chlo.*`` op, so a module without one is
    left as it is).
    """

    name: str = "chlo-legalize-to-stablehlo"
    strict: bool = False

    def run(self, module: Module) -> None:
        if not any(op.name.startswith("chlo.") for op in module.walk()):
            return
        from oxla.passes.chlo_legalize import ChloLegalizeToStablehlo as Legalize

        Legalize(strict=self.strict).run(module)
