"""The oxla hook specifications: the contract between the core and its plugins.

A plugin is a module (or any object) with functions decorated by :data:`hookimpl` and
named like the specs below. A distribution exposes it through an entry point in group
``oxla``::

    [project.entry-points.oxla]
    backend_cpu = "oxla_backend_cpu.plugin"

Registry hooks take no arguments and return lists of descriptors (see
:mod:`oxla.protocols`). They are called lazily, the first time the core needs that
kind of descriptor (for example when a backend is looked up, or by ``oxla plugins``),
and at most once per process. They must be cheap: no heavy imports (torch, llvmlite,
CUDA) at this point; put those inside the descriptor's factory.

The built-in interpreter backend is registered through the same hooks
(:mod:`oxla.builtin_plugin`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from oxla.protocols import (
        BackendInfo,
        CliCommandInfo,
        CustomCallInfo,
        FrontendInfo,
        PassInfo,
        PatternInfo,
    )

PROJECT_NAME = "oxla"
"""The pluggy project name and the entry-point group plugins are found in."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def oxla_frontends() -> list[FrontendInfo]:
    """Declares the frontends (model importers) this plugin provides.

    Called once per process, the first time frontends are listed or looked up
    (``oxla.plugins.frontends()``, ``get_frontend``, ``oxla plugins``).

    Returns:
        A list of :class:`oxla.protocols.FrontendInfo`. Names are unique across all
        installed plugins; a second claim on a name is a ``PluginError``.

    Example::

        @hookimpl
        def oxla_frontends():
            return [FrontendInfo(
                name="onnx",
                description="ONNX models to StableHLO",
                distribution_hint="oxla-frontend-onnx",
                detect=lambda path: str(path).endswith(".onnx"),
                factory=lambda: __import__("oxla_frontend_onnx.importer").importer.OnnxFrontend(),
            )]
    """


@hookspec
def oxla_backends() -> list[BackendInfo]:
    """Declares the backends (compilation targets) this plugin provides.

    Called once per process, the first time backends are listed or looked up
    (``oxla.compile``, ``oxla.load``, ``--backend`` validation, ``oxla plugins``).

    Returns:
        A list of :class:`oxla.protocols.BackendInfo`. Names are unique across all
        installed plugins; a second claim on a name is a ``PluginError``.

    Example::

        @hookimpl
        def oxla_backends():
            def make():
                from oxla_backend_cpu.backend import CpuBackend  # heavy import here

                return CpuBackend()

            return [BackendInfo(name="cpu", description="native x86-64/AArch64 code",
                                factory=make, platforms=("x86_64", "aarch64"))]
    """


@hookspec
def oxla_passes() -> list[PassInfo]:
    """Declares passes usable in pipeline strings (``inline,canonicalize,my-pass``).

    Called once per process, the first time the pass registry is read
    (``oxla.plugins.passes()``, pipeline parsing, ``oxla plugins``).

    Returns:
        A list of :class:`oxla.protocols.PassInfo`; pass names are kebab-case and
        unique across all installed plugins.

    Example::

        @hookimpl
        def oxla_passes():
            return [PassInfo(name="fold-my-op", factory=FoldMyOp,
                             description="folds my.op chains")]
    """


@hookspec
def oxla_patterns() -> list[PatternInfo]:
    """Declares rewrite patterns: the route to replace an op or subgraph by a kernel.

    Called once per process, the first time the pattern registry is read
    (``oxla.plugins.patterns()``, typically when a pipeline that applies plugin
    patterns is built, and by ``oxla plugins``).

    Returns:
        A list of :class:`oxla.protocols.PatternInfo`, each rooted at one op name
        (``stablehlo.dot_general``) with a benefit; higher benefit is tried first.

    Example::

        @hookimpl
        def oxla_patterns():
            return [PatternInfo(root_op="stablehlo.dot_general", fn=rewrite_attention,
                                benefit=10, name="fused-attention")]
    """


@hookspec
def oxla_custom_calls() -> list[CustomCallInfo]:
    """Declares implementations of ``stablehlo.custom_call`` targets, per backend.

    Called once per process, the first time custom calls are looked up
    (``oxla.plugins.custom_calls(backend)``, by a backend compiling a
    ``stablehlo.custom_call``, by ``oxla plugins``).

    A backend compiling a ``custom_call`` whose target has no implementation for it
    raises ``LoweringError`` (no fallback to another backend). The calling convention
    of ``fn`` is the backend's (see :class:`oxla.protocols.CustomCallInfo`):

    * ``"interpreter"``: ``fn(ctx, op, args) -> list[np.ndarray]``;
    * ``"cpu"``: a native function (``int`` address, ``ctypes.c_void_p`` or ctypes
      function pointer) ``void fn(void** outputs, const void** inputs, const char*
      opaque, size_t opaque_len)`` on dense row-major buffers, ``opaque`` being the
      op's ``backend_config``; or, for prototyping, a Python callable
      ``fn(*inputs, backend_config=str)`` on numpy arrays returning the result array(s).
      Artifacts record native targets by name and ``oxla.load`` resolves them again
      through this hook; executables calling Python kernels cannot be saved.

    Returns:
        A list of :class:`oxla.protocols.CustomCallInfo`; a ``(target, backend)`` pair
        is unique across all installed plugins.

    Example::

        lib = ctypes.CDLL("libmykernels.so")

        @hookimpl
        def oxla_custom_calls():
            return [CustomCallInfo(target="my_topk", backend="interpreter", fn=topk_numpy),
                    CustomCallInfo(target="my_topk", backend="cpu", fn=lib.my_topk)]
    """


@hookspec
def oxla_cli_commands() -> list[CliCommandInfo]:
    """Declares extra ``oxla`` subcommands.

    Called when the ``oxla`` CLI resolves a command name that is not built in, or
    lists its commands (``oxla --help``), and by ``oxla plugins``.

    Returns:
        A list of :class:`oxla.protocols.CliCommandInfo` wrapping ``click.Command``
        objects; names must not clash with built-in commands or other plugins.

    Example::

        @click.command("cuda-info")
        def cuda_info():
            click.echo(describe_devices())

        @hookimpl
        def oxla_cli_commands():
            return [CliCommandInfo(command=cuda_info)]
    """
