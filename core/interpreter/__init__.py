"""oxla.interpreter: the reference interpreter, the semantic oracle of every test.

Every op of the op table has one rule (``@interpreter_rule``) following the StableHLO
spec; :func:`run_function` runs a module's function on numpy arrays and
:class:`InterpreterBackend` is the built-in ``interpreter`` backend.
"""

from oxla.interpreter.backend import InterpreterBackend, InterpreterExecutable, check_inputs
from oxla.interpreter.engine import CheckFailure, Context, eval_op, run_function
from oxla.interpreter.registry import TOKEN, all_rules, interpreter_rule, lookup_rule

__all__ = [
    "InterpreterBackend",
    "InterpreterExecutable",
    "check_inputs",
    "CheckFailure",
    "Context",
    "eval_op",
    "run_function",
    "TOKEN",
    "all_rules",
    "interpreter_rule",
    "lookup_rule",
]
