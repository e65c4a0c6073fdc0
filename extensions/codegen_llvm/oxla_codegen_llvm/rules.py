"""The emitter's rule table: one entry per (kind, op, platform), like JAX's
``register_lowering(prim, rule, platform="cuda")``.

Three kinds of rules, each with the one signature of its kind:

* ``scalar``: ``rule(s: Scalar, op, args: list[ir.Value]) -> ir.Value``, the op on
  registers (elementwise ops);
* ``index``: ``rule(f: FusedEmitter, op, idx: list[ir.Value]) -> ir.Value``, the op's
  value at an index (broadcast, slice, iota: index-mapping ops fused into loops);
* ``kernel``: ``rule(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None``, a
  whole op kernel (``reduce``, ``sort``, collectives), registered by a backend.

``register(op, fn, platform=None, kind=...)``: a rule with a ``platform`` (the target's
``name``: ``cpu``, later ``cuda``/``hip``) overrides the generic one on that platform;
registering the same (kind, op, platform) twice is an error. Lookups go through
:meth:`RuleTable.lookup`; which ops a platform covers is :meth:`RuleTable.ops` (what
``oxla plugins --coverage`` reads).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

KINDS = ("scalar", "index", "kernel")


class RuleTable:
    """Rules by (kind, op name, platform or None)."""

    def __init__(self) -> None:
        self._rules: dict[tuple[str, str, str | None], Callable[..., Any]] = {}

    def register(self, op: str, fn: Callable[..., Any], platform: str | None = None,
                 kind: str = "scalar") -> Callable[..., Any]:
        """Registers ``fn`` as the ``kind`` rule of ``op`` (on ``platform``, or every
        platform when None); returns ``fn``.

        Raises:
            ValueError: an unknown kind, or a rule for (kind, op, platform) exists.
        """
        if kind not in KINDS:
            raise ValueError(f"unknown rule kind '{kind}'; expected one of {', '.join(KINDS)}")
        key = (kind, op, platform)
        if key in self._rules:
            where = f" on platform '{platform}'" if platform else ""
            raise ValueError(f"a {kind} rule for '{op}'{where} is registered already "
                             f"({self._rules[key].__module__}.{self._rules[key].__name__})")
        self._rules[key] = fn
        return fn

    def lookup(self, op: str, kind: str = "scalar",
               platform: str | None = None) -> Callable[..., Any] | None:
        """The rule for ``op``: the platform's own, else the generic one, else None."""
        if platform is not None:
            fn = self._rules.get((kind, op, platform))
            if fn is not None:
                return fn
        return self._rules.get((kind, op, None))

    def ops(self, kind: str | None = None, platform: str | None = None) -> frozenset[str]:
        """The ops with a rule (of ``kind``, or any) on ``platform`` (generic ones count
        everywhere; None: generic only)."""
        return frozenset(o for k, o, p in self._rules
                         if (kind is None or k == kind) and (p is None or p == platform))

    def view(self, kind: str, platform: str | None = None) -> RuleView:
        """A read-only mapping op -> rule of ``kind`` as seen on ``platform``."""
        return RuleView(self, kind, platform)


class RuleView(Mapping[str, Callable[..., Any]]):
    """Read-only ``op -> rule`` of one kind on one platform (see :meth:`RuleTable.view`)."""

    def __init__(self, table: RuleTable, kind: str, platform: str | None):
        self._table, self._kind, self._platform = table, kind, platform

    def __getitem__(self, op: str) -> Callable[..., Any]:
        fn = self._table.lookup(op, self._kind, self._platform)
        if fn is None:
            raise KeyError(op)
        return fn

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._table.ops(self._kind, self._platform)))

    def __len__(self) -> int:
        return len(self._table.ops(self._kind, self._platform))

    def __contains__(self, op: object) -> bool:
        return isinstance(op, str) and \
            self._table.lookup(op, self._kind, self._platform) is not None


RULES = RuleTable()
"""The one rule table of ``oxla_codegen_llvm`` (and of the backends built on it)."""


def register(op: str, fn: Callable[..., Any] | None = None, platform: str | None = None,
             kind: str = "scalar") -> Any:
    """``RULES.register``; without ``fn``, a decorator.

    Raises:
        ValueError: see :meth:`RuleTable.register`.
    """
    if fn is not None:
        return RULES.register(op, fn, platform, kind)

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        return RULES.register(op, f, platform, kind)

    return deco
