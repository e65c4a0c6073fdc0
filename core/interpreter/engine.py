"""The reference interpreter's evaluator: functions, blocks, regions, calls.

Follows the spec's "Execution" section: ops run in program order; a function's
value is its terminator's operands. Rules for single ops live in
:mod:`oxla.interpreter.rules`; this module walks the IR and keeps the environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.errors import InterpreterError, NotSupportedError
from oxla.interpreter.registry import TOKEN, lookup_rule
from oxla.ir import Block, Module, Operation, Region, Value
from oxla.ir import types as T


@dataclass
class CheckFailure:
    """One failed ``check.*`` op: where, and a short description of the difference."""

    op: Operation
    message: str

    def __str__(self) -> str:
        return f"{self.op.loc}: {self.op.name}: {self.message}"


@dataclass
class Context:
    """State shared by the rules while one program runs.

    Attributes:
        module: the module being run (for ``func.call`` and symbol lookups).
        failures: failed ``check.*`` ops, in program order.
        custom_calls: ``target -> fn(ctx, op, args) -> list`` for ``stablehlo.custom_call``.
        process: this process's (replica_id, partition_id) inside a process grid.
        grid: the process grid for collectives (None outside ``run_parallel``).
        probes: values recorded by ``interpreter.probe`` (probe_id -> list of arrays).
        infeed, outfeed: Python hooks for ``infeed``/``outfeed``.
    """

    module: Module | None = None
    failures: list[CheckFailure] = field(default_factory=list)
    custom_calls: dict[str, Callable] = field(default_factory=dict)
    process: tuple[int, int] = (0, 0)
    grid: Any = None
    probes: dict[str, list] = field(default_factory=dict)
    infeed: Callable[[], list] | None = None
    outfeed: Callable[[list], None] | None = None
    depth: int = 0

    # -- evaluation ---------------------------------------------------------------
    def run_region(self, region: Region, args: Sequence[Any]) -> list:
        """Runs a single-block region with ``args`` bound to its block arguments and
        returns the operands of its terminator."""
        return self.run_block(region.blocks[0], args)

    def run_block(self, block: Block, args: Sequence[Any]) -> list:
        if len(args) != len(block.args):
            raise InterpreterError(
                f"region expects {len(block.args)} arguments, got {len(args)}",
                block.parent_op.loc if block.parent_op is not None else None,
            )
        env: dict[Value, Any] = dict(zip(block.args, args))
        return self._run_ops(block, env)

    def _run_ops(self, block: Block, env: dict[Value, Any]) -> list:
        for op in block.ops:
            name = op.name
            if name in ("func.return", "stablehlo.return"):
                return [self._lookup(env, v, op) for v in op.operands]
            vals = [self._lookup(env, v, op) for v in op.operands]
            if op.regions:
                # Regions of while/if/reduce... may read values of enclosing blocks.
                self._outer.append(env)
                try:
                    outs = self.eval(op, vals)
                finally:
                    self._outer.pop()
            else:
                outs = self.eval(op, vals)
            if len(outs) != len(op.results):
                raise InterpreterError(
                    f"interpreter rule for '{name}' produced {len(outs)} values for "
                    f"{len(op.results)} results", op.loc)
            for r, v in zip(op.results, outs):
                env[r] = v
        return []

    def _lookup(self, env: dict[Value, Any], v: Value, op: Operation) -> Any:
        try:
            return env[v]
        except KeyError:
            # A value defined in an enclosing region.
            for frame in reversed(self._outer):
                if v in frame:
                    return frame[v]
            raise InterpreterError(f"'{op.name}' reads a value that was never defined",
                                   op.loc) from None

    _outer: list = field(default_factory=list)

    def eval(self, op: Operation, args: list) -> list:
        """Evaluates one op on runtime values; returns one value per result.

        Raises:
            NotSupportedError: when no rule exists for the op.
        """
        rule = lookup_rule(op.name)
        if rule is None:
            raise NotSupportedError(
                f"the interpreter has no rule for '{op.name}'", op.loc,
                notes=["register one with @interpreter_rule or a custom call implementation"])
        return rule(self, op, args)

    def call(self, name: str, args: Sequence[Any], loc=None) -> list:
        """Calls function ``name`` of the module."""
        if self.module is None:
            raise InterpreterError(f"call to '@{name}' outside a module", loc)
        f = self.module.lookup(name)
        if f is None or f.name != "func.func":
            raise InterpreterError(f"call to unknown function '@{name}'", loc)
        if not f.regions or not f.regions[0].blocks:
            raise InterpreterError(f"function '@{name}' has no body", loc)
        self.depth += 1
        saved, self._outer = self._outer, []
        if self.depth > 200:
            raise InterpreterError("call depth exceeds 200: recursion is not allowed", loc)
        try:
            return self.run_region(f.regions[0], args)
        finally:
            self.depth -= 1
            self._outer = saved


def zeros_for(t: T.Type) -> Any:
    """A zero value of type ``t`` (used for tokens and padding)."""
    if isinstance(t, T.TokenType):
        return TOKEN
    if isinstance(t, T.TupleType):
        return tuple(zeros_for(x) for x in t.types)
    assert isinstance(t, T.TensorType)
    return np.zeros(t.shape, dtype=storage_dtype(t))


def storage_dtype(t: T.Type) -> np.dtype:
    """The numpy dtype of runtime values of tensor type ``t``."""
    et = t.element_type  # type: ignore[attr-defined]
    if isinstance(et, T.QuantizedType):
        return et.storage_type.dtype
    return et.dtype


def run_function(module: Module, name: str | None = None, args: Sequence[Any] = (),
                 ctx: Context | None = None) -> list:
    """Runs function ``name`` (default: the module's entry) on runtime values.

    Args:
        module: a verified module.
        name: function name; default ``main`` or the single public function.
        args: one numpy array (or token/tuple) per function argument.
        ctx: an existing context (to share check failures, custom calls...).

    Returns:
        The function's results as runtime values.
    """
    ctx = ctx or Context(module=module)
    if ctx.module is None:
        ctx.module = module
    from oxla.ir import func_name

    fname = name or func_name(module.main)
    return ctx.call(fname, list(args))


def eval_op(op: Operation, args: Sequence[Any], ctx: Context | None = None) -> list:
    """Evaluates one op on runtime values (used by constant folding).

    Ops with regions are supported as long as the regions only read their own block
    arguments and values defined inside them.
    """
    ctx = ctx or Context()
    return ctx.eval(op, list(args))
