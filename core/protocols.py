"""Descriptors plugins return from hooks, and the protocols of the objects they make.

Descriptors (``*Info``) are frozen dataclasses: cheap data created at discovery time.
The objects behind them (:class:`Backend`, :class:`Frontend`, :class:`Executable`) are
created on demand by the descriptor's ``factory``; that is where heavy imports belong.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import click
    import numpy as np

    from oxla.ir import Module

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class CompileOptions:
    """Options every backend understands; backend-specific ones go in ``extra``.

    Attributes:
        pipeline: a pass pipeline string (``"inline,canonicalize,cse"``) replacing the
            backend's default target-independent pipeline; ``None`` keeps the default.
        fast_math: allow rewrites that ignore NaN, infinities and signed zeros, and
            reassociation of floating-point reductions.
        cache: reuse a compiled result for the same module and options when the backend
            keeps a cache.
        dump_dir: when set, the backend writes the IR before and after each step there.
        extra: backend-specific options, snake_case keys.
    """

    pipeline: str | None = None
    fast_math: bool = False
    cache: bool = True
    dump_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Signature:
    """The types an executable takes and returns.

    Attributes:
        inputs: one ``oxla.ir`` type per argument, in order.
        outputs: one ``oxla.ir`` type per result, in order.
    """

    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]


@runtime_checkable
class Executable(Protocol):
    """A compiled program: call it with arrays, get arrays back.

    Attributes:
        signature: the argument and result types.
        backend: the name of the backend that compiled it (``"interpreter"``).
        stats: at least ``compile_seconds`` (float, seconds), ``kernel_count`` (int)
            and ``temp_bytes`` (int, peak scratch memory in bytes).
    """

    signature: Signature
    backend: str
    stats: dict[str, Any]

    def __call__(self, *args: Any) -> Sequence[np.ndarray]:
        """Runs the program.

        Args:
            *args: one array per input of ``signature`` (numpy arrays, or device
                arrays the backend accepts), with matching shapes and dtypes.

        Returns:
            One array per output of ``signature``, as a tuple or list.

        Raises:
            RuntimeInputError: wrong number, shape or dtype of arguments.
        """
        ...

    def save(self, path: PathLike) -> None:
        """Writes a ``.oxla`` artifact (zip with ``manifest.json``) that
        :func:`oxla.load` reads back; see :mod:`oxla.artifact`."""
        ...


@runtime_checkable
class Backend(Protocol):
    """A compilation target, made by :attr:`BackendInfo.factory`.

    Creating a backend must be cheap and must not fail because hardware is missing;
    :meth:`available` reports that instead.
    """

    name: str

    def available(self) -> tuple[bool, str]:
        """Returns ``(True, "")``, or ``(False, reason)`` such as
        ``(False, "no CUDA driver found")``."""
        ...

    def compile(self, module: Module, options: CompileOptions) -> Executable:
        """Compiles a verified StableHLO module.

        Args:
            module: the module; its ``main`` function is the entry point. The backend
                may transform it in place.
            options: common compile options.

        Returns:
            An executable for ``main``.

        Raises:
            LoweringError: an op or type this backend cannot compile.
            PassError: an invalid pipeline string or a failing pass.
        """
        ...

    def load(self, path: PathLike) -> Executable:
        """Reads back an artifact this backend wrote with ``Executable.save``.

        Raises:
            OxlaError: the artifact is malformed or was written by an incompatible
                version.
        """
        ...


@dataclass(frozen=True)
class BackendInfo:
    """Describes a backend a plugin provides.

    Attributes:
        name: the name users select (``--backend cpu``); lowercase.
        description: one line for ``oxla plugins``.
        factory: makes the :class:`Backend`; imports heavy dependencies lazily.
        platforms: the machine kinds it targets (``("x86_64", "aarch64")``), for
            information; empty means any.
        rules: returns the names of the ops the backend compiles (or removes with the
            passes it runs first), read from its rule tables; ``oxla plugins --coverage``
            lists the op table's other ops. Called only then, so it may import the
            backend. None: the backend does not say.
    """

    name: str
    description: str
    factory: Callable[[], Backend]
    platforms: tuple[str, ...] = ()
    rules: Callable[[], Iterable[str]] | None = None


@runtime_checkable
class Frontend(Protocol):
    """A model importer, made by :attr:`FrontendInfo.factory`.

    A frontend may also define ``available() -> tuple[bool, str]`` (for example to say
    that its framework is not installed); ``oxla plugins`` reports it when present.
    """

    def import_path(self, path: PathLike, **options: Any) -> Module:
        """Imports a saved model file (``model.pt2``, ``model.onnx``, a SavedModel dir).

        Raises:
            LoweringError: an operator the frontend cannot translate, with its location.
        """
        ...

    def import_object(self, obj: Any, example_inputs: Sequence[Any], **options: Any) -> Module:
        """Imports an in-memory model or function, traced with ``example_inputs``.

        Raises:
            LoweringError: an operator the frontend cannot translate, with its location.
        """
        ...


@dataclass(frozen=True)
class FrontendInfo:
    """Describes a frontend a plugin provides.

    Attributes:
        name: the name users select (``--frontend torch``).
        description: one line for ``oxla plugins``.
        distribution_hint: the distribution that provides it (``oxla-frontend-torch``).
        detect: returns True when a path looks like this frontend's input; must only
            look at the name or the first bytes, never import the framework.
        factory: makes the :class:`Frontend`.
    """

    name: str
    description: str
    distribution_hint: str
    detect: Callable[[PathLike], bool]
    factory: Callable[[], Frontend]


@dataclass(frozen=True)
class LazyPass:
    """A pass class named by its module and attribute, imported at its first use: a
    :attr:`PassInfo.factory` that keeps a pass a pipeline never names from costing its
    import (the sharding passes: ~10 ms of every process's first compile).

    Attributes:
        module: the module that defines the class (``oxla.sharding.partition``).
        attr: the class's name in it (``SpmdPartition``).
    """

    module: str
    attr: str

    def load(self) -> Any:
        """The class (its module imported now if it was not)."""
        import importlib

        return getattr(importlib.import_module(self.module), self.attr)

    def __call__(self, **options: Any) -> Any:
        return self.load()(**options)


@dataclass(frozen=True)
class PassInfo:
    """Describes a pass usable in pipeline strings.

    Attributes:
        name: kebab-case name used in pipeline strings (``canonicalize``).
        factory: called with the pass options as snake_case keyword arguments; returns
            an object with ``name`` and ``run(module)``. A dataclass (options typed by
            its fields), any callable, or a :class:`LazyPass` naming the class.
        description: one line for ``oxla plugins``.
    """

    name: str
    factory: Callable[..., Any]
    description: str = ""


@dataclass(frozen=True)
class PatternInfo:
    """Describes a rewrite pattern rooted at one op.

    Attributes:
        root_op: full op name the pattern matches on (``stablehlo.dot_general``).
        fn: ``fn(op, rewriter) -> bool``; returns True when it changed the IR, and makes
            every change through the rewriter.
        benefit: higher is tried first.
        name: a name for debug output and ``oxla plugins``.
        backends: the backends it is for (``("cpu",)`` for a rewrite that introduces a
            cpu-only kernel); empty: every backend. A plugin's patterns run in the pass
            ``plugin-patterns{backend=NAME}`` of that backend's pipeline, never inside
            ``canonicalize``.
        pattern: for a **bottleneck override**, the StableHLO text of one
            ``func.func`` whose body is the subgraph to replace (shapes may hold ``?``
            wildcards; see :mod:`oxla.passes.overrides`); ``root_op`` and ``fn`` are
            then ignored (give ``""`` and ``None``) and ``replace`` makes the kernel
            call. ``OXLA_DISABLE_OVERRIDES=name,...`` turns it off by ``name``.
        replace: ``replace(match, rewriter, root) -> list[Value]`` (overrides only).
        constraints: ``((description, fn(match) -> bool), ...)`` checked in order
            after the structure matched; the first to fail is reported.
        tolerance: for ``--verify-overrides``: the largest max|error| / max|reference|
            allowed against the interpreter (None: 1e-5 for floats, exact otherwise).
    """

    root_op: str
    fn: Callable[..., bool] | None
    benefit: int = 1
    name: str = ""
    backends: tuple[str, ...] = ()
    pattern: str = ""
    replace: Callable[..., Any] | None = None
    constraints: tuple[tuple[str, Callable[..., bool]], ...] = ()
    tolerance: float | None = None


@dataclass(frozen=True)
class CustomCallInfo:
    """Binds a ``stablehlo.custom_call`` target to an implementation on one backend.

    Attributes:
        target: the ``call_target_name``.
        backend: the backend name it is for (``"interpreter"``, ``"cpu"``).
        fn: the implementation; its calling convention is the backend's:

            * ``"interpreter"``: ``fn(ctx, op, args) -> list`` of numpy arrays, one per
              result.
            * ``"cpu"``, told apart by type: a **native** function, given as an ``int``
              address, a ``ctypes.c_void_p`` or a ctypes function pointer (a
              ``ctypes.CDLL`` attribute, a ``CFUNCTYPE`` object), with XLA's CPU
              convention ``void fn(void** outputs, const void** inputs, const char*
              opaque, size_t opaque_len)``: ``inputs[i]``/``outputs[j]`` point at dense
              row-major buffers of the op's static operand/result types, ``opaque`` is
              the op's ``backend_config`` (NUL-terminated, ``opaque_len`` excludes the
              NUL); or any other callable, a **Python** kernel called as
              ``fn(*inputs, backend_config=str)`` with numpy arrays and returning one
              array or a sequence of arrays (slow: for prototyping; not savable).
              Details: ``oxla_backend_cpu.custom_call``.
    """

    target: str
    backend: str
    fn: Callable[..., Any]


@dataclass(frozen=True)
class CliCommandInfo:
    """Wraps a click command that a plugin adds to the ``oxla`` CLI."""

    command: click.Command


DESCRIPTOR_TYPES: dict[str, type] = {
    "oxla_frontends": FrontendInfo,
    "oxla_backends": BackendInfo,
    "oxla_passes": PassInfo,
    "oxla_patterns": PatternInfo,
    "oxla_custom_calls": CustomCallInfo,
    "oxla_cli_commands": CliCommandInfo,
}
"""The descriptor type each registry hook must return a list of."""
