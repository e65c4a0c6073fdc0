"""Preparing a StableHLO test function for a compiling backend (part of
:mod:`oxla.conformance`).

A test file computes on constants: ``main`` calls ``@inputs()``/``@expected()`` (JAX
style) or defines ``stablehlo.constant`` ops (``interpret/`` style), and checks the
result. Compiled as written, a backend's constant folding would compute everything at
compile time and the backend would only copy constants. So, for a compiling backend:

1. every top-level ``stablehlo.constant`` of the test function and every result of a
   top-level argument-less ``func.call`` (``@inputs``, ``@expected``) is evaluated here
   with the interpreter (:func:`hoist_inputs`);
2. a value that feeds the computation becomes a function *argument* (the backend sees
   it only at run time); a value read only by checks as their expected side, or a
   shape operand of a dynamic op (which must stay constant), stays out of the
   arguments;
3. top-level checks become extra results (:func:`split_checks`), evaluated here on
   what the backend returned, against host values where they are known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_CHECK_KINDS = {
    "check.expect_eq": "eq", "check.expect_eq_const": "eq",
    "check.expect_almost_eq": "almost_eq", "check.expect_almost_eq_const": "almost_eq",
    "check.expect_close": "close", "check.expect_serialized_eq": "serialized",
}

_CUSTOM_CHECK_KINDS = {"check.expect_eq": "eq", "check.eq": "eq",
                       "check.expect_almost_eq": "almost_eq", "check.expect_close": "close"}

SHAPE_OPERANDS: dict[str, frozenset[int]] = {
    "stablehlo.dynamic_broadcast_in_dim": frozenset({1}),
    "stablehlo.dynamic_reshape": frozenset({1}),
    "stablehlo.dynamic_iota": frozenset({0}),
    "stablehlo.dynamic_pad": frozenset({2, 3, 4}),
    "stablehlo.real_dynamic_slice": frozenset({1, 2, 3}),
    "stablehlo.dynamic_gather": frozenset({2}),
    "stablehlo.dynamic_conv": frozenset({2}),
}
"""Operands that give a dynamic op its result shape: a constant there stays a constant."""


@dataclass
class SplitCheck:
    """A check removed from a function.

    Attributes:
        op: the (erased) check op; its attributes (tolerances) still apply.
        kind: ``eq``, ``almost_eq`` or ``close``.
        results: indices of the function results holding the operands the backend
            computed, in operand order.
        expected: the ``value`` attribute of a ``*_const`` check, else None.
        sources: one entry per check operand: an ``int`` result index, or the host
            array when the operand is known here (a hoisted input or expected value).
    """

    op: Any
    kind: str
    results: tuple[int, ...]
    expected: Any = None
    sources: list[Any] = field(default_factory=list)


def check_kind(op) -> str | None:
    """The kind of a check op (``eq``/``almost_eq``/``close``), else None."""
    from oxla.interpreter.rules.checks import CHECK_CUSTOM_CALLS
    from oxla.ir import attributes as A

    if op.name == "stablehlo.custom_call":
        target = A.to_python(op.attributes.get("call_target_name"))
        return _CUSTOM_CHECK_KINDS.get(target) if target in CHECK_CUSTOM_CALLS else None
    return _CHECK_KINDS.get(op.name)


def _set_signature(fn, results) -> None:
    from oxla.ir import attributes as A
    from oxla.ir import types as T

    args = fn.regions[0].blocks[0].args
    fn.attributes["function_type"] = A.TypeAttr(
        T.FunctionType(tuple(a.type for a in args), tuple(v.type for v in results)))


def _use_kind(use, body) -> str:
    """How one use reads a hoisted value: ``expected`` (a check's expected side),
    ``shape`` (a dynamic op's shape operand) or ``compute``."""
    owner = use.owner
    if owner.parent is body and check_kind(owner) is not None and use.index >= 1:
        return "expected"
    if use.index in SHAPE_OPERANDS.get(owner.name, ()):
        return "shape"
    return "compute"


def hoist_inputs(module, name: str) -> tuple[list[np.ndarray], dict]:
    """Turns the constant inputs of function ``name`` into function arguments, in place.

    Evaluates each top-level ``stablehlo.constant`` and argument-less ``func.call`` of
    ``name`` with the interpreter. A static tensor value used by the computation
    becomes a new trailing block argument; a value used only as a check's expected
    operand is left in place (the checks read it on host); a value feeding a dynamic
    op's shape operand stays a constant.

    Returns:
        The host arrays for the new arguments (in order), and ``value -> array`` for
        every evaluated value still known on host (new arguments included).

    Raises:
        InterpreterError: ``@inputs``/``@expected`` failed to evaluate.
    """
    from oxla.interpreter import Context, run_function
    from oxla.ir import types as T

    fn = module.lookup(name)
    body = fn.regions[0].blocks[0]
    ctx = Context(module=module)
    args: list[np.ndarray] = []
    host: dict = {}
    for op in list(body.ops):
        if op.name == "stablehlo.constant":
            vals = ctx.eval(op, [])
        elif op.name == "func.call" and not op.operands:
            vals = run_function(module, op.attributes["callee"].root, [], ctx)
        else:
            continue
        for r, v in zip(op.results, vals):
            t = r.type
            if (not isinstance(t, T.TensorType) or not t.is_static
                    or isinstance(t.element_type, T.QuantizedType)
                    or not isinstance(v, np.ndarray)):
                continue
            kinds = {_use_kind(u, body) for u in r.uses}
            if "shape" in kinds:
                continue
            host[r] = v
            if "compute" in kinds:
                arg = body.add_arg(t)
                r.replace_all_uses_with(arg)
                host[arg] = v
                args.append(v)
        if op.name == "func.call" and not any(r.uses for r in op.results):
            op.erase()
    _set_signature(fn, body.terminator.operands)
    return args, host


def split_checks(module, name: str, host: dict | None = None):
    """A copy of ``module`` whose function ``name`` (its only public function) returns
    its checks' operands instead of checking them, and the list of removed checks.

    With ``host`` (from :func:`hoist_inputs`, on ``module`` itself, which is then
    changed in place instead of copied) an operand known on host is not returned; the
    check reads the host array.

    A ``check.eq`` result that the function returns becomes a ``true`` constant.

    Raises:
        NotSupportedError: checks inside regions, or a check result used other than by
            the function's return. (``interpreter.probe`` ops stay: the backend runs
            them and :func:`evaluate_checks` reads what they recorded.)
    """
    from oxla.errors import NotSupportedError
    from oxla.ir import attributes as A
    from oxla.ir import func_name
    from oxla.passes.util import make_constant

    m = module if host is not None else module.clone()
    host = host or {}
    fn = m.lookup(name)
    body = fn.regions[0].blocks[0]
    ret = body.terminator
    outs = list(ret.operands)
    checks: list[SplitCheck] = []
    for op in list(fn.walk()):
        kind = check_kind(op)
        if kind is None and op.name.startswith("check."):
            raise NotSupportedError(f"'{op.name}' cannot be split out of a compiled test",
                                    op.loc)
        if kind is None:
            continue
        if op.parent is not body:
            raise NotSupportedError(f"'{op.name}' inside a region cannot be split out", op.loc)
        if any(u.owner is not ret for r in op.results for u in r.uses):
            raise NotSupportedError(f"the result of '{op.name}' is used", op.loc)
        for r in op.results:  # `return %check_eq`: true here, the check runs on host
            if r.uses:
                c = make_constant(np.ones(r.type.shape, np.bool_), r.type, op.loc)
                body.insert_before(op, c)
                r.replace_all_uses_with(c.results[0])
                outs = [c.results[0] if v is r else v for v in outs]
        sources: list[Any] = []
        first = len(outs)
        for v in op.operands:
            if v in host:
                sources.append(host[v])
            else:
                sources.append(len(outs))
                outs.append(v)
        expected = op.attributes["value"].array if "value" in op.attributes else None
        checks.append(SplitCheck(op, kind, tuple(range(first, len(outs))), expected,
                                 sources))
        op.erase()
    ret.set_operands(outs)
    for op in reversed(list(body.ops)):  # inputs left without uses (expected values)
        if (op.results and not any(r.uses for r in op.results)
                and (op.name == "stablehlo.constant" or any(r in host for r in op.results))):
            op.erase()
    _set_signature(fn, outs)
    called = {op.attributes["callee"].root for op in m.walk() if op.name == "func.call"}
    for f in list(m.functions):  # make `name` the module's entry; drop unused helpers
        if f is fn:
            continue
        if func_name(f) not in called and func_name(f) in ("inputs", "expected"):
            f.erase()
            continue
        f.attributes["sym_visibility"] = A.StringAttr("private")
        if func_name(f) == "main":
            f.attributes["sym_name"] = A.StringAttr("__oxla_test_main")
    fn.attributes.pop("sym_visibility", None)
    return m, checks


def evaluate_checks(module, checks: list[SplitCheck], values: list,
                    probes: dict | None = None) -> list[str]:
    """Runs the split-out ``checks`` on host over the backend's ``values`` (and the
    ``interpreter.probe`` records ``probes`` of the run, ``probe_id -> [array, ...]``,
    for ``check.expect_serialized_eq``); returns the failure messages (empty when all
    pass)."""
    from oxla.interpreter import Context

    ctx = Context(module=module)
    ctx.probes.update(probes or {})
    for c in checks:
        args = [values[s] if isinstance(s, int) else s for s in c.sources]
        ctx.eval(c.op, args)
    return [str(f) for f in ctx.failures]


def backend_runner(backend: str) -> Callable:
    """``run(module, name) -> failures`` that compiles the test function ``name`` with
    ``backend`` (inputs as arguments, checks as results) and checks its results."""
    from oxla.plugins import get_backend

    be = get_backend(backend)

    def run(module, name: str) -> list[str]:
        m = module.clone()
        args, host = hoist_inputs(m, name)
        m, checks = split_checks(m, name, host)
        exe = be.compile(m)
        vals = exe(*args)
        return evaluate_checks(m, checks, vals, getattr(exe, "probes", None))

    return run


__all__ = ["SplitCheck", "SHAPE_OPERANDS", "check_kind", "hoist_inputs", "split_checks",
           "evaluate_checks", "backend_runner"]
