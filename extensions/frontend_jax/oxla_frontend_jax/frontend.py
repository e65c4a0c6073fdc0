"""The ``jax`` frontend object that ``oxla compile --frontend jax`` and
``oxla.plugins.get_frontend("jax")`` use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oxla.ir import Module
from oxla.protocols import PathLike
from oxla_frontend_jax._jax import INSTALL_HINT


class JaxFrontend:
    """Imports ``jax.export`` artifacts (files or bytes) and JAX functions."""

    def available(self) -> tuple[bool, str]:
        """``(False, reason)`` when jax cannot be imported here."""
        try:
            import jax  # noqa: F401
        except ImportError as exc:
            return False, f"jax is not importable ({exc}); {INSTALL_HINT}"
        return True, ""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Imports a file written from ``Exported.serialize()``.

        Args:
            path: the file.
            **options: ``arg_shapes`` (concrete shapes for a shape-polymorphic export)
                and ``platform`` (default ``cpu``); see
                :func:`oxla_frontend_jax.exported.import_exported`.
        """
        from oxla_frontend_jax.exported import import_exported

        return import_exported(path, **options)

    def import_object(self, obj: Any, example_inputs: Sequence[Any], **options: Any) -> Module:
        """Imports a JAX function traced with ``example_inputs`` (arrays, pytrees or
        ``jax.ShapeDtypeStruct``), or a ``jax.export.Exported`` / its bytes.

        Args:
            obj: the function (``options`` may hold ``static_argnums``), an ``Exported``,
                or serialized bytes.
            example_inputs: positional arguments for tracing (ignored for exports).
        """
        from oxla_frontend_jax._jax import require_jax
        from oxla_frontend_jax.exported import import_exported

        jax = require_jax()
        if isinstance(obj, bytes | bytearray | jax.export.Exported):
            return import_exported(obj, **options)
        from oxla_frontend_jax.jit import JitFunction

        jitted = JitFunction(obj, "interpreter", tuple(options.pop("static_argnums", ())),
                             tuple(options.pop("static_argnames", ())), False, None)
        module, _, _ = jitted.lower(*example_inputs)
        return module
