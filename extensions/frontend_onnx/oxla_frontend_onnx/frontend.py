"""The ``onnx`` frontend object that ``oxla compile --frontend onnx`` and
``oxla.plugins.get_frontend("onnx")`` use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oxla.ir import Module
from oxla.protocols import CompileOptions, PathLike

INSTALL_HINT = ("install onnx with: pip install -e extensions/frontend_onnx (from the oxla "
                "checkout), which brings onnx")


class OnnxFrontend:
    """Imports ``.onnx`` files, serialized bytes and ``onnx.ModelProto`` objects."""

    def available(self) -> tuple[bool, str]:
        """``(False, reason)`` when onnx cannot be imported here."""
        import importlib.util

        if importlib.util.find_spec("onnx") is None:
            return False, f"onnx is not importable; {INSTALL_HINT}"
        return True, ""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Imports an ``.onnx`` file (external data files next to it).

        Args:
            path: the model file.
            **options: ``arg_shapes`` (``--input-spec``: one ``1x3x224x224`` spec per
                graph input, fixing symbolic dims), ``params_as_inputs``.
        """
        from oxla_frontend_onnx.importer import import_model

        options = dict(options)
        specs = options.pop("arg_shapes", None)
        return import_model(path, input_specs=specs, **options)

    def import_object(self, obj: Any, example_inputs: Sequence[Any], **options: Any) -> Module:
        """Imports a ``ModelProto`` (or bytes); ``example_inputs`` (arrays or specs), when
        given, fix the input shapes."""
        from oxla_frontend_onnx.api import example_specs
        from oxla_frontend_onnx.importer import import_model

        options = dict(options)
        specs = options.pop("arg_shapes", None) or example_specs(example_inputs)
        return import_model(obj, input_specs=specs, **options)

    def compile_object(self, obj: Any, example_inputs: Sequence[Any], backend: str,
                       options: CompileOptions | None = None, **kw: Any) -> Any:
        """``oxla.compile(model_proto_or_path, backend=...)``: an
        :class:`~oxla_frontend_onnx.api.OnnxFunction` taking inputs by position or name."""
        from oxla_frontend_onnx.api import compile as compile_onnx

        return compile_onnx(obj, backend, example_inputs=example_inputs or None,
                            options=options, **kw)
