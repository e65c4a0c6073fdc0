"""The public entry points: :func:`compile` and :func:`load`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oxla import plugins
from oxla.artifact import read_manifest
from oxla.protocols import CompileOptions, Executable

if TYPE_CHECKING:
    from oxla.ir import Module


def compile(  # noqa: A001 - the public name mirrors jax.jit(...).lower().compile()
    program: str | os.PathLike[str] | Module,
    backend: str = "interpreter",
    *,
    options: CompileOptions | None = None,
    filename: str = "<string>",
    **option_fields: Any,
) -> Executable:
    """Compiles a StableHLO program for one backend.

    Args:
        program: MLIR text (``str``), a path to a ``.mlir`` file, or an ``oxla.ir.Module``.
        backend: an installed backend name (``oxla plugins`` lists them).
        options: compile options; ``option_fields`` (``pipeline=``, ``fast_math=``,
            ``cache=``, ``dump_dir=``, ``extra=``) build one when it is not given.
        filename: the name used in diagnostics when ``program`` is text.

    Returns:
        The executable of the module's ``main`` function.

    Raises:
        ParseError: malformed text. VerifyError: an invalid module.
        PluginError: the backend is unknown, broken or unavailable here.
        LoweringError: the backend cannot compile an op.
    """
    if options is None:
        options = CompileOptions(**option_fields)
    elif option_fields:
        raise TypeError("pass either options= or individual option fields, not both")
    target = plugins.get_backend(backend)
    if isinstance(program, os.PathLike):
        filename = os.fspath(program)
        program = Path(program).read_text()
    if isinstance(program, str):
        from oxla.ir import parse_module

        program = parse_module(program, filename)
    return target.compile(program, options)


def load(path: str | os.PathLike[str]) -> Executable:
    """Loads a ``.oxla`` artifact written by ``Executable.save``.

    Raises:
        OxlaError: not an oxla artifact.
        PluginError: the backend named in its manifest is not installed or unusable here.
    """
    manifest = read_manifest(path)
    return plugins.get_backend(manifest["backend"]).load(path)
