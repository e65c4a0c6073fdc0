"""Running a test function that calls ``interpreter.run_parallel`` on a compiling backend
(part of :mod:`oxla.conformance`).

Such a test (``interpret/all_reduce.mlir``...) builds inputs, runs a grid of programs
and checks what they return. Here the interpreter runs the test function itself (inputs,
tokens, checks), and each ``interpreter.run_parallel`` is handed to the backend: every
program function of the grid is compiled as the entry of its own module (the functions
it calls included), and the backend runs the grid with its own collectives.

A backend supports grids when it has ``run_parallel(programs, args, infeed=None)``
returning ``(results, outfeed_log)``: ``programs`` is the grid of executables (one row
per replica), ``args`` every process's arguments concatenated in process order,
``infeed`` a list of value lists read in order (the ``infeed`` attribute's functions,
evaluated here by the interpreter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oxla.interpreter import Context


def program_module(module, name: str):
    """A copy of ``module`` whose only public function is ``name`` (the backend's entry),
    with the functions ``name`` calls (private) and nothing else.

    Raises:
        InterpreterError: ``name`` is not a function of ``module``.
    """
    from oxla.errors import InterpreterError
    from oxla.ir import attributes as A
    from oxla.ir import func_name

    m = module.clone()
    funcs = {func_name(f): f for f in m.functions}
    if name not in funcs:
        raise InterpreterError(f"run_parallel: unknown function '@{name}'")
    keep, stack = set(), [name]
    while stack:
        n = stack.pop()
        if n in keep or n not in funcs:
            continue
        keep.add(n)
        stack += [op.attributes["callee"].root for op in funcs[n].walk()
                  if op.name == "func.call"]
    for n, f in funcs.items():
        if n not in keep:
            f.erase()
        elif n != name:
            f.attributes["sym_visibility"] = A.StringAttr("private")
    funcs[name].attributes.pop("sym_visibility", None)
    return m


@dataclass
class _GridContext(Context):
    """The interpreter's context, with ``interpreter.run_parallel`` run by a backend."""

    grid_run: Callable[[Any, list], list] | None = None
    programs: dict[str, Any] = field(default_factory=dict)

    def eval(self, op, args: list) -> list:
        if op.name == "interpreter.run_parallel" and self.grid_run is not None:
            return self.grid_run(self, op, args)
        return super().eval(op, args)


def grid_runner(backend: str) -> Callable | None:
    """``run(module, name) -> failures`` for test functions that use
    ``interpreter.run_parallel``, or None when ``backend`` cannot run grids."""
    from oxla.interpreter import run_function
    from oxla.interpreter.rules.io import outfeed_log
    from oxla.plugins import get_backend

    be = get_backend(backend)
    run_grid = getattr(be, "run_parallel", None)
    if run_grid is None:
        return None

    def run_parallel(ctx: _GridContext, op, args: list) -> list:
        rows = [[s.root for s in row] for row in op.attributes["programs"]]
        for row in rows:
            for name in row:
                if name not in ctx.programs:
                    ctx.programs[name] = be.compile(program_module(ctx.module, name))
        infeed = [ctx.call(s.root, [], op.loc) for s in op.attributes["infeed"]] \
            if "infeed" in op.attributes else None
        results, log = run_grid([[ctx.programs[n] for n in row] for row in rows], list(args),
                                infeed)
        outfeed_log(ctx).extend(values for _, values in log)
        return list(results)

    def run(module, name: str) -> list[str]:
        ctx = _GridContext(module=module, grid_run=run_parallel)
        run_function(module, name, [], ctx)
        return [str(f) for f in ctx.failures]

    return run


def uses_grid(module) -> bool:
    """True when ``module`` runs ``interpreter.run_parallel`` somewhere."""
    return any(op.name == "interpreter.run_parallel" for op in module.walk())


__all__ = ["grid_runner", "program_module", "uses_grid"]
