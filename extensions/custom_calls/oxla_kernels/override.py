"""Bottleneck overrides from a kernel package: :class:`Override`.

An override names a subgraph, written as a small StableHLO function (the way the
frontend emits it; ``?`` dims are wildcards, see :mod:`oxla.passes.overrides` for the
matching rules), and the :class:`~oxla_kernels.Kernel` that replaces it on the
backends it lists. :meth:`Override.pattern_info` is the descriptor for the
``oxla_patterns`` hook::

    @hookimpl
    def oxla_patterns():
        return [RMSNORM_OVERRIDE.pattern_info()]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from oxla.errors import OxlaError
from oxla.ir import Operation, Value
from oxla.passes.override_compile import instrument
from oxla.passes.overrides import Match
from oxla.protocols import PatternInfo
from oxla_kernels.kernel import Kernel


class Override:
    """A subgraph -> kernel replacement.

    Args:
        name: shown by ``--explain-overrides``; ``OXLA_DISABLE_OVERRIDES`` takes it.
        pattern: the StableHLO text of one ``func.func`` returning the subgraph's root.
        kernel: the kernel that replaces it.
        operands: the pattern arguments passed to the kernel, in order (default: all
            of them).
        attrs: kernel attribute -> ``fn(match)`` computing it (``match.const("eps")``).
        constraints: ``(description, fn(match) -> bool)`` pairs, checked in order after
            the structure matched and after the kernel accepted the operands' types.
        backends: where it applies (each needs an implementation of the kernel).
        tolerance: for ``--verify-overrides`` (default: the kernel's).
        benefit: higher is tried first.
    """

    def __init__(self, name: str, pattern: str, kernel: Kernel,
                 operands: Sequence[str] | None = None,
                 attrs: Mapping[str, Callable[[Match], Any]] | None = None,
                 constraints: Sequence[tuple[str, Callable[[Match], bool]]] = (),
                 backends: Sequence[str] = ("cpu",), tolerance: float | None = None,
                 benefit: int = 10):
        self.name, self.pattern, self.kernel = name, pattern, kernel
        self.operands = list(operands) if operands is not None else None
        self.attrs = dict(attrs or {})
        self.constraints = tuple(constraints)
        self.backends = tuple(backends)
        self.tolerance = kernel.tolerance if tolerance is None else tolerance
        self.benefit = benefit
        have = {i.backend for i in kernel.impls}
        missing = [b for b in self.backends if b not in have]
        if missing:
            raise OxlaError(f"override '{name}': kernel '{kernel.target}' has no "
                            f"implementation for {', '.join(missing)}")

    def _names(self, m: Match) -> list[str]:
        return self.operands if self.operands is not None else list(m.values)

    def _kernel_fits(self, m: Match) -> bool:
        self.kernel.bind_dims([m.type(n) for n in self._names(m)])
        return True

    def _attrs(self, m: Match) -> dict[str, Any]:
        return {k: fn(m) for k, fn in self.attrs.items()}

    def replace(self, m: Match, rewriter: Any, root: Operation) -> list[Value]:
        """The kernel call replacing the match at ``root`` (probed when verifying)."""
        ops, post = instrument(m, rewriter, root,
                               [m.value(n, rewriter) for n in self._names(m)], self.name,
                               self.tolerance)
        return post(self.kernel.call(rewriter, root, ops, self._attrs(m)))

    def pattern_info(self) -> PatternInfo:
        """The ``oxla_patterns`` descriptor."""
        checks = (*self.constraints,
                  ("the attributes can be computed",
                   lambda m: self.kernel.attrs(self._attrs(m)) is not None),
                  (f"kernel '{self.kernel.target}' accepts the operands' types",
                   self._kernel_fits))
        return PatternInfo("", None, self.benefit, self.name, self.backends,
                           pattern=self.pattern, replace=self.replace, constraints=checks)
