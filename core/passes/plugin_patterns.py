"""``plugin-patterns{backend=NAME}``: the rewrite patterns of installed plugins
(``oxla_patterns`` hook) that are for backend ``NAME``, applied greedily.

A plugin pattern may replace a subgraph by a kernel only one backend has (a cpu
``custom_call``), so it runs in that backend's pipeline only, as its own step visible in
IR dumps, and never inside ``canonicalize`` (which keeps results bit for bit). A pattern
with no ``backends`` runs for every backend.

Bottleneck overrides (a ``PatternInfo`` with a ``pattern`` function, see
:mod:`oxla.passes.overrides`) run here too; those named in
``$OXLA_DISABLE_OVERRIDES`` are left out, and the pass reports, for every override, where
it fired or why it did not (collected by ``oxla.compile`` into ``exe.stats``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from oxla import plugins
from oxla.ir import Module
from oxla.passes.overrides import Override, current_report, disabled_overrides, report_unfired
from oxla.passes.rewrite import GreedyDriver, Pattern, PatternSet, source_of
from oxla.protocols import PatternInfo


@cache
def _override(info: PatternInfo) -> Override:
    return Override(info.name, info.pattern, info.replace, info.constraints)


def override_infos(backend: str) -> list[PatternInfo]:
    """The enabled overrides (``PatternInfo.pattern`` set) for ``backend``."""
    off = disabled_overrides()
    return [p for p in plugins.patterns(backend=backend, builtin=False)
            if p.pattern and p.name not in off]


def backend_patterns(backend: str) -> tuple[list[Pattern], list[Override]]:
    """The plugins' patterns for ``backend`` (the core's own are canonicalize's), and
    the overrides among them."""
    off = disabled_overrides()
    pats, overrides = [], []
    for p in plugins.patterns(backend=backend, builtin=False):
        if p.name in off:
            continue
        if p.pattern:
            o = _override(p)
            overrides.append(o)
            pats.append(Pattern(o.root_op, o, p.benefit, p.name,
                                source_of(p.replace) if p.replace else "?"))
        else:
            pats.append(Pattern(p.root_op, p.fn, p.benefit, p.name or p.fn.__name__,
                                source_of(p.fn)))
    return pats, overrides


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
        pats, overrides = backend_patterns(self.backend)
        if not pats:
            return
        if overrides:
            before = current_report()
            start = len(before) if before is not None else 0
        GreedyDriver(PatternSet(pats), self.max_iterations, self.debug).run(module.op)
        if overrides:
            done = before[start:] if before is not None else []
            report_unfired(module, overrides, {e["override"] for e in done if e["fired"]})
