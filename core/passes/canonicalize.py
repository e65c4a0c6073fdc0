"""``canonicalize``: the core rewrite patterns applied greedily (plugin patterns run in
their own pass, ``plugin-patterns{backend=NAME}``, :mod:`oxla.passes.plugin_patterns`)."""

from __future__ import annotations

from dataclasses import dataclass

from oxla.ir import Module
from oxla.passes import (  # noqa: F401 (register)
    canon_algebra,
    canon_control,
    canon_conv,
    canon_shape,
    canon_tuple,
    refine_dynamic,
)
from oxla.passes.fold import fold_op
from oxla.passes.rewrite import CORE_PATTERNS, GreedyDriver, Pattern, PatternSet


def all_patterns() -> list[Pattern]:
    """The core canonicalization patterns (each keeps results bit for bit)."""
    return list(CORE_PATTERNS)


@dataclass(frozen=True)
class Canonicalize:
    """Applies every rewrite pattern until a fixed point (or ``max_iterations`` sweeps).

    Assumes: the module verifies. Guarantees: results are unchanged bit for bit
    (each rule states why in its docstring); trivially dead pure ops are removed; pure
    ops on constants whose results have at most ``fold_limit`` elements are folded
    through the interpreter. ``debug`` (or ``OXLA_DEBUG_PATTERNS=1``) prints each rule
    that fires with its ``file:line``.
    """

    name: str = "canonicalize"
    max_iterations: int = 10
    fold_limit: int = 1024
    debug: bool = False

    def run(self, module: Module) -> None:
        limit = self.fold_limit
        driver = GreedyDriver(
            PatternSet(all_patterns()),
            self.max_iterations,
            self.debug,
            fold=(lambda op, rw: fold_op(op, rw, limit)) if limit > 0 else None,
        )
        driver.run(module.op)
