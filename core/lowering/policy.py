"""The backend policy: what a backend tells the target-free lowering about its chip.

Fusion (:mod:`oxla.lowering.fusion`) never imports a backend's kernel modules: it asks
the policy. A policy is any object with these members (``typing.Protocol``, checked
structurally); :class:`PolicyBase` gives defaults a backend overrides.

Example (what a new backend writes)::

    class MyPolicy(PolicyBase):
        name = "mygpu"

        def is_fusible(self, op):          # what its loop emitter computes at an index
            return op.name in MY_SCALAR_RULES
        def classify(self, op):            # ops its own kernels run: "op" or "dot"
            return "op" if op.name in MY_OP_RULES else None
"""

from __future__ import annotations

from typing import Any, Protocol

from oxla.errors import NotSupportedError
from oxla.ir import Operation, Value
from oxla.lowering.plan import Buf, Kernel, Plan


class Policy(Protocol):
    """What fusion asks a backend (see the module doc).

    Attributes:
        name: the backend's name (in "not supported by the NAME backend" errors).
    """

    name: str

    def check_type(self, op: Operation, v: Value) -> None:
        """Raises ``NotSupportedError`` when ``v`` (of ``op``) has a type the backend
        cannot hold in a buffer."""

    def is_fusible(self, op: Operation) -> bool:
        """True when the backend's loop emitter computes ``op``'s value at an index."""

    def claim(self, op: Operation) -> str | None:
        """A kind (``op``) for an op the backend takes before fusion is considered
        (runtime calls, reshaping bitcasts), else None."""

    def classify(self, op: Operation) -> str | None:
        """``op`` (its own kernel) or ``dot`` (:meth:`dot_kernels`) for a non-fusible
        op the backend compiles, else None (the op is not supported)."""

    def op_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                   counter: Any) -> list[Kernel] | None:
        """Kernels of the backend's own for an ``op`` kind (e.g. convolutions), or
        None for a plain :class:`~oxla.lowering.plan.OpKernel`."""

    def dot_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                    counter: Any) -> list[Kernel]:
        """The kernels of a ``dot`` kind (packing copies, then the GEMM)."""

    def after_fusion(self, kernels: list[Kernel], vbuf: dict[Value, Buf]) -> list[Kernel]:
        """The block's kernels after the backend's own merges (epilogues, rows)."""

    def hoist_invariants(self, body: Plan, invariant: set[int], counter: Any) -> list[Kernel]:
        """The kernels a ``while`` runs once before its loop instead of in every
        iteration, taken out of (or rewritten in) ``body``, the body's plan;
        ``invariant``: the ids of its loop-invariant buffers (see
        :mod:`oxla.lowering.control`, whose :func:`~oxla.lowering.control.invariant_kernels`
        does the generic part). Only for a backend whose codegen runs
        :attr:`~oxla.lowering.plan.ControlKernel.pre`."""


class PolicyBase:
    """Defaults: every type is fine, nothing fusible, nothing claimed, no merges."""

    name = "unnamed"

    def check_type(self, op: Operation, v: Value) -> None:
        return None

    def is_fusible(self, op: Operation) -> bool:
        return False

    def claim(self, op: Operation) -> str | None:
        return None

    def classify(self, op: Operation) -> str | None:
        return None

    def op_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                   counter: Any) -> list[Kernel] | None:
        return None

    def dot_kernels(self, op: Operation, vbuf: dict[Value, Buf], n: int,
                    counter: Any) -> list[Kernel]:
        raise NotSupportedError(f"'{op.name}' is not supported by the {self.name} backend",
                                op.loc)

    def after_fusion(self, kernels: list[Kernel], vbuf: dict[Value, Buf]) -> list[Kernel]:
        return kernels

    def hoist_invariants(self, body: Plan, invariant: set[int], counter: Any) -> list[Kernel]:
        return []  # a backend opts in (its codegen must run ControlKernel.pre)
