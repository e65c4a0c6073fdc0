"""``probes-to-custom-calls``: ``interpreter.probe`` as a side-effecting custom call.

The StableHLO interpreter's ``probe`` writes each value it sees (every iteration of a
loop) for ``check.expect_serialized_eq`` to compare later. A compiling backend runs it
as a side-effecting ``stablehlo.custom_call @interpreter.probe`` (its ``probe_id`` as
the backend config) bound to a recorder of its own (the cpu backend's
``oxla_backend_cpu.probe.ProbeRecorder``).
"""

from __future__ import annotations

from dataclasses import dataclass

from oxla.ir import Module, Operation
from oxla.ir import attributes as A

PROBE_OP = "interpreter.probe"
PROBE_TARGET = "interpreter.probe"


def probes_to_custom_calls(module: Module) -> int:
    """Replaces every ``interpreter.probe`` of ``module`` by a side-effecting
    ``custom_call`` to :data:`PROBE_TARGET`, in place; returns how many."""
    probes = [op for op in module.walk() if op.name == PROBE_OP]
    for op in probes:
        pid = str(A.to_python(op.attributes["probe_id"]))
        new = Operation.create(
            "stablehlo.custom_call", list(op.operands), [op.results[0].type],
            {"call_target_name": A.StringAttr(PROBE_TARGET),
             "backend_config": A.StringAttr(pid),
             "has_side_effect": A.BoolAttr(True)}, (), op.loc)
        op.parent.insert_before(op, new)
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()
    return len(probes)


@dataclass(frozen=True)
class ProbesToCustomCalls:
    """Rewrites ``interpreter.probe`` into ``custom_call @interpreter.probe`` (module doc).

    Guarantees: no ``interpreter.probe`` is left; each value is unchanged.
    """

    name: str = "probes-to-custom-calls"

    def run(self, module: Module) -> None:
        probes_to_custom_calls(module)
