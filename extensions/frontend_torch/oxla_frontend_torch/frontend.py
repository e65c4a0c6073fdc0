"""The ``torch`` frontend object that ``oxla compile --frontend torch`` and
``oxla.plugins.get_frontend("torch")`` use."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oxla.ir import Module
from oxla.protocols import CompileOptions, PathLike


class TorchFrontend:
    """Imports ``torch.export`` programs (files or objects) and ``nn.Module``s."""

    def available(self) -> tuple[bool, str]:
        """``(False, reason)`` when torch cannot be imported here."""
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            return False, f"torch is not importable ({exc}); pip install torch"
        return True, ""

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Imports a ``torch.export.save`` file, or a TorchScript archive (converted by
        torch's ``TS2EPConverter`` with sample inputs of the ``arg_shapes``).

        Args:
            path: the file (any suffix).
            **options: ``arg_shapes`` (list of shapes or ``DIMS:TYPE`` strings, for
                dynamic dims) and ``params_as_inputs``.
        """
        from oxla_frontend_torch.importer import import_program
        from oxla_frontend_torch.loading import load_program

        options = dict(options)
        shapes = options.pop("arg_shapes", None)
        return import_program(load_program(path, shapes), arg_shapes=_shapes(shapes),
                              **options)

    def import_object(self, obj: Any, example_inputs: Sequence[Any], **options: Any) -> Module:
        """Imports an ``ExportedProgram``, or an ``nn.Module`` exported with
        ``example_inputs`` (``options`` may hold ``example_kwargs``, ``dynamic_shapes``,
        ``params_as_inputs``, ``arg_shapes``)."""
        from torch.export import ExportedProgram

        from oxla_frontend_torch.importer import export_module, import_program

        options = dict(options)
        kwargs = options.pop("example_kwargs", None)
        dyn = options.pop("dynamic_shapes", None)
        if not isinstance(obj, ExportedProgram):
            obj = export_module(obj, example_inputs, kwargs, dyn)
        return import_program(obj, arg_shapes=_shapes(options.pop("arg_shapes", None)),
                              **options)

    def compile_object(self, obj: Any, example_inputs: Sequence[Any], backend: str,
                       options: CompileOptions | None = None, **kw: Any) -> Any:
        """``oxla.compile(model, example_inputs=...)``: a ``TorchFunction`` taking and
        returning torch tensors (see its docstring). ``kw`` may hold torch export options
        (``example_kwargs``, ``dynamic_shapes``) and ``CompileOptions`` fields
        (``fast_math=``, ``cache=``, ...)."""
        import dataclasses

        from oxla_frontend_torch.api import compile as compile_torch

        fields = {f.name for f in dataclasses.fields(CompileOptions)}
        opt = {k: kw.pop(k) for k in list(kw) if k in fields}
        if opt:
            if options is not None:
                raise TypeError("pass either options= or individual option fields, not both")
            options = CompileOptions(**opt)
        return compile_torch(obj, example_inputs, backend, options=options, **kw)


def _shapes(shapes: Any) -> list[tuple[int, ...]] | None:
    if not shapes:
        return None
    out = []
    for s in shapes:
        if isinstance(s, str):
            dims = s.split(":")[0]
            out.append(tuple(int(d) for d in dims.split("x")) if dims else ())
        else:
            out.append(tuple(int(d) for d in s))
    return out
