"""Cleaning what TensorFlow's StableHLO bridge writes, and binding variables.

TensorFlow (``experimental_get_compiler_ir(...)(stage="stablehlo")``) passes every
captured variable as an argument of ``main`` after the function's own inputs, leaves
identity ``stablehlo.reshape`` / ``convert`` / ``transpose`` ops at argument and result
boundaries, ``mhlo.copy`` ops in ``while`` bodies, and private wrapper functions that
nothing calls. Nothing here imports tensorflow.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from oxla.errors import RuntimeInputError
from oxla.ir import Module, Operation
from oxla.ir import attributes as A
from oxla.ir import types as T

_IDENTITY_WHEN_SAME_TYPE = frozenset({"stablehlo.reshape", "stablehlo.convert", "mhlo.copy"})


def _is_identity(op: Operation) -> bool:
    if op.name in _IDENTITY_WHEN_SAME_TYPE:
        return len(op.operands) == 1 and op.operands[0].type == op.results[0].type
    if op.name == "stablehlo.transpose":
        perm = A.to_python(op.attributes.get("permutation"))
        return perm is not None and list(perm) == list(range(len(perm))) and (
            op.operands[0].type == op.results[0].type)
    return False


def _symbol_refs(attr: A.Attribute, out: set[str]) -> None:
    if isinstance(attr, A.SymbolRefAttr):
        out.add(attr.root)
    elif isinstance(attr, A.ArrayAttr):
        for a in attr.value:
            _symbol_refs(a, out)
    elif isinstance(attr, A.DictionaryAttr):
        for _, a in attr.entries:
            _symbol_refs(a, out)


def drop_unused_functions(module: Module) -> list[str]:
    """Erases the private functions that ``main`` does not reach through symbol references.

    Returns:
        The names of the erased functions.
    """
    main = module.main
    reached = {A.to_python(main.attributes["sym_name"])}
    work = [main]
    while work:
        refs: set[str] = set()
        for op in work.pop().walk():
            for attr in op.attributes.values():
                _symbol_refs(attr, refs)
        for name in refs - reached:
            reached.add(name)
            callee = module.lookup(name)
            if callee is not None:
                work.append(callee)
    dropped = []
    for func in list(module.functions):
        name = A.to_python(func.attributes.get("sym_name"))
        if name not in reached and A.to_python(func.attributes.get("sym_visibility")) == "private":
            func.erase()
            dropped.append(name)
    return dropped


def tidy(module: Module) -> int:
    """Forwards identity ops (``mhlo.copy``, same-type ``reshape``/``convert``, identity
    ``transpose``) to their operand and drops unreachable private functions.

    Args:
        module: changed in place.

    Returns:
        How many ops were removed (functions count as one).
    """
    removed = len(drop_unused_functions(module))
    for op in list(module.walk()):
        if _is_identity(op):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
            removed += 1
    return removed


_COUNTER = re.compile(r"\d+")


def _stem(name: str) -> str:
    """``name`` without its digit runs (TF's trace counters, Keras' ``dense_3`` suffixes,
    MLIR's ``.5`` uniquers): ``a_inference_call_49__.7`` -> ``a_inference_call``."""
    return re.sub(r"[_.]{2,}", "_", _COUNTER.sub("", name)).strip("_.") or "f"


def _renamed(attr: A.Attribute, names: dict[str, str]) -> A.Attribute:
    if isinstance(attr, A.SymbolRefAttr) and attr.root in names:
        return A.SymbolRefAttr(names[attr.root], attr.nested)
    if isinstance(attr, A.ArrayAttr):
        return A.ArrayAttr(tuple(_renamed(a, names) for a in attr.value))
    if isinstance(attr, A.DictionaryAttr):
        return A.DictionaryAttr(tuple((k, _renamed(a, names)) for k, a in attr.entries))
    return attr


def normalize_names(module: Module) -> dict[str, str]:
    """Renames the module and its functions other than ``main`` to names without the
    trace counters TensorFlow puts in them (``@a_inference_call_49__.7``,
    ``@a_inference_inner_31__.5``), so that tracing the same model twice gives the same
    text (and the same compile-cache key). A function becomes ``<stem>_<i>`` with ``i``
    its position in the module; symbol references follow.

    Args:
        module: changed in place.

    Returns:
        Old name -> new name, for every renamed function.
    """
    if "sym_name" in module.op.attributes:
        old = A.to_python(module.op.attributes["sym_name"])
        module.op.attributes["sym_name"] = A.StringAttr(_stem(str(old)))
    names: dict[str, str] = {}
    for i, func in enumerate(module.functions):
        name = A.to_python(func.attributes.get("sym_name"))
        if name is not None and name != "main":
            names[str(name)] = f"{_stem(str(name))}_{i}"
    if not names:
        return names
    for func in module.functions:
        name = A.to_python(func.attributes.get("sym_name"))
        if name in names:
            func.attributes["sym_name"] = A.StringAttr(names[name])
    for op in module.walk():
        for key, attr in list(op.attributes.items()):
            new = _renamed(attr, names)
            if new is not attr:
                op.attributes[key] = new
    return names


def bind_arguments(module: Module, start: int, values: Sequence[np.ndarray]) -> None:
    """Replaces ``main``'s arguments ``start, start+1, ...`` by constants of ``values``.

    Args:
        module: changed in place; ``main`` loses those arguments (and their
            ``arg_attrs``).
        start: the index of the first argument to bind.
        values: one array per argument from ``start`` to the end, of its shape.

    Raises:
        RuntimeInputError: the count or a shape does not match the arguments.
    """
    main = module.main
    block = main.regions[0].block
    args = block.args[start:]
    if len(args) != len(values):
        raise RuntimeInputError(
            f"expected {len(args)} values to bind from argument #{start}, got {len(values)}")
    consts = []
    for arg, value in zip(args, values):
        assert isinstance(arg.type, T.TensorType)
        value = np.asarray(value)
        if tuple(value.shape) != tuple(arg.type.shape):
            raise RuntimeInputError(
                f"argument #{arg.index} is {arg.type}, got a value of shape {value.shape}")
        consts.append(Operation.create(
            "stablehlo.constant", result_types=[arg.type],
            attributes={"value": A.dense(value, arg.type)}, loc=main.loc))
    anchor = block.ops[0]
    for arg, const in zip(args, consts):
        block.insert_before(anchor, const)
        arg.replace_all_uses_with(const.results[0])
    del block.args[start:]
    ft = main.attributes["function_type"].type
    main.attributes["function_type"] = A.TypeAttr(
        T.FunctionType(tuple(a.type for a in block.args), ft.results))
    arg_attrs = main.attributes.get("arg_attrs")
    if isinstance(arg_attrs, A.ArrayAttr):
        main.attributes["arg_attrs"] = A.ArrayAttr(tuple(arg_attrs.value[:start]))
