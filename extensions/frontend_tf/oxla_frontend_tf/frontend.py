"""The ``tf`` frontend object that ``oxla compile --frontend tf`` and
``oxla.plugins.get_frontend("tf")`` use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oxla.ir import Module
from oxla.protocols import PathLike
from oxla_frontend_tf._tf import INSTALL_HINT


class TFFrontend:
    """Imports SavedModel directories and in-memory TensorFlow functions / Keras models."""

    def available(self) -> tuple[bool, str]:
        """``(False, reason)`` when tensorflow cannot be imported here."""
        import importlib.util
        import sys

        if "tensorflow" in sys.modules:
            ok = sys.modules["tensorflow"] is not None
        else:  # importing tensorflow takes seconds: only look for it
            ok = importlib.util.find_spec("tensorflow") is not None
        if not ok:
            return False, f"tensorflow is not importable; {INSTALL_HINT}"
        return True, ""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Imports a SavedModel directory.

        Args:
            path: the directory (or its ``saved_model.pb``).
            **options: ``arg_shapes`` (one ``1x224x224x3:f32`` spec per input, sorted by
                input name; ``--input-spec``), ``signature``, ``variables_as_inputs``; see
                :func:`oxla_frontend_tf.importer.import_saved_model`.
        """
        from oxla_frontend_tf.importer import import_saved_model

        specs = options.pop("arg_shapes", None)
        return import_saved_model(path, input_specs=specs, **options)

    def import_object(self, obj: Any, example_inputs: Sequence[Any], **options: Any) -> Module:
        """Imports a ``tf.function``, Keras model or callable traced at ``example_inputs``
        (arrays, tensors, ``tf.TensorSpec`` or ``4x8:f32`` strings).

        Args:
            obj: the function or model.
            example_inputs: one per positional argument.
            **options: ``variables_as_inputs``.
        """
        from oxla_frontend_tf.importer import import_function

        return import_function(obj, list(example_inputs), **options)
