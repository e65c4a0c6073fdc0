"""The public entry points: :func:`compile` and :func:`load`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oxla import plugins
from oxla.artifact import read_manifest
from oxla.protocols import CompileOptions, Executable

FRAMEWORK_FRONTENDS = {"torch": "torch", "transformers": "torch", "onnx": "onnx"}
"""Top-level module of a model object's class -> the frontend that compiles it."""


def compile(  # noqa: A001 - the public name mirrors jax.jit(...).lower().compile()
    program: Any,
    backend: str | None = None,
    *,
    options: CompileOptions | None = None,
    filename: str = "<string>",
    example_inputs: Any = None,
    **option_fields: Any,
) -> Any:
    """Compiles a StableHLO program (or a framework model) for one backend.

    Args:
        program: MLIR text (``str``), a path to a ``.mlir`` file, an ``oxla.ir.Module``,
            or a framework model object (a torch ``nn.Module`` or ``ExportedProgram``, an
            ``onnx.ModelProto`` or a ``.onnx`` path),
            which is handed to its frontend's ``compile_object`` with ``example_inputs``;
            the result then takes and returns that framework's tensors.
        backend: an installed backend name (``oxla plugins`` lists them); None (the
            default) picks the fastest available backend that compiles the program
            (:data:`oxla.plugins.BACKEND_PREFERENCE`: cuda, hip, cpu, then the
            interpreter): one that raises ``LoweringError`` (an op without a rule, a
            dynamic shape a native backend needs static) is passed over with a
            ``PluginWarning`` naming the reason.
        options: compile options; ``option_fields`` (``pipeline=``, ``fast_math=``,
            ``cache=``, ``dump_dir=``, ``extra=``) build one when it is not given.
        filename: the name used in diagnostics when ``program`` is text.

    Returns:
        The executable of the module's ``main`` function; for a framework model, the
        frontend's callable (``oxla_frontend_torch.TorchFunction`` for torch).

    Raises:
        ParseError: malformed text. VerifyError: an invalid module.
        PluginError: the backend is unknown, broken or unavailable here.
        LoweringError: the backend cannot compile an op.
    """
    frontend = _framework_frontend(program)
    if frontend is not None:
        fe = plugins.get_frontend(frontend)
        return fe.compile_object(program, tuple(example_inputs or ()), backend,  # type: ignore
                                 options=options, **option_fields)
    if options is None:
        options = CompileOptions(**option_fields)
    elif option_fields:
        raise TypeError("pass either options= or individual option fields, not both")
    from oxla.errors import OxlaError
    from oxla.ir import Module, parse_module

    if isinstance(program, str) and _looks_like_path(program):
        program = Path(program)
    if isinstance(program, os.PathLike):
        filename = os.fspath(program)
        try:
            program = Path(program).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise OxlaError(f"cannot read '{filename}': {exc}") from None
    if isinstance(program, str):
        program = parse_module(program, filename)
    if not isinstance(program, Module):
        raise OxlaError(
            f"oxla.compile takes MLIR text, a path, an oxla.ir.Module or a model object of "
            f"an installed frontend, got {type(program).__name__}")
    if backend is not None:
        from oxla.passes.override_compile import compile_with_overrides

        return compile_with_overrides(plugins.backend_to_compile(backend), backend, program,
                                      options)
    return compile_first(program, plugins.available_backends() or [plugins.best_backend()],
                         options)


def compile_first(module: Any, candidates: list[str], options: CompileOptions | None) -> Any:
    """Compiles ``module`` on the first of ``candidates`` (backend names) that can: one
    raising ``LoweringError`` is passed over with a ``PluginWarning`` naming the reason
    (the default of :func:`compile`, and of the torch frontend's).

    Raises:
        LoweringError: the last candidate cannot compile it either.
    """
    import warnings

    import oxla
    from oxla.errors import LoweringError

    for i, name in enumerate(candidates):
        last = i + 1 == len(candidates)
        try:
            return oxla.compile(module if last else module.clone(), backend=name,
                                options=options)
        except LoweringError as exc:
            if last:
                raise
            reason = _reason(exc)
            warnings.warn(f"backend '{name}' cannot compile this program: {reason}; "
                          f"using '{candidates[i + 1]}' (pass a backend to choose)",
                          plugins.PluginWarning, stacklevel=3)
    raise AssertionError("unreachable: the last candidate returns or raises")


def _reason(exc: Exception) -> str:
    """One line for a warning from a diagnostic: ``f.mlir:1:1: error: msg`` -> ``msg (at
    f.mlir:1:1)``; no ``error:`` inside a ``warning:`` line."""
    import re

    first = (str(exc).splitlines() or [""])[0]
    m = re.match(r"^(?:(.*?): )?error: (.*)$", first)
    if m is None:
        return first
    where, msg = m.groups()
    return f"{msg} (at {where})" if where else msg


def _looks_like_path(text: str) -> bool:
    """A one-line string naming an existing file is a path, not MLIR text."""
    return "\n" not in text and len(text) < 4096 and os.path.isfile(text)


def _framework_frontend(program: Any) -> str | None:
    """The frontend for a model object (by its class's top-level module), or None."""
    from oxla.ir import Module

    if isinstance(program, str | os.PathLike) and os.fspath(program).endswith(".onnx") \
            and "\n" not in os.fspath(program):
        return "onnx"  # a model file of a frontend, not StableHLO text
    if isinstance(program, str | os.PathLike | Module):
        return None
    for cls in type(program).__mro__:
        name = FRAMEWORK_FRONTENDS.get(cls.__module__.split(".")[0])
        if name is not None:
            return name
    return None


def load(path: str | os.PathLike[str], *, require_signature: bytes | str | None = None
         ) -> Executable:
    """Loads a ``.oxla`` artifact written by ``Executable.save``.

    An artifact holds native code: load only artifacts you trust, as you would a shared
    library. The container and the manifest are checked before anything is
    decompressed or run (see :mod:`oxla.artifact`).

    Args:
        path: the artifact.
        require_signature: a key (``bytes``), or a path to a file holding one: the
            artifact must carry an HMAC-SHA256 signature made with it
            (``oxla compile --sign-key-file``), checked with every member before the
            backend reads anything.

    Raises:
        OxlaError: not an oxla artifact, damaged or crafted, or (with
            ``require_signature``) unsigned or signed with another key.
        PluginError: the backend named in its manifest is not installed or unusable here.
    """
    from oxla.artifact import load_key, verify_signature

    manifest = read_manifest(path)
    if require_signature is not None:
        verify_signature(path, load_key(require_signature))
    return plugins.get_backend(manifest["backend"]).load(path)
