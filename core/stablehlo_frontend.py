"""The built-in ``stablehlo`` frontend: StableHLO / MLIR text files.

The module is used as written, except that ``arg_shapes`` (``oxla compile
--input-spec``) gives main concrete argument shapes: its ``?`` dims are then refined
with the ``stablehlo-refine-shapes`` pass so that static backends (cpu) can compile it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oxla.errors import OxlaError, RuntimeInputError
from oxla.ir import Module, parse_input_spec, parse_module
from oxla.ir import types as T
from oxla.protocols import PathLike

SUFFIXES = (".mlir", ".stablehlo")


def detect_stablehlo(path: PathLike) -> bool:
    """True for a file named ``*.mlir`` / ``*.stablehlo``."""
    return os.fspath(path).endswith(SUFFIXES)


class StableHLOFrontend:
    """Parses StableHLO text (what ``jax.jit(f).lower(x).as_text()`` prints, ``.mlir``
    files); nothing to trace."""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Reads and parses a text file; ``arg_shapes`` refines dynamic dims.

        Args:
            path: a StableHLO text file.
            **options: ``arg_shapes``: one input spec per argument of main
                (``"3x8:f32"``, a shape tuple, or an ``oxla.ir`` TensorType).

        Raises:
            OxlaError: the file does not exist or is not text. ParseError: malformed
            text. RuntimeInputError: a spec that does not fit main's signature.
        """
        name = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise OxlaError(f"no such file: {name}") from exc
        except UnicodeDecodeError as exc:
            raise OxlaError(f"'{name}' is not StableHLO text: it is not UTF-8 "
                            f"({exc.reason} at byte {exc.start})") from exc
        if "\0" in text:
            raise OxlaError(f"'{name}' is not StableHLO text: it is a binary file")
        return _refined(parse_module(text, name), options)

    def import_object(self, obj: Any, example_inputs: Sequence[Any] = (), **options: Any) -> Module:
        """Returns ``obj`` if it is a Module, or parses it if it is text; ``arg_shapes``
        as in :meth:`import_path`."""
        if isinstance(obj, Module):
            return _refined(obj, options)
        if isinstance(obj, str):
            return _refined(parse_module(obj, "<string>"), options)
        raise OxlaError(f"the stablehlo frontend takes MLIR text or a Module, "
                        f"got {type(obj).__name__}")


def _refined(module: Module, options: dict[str, Any]) -> Module:
    unknown = sorted(set(options) - {"arg_shapes"})
    if unknown:
        raise OxlaError(f"the stablehlo frontend takes no option {', '.join(unknown)}")
    if options.get("arg_shapes"):
        refine_to_specs(module, list(options["arg_shapes"]))
    return module


def refine_to_specs(module: Module, specs: Sequence[Any]) -> None:
    """Gives main the concrete argument types ``specs`` and refines the module's ``?``
    dims (``inline``, then ``stablehlo-refine-shapes``); a static module is only checked.

    Raises:
        RuntimeInputError: wrong count, rank, size or element type for an argument.
    """
    main = module.main
    block = main.regions[0].blocks[0]
    if len(specs) != len(block.args):
        raise RuntimeInputError(
            f"{len(specs)} input specs given for the {len(block.args)} arguments of @main")
    new: list[T.Type] = []
    for i, (arg, spec) in enumerate(zip(block.args, specs)):
        declared = arg.type
        shape, elem = _spec(spec)
        if not isinstance(declared, T.TensorType):
            raise RuntimeInputError(f"argument #{i} of @main has type {declared}; input "
                                    "specs describe tensors")
        elem = elem or declared.element_type
        if elem != declared.element_type or len(shape) != declared.rank or any(
                d is not None and d != s for d, s in zip(declared.shape, shape)):
            raise RuntimeInputError(f"input spec #{i} '{fmt_spec(shape, elem)}' does not "
                                    f"fit argument #{i} of @main, {declared}")
        new.append(T.TensorType(tuple(shape), declared.element_type))
    if all(a.type == t for a, t in zip(block.args, new)):
        return
    from oxla.ir import TypeAttr
    from oxla.passes import run_pipeline

    for a, t in zip(block.args, new):
        a.type = t
    ft = main.attributes["function_type"].type
    main.attributes["function_type"] = TypeAttr(T.FunctionType(tuple(new), ft.results))
    run_pipeline(module, "inline,stablehlo-refine-shapes")


def fmt_spec(shape: Sequence[int], elem: T.ElementType) -> str:
    """``(3, 8), f32`` -> ``3x8:f32``, the ``--input-spec`` form."""
    return f"{'x'.join(map(str, shape))}:{elem}"


def _spec(spec: Any) -> tuple[tuple[int, ...], T.ElementType | None]:
    if isinstance(spec, str):
        return parse_input_spec(spec)
    if isinstance(spec, T.TensorType):
        return tuple(spec.shape), spec.element_type
    return tuple(int(d) for d in spec), None
