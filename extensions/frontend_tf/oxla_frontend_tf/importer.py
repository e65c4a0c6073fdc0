"""Importing TensorFlow functions, Keras models and SavedModels as oxla modules."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError, OxlaError, RuntimeInputError
from oxla.ir import Module, parse_module
from oxla.ir import types as T
from oxla.protocols import CompileOptions, Executable
from oxla_frontend_tf._tf import require_tf
from oxla_frontend_tf.bridge import Lowered, flatten_outputs, lower, pack_outputs
from oxla_frontend_tf.bridge_text import legalize_bridge_text
from oxla_frontend_tf.detect import saved_model_dir
from oxla_frontend_tf.specs import to_tensor_spec, to_tensor_specs
from oxla_frontend_tf.xla_linalg import map_xla_linalg_calls

SERVING_SIGNATURE = "serving_default"


def _check_arity(module: Module, lowered: Lowered) -> None:
    ft = module.main.attributes["function_type"].type
    n_args = len(lowered.input_specs) + len(lowered.captures)
    if len(ft.inputs) != n_args:
        raise NotSupportedError(
            f"TensorFlow's module for '{lowered.name}' takes {len(ft.inputs)} arguments, "
            f"expected {n_args} ({len(lowered.input_specs)} inputs and "
            f"{len(lowered.captures)} captured inputs)")
    n_out = len(flatten_outputs(lowered.output_structure))
    if len(ft.results) != n_out:
        raise NotSupportedError(
            f"TensorFlow's module for '{lowered.name}' returns {len(ft.results)} results, "
            f"expected the function's {n_out} outputs; functions that assign variables "
            "return their new values too and are not supported",
            notes=["import an inference function (Keras: training=False)"])


_BOUNDED = "stablehlo.set_dimension_size"


def _reject_bounded_dynamism(text: str, filename: str) -> None:
    """XLA's bounded dynamic shapes (``tf.where``, ``tf.unique``, ``tf.boolean_mask``)
    are written as ``stablehlo.set_dimension_size`` and ``#stablehlo.bounds`` types,
    which are not StableHLO spec ops: name the op and where it is instead of failing
    in the parser."""
    at = text.find(_BOUNDED)
    if at < 0:
        return
    line = text.count("\n", 0, at) + 1
    source = text[text.rfind("\n", 0, at) + 1:text.find("\n", at)].strip()
    raise NotSupportedError(
        f"{filename}:{line}: '{_BOUNDED}' (an XLA bounded dynamic shape) is not supported: "
        f"{source[:160]}",
        notes=["the function has a data-dependent output shape (tf.where with one "
               "argument, tf.unique, tf.boolean_mask); compute a fixed-shape result "
               "instead (tf.where(cond, x, y), masks)"])


def module_from_lowered(lowered: Lowered, variables_as_inputs: bool = False) -> Module:
    """Parses and tidies TensorFlow's StableHLO; binds the captures unless asked not to.

    Args:
        lowered: from :func:`oxla_frontend_tf.bridge.lower`.
        variables_as_inputs: keep captured variables as arguments of ``main`` after the
            inputs (in ``lowered.captures`` order) instead of constants of their value
            now.
    """
    from oxla_frontend_tf.tidy import bind_arguments, normalize_names, tidy

    filename = f"<tf {lowered.name}>"
    text = legalize_bridge_text(lowered.text)
    _reject_bounded_dynamism(text, filename)
    module = parse_module(text, filename)
    map_xla_linalg_calls(module)  # XLA's @Qr/@Eigh... as oxla-lapack's LAPACK targets
    _check_arity(module, lowered)
    if not variables_as_inputs and lowered.captures:
        bind_arguments(module, len(lowered.input_specs), [c.read() for c in lowered.captures])
    tidy(module)
    normalize_names(module)  # no trace counters: the same model gives the same text
    return module


def import_function(fn: Any, input_specs: Any, variables_as_inputs: bool = False) -> Module:
    """Imports a ``tf.function``, a Keras model or layer, or a callable on tensors.

    Args:
        fn: what to trace; Keras models run with ``training=False``.
        input_specs: one per positional argument: a ``tf.TensorSpec``, an array or
            tensor (its shape and dtype), a shape tuple (f32) or a string like
            ``1x96x96x3:f32``; a single one for a one-argument function.
        variables_as_inputs: variables become arguments of ``main`` after the inputs
            (default: constants of their current values).

    Returns:
        A module whose ``main`` takes the flat inputs (then the variables when asked)
        and returns the flat outputs (``tf.nest`` order).

    Raises:
        LoweringError: TensorFlow cannot compile ``fn`` with XLA.
        NotSupportedError: a stateful function (assigns variables) or a non-variable
            resource capture.
        PluginError: tensorflow is not installed.
    """
    return module_from_lowered(lower(fn, to_tensor_specs(input_specs)), variables_as_inputs)


def load_saved_model_signature(path: str | os.PathLike[str],
                               signature: str | None = None) -> tuple[Any, list[str], list[Any]]:
    """Loads a SavedModel and returns ``((loaded object, concrete function), input names,
    input specs)``; the loaded object owns the function's variables.

    The inputs are the signature's keyword arguments in sorted order (``tf.nest``
    order, the order ``--input-spec`` items follow).

    Raises:
        OxlaError: not a SavedModel directory, or no such signature.
    """
    directory = saved_model_dir(path)
    if directory is None:  # before importing tensorflow (seconds, and its logs)
        raise OxlaError(f"'{os.fspath(path)}' is not a SavedModel directory "
                        "(no saved_model.pb in it)")
    tf = require_tf()
    loaded = tf.saved_model.load(directory)
    signatures = dict(loaded.signatures)
    if signature is None:
        signature = SERVING_SIGNATURE if SERVING_SIGNATURE in signatures or not signatures \
            else sorted(signatures)[0] if len(signatures) == 1 else None
    if signature not in signatures:
        raise OxlaError(
            f"SavedModel '{directory}' has no signature '{signature}'; it has: "
            f"{', '.join(sorted(signatures)) or 'none'}",
            notes=["export with tf.saved_model.save(obj, dir, signatures=...) or "
                   "model.export(dir)"])
    fn = signatures[signature]
    args, kwargs = fn.structured_input_signature
    if args:
        raise NotSupportedError(f"signature '{signature}' takes positional arguments")
    names = sorted(kwargs)
    return (loaded, fn), names, [kwargs[n] for n in names]


def _fit_specs(names: list[str], declared: list[Any], given: Sequence[Any] | None) -> list[Any]:
    tf = require_tf()
    if given is None:
        for n, s in zip(names, declared):
            if not s.shape.is_fully_defined():
                raise RuntimeInputError(
                    f"input '{n}' has shape {s.shape} with unknown dimensions; "
                    "give concrete shapes (--input-spec 1x224x224x3:f32, one per input)")
        return list(declared)
    if len(given) != len(declared):
        raise RuntimeInputError(
            f"expected {len(declared)} input specs ({', '.join(names)}), got {len(given)}")
    out = []
    for n, s, g in zip(names, declared, given):
        spec = to_tensor_spec(g, default_dtype=s.dtype.as_numpy_dtype)
        if spec.dtype != s.dtype:
            raise RuntimeInputError(
                f"input '{n}' has dtype {s.dtype.name}, got {spec.dtype.name}")
        if not s.shape.is_compatible_with(spec.shape):
            raise RuntimeInputError(
                f"input '{n}' has shape {s.shape}, got {tuple(spec.shape)}")
        out.append(tf.TensorSpec(spec.shape, s.dtype, name=n))
    return out


def lower_saved_model(path: str | os.PathLike[str], input_specs: Sequence[Any] | None = None,
                      signature: str | None = None) -> Lowered:
    """Lowers a SavedModel signature at concrete input shapes; see :func:`import_saved_model`."""
    (loaded, fn), names, declared = load_saved_model_signature(path, signature)
    specs = _fit_specs(names, declared, input_specs)

    def call(*xs):
        _ = loaded  # keeps the SavedModel's variables alive as long as the function
        return fn(**dict(zip(names, xs)))

    return lower(call, specs, name=os.fspath(path))


def import_saved_model(path: str | os.PathLike[str], input_specs: Sequence[Any] | None = None,
                       signature: str | None = None,
                       variables_as_inputs: bool = False) -> Module:
    """Imports one signature of a SavedModel directory.

    Args:
        path: the directory (or its ``saved_model.pb``).
        input_specs: one per input, in sorted input-name order (strings ``1x224x224x3``
            or ``1x224x224x3:f32``, shapes, ``tf.TensorSpec``); default: the signature's
            own shapes, which must then be fully known.
        signature: default ``serving_default`` (or the only one).
        variables_as_inputs: see :func:`import_function`.

    Returns:
        A module whose ``main`` takes the inputs in sorted name order and returns the
        outputs in sorted name order.

    Raises:
        RuntimeInputError: specs that do not fit the signature, or unknown dimensions
            without specs.
        OxlaError: not a SavedModel, or no such signature.
    """
    return module_from_lowered(lower_saved_model(path, input_specs, signature),
                               variables_as_inputs)


class TFCompiled:
    """A compiled TensorFlow function: takes positional arrays (numpy or tf tensors) and
    returns the function's output structure of numpy arrays.

    Attributes:
        executable: the oxla executable of the flat module.
        lowered: what TensorFlow wrote (specs, captures, output structure).
        variables_as_inputs: whether variables are passed (their values at call time)
            instead of compiled in.
    """

    def __init__(self, executable: Executable, lowered: Lowered, variables_as_inputs: bool):
        self.executable = executable
        self.lowered = lowered
        self.variables_as_inputs = variables_as_inputs

    def __call__(self, *args: Any) -> Any:
        specs = self.lowered.input_specs
        if len(args) != len(specs):
            raise RuntimeInputError(f"expected {len(specs)} arguments, got {len(args)}")
        flat = [np.asarray(a) for a in args]
        if self.variables_as_inputs:
            flat += [np.asarray(c.read()) for c in self.lowered.captures]
        outs = self.executable(*flat)
        return pack_outputs(self.lowered.output_structure, [np.asarray(o) for o in outs])

    @property
    def input_types(self) -> list[T.Type]:
        """The types of ``main``'s arguments."""
        return list(self.executable.signature.inputs)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the flat executable as a ``.oxla`` artifact (``oxla run`` reads it)."""
        self.executable.save(path)


def compile(  # noqa: A001 - mirrors oxla.compile
    fn: Any,
    input_specs: Any = None,
    backend: str = "interpreter",
    variables_as_inputs: bool = False,
    options: CompileOptions | None = None,
    signature: str | None = None,
) -> TFCompiled:
    """Imports and compiles a TensorFlow function, Keras model or SavedModel directory.

    Args:
        fn: a ``tf.function``, Keras model, callable, or a SavedModel path.
        input_specs: see :func:`import_function` (optional for a SavedModel whose
            signature has static shapes).
        backend: an installed oxla backend.
        variables_as_inputs: compile variables as arguments and pass their values at
            each call (weights may change between calls without recompiling).
        options: oxla compile options.
        signature: the SavedModel signature.

    Returns:
        A :class:`TFCompiled`.
    """
    import oxla

    if isinstance(fn, str | os.PathLike):
        lowered = lower_saved_model(fn, input_specs, signature)
    else:
        if input_specs is None:
            raise RuntimeInputError("input_specs are needed to trace a function")
        lowered = lower(fn, to_tensor_specs(input_specs))
    module = module_from_lowered(lowered, variables_as_inputs)
    exe = oxla.compile(module, backend=backend, options=options)
    return TFCompiled(exe, lowered, variables_as_inputs)
