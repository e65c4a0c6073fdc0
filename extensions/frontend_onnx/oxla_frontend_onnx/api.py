"""``oxla_frontend_onnx.compile``: an ONNX model compiled for a backend, called with
numpy arrays by position or by graph-input name."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

import oxla
from oxla.errors import OxlaError, RuntimeInputError
from oxla.protocols import CompileOptions
from oxla_frontend_onnx.importer import (
    SymbolicDimsError,
    group_results,
    import_model,
    input_names,
    result_layout,
    result_names,
)


class OnnxFunction:
    """A compiled ONNX model.

    Attributes:
        executable: the backend's ``Executable`` (flat numpy in and out).
        input_names: the graph input names, in argument order.
        output_names: the graph output names, in result order.
        module: the imported StableHLO module.
    """

    def __init__(self, executable: Any, input_names: list[str], output_names: list[str],
                 module: Any) -> None:
        self.executable = executable
        self.input_names = input_names
        self.output_names = output_names
        self.module = module
        # regrouping is only needed for sequence outputs; the layout is read once
        self._sequences = module is not None and any(k is not None
                                                     for _, k in result_layout(module))

    @property
    def stats(self) -> dict[str, Any]:
        return self.executable.stats

    def save(self, path: Any) -> None:
        self.executable.save(path)

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        """Runs the model.

        Args:
            *args: inputs in graph order; or
            **named: inputs by graph-input name (not both).

        Returns:
            One array per graph output, in order (a list of arrays for a sequence).

        Raises:
            RuntimeInputError: a missing, unknown or mistyped input.
        """
        if named:
            if args:
                raise RuntimeInputError("pass inputs by position or by name, not both")
            unknown = sorted(set(named) - set(self.input_names))
            if unknown:
                raise RuntimeInputError(f"unknown input(s) {', '.join(unknown)}; the model "
                                        f"takes {', '.join(self.input_names)}")
            missing = [n for n in self.input_names if n not in named]
            if missing:
                raise RuntimeInputError(f"missing input(s) {', '.join(missing)}")
            args = tuple(named[n] for n in self.input_names)
        flat = self.executable(*args)
        return group_results(self.module, flat) if self._sequences else list(flat)

    def run(self, output_names: Sequence[str] | None, feeds: dict[str, Any]) -> list[np.ndarray]:
        """onnxruntime's ``InferenceSession.run`` shape: outputs by name (None: all)."""
        outs = self(**feeds)
        if output_names is None:
            return outs
        return [outs[self.output_names.index(n)] for n in output_names]


def compile(model: Any, backend: str = "interpreter", *,  # noqa: A001
            example_inputs: Sequence[Any] | None = None, input_specs: Sequence[Any] | None = None,
            params_as_inputs: bool = False, options: CompileOptions | None = None,
            **option_fields: Any) -> OnnxFunction:
    """Imports and compiles an ONNX model.

    Args:
        model: ``ModelProto``, path or bytes.
        backend: an installed backend name.
        example_inputs: arrays whose shapes fix the graph inputs' symbolic dims.
        input_specs: shapes (``1x3x224x224``) instead of ``example_inputs``. Without
            either, a model with symbolic dims gives a ``PerShapeOnnxFunction``, which
            compiles on first call for each new tuple of input shapes.
        params_as_inputs: floating initializers become leading arguments.
        options: compile options, or ``option_fields`` (``fast_math=``, ``cache=``...).

    Raises:
        OxlaError: invalid model; NotSupportedError: an op without a rule.
    """
    fields = {f.name for f in dataclasses.fields(CompileOptions)}
    bad = sorted(set(option_fields) - fields)
    if bad:
        raise TypeError(f"unknown option(s) {', '.join(bad)}")
    if options is None:
        options = CompileOptions(**option_fields)
    specs = input_specs or example_specs(example_inputs or ())
    try:
        module = import_model(model, input_specs=specs, params_as_inputs=params_as_inputs)
    except SymbolicDimsError as exc:
        if specs:
            raise
        # no shapes given for a model with symbolic dims: compile per input shape
        return PerShapeOnnxFunction(model, backend, options, params_as_inputs,
                                    exc.input_names)
    exe = oxla.compile(module, backend=backend, options=options)
    return OnnxFunction(exe, input_names(module), result_names(module), module)


class PerShapeOnnxFunction(OnnxFunction):
    """An ONNX model with symbolic dims, compiled once per distinct input signature.

    What ``compile`` returns when a graph input has symbolic dims (``batch``, ``seq``)
    and no ``input_specs``/``example_inputs`` were given: each call with a new tuple of
    input shapes and dtypes imports the model with those shapes (shape inference then
    fixes every dim, and shape computations fold) and compiles it; later calls with the
    same shapes reuse that executable. ``executable``/``module`` are the last ones used;
    ``compiled`` maps each signature to its function.
    """

    def __init__(self, model: Any, backend: str, options: CompileOptions,
                 params_as_inputs: bool, graph_input_names: list[str]) -> None:
        super().__init__(None, list(graph_input_names), [], None)
        self._model = model
        self._backend = backend
        self._options = options
        self._params_as_inputs = params_as_inputs
        self.compiled: dict[tuple, OnnxFunction] = {}

    @property
    def stats(self) -> dict[str, Any]:
        return {} if self.executable is None else self.executable.stats

    def save(self, path: Any) -> None:
        raise OxlaError("this model has symbolic dims and was compiled per input shape; "
                        "to save an artifact, compile it for one shape (input_specs= in "
                        "Python, --input-spec on the command line)")

    def __call__(self, *args: Any, **named: Any) -> list[np.ndarray]:
        """Runs the model, compiling it first for a new input signature.

        Args:
            *args: inputs in graph order (with ``params_as_inputs``, the parameters
                first, as the compiled function takes them); or
            **named: graph inputs by name.

        Raises:
            RuntimeInputError: a missing or unknown input; an input that is not an array.
            OxlaError: the model does not import or compile for these shapes.
        """
        if named and args:
            raise RuntimeInputError("pass inputs by position or by name, not both")
        if named:
            unknown = sorted(set(named) - set(self.input_names))
            if unknown:
                raise RuntimeInputError(f"unknown input(s) {', '.join(unknown)}; the model "
                                        f"takes {', '.join(self.input_names)}")
            missing = [n for n in self.input_names if n not in named]
            if missing:
                raise RuntimeInputError(f"missing input(s) {', '.join(missing)}")
        elif len(args) < len(self.input_names):
            raise RuntimeInputError(f"expected {len(self.input_names)} input(s) "
                                    f"({', '.join(self.input_names)}), got {len(args)}")
        graph_args = [named[n] for n in self.input_names] if named else \
            list(args[len(args) - len(self.input_names):])
        arrays = [np.asarray(a) for a in graph_args]
        key = tuple((a.shape, a.dtype.str) for a in arrays)
        fn = self.compiled.get(key)
        if fn is None:
            module = import_model(self._model, input_specs=[a.shape for a in arrays],
                                  params_as_inputs=self._params_as_inputs)
            exe = oxla.compile(module, backend=self._backend, options=self._options)
            fn = self.compiled[key] = OnnxFunction(exe, input_names(module),
                                                   result_names(module), module)
        self.executable, self.module, self.output_names = \
            fn.executable, fn.module, fn.output_names
        return fn(**named) if named else fn(*args)


def example_specs(example_inputs: Sequence[Any]) -> list[Any] | None:
    """Input specs from example inputs: each a spec string as given, or an array's
    shape; None when there are none."""
    if not example_inputs:
        return None
    out = []
    for x in example_inputs:
        out.append(x if isinstance(x, str) else tuple(getattr(x, "shape", x)))
    return out
