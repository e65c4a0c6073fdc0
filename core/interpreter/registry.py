"""The interpreter's rule table: one rule per op, one fixed signature.

A rule is ``rule(ctx: Context, op: Operation, args: list) -> list`` where ``args`` are
the runtime values of the op's operands and the return value lists one runtime value
per result. Runtime values are numpy arrays of the element type's dtype (0-d arrays
for scalars; quantized tensors hold their storage integers), :data:`TOKEN` for
``!stablehlo.token``, and Python tuples for ``tuple<...>``.

Register with::

    @interpreter_rule("stablehlo.add")
    def add(ctx, op, args):
        ...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oxla.interpreter.engine import Context
    from oxla.ir import Operation

Rule = Callable[["Context", "Operation", list], list]

RULES: dict[str, Rule] = {}


class _Token:
    """The single runtime value of ``!stablehlo.token``."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "TOKEN"


TOKEN: Any = _Token()


def interpreter_rule(*names: str) -> Callable[[Rule], Rule]:
    """Registers a rule for one or more op names.

    Raises:
        ValueError: when an op already has a rule.
    """

    def deco(fn: Rule) -> Rule:
        for n in names:
            if n in RULES:
                raise ValueError(f"interpreter rule for '{n}' registered twice")
            RULES[n] = fn
        return fn

    return deco


def _ensure_loaded() -> None:
    from oxla.interpreter import rules  # noqa: F401  (registers every rule)


def lookup_rule(name: str) -> Rule | None:
    _ensure_loaded()
    return RULES.get(name)


def all_rules() -> dict[str, Rule]:
    _ensure_loaded()
    return dict(RULES)
