"""``jax.export`` artifacts: deserialize, import as StableHLO, compile, call with pytrees."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oxla.errors import NotSupportedError, OxlaError
from oxla.ir import Module, parse_module
from oxla.protocols import CompileOptions, Executable
from oxla_frontend_jax._jax import require_jax
from oxla_frontend_jax.refine import refine_shapes, select_platform
from oxla_frontend_jax.values import to_numpy_args, wrap_outputs
from oxla_frontend_jax.xla_calls import legalize_xla_custom_calls

ExportedLike = Any  # jax.export.Exported | bytes | bytearray | str | os.PathLike


def load_exported(source: ExportedLike) -> Any:
    """Returns a ``jax.export.Exported`` from itself, serialized bytes, or a file path.

    Raises:
        OxlaError: the bytes are not a serialized ``jax.export`` artifact.
        PluginError: jax is not installed.
    """
    jax = require_jax()
    if isinstance(source, jax.export.Exported):
        return source
    name = "<bytes>"
    if isinstance(source, str | os.PathLike):
        name = os.fspath(source)
        try:
            source = Path(source).read_bytes()
        except FileNotFoundError as exc:
            raise OxlaError(f"no such file: '{name}'") from exc
    try:
        return jax.export.deserialize(bytearray(source))
    except Exception as exc:
        raise OxlaError(
            f"'{name}' is not a jax.export artifact (bytes written by "
            f"jax.export.Exported.serialize()); reading it failed: {exc}"
        ) from exc


def import_exported(
    source: ExportedLike,
    arg_shapes: Sequence[Any] | None = None,
    platform: str = "cpu",
    filename: str | None = None,
) -> Module:
    """Imports a ``jax.export`` artifact as a StableHLO module.

    Args:
        source: an ``Exported``, the bytes of ``Exported.serialize()``, or a file of them.
        arg_shapes: concrete shapes for the flat arguments, to refine ``?`` dims of a
            shape-polymorphic export (see :func:`oxla_frontend_jax.refine.refine_shapes`).
        platform: which per-platform lowering to keep when the artifact has several.
        filename: the name used in diagnostics (default: the path, or the function name).

    Returns:
        A module whose ``main`` takes the flat arguments that the export kept
        (``Exported.in_avals`` at ``Exported.module_kept_var_idx``) and returns the flat results (``Exported.out_avals``).

    Raises:
        NotSupportedError: ordered effects (token arguments), or dynamic shapes without
            the refine-shapes pass.
        ParseError: text oxla cannot read yet.
    """
    exported = load_exported(source)
    if exported.ordered_effects:
        raise NotSupportedError(
            f"jax.export artifact '{exported.fun_name}' has ordered effects "
            f"{list(exported.ordered_effects)}, which need token arguments")
    if filename is None:
        filename = os.fspath(source) if isinstance(source, str | os.PathLike) else (
            f"<jax.export {exported.fun_name}>")
    module = parse_module(exported.mlir_module(), filename)
    select_platform(module, exported.platforms, platform)
    legalize_xla_custom_calls(module)
    refine_shapes(module, arg_shapes)
    return module


class ExportedFunction:
    """A compiled ``jax.export`` artifact called like the exported function.

    Takes the same pytree of arguments as the function that was exported, returns its
    pytree of results (jax arrays, or numpy with ``return_numpy=True``).

    Attributes:
        exported: the ``jax.export.Exported``.
        executable: the oxla executable of the flat module.
    """

    def __init__(self, exported: Any, executable: Executable, return_numpy: bool = False):
        self.exported = exported
        self.executable = executable
        self.return_numpy = return_numpy
        self._kept = tuple(exported.module_kept_var_idx)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jax = require_jax()
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if tree != self.exported.in_tree:
            raise OxlaError(
                f"arguments have pytree structure {tree}, expected {self.exported.in_tree}")
        leaves = [leaves[i] for i in self._kept]
        outs = self.executable(*to_numpy_args(leaves, self.executable.signature.inputs))
        return wrap_outputs(outs, self.exported.out_tree, self.return_numpy)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the flat executable as a ``.oxla`` artifact (``oxla run`` reads it)."""
        self.executable.save(path)


def compile_exported(
    source: ExportedLike,
    backend: str = "interpreter",
    arg_shapes: Sequence[Any] | None = None,
    return_numpy: bool = False,
    options: CompileOptions | None = None,
) -> ExportedFunction:
    """Imports and compiles a ``jax.export`` artifact; see :func:`import_exported`.

    Returns:
        An :class:`ExportedFunction` taking and returning the exported pytrees.
    """
    import oxla

    exported = load_exported(source)
    module = import_exported(exported, arg_shapes=arg_shapes,
                             filename=os.fspath(source)
                             if isinstance(source, str | os.PathLike) else None)
    from oxla_frontend_jax.linalg import check_targets

    check_targets(module, backend)
    exe = oxla.compile(module, backend=backend, options=options)
    return ExportedFunction(exported, exe, return_numpy)
