"""Reading what users have: ``torch.export.save`` archives (also those whose pytree
types come from a library such as ``transformers``) and TorchScript archives (through
torch's TorchScript -> ExportedProgram converter); ``torch.save`` files get a one-line
explanation."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
from torch.export import ExportedProgram

from oxla.errors import OxlaError
from oxla_frontend_torch.detect import classify, pytree_type_names


def load_program(path: str | os.PathLike[str],
                 input_specs: Sequence[Any] | None = None) -> ExportedProgram:
    """Reads a ``torch.export.save`` file (any suffix), or converts a TorchScript archive.

    A program whose inputs or outputs are a library's pytree types (``transformers``'
    ``ModelOutput``s) loads once their module is imported: the modules the archive's tree
    specs name are imported when their distribution is installed here (never code from
    the archive itself), and the load is retried.

    Args:
        path: the file.
        input_specs: for a TorchScript archive, one ``DIMSxDIMS:TYPE`` string (``2x8:f32``)
            or shape per input: the sample inputs torch's TorchScript -> ExportedProgram
            converter (``TS2EPConverter``) traces with.

    Raises:
        OxlaError: a TorchScript archive without ``input_specs``, a ``torch.save`` file
            (state dict or pickled module), a file that is not a torch file, or a program
            whose pytree types cannot be imported; one line saying what to do.
    """
    name = os.fspath(path)
    kind = classify(name)
    if kind == "torchscript":
        return convert_torchscript(name, input_specs)
    if kind == "state_dict":
        raise OxlaError(f"'{name}' is a torch.save file (a state dict or pickled module), "
                        "not a program: it has no graph. Load the weights into the model, "
                        "then torch.export.save(torch.export.export(model, args), "
                        "'model.pt2')")
    if kind != "export":
        raise OxlaError(f"'{name}' is not a torch.export archive (a zip written by "
                        "torch.export.save)")
    return _load_export(name)


def _load_export(name: str) -> ExportedProgram:
    import importlib
    import logging

    log = logging.getLogger("torch.export")
    tried: set[str] = set()
    while True:
        level = log.level
        log.setLevel(logging.ERROR)  # torch logs the failed attempt's traceback
        try:
            return torch.export.load(name)
        except RuntimeError as exc:
            missing = [t for t in pytree_type_names(name) if not _registered(t)]
            todo = [t for t in missing if _module_of(t) not in tried]
            if not todo:
                if not missing:
                    raise
                mods = sorted({_module_of(t) for t in missing})
                raise OxlaError(
                    f"'{name}' uses {', '.join(missing)}, which torch cannot rebuild until "
                    f"its module is imported: install the distribution that provides "
                    f"{', '.join(mods)} (or import it before loading)") from exc
            for t in todo:
                mod = _module_of(t)
                tried.add(mod)
                if _installed(mod):
                    try:
                        importlib.import_module(mod)
                    except Exception:  # noqa: BLE001 - reported by the retry's error
                        pass
        finally:
            log.setLevel(level)


def _module_of(type_name: str) -> str:
    return type_name.rpartition(".")[0]


def _registered(type_name: str) -> bool:
    from torch.utils import _pytree as pytree

    return type_name in pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE


def _installed(module: str) -> bool:
    """True when ``module``'s top-level package belongs to an installed distribution."""
    import importlib.metadata as md

    top = module.split(".")[0]
    return bool(top) and top in md.packages_distributions()


_SPEC_DTYPES = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                "bf16": torch.bfloat16, "i64": torch.int64, "i32": torch.int32,
                "i16": torch.int16, "i8": torch.int8, "ui8": torch.uint8, "i1": torch.bool}


def _sample(spec: Any) -> torch.Tensor:
    if not isinstance(spec, str):
        return torch.zeros(tuple(int(d) for d in spec))
    dims, _, et = spec.partition(":")
    if (et or "f32") not in _SPEC_DTYPES:
        raise OxlaError(f"input spec '{spec}': unknown element type '{et}'; expected one of "
                        f"{', '.join(_SPEC_DTYPES)}")
    shape = tuple(int(d) for d in dims.split("x")) if dims else ()
    dtype = _SPEC_DTYPES[et or "f32"]
    return torch.zeros(shape, dtype=dtype) if not dtype.is_floating_point else \
        torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(dtype)


def convert_torchscript(name: str, input_specs: Sequence[Any] | None) -> ExportedProgram:
    """A TorchScript archive (``torch.jit.save``) as an ExportedProgram, through torch's
    ``TS2EPConverter``, traced with sample inputs of the given shapes and dtypes.

    Raises:
        OxlaError: no ``input_specs`` (TorchScript archives do not record input shapes),
            or the converter fails (the message is torch's).
    """
    if not input_specs:
        raise OxlaError(f"'{name}' is a TorchScript archive, which records no input shapes: "
                        "pass one --input-spec per input (e.g. --input-spec 2x8:f32) to "
                        "convert it, or re-export the model with torch.export.export and "
                        "torch.export.save(ep, 'model.pt2')")
    from torch._export.converter import TS2EPConverter

    ts = torch.jit.load(name)
    try:
        return TS2EPConverter(ts, tuple(_sample(s) for s in input_specs)).convert()
    except Exception as exc:  # noqa: BLE001 - the converter raises many kinds
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise OxlaError(f"'{name}': torch's TorchScript -> ExportedProgram converter "
                        f"failed: {first}") from exc
