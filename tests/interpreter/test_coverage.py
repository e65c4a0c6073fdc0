"""Every op of the op table has an interpreter rule (STYLE: coverage from registries)."""

from __future__ import annotations

from oxla.interpreter import all_rules
from oxla.ir import all_opdefs

# Evaluated by the engine itself (Context.run_block / Context.call), not by a rule.
STRUCTURAL = {"func.func", "func.return", "stablehlo.return"}


def _names(defs) -> set[str]:
    return {d.name for d in (defs.values() if isinstance(defs, dict) else defs)}


def test_every_op_has_an_interpreter_rule():
    missing = sorted(_names(all_opdefs()) - set(all_rules()) - STRUCTURAL)
    assert not missing, f"ops without an interpreter rule: {', '.join(missing)}"


def test_every_rule_names_a_known_op():
    known = _names(all_opdefs())
    unknown = sorted(n for n in all_rules() if n not in known)
    assert not unknown, f"interpreter rules for ops not in the op table: {', '.join(unknown)}"
