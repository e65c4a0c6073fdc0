"""``oxla_frontend_onnx.compile``: an ONNX model compiled for a backend, called with
numpy arrays by position or by graph-input name."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import RuntimeInputError
from oxla.protocols import CompileOptions


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
        from oxla_frontend_onnx.importer import group_results

        return group_results(self.module, self.executable(*args))

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
        input_specs: shapes (``1x3x224x224``) instead of ``example_inputs``.
        params_as_inputs: floating initializers become leading arguments.
        options: compile options, or ``option_fields`` (``fast_math=``, ``cache=``...).

    Raises:
        OxlaError: invalid model; NotSupportedError: an op without a rule.
    """
    import oxla
    from oxla_frontend_onnx.importer import import_model, input_names, result_names

    fields = {f.name for f in dataclasses.fields(CompileOptions)}
    bad = sorted(set(option_fields) - fields)
    if bad:
        raise TypeError(f"unknown option(s) {', '.join(bad)}")
    if options is None:
        options = CompileOptions(**option_fields)
    specs = input_specs or example_specs(example_inputs or ())
    module = import_model(model, input_specs=specs, params_as_inputs=params_as_inputs)
    exe = oxla.compile(module, backend=backend, options=options)
    return OnnxFunction(exe, input_names(module), result_names(module), module)


def example_specs(example_inputs: Sequence[Any]) -> list[Any] | None:
    """Input specs from example inputs: each a spec string as given, or an array's
    shape; None when there are none."""
    if not example_inputs:
        return None
    out = []
    for x in example_inputs:
        out.append(x if isinstance(x, str) else tuple(getattr(x, "shape", x)))
    return out
