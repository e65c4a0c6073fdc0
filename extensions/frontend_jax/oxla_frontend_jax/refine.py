"""Fitting an imported JAX module to concrete inputs.

``jax.export`` writes two things that a plain StableHLO consumer must resolve:

- a leading ``_platform_index`` argument when an artifact was exported for several
  platforms (``platforms=["cpu", "cuda"]``), selecting the per-platform branch;
- ``?`` dimensions for shape-polymorphic exports (``jax.export.symbolic_shape``),
  guarded by ``stablehlo.custom_call @shape_assertion`` ops.

The first becomes a constant; the second is refined by the core pass
``stablehlo-refine-shapes`` once the caller gives concrete argument shapes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError, RuntimeInputError
from oxla.ir import Module, Operation
from oxla.ir import attributes as A
from oxla.ir import parse_input_spec as oxla_parse_input_spec
from oxla.ir import types as T

REFINE_PASS = "stablehlo-refine-shapes"
PLATFORM_INDEX = "_platform_index"


def _arg_attr(func: Operation, index: int, name: str) -> Any:
    arg_attrs = func.attributes.get("arg_attrs")
    if not isinstance(arg_attrs, A.ArrayAttr) or index >= len(arg_attrs.value):
        return None
    entry = arg_attrs.value[index]
    if isinstance(entry, A.DictionaryAttr):
        return A.to_python(dict(entry.entries).get(name))
    return None


def _set_signature(func: Operation, inputs: Sequence[T.Type] | None = None) -> None:
    ft = func.attributes["function_type"].type
    new_inputs = tuple(inputs) if inputs is not None else ft.inputs
    func.attributes["function_type"] = A.TypeAttr(T.FunctionType(new_inputs, ft.results))


def select_platform(module: Module, platforms: Sequence[str], want: str = "cpu") -> None:
    """Replaces main's ``_platform_index`` argument by the index of ``want``.

    Args:
        module: an imported ``jax.export`` module; changed in place.
        platforms: ``Exported.platforms``, in the order of the export.
        want: the platform whose lowering oxla should run; ``cpu`` lowerings are
            plain StableHLO without vendor custom calls.

    Raises:
        NotSupportedError: the artifact was not exported for ``want``.
    """
    main = module.main
    if _arg_attr(main, 0, "jax.global_constant") != PLATFORM_INDEX:
        return
    lowered = [p.lower() for p in platforms]
    if want not in lowered:
        raise NotSupportedError(
            f"the jax.export artifact was exported for platforms {list(platforms)}, "
            f"expected one of them to be '{want}'",
            notes=["export with jax.export.export(f, platforms=['cpu', ...])"],
        )
    block = main.regions[0].block
    arg = block.args[0]
    const_type = arg.type
    assert isinstance(const_type, T.TensorType)
    value = np.asarray(lowered.index(want), dtype=const_type.element_type.dtype)
    const = Operation.create("stablehlo.constant", result_types=[const_type],
                             attributes={"value": A.dense(value, const_type)}, loc=main.loc)
    if block.ops:
        block.insert_before(block.ops[0], const)
    else:
        block.append(const)
    arg.replace_all_uses_with(const.results[0])
    del block.args[0]
    for i, a in enumerate(block.args):
        a.index = i
    _set_signature(main, [a.type for a in block.args])
    arg_attrs = main.attributes.get("arg_attrs")
    if isinstance(arg_attrs, A.ArrayAttr):
        main.attributes["arg_attrs"] = A.ArrayAttr(tuple(arg_attrs.value[1:]))


@dataclass(frozen=True)
class InputSpec:
    """A concrete argument shape, with its element type when the user gave one."""

    shape: tuple[int, ...]
    element_type: T.ElementType | None = None


def parse_input_spec(spec: str) -> InputSpec:
    """Reads one ``--input-spec`` item: ``4x8:f32``, ``:f32`` (a scalar) or ``4x8``
    (the element type is then the module's); see :func:`oxla.ir.parse_input_spec`.

    Raises:
        RuntimeInputError: malformed spec.
    """
    shape, element_type = oxla_parse_input_spec(spec)
    return InputSpec(shape, element_type)


def _concrete(given: Any, declared: T.TensorType, index: int) -> T.TensorType:
    """Returns the static type for one argument from a shape, a spec or a typed object."""
    if isinstance(given, str):
        given = parse_input_spec(given)
    if isinstance(given, InputSpec | T.TensorType):
        shape, elem = given.shape, given.element_type or declared.element_type
    elif hasattr(given, "shape"):
        shape, elem = tuple(int(d) for d in given.shape), declared.element_type
        dtype = getattr(given, "dtype", None)
        if dtype is not None and np.dtype(dtype) != declared.element_type.dtype:
            raise RuntimeInputError(
                f"argument #{index} has dtype {np.dtype(dtype)}, expected "
                f"{declared.element_type.dtype} (for {declared})")
    else:
        shape, elem = tuple(int(d) for d in given), declared.element_type
    if elem != declared.element_type:
        raise RuntimeInputError(
            f"argument #{index} has element type {elem}, expected {declared.element_type} "
            f"(for {declared})")
    if None in shape or len(shape) != declared.rank or any(
        d is not None and d != s for d, s in zip(declared.shape, shape)
    ):
        raise RuntimeInputError(
            f"argument #{index} has shape {tuple(shape)}, expected {declared}")
    return T.TensorType(tuple(shape), declared.element_type)


def is_dynamic(module: Module) -> bool:
    """True when main takes or returns a tensor with a ``?`` dimension."""
    ft = module.main.attributes["function_type"].type
    return any(isinstance(t, T.TensorType) and not t.is_static for t in (*ft.inputs, *ft.results))


def refine_shapes(module: Module, arg_shapes: Sequence[Any] | None) -> None:
    """Makes main's argument types the concrete ``arg_shapes`` and refines the module.

    Args:
        module: changed in place.
        arg_shapes: one item per argument of main: a shape tuple, an input spec
            (``"4x8:f32"``), an ``oxla.ir`` ``TensorType`` or an object with ``shape``
            and ``dtype`` (a numpy array, ``jax.ShapeDtypeStruct``). ``None`` leaves the
            module as it is (a dynamic module then runs only where the backend takes
            dynamic shapes, like the interpreter).

    Raises:
        RuntimeInputError: a shape that does not fit the declared argument type.
        NotSupportedError: the module has ``?`` dimensions and the
            ``stablehlo-refine-shapes`` pass is not installed.
    """
    if arg_shapes is None:
        return
    main = module.main
    block = main.regions[0].block
    if len(arg_shapes) != len(block.args):
        raise RuntimeInputError(
            f"expected {len(block.args)} argument shapes, got {len(arg_shapes)}")
    new_types = []
    for i, (arg, given) in enumerate(zip(block.args, arg_shapes)):
        assert isinstance(arg.type, T.TensorType)
        new_types.append(_concrete(given, arg.type, i))
    if not is_dynamic(module):
        return
    from oxla import plugins

    available = plugins.passes()
    if REFINE_PASS not in available:
        raise NotSupportedError(
            "the module has dynamic ('?') dimensions; refining them to the given shapes "
            f"needs the '{REFINE_PASS}' pass, which is not installed",
            notes=[f"installed passes: {', '.join(sorted(available)) or 'none'}",
                   "compile without shapes to run the dynamic module on the interpreter"],
        )
    for arg, t in zip(block.args, new_types):
        arg.type = t
    _set_signature(main, new_types)
    # jax.export puts the body in a private function called from main; refinement
    # crosses that call only once it is inlined
    if "inline" in available:
        available["inline"].factory().run(module)
    available[REFINE_PASS].factory().run(module)
    check_shape_assertions(module)


def check_shape_assertions(module: Module) -> int:
    """Evaluates, at compile time, every ``shape_assertion`` custom call whose operands
    are constants (all of them once shapes are refined) and erases it, so that static
    backends (cpu) need no kernel for it; returns how many were erased.

    Raises:
        RuntimeInputError: an assertion is false (JAX's message, values filled in).
    """
    n = 0
    for op in list(module.walk()):
        if op.name != "stablehlo.custom_call" or \
                A.to_python(op.attributes.get("call_target_name")) != "shape_assertion":
            continue
        owners = [v.owner_op for v in op.operands]
        if not all(o is not None and o.name == "stablehlo.constant" for o in owners):
            continue
        shape_assertion_interpreter(None, op, [o.attr("value").array for o in owners])
        op.erase()
        n += 1
    return n


def shape_assertion_interpreter(ctx: Any, op: Operation, args: list[np.ndarray]) -> list:
    """The interpreter's ``shape_assertion`` custom call: fails with JAX's own message
    (``{0}``-style placeholders filled with the dimension values) when the predicate
    is false.

    Raises:
        RuntimeInputError: the inputs do not satisfy the polymorphic shape constraints.
    """
    if bool(np.asarray(args[0])):
        return []
    message = A.to_python(op.attributes.get("error_message")) or "shape assertion failed"
    values = [int(np.asarray(a)) for a in args[1:]]
    try:
        message = message.format(*values)
    except (IndexError, KeyError, ValueError):
        pass
    raise RuntimeInputError(message[0].lower() + message[1:].rstrip("."), op.loc)
