"""``plugin-patterns{backend=NAME}``: the rewrite patterns of installed plugins
(``oxla_patterns`` hook) that are for backend ``NAME``, applied greedily.

A plugin pattern may replace a subgraph by a kernel only one backend has (a cpu
``custom_call``), so it runs in that backend's pipeline only, as its own step visible in
IR dumps, and never inside ``canonicalize`` (which keeps results bit for bit). A pattern
with no ``backends`` runs for every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxla import plugins
from oxla.ir import Module
from oxla.passes.rewrite import GreedyDriver, Pattern, PatternSet, source_of


def backend_patterns(backend: str) -> list[Pattern]:
    """The plugins' patterns for ``backend`` (the core's own are canonicalize's)."""
    return [Pattern(p.root_op, p.fn, p.benefit, p.name or p.fn.__name__, source_of(p.fn))
            for p in plugins.patterns(backend=backend, builtin=False)]


@dataclass(frozen=True)
class PluginPatterns:
    """Applies the plugins' rewrite patterns for ``backend`` until a fixed point (or
    ``max_iterations`` sweeps).

    Assumes: the module verifies. Guarantees: what each pattern promises (plugins
    state their own legality); nothing runs when no plugin has a pattern for the
    backend.
    """

    name: str = "plugin-patterns"
    backend: str = ""
    max_iterations: int = 10
    debug: bool = False

    def run(self, module: Module) -> None:
        pats = backend_patterns(self.backend)
        if pats:
            GreedyDriver(PatternSet(pats), self.max_iterations, self.debug).run(module.op)
