"""The Python API: :func:`compile` a torch model or ExportedProgram into a callable that
takes and returns torch tensors, on the :func:`default_backend` unless one is named
(:func:`~oxla_frontend_torch.loading.load_program` reads files)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils import _pytree as pytree

from oxla.errors import NotSupportedError, OxlaError, RuntimeInputError
from oxla.ir import Module
from oxla.ir.types import TensorType
from oxla.protocols import CompileOptions, Executable
from oxla.sharding.annotate import annotate, parse_mesh
from oxla.sharding.run import ShardedExecutable
from oxla_frontend_torch.importer import decompose_program, export_module, import_program
from oxla_frontend_torch.loading import load_program
from oxla_frontend_torch.sharding import collect as collect_shardings


def default_backends() -> list[str]:
    """The installed backends that are available here (device present, plugin loaded),
    fastest first (:data:`oxla.plugins.BACKEND_PREFERENCE`, the order ``oxla.compile``
    and ``oxla compile`` try too); ``["interpreter"]`` at least."""
    from oxla import plugins

    return plugins.available_backends() or ["interpreter"]


def default_backend() -> str:
    """The fastest available backend (``cpu`` when installed, never the interpreter
    when a native one is available)."""
    return default_backends()[0]


def compile_module(module: Module, backend: str | None,
                   options: CompileOptions | None = None) -> Executable:
    """Compiles ``module`` on ``backend``, or, when it is None, on the fastest available
    backend that covers it (:func:`oxla.api.compile_first` over :func:`default_backends`:
    one that raises ``LoweringError`` is passed over with a warning naming the op).

    Raises:
        LoweringError: the named backend (or every candidate) cannot compile the module.
    """
    import oxla
    from oxla.api import compile_first

    if backend is not None:
        return oxla.compile(module, backend=backend, options=options)
    return compile_first(module, default_backends(), options)


def refine_module(module: Module, shapes: Sequence[Sequence[int]]) -> Module:
    """A copy of a ``?``-dim module with its arguments given ``shapes`` and every other
    type refined from them (``stablehlo-refine-shapes``).

    Raises:
        PassError: a shape the program's constraints reject.
    """
    from oxla.passes.refine_shapes import RefineShapes

    module = module.clone()
    args = module.main.regions[0].blocks[0].args
    types = []
    for a, shape in zip(args, shapes):
        t = a.type
        assert isinstance(t, TensorType)
        types.append(str(TensorType(tuple(shape), t.element_type)))
    RefineShapes(arg_shapes=";".join(types)).run(module)
    return module


def _user_input_metas(ep: ExportedProgram) -> list[Any]:
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    return [n.meta["val"] for n in ep.graph.nodes
            if n.op == "placeholder" and specs[n.name].kind == InputKind.USER_INPUT]


def _is_dynamic(metas: Sequence[Any]) -> bool:
    return any(not isinstance(s, int) for m in metas for s in getattr(m, "shape", ()))


def to_numpy(t: Any) -> np.ndarray:
    """A torch tensor as a numpy array through DLPack (no copy for CPU tensors)."""
    if type(t) is torch.Tensor and not t.requires_grad and t.is_cpu \
            and t.dtype != torch.bfloat16 and t.is_contiguous():
        return t.numpy()  # shares memory, as DLPack does (~10x cheaper per call)
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if not t.is_contiguous() or t.requires_grad:
            t = t.contiguous()
        try:
            return np.from_dlpack(t)
        except (RuntimeError, TypeError, BufferError):
            return t.numpy()
    return np.asarray(t)


def to_torch(a: Any) -> torch.Tensor:
    """A numpy result as a torch tensor (shares memory when the array is writeable)."""
    arr = np.asarray(a)
    # ml_dtypes' bfloat16 is a kind-"V" dtype; ``dtype.name`` alone costs ~1.5 us per call
    if arr.dtype.kind == "V" and arr.dtype.name == "bfloat16":
        return torch.from_numpy(arr.view(np.int16).copy()).view(torch.bfloat16)
    if not arr.flags.writeable or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr).copy()
    return torch.from_numpy(arr)


class TorchFunction:
    """A compiled torch program, called like the model's ``forward``.

    Contract:
        - Call it with the same (pytree of) arguments as the exported call; each tensor
          leaf may be a ``torch.Tensor`` (CPU tensors are read through DLPack, without a
          copy when contiguous) or a ``numpy.ndarray``.
        - It returns torch tensors (CPU, sharing memory with the backend's result arrays:
          no copy) in the same pytree structure as ``forward``'s result: a single
          ``torch.Tensor`` when ``forward`` returns one tensor, a tuple when it returns a
          tuple, dicts/lists/dataclass outputs rebuilt the same way (``out_spec``).
        - ``stats``, ``save`` and ``executable`` are those of the underlying oxla
          :class:`~oxla.protocols.Executable` (which itself takes and returns flat numpy
          arrays); ``module`` is the imported StableHLO module.

    Programs with ``torch.export.Dim`` dynamic dims are imported once with ``?`` dims
    (``dynamic_module``), then refined (``stablehlo-refine-shapes``) and compiled once per
    distinct input shape; when an op has no rule for ``?`` dims, each input shape is
    imported on its own instead (``dynamic_error`` says why). ``stats``, ``save`` and
    ``executable`` then refer to the first shape compiled.

    Raises (when called):
        RuntimeInputError: wrong number of tensor inputs, or a shape that does not match
            the exported one (static dims).

    Attributes:
        program: the decomposed ExportedProgram.
        backend: the oxla backend name, or None: the fastest available one that compiles
            the program (:func:`compile_module`; ``executable.backend`` says which).
        executables: compiled executables by input shapes.
        modules: the compiled (static) modules by input shapes.
        dynamic_module: the ``?``-dim module of a dynamic program, or None.
        dynamic_error: why a dynamic program has no ``dynamic_module``, or None.
        sharding: ``(mesh, --shard items)`` of a sharded program, or None; it then runs
            partitioned on an in-process grid of the mesh's devices
            (:class:`oxla.sharding.run.ShardedExecutable`; ``stats`` has its
            collectives).
    """

    def __init__(self, program: ExportedProgram, backend: str | None = None,
                 options: CompileOptions | None = None,
                 sharding: tuple[str, list[str]] | None = None):
        self.program = program
        self.backend = backend
        self.options = options
        self.sharding = sharding
        self._metas = _user_input_metas(program)
        self.dynamic = _is_dynamic(self._metas)
        if self.dynamic and sharding is not None:
            raise NotSupportedError("sharded programs with dynamic shapes are not "
                                    "supported yet: export with static shapes")
        self.executables: dict[tuple[tuple[int, ...], ...], Executable] = {}
        self.modules: dict[tuple[tuple[int, ...], ...], Module] = {}
        self.dynamic_module: Module | None = None
        self.dynamic_error: str | None = None
        if self.dynamic:
            try:
                self.dynamic_module = import_program(program, decompose=False, dynamic=True)
            except NotSupportedError as e:
                self.dynamic_error = str(e).splitlines()[0]
        if not self.dynamic:
            key = tuple(tuple(int(s) for s in m.shape) for m in self._metas)
            self._compile(key)

    def _compile(self, key: tuple[tuple[int, ...], ...]) -> Executable:
        exe = self.executables.get(key)
        if exe is None:
            if self.dynamic_module is not None:
                module = self._refined(key)
            else:
                module = import_program(self.program, decompose=False,
                                        arg_shapes=key if self.dynamic else None)
            self.modules[key] = module
            if self.sharding is not None:
                annotate(module, parse_mesh(self.sharding[0]), self.sharding[1])
                exe = ShardedExecutable(module, self.backend)  # type: ignore[assignment]
            else:
                exe = compile_module(module, self.backend, self.options)
            self.executables[key] = exe
        return exe

    def _refined(self, key: tuple[tuple[int, ...], ...]) -> Module:
        """A copy of ``dynamic_module`` refined to the input shapes ``key``."""
        assert self.dynamic_module is not None
        return refine_module(self.dynamic_module, key)

    @property
    def module(self) -> Module:
        """The imported StableHLO module (the first one compiled)."""
        if not self.modules:
            raise OxlaError("nothing compiled yet: call the function once (dynamic shapes)")
        return next(iter(self.modules.values()))

    @property
    def executable(self) -> Executable:
        """The oxla executable (the first one compiled)."""
        if not self.executables:
            raise OxlaError("nothing compiled yet: call the function once (dynamic shapes)")
        return next(iter(self.executables.values()))

    @property
    def stats(self) -> dict[str, Any]:
        """The underlying executable's statistics (``compile_seconds``, ``kernel_count``,
        ...; see :class:`~oxla.protocols.Executable`) of the first shape compiled."""
        return self.executable.stats

    def _call_spec(self) -> Any:
        """``self.program.call_spec``, kept per program: torch builds a new NamedTuple
        class on every access (~0.4 ms, most of a small model's per-call time)."""
        cached = getattr(self, "_spec_cache", None)
        if cached is None or cached[0] is not self.program:
            cached = (self.program, self.program.call_spec)
            self._spec_cache = cached
        return cached[1]

    def _flat_inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        leaves, spec = pytree.tree_flatten((args, kwargs))
        want = self._call_spec().in_spec
        if want is not None and spec != want:
            # kwargs given positionally (or the reverse) flatten differently
            if len(leaves) != want.num_leaves:
                raise RuntimeInputError(f"expected {want.num_leaves} inputs, got {len(leaves)}")
        tensors = [x for x in leaves if isinstance(x, torch.Tensor | np.ndarray)]
        if len(tensors) != len(self._metas):
            raise RuntimeInputError(f"expected {len(self._metas)} tensor inputs, "
                                    f"got {len(tensors)}")
        return tensors

    def _plain(self) -> tuple[bool, int | None]:
        """``(inputs, outputs)``: whether the exported call takes exactly its tensors
        positionally (no pytree work needed when called that way), and how its result is
        built from the flat outputs: 1 (the one tensor), 2 (a tuple of them in order) or
        None (``tree_unflatten``). Kept per program, like :meth:`_call_spec`."""
        cached = getattr(self, "_plain_cache", None)
        if cached is not None and cached[0] is self.program:
            return cached[1]
        spec = self._call_spec()
        n = len(self._metas)
        plain_in = spec.in_spec is None or spec.in_spec == pytree.tree_structure(
            (tuple(range(n)), {}))
        kind: int | None = None
        if spec.out_spec is None:
            kind = 2
        else:
            leaves = spec.out_spec.num_leaves
            built = pytree.tree_unflatten(list(range(leaves)), spec.out_spec)
            if built == 0 and leaves == 1:
                kind = 1
            elif type(built) is tuple and built == tuple(range(leaves)):
                kind = 2
        self._plain_cache = (self.program, (plain_in, kind))
        return plain_in, kind

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        plain_in, out_kind = self._plain()
        if plain_in and not kwargs and len(args) == len(self._metas) and all(
                type(a) is torch.Tensor for a in args):
            tensors: list[Any] = list(args)  # the exported call's own form: no flattening
        else:
            tensors = self._flat_inputs(args, kwargs)
        arrays = [to_numpy(t) for t in tensors]
        if self.dynamic:
            for i, (a, m) in enumerate(zip(arrays, self._metas)):
                want = tuple(s if isinstance(s, int) else "?" for s in m.shape)
                if len(a.shape) != len(want) or any(
                        w != "?" and w != g for w, g in zip(want, a.shape)):
                    shape = "x".join(str(w) for w in want)
                    raise RuntimeInputError(
                        f"input #{i} has shape {tuple(a.shape)}, expected {shape}")
            exe = self._compile(tuple(tuple(a.shape) for a in arrays))
        else:
            exe = self.executable
        outs = [to_torch(o) for o in exe(*arrays)]
        out_spec = self._call_spec().out_spec
        if out_spec is None:
            return outs[0] if len(outs) == 1 else tuple(outs)
        if out_kind == 1:
            return outs[0]
        if out_kind == 2:
            return tuple(outs)
        return pytree.tree_unflatten(outs, out_spec)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the (first) flat executable as a ``.oxla`` artifact; ``oxla.load`` reads
        it back as an executable on flat numpy arrays (the pytree structure and torch
        conversion are not saved)."""
        self.executable.save(path)


def compile(  # noqa: A001 - mirrors oxla.compile
    model: Any,
    example_inputs: Sequence[Any] = (),
    backend: str | None = None,
    *,
    example_kwargs: dict[str, Any] | None = None,
    dynamic_shapes: Any = None,
    options: CompileOptions | None = None,
    mesh: Any = None,
    shardings: dict[str, Any] | None = None,
) -> TorchFunction:
    """Exports (when needed), imports and compiles a torch model.

    Args:
        model: an ``nn.Module`` (exported with ``example_inputs``), an
            ``ExportedProgram``, or a path to a ``torch.export.save`` file.
        example_inputs: positional example inputs for export.
        backend: an installed oxla backend (``interpreter``, ``cpu``); None picks the
            fastest available one (:func:`default_backend`).
        example_kwargs: keyword example inputs for export.
        dynamic_shapes: passed to ``torch.export.export`` (``torch.export.Dim``).
        options: oxla compile options.
        mesh: the device mesh of a sharded program (``"data=2,model=2"`` or a dict).
        shardings: tensor name (``argN``, ``resultN``, a parameter's ``state_dict`` key
            or glob) -> spec (``("model", None)`` or ``"model,_"``); tensors marked with
            :func:`oxla_frontend_torch.shard`, and DTensor parameters and buffers (their
            placements), are annotated too. A sharded program is
            partitioned (propagation completes the shardings) and runs on an in-process
            grid of the mesh's devices; ``save`` writes it for ``oxla launch``.

    Returns:
        A :class:`TorchFunction` taking torch tensors (or numpy arrays) and returning
        torch tensors in ``forward``'s output structure (one tensor for one tensor).

    Raises:
        OxlaError: an ``nn.Module`` whose ``forward`` needs arguments, given no
            ``example_inputs``/``example_kwargs``.
        LoweringError: an ATen op without a lowering rule (names op and source line).
        NotSupportedError: the backend cannot compile an op.
    """
    if isinstance(model, str | os.PathLike):
        ep = decompose_program(load_program(model))
    elif isinstance(model, ExportedProgram):
        ep = decompose_program(model)
    elif isinstance(model, torch.nn.Module):
        if not example_inputs and not example_kwargs:
            _check_no_args(model)
        ep = export_module(model, example_inputs, example_kwargs, dynamic_shapes)
    else:
        raise TypeError(f"expected an nn.Module, ExportedProgram or path, got "
                        f"{type(model).__name__}")
    sharding = collect_shardings(model, example_inputs, mesh, shardings, program=ep)
    return TorchFunction(ep, backend, options, sharding)


def _check_no_args(model: torch.nn.Module) -> None:
    import inspect

    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return
    need = [p.name for p in params if p.default is inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if need:
        raise OxlaError(f"{type(model).__name__}.forward needs arguments "
                        f"({', '.join(need)}) but no example_inputs were given: pass "
                        "example_inputs=(tensor, ...) (used to export the model with "
                        "torch.export), or pass a torch.export.ExportedProgram instead")
