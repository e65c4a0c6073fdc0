"""The built-in ``stablehlo`` frontend: StableHLO / MLIR text files, read as they are."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oxla.errors import OxlaError
from oxla.ir import Module, parse_module
from oxla.protocols import PathLike

SUFFIXES = (".mlir", ".stablehlo")


def detect_stablehlo(path: PathLike) -> bool:
    """True for a file named ``*.mlir`` / ``*.stablehlo``."""
    return os.fspath(path).endswith(SUFFIXES)


class StableHLOFrontend:
    """Parses StableHLO text (what ``jax.jit(f).lower(x).as_text()`` prints, ``.mlir``
    files); nothing to trace."""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Reads and parses a text file.

        Raises:
            OxlaError: the file does not exist. ParseError: malformed text.
        """
        _reject_options(options)
        try:
            text = Path(path).read_text()
        except FileNotFoundError as exc:
            raise OxlaError(f"no such file: '{os.fspath(path)}'") from exc
        return parse_module(text, os.fspath(path))

    def import_object(self, obj: Any, example_inputs: Sequence[Any] = (), **options: Any) -> Module:
        """Returns ``obj`` if it is a Module, or parses it if it is text."""
        _reject_options(options)
        if isinstance(obj, Module):
            return obj
        if isinstance(obj, str):
            return parse_module(obj, "<string>")
        raise OxlaError(f"the stablehlo frontend takes MLIR text or a Module, "
                        f"got {type(obj).__name__}")


def _reject_options(options: dict[str, Any]) -> None:
    if options.get("arg_shapes"):
        raise OxlaError("the stablehlo frontend takes no input specs; the module's types "
                        "are used as written")
