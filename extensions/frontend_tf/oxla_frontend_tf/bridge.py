"""Lowering TensorFlow callables to StableHLO text with TensorFlow's own XLA bridge.

``tf.function(f, jit_compile=True).experimental_get_compiler_ir(*specs)(stage="stablehlo")``
returns the module of the traced function. Its ``main`` takes the flat inputs followed
by the function's captured inputs (variables, read as tensors of their value, and
captured eager tensors), in the order of ``ConcreteFunction.captured_inputs``, and
returns the flat outputs (``tf.nest.flatten`` of ``structured_outputs``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.errors import LoweringError, NotSupportedError
from oxla_frontend_tf._tf import require_tf

STAGE = "stablehlo"
"""The ``experimental_get_compiler_ir`` stage: StableHLO text (TF >= 2.16)."""


@dataclass
class Capture:
    """One captured input of a traced function: a variable or an eager tensor.

    Attributes:
        name: the variable's name, or ``captured_tensor_<i>``.
        read: returns the current value as a numpy array.
        variable: the ``tf.Variable`` when it is one.
    """

    name: str
    read: Callable[[], np.ndarray]
    variable: Any = None


@dataclass
class Lowered:
    """The StableHLO of a traced TensorFlow callable and how to call it.

    Attributes:
        text: the module text.
        input_specs: one ``tf.TensorSpec`` per positional input (main's first arguments).
        captures: what main's remaining arguments are, in order.
        output_structure: the function's ``structured_outputs``; flat outputs are packed
            into it with ``tf.nest.pack_sequence_as``.
        name: the function's name, for diagnostics.
    """

    text: str
    input_specs: list[Any]
    captures: list[Capture] = field(default_factory=list)
    output_structure: Any = None
    name: str = "<tf.function>"


def _is_keras_layer(obj: Any) -> bool:
    try:
        import keras
    except ImportError:
        return False
    return isinstance(obj, keras.Layer)


def as_jit_function(obj: Any) -> Any:
    """Wraps ``obj`` in ``tf.function(..., jit_compile=True)`` taking positional tensors.

    Keras layers and models are called with ``training=False`` (inference: batch norm
    uses its moving statistics, dropout is off); a multi-input Keras model takes its
    inputs as one list.
    """
    tf = require_tf()
    if _is_keras_layer(obj):
        n_inputs = len(getattr(obj, "inputs", None) or [None])

        def call(*xs):
            return obj(list(xs) if n_inputs > 1 else xs[0], training=False)
    elif callable(obj):
        def call(*xs):
            return obj(*xs)
    else:
        raise TypeError(f"expected a tf.function, a Keras model or a callable, "
                        f"got {type(obj).__name__}")
    return tf.function(call, jit_compile=True, autograph=False)


def _capture(tf: Any, index: int, tensor: Any, variables: dict[int, Any]) -> Capture:
    if tensor.dtype != tf.resource:
        value = tensor.numpy()
        return Capture(f"captured_tensor_{index}", lambda: value)
    var = variables.get(id(tensor))
    if var is None:
        raise NotSupportedError(
            f"captured input #{index} is a resource that is not a variable of the function",
            notes=["capture tf.Variable objects or tensors; other resources (tables, "
                   "datasets) have no StableHLO form"])
    return Capture(var.name, lambda: var.numpy(), var)


def lower(obj: Any, input_specs: Sequence[Any], name: str | None = None) -> Lowered:
    """Traces ``obj`` at ``input_specs`` and returns its StableHLO text.

    Args:
        obj: a ``tf.function``, a ``ConcreteFunction``, a Keras model or layer, or a
            Python callable on tensors.
        input_specs: one ``tf.TensorSpec`` per positional argument.
        name: the name used in diagnostics (default: the function's).

    Raises:
        LoweringError: TensorFlow cannot compile the function with XLA (an op without
            an XLA kernel, a dynamic shape), with TensorFlow's message.
        NotSupportedError: the function captures a resource that is not a variable.
    """
    tf = require_tf()
    fn = as_jit_function(obj)
    name = name or getattr(obj, "__name__", None) or type(obj).__name__
    try:
        text = fn.experimental_get_compiler_ir(*input_specs)(stage=STAGE)
        concrete = fn.get_concrete_function(*input_specs)
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LoweringError(
            f"TensorFlow could not lower '{name}' to StableHLO: {first}",
            notes=["the function must compile with tf.function(jit_compile=True) "
                   "for the given input specs"]) from exc
    variables = {id(v.handle): v for v in concrete.variables}
    captures = [_capture(tf, i, t, variables)
                for i, t in enumerate(concrete.captured_inputs)]
    return Lowered(text, list(input_specs), captures, concrete.structured_outputs, name)


def flatten_outputs(structure: Any) -> list[Any]:
    """The flat output leaves of ``structure`` (``tf.nest`` order: dict keys sorted)."""
    tf = require_tf()
    return tf.nest.flatten(structure, expand_composites=True)


def pack_outputs(structure: Any, flat: Sequence[Any]) -> Any:
    """Packs flat outputs into ``structure``."""
    tf = require_tf()
    return tf.nest.pack_sequence_as(structure, list(flat), expand_composites=True)
