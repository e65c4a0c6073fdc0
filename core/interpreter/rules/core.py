"""Rules for constants, calls, composites, tuples, tokens and other structural ops.

Spec sections: ``constant``, ``func.call`` (Dialect Interop), ``composite``,
``optimization_barrier`` (and ``mhlo.copy``, the identity), ``tuple``,
``get_tuple_element``, ``after_all``, ``custom_call``.
"""

from __future__ import annotations

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import TOKEN, interpreter_rule
from oxla.interpreter.rules.util import attr
from oxla.ir import attributes as A


@interpreter_rule("stablehlo.constant", "chlo.constant")
def constant(ctx, op, args):
    value = op.attributes["value"]
    assert isinstance(value, A.DenseElementsAttr)
    return [value.array.copy()]


@interpreter_rule("func.call")
def call(ctx, op, args):
    callee = op.attributes["callee"]
    assert isinstance(callee, A.SymbolRefAttr)
    return ctx.call(callee.root, args, op.loc)


@interpreter_rule("stablehlo.composite")
def composite(ctx, op, args):
    decomposition = op.attributes["decomposition"]
    name = decomposition.root if isinstance(decomposition, A.SymbolRefAttr) else \
        A.to_python(decomposition)
    return ctx.call(name, args, op.loc)


@interpreter_rule("stablehlo.optimization_barrier", "mhlo.copy")
def optimization_barrier(ctx, op, args):
    return list(args)


@interpreter_rule("stablehlo.tuple")
def tuple_(ctx, op, args):
    return [tuple(args)]


@interpreter_rule("stablehlo.get_tuple_element")
def get_tuple_element(ctx, op, args):
    return [args[0][attr(op, "index")]]


@interpreter_rule("stablehlo.after_all", "stablehlo.create_token")
def after_all(ctx, op, args):
    return [TOKEN]


@interpreter_rule("stablehlo.custom_call")
def custom_call(ctx, op, args):
    """Dispatches to a target registered through ``oxla_custom_calls`` (or a check)."""
    target = attr(op, "call_target_name")
    from oxla.interpreter.rules.checks import CHECK_CUSTOM_CALLS

    if target in CHECK_CUSTOM_CALLS:
        return CHECK_CUSTOM_CALLS[target](ctx, op, args)
    fn = ctx.custom_calls.get(target)
    if fn is None:
        from oxla.plugins import custom_calls

        info = custom_calls("interpreter").get(target)
        fn = info.fn if info is not None else None
    if fn is None:
        raise InterpreterError(
            f"no implementation of custom call target '{target}' for the interpreter",
            op.loc,
            notes=["register one through the oxla_custom_calls hook "
                   "(CustomCallInfo(target, 'interpreter', fn))"],
        )
    outs = fn(ctx, op, args)
    return [np.asarray(o) if not isinstance(o, tuple) and o is not TOKEN else o for o in outs]
