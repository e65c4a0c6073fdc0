"""``infeed`` and ``outfeed``: the streaming interfaces (spec "Streaming
communication", ``infeed``, ``outfeed``).

Values come from and go to the Python hooks ``Context.infeed`` / ``Context.outfeed``.
Without an infeed hook, ``infeed`` reads the functions listed in
``interpreter.run_parallel``'s ``infeed`` attribute; without an outfeed hook the
values are recorded in order and read back with :func:`outfeed_log`.
"""

from __future__ import annotations

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import TOKEN, interpreter_rule


def outfeed_log(ctx) -> list[list]:
    """The values written by ``outfeed`` ops run without an outfeed hook, one list of
    arrays per op execution (processes of a ``run_parallel`` grid included, appended
    to the caller's log when the grid finishes)."""
    return ctx.__dict__.setdefault("outfeed_log", [])


@interpreter_rule("stablehlo.infeed")
def infeed(ctx, op, args):
    n = len(op.results) - 1
    if ctx.infeed is not None:
        values = list(ctx.infeed())
    elif ctx.grid is not None and ctx.grid.infeed:
        with ctx.grid._cond:
            name = ctx.grid.infeed.popleft() if ctx.grid.infeed else None
        if name is None:
            raise InterpreterError("infeed: the infeed queue is empty", op.loc)
        values = ctx.call(name, [], op.loc)
    else:
        raise InterpreterError(
            "infeed: no infeed to read from", op.loc,
            notes=["pass Context(infeed=fn) where fn() returns the list of arrays to read"])
    if len(values) != n:
        raise InterpreterError(f"infeed: expected {n} values, the infeed gave {len(values)}",
                               op.loc)
    outs = []
    for i, v in enumerate(values):
        t = op.results[i].type
        want = getattr(t, "shape", None)
        v = np.asarray(v)
        if want is not None and tuple(v.shape) != tuple(want):
            raise InterpreterError(f"infeed: result #{i} has shape {tuple(want)}, the infeed "
                                   f"gave {tuple(v.shape)}", op.loc)
        outs.append(v)
    return [*outs, TOKEN]


@interpreter_rule("stablehlo.outfeed")
def outfeed(ctx, op, args):
    values = [np.array(a, copy=True) for a in args[:-1]]
    if ctx.outfeed is not None:
        ctx.outfeed(values)
    elif ctx.grid is not None and not ctx.grid.standalone:
        ctx.grid.outfeed.append((ctx.process, values))
    else:
        outfeed_log(ctx).append(values)
    return [TOKEN]
