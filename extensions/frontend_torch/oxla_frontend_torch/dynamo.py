"""``torch.compile(model, backend="oxla")``: a TorchDynamo backend.

Registered through the ``torch_dynamo_backends`` entry point. Dynamo hands the backend an
FX graph of torch-level ops; AOTAutograd (``aot_autograd``) turns it into Core ATen
forward and backward graphs (functionalized, parameters lifted to inputs), and each graph
is lowered by the same per-op rules as ``torch.export`` programs
(:func:`oxla_frontend_torch.importer.lower_graph`) and compiled by an oxla backend::

    cm = torch.compile(model, backend="oxla")          # the fastest available backend (cpu)
    cm = torch.compile(model, backend="oxla", options={"backend": "interpreter"})
    loss = cm(x).sum(); loss.backward()        # forward and backward both run on oxla

Attention runs through PyTorch's math SDPA kernel while the graphs are traced, so the
backward graph holds plain matmuls and softmax instead of a fused flash-attention
backward op.

Each FX graph is its own :class:`GraphFunction`, with its own symbols. A graph whose sizes
dynamo made symbolic (a recompile after a new shape, ``dynamic=True``, ``mark_dynamic``)
is lowered once to one dynamic program (``?`` dims, ``dynamic_module``) when every op's
rule supports ``?`` dims, which is refined and compiled once per distinct concrete shape;
otherwise each shape is lowered on its own (``dynamic_error`` says why), its SymInt
inputs binding the graph's symbols.
Buffers the graph mutates (train-mode BatchNorm's running statistics) are returned by
the functionalized forward graph, and AOTAutograd writes them back into the module.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch

from oxla.errors import LoweringError, OxlaError
from oxla.ir import Module
from oxla.protocols import Executable

_OPTIONS = ("backend",)


def oxla_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                 options: dict[str, Any] | None = None, **kwargs: Any) -> Any:
    """The dynamo backend: compiles forward (and backward) graphs with oxla.

    Args:
        gm: dynamo's FX graph.
        example_inputs: its (fake) example inputs.
        options: ``torch.compile(..., options=...)``; ``backend`` names the oxla backend
            (default: :func:`oxla_frontend_torch.api.default_backend`, the first available
            of cuda, hip, cpu, interpreter; a graph it cannot compile falls back to the next).
        **kwargs: ``mode`` from ``torch.compile``, ignored.

    Returns:
        A callable dynamo runs in place of ``gm``.

    Raises:
        OxlaError: an unknown option.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch.nn.attention import SDPBackend, sdpa_kernel

    opts = dict(options or {})
    unknown = sorted(set(opts) - set(_OPTIONS))
    if unknown:
        raise OxlaError(f"unknown oxla torch.compile option(s) {unknown}; "
                        f"expected one of {list(_OPTIONS)}")
    compiler = functools.partial(compile_graph, backend=opts.get("backend"))
    aot = aot_autograd(fw_compiler=compiler, bw_compiler=compiler,
                       decompositions=torch.export.default_decompositions())
    with sdpa_kernel(SDPBackend.MATH):
        return aot(gm, example_inputs)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                  backend: str | None = None) -> Any:
    """AOTAutograd's compiler: a boxed callable running ``gm`` on ``backend`` (None: the
    default backend, see :func:`oxla_frontend_torch.api.compile_module`)."""
    from torch._functorch.aot_autograd import make_boxed_func

    return make_boxed_func(GraphFunction(gm, backend))


class GraphFunction:
    """An ATen FX graph compiled by oxla; every placeholder is a function input.

    Tensor placeholders become function arguments; SymInt placeholders bind their symbol
    to the value passed. Outputs that are not tensors (``None`` gradients, sizes) are
    returned as they are (sizes evaluated for the call's shapes).

    Attributes:
        gm: the graph.
        backend: the oxla backend name, or None for the default one.
        executables: compiled executables by the concrete input shapes.
        modules: the compiled (static) modules by the concrete input shapes.
        dynamic_module: the graph lowered once with ``?`` dims, or None (static graph,
            or ``dynamic_error``).
        dynamic_error: why a symbolic graph has no ``dynamic_module``, or None.
    """

    def __init__(self, gm: torch.fx.GraphModule, backend: str | None):
        self.gm = gm
        self.backend = backend
        nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in nodes if n.op == "placeholder"]
        out = next(n for n in nodes if n.op == "output").args[0]
        self.outs = list(out) if isinstance(out, list | tuple) else [out]
        self.tensor_outs = [o for o in self.outs if _is_tensor_node(o)]
        self.executables: dict[tuple[Any, ...], Executable] = {}
        self.modules: dict[tuple[Any, ...], Module] = {}
        self.dynamic_module: Module | None = None
        self.dynamic_error: str | None = None
        self.symbolic = any(not isinstance(s, int) for n in self.placeholders
                            if _is_tensor_node(n) for s in n.meta["val"].shape)

    def _bindings(self, args: Sequence[Any]) -> dict[Any, int]:
        bindings: dict[Any, int] = {}
        for n, a in zip(self.placeholders, args):
            val = n.meta.get("val")
            if isinstance(val, torch.SymInt) and val.node.expr.is_Symbol:
                bindings[val.node.expr] = int(a)
            elif isinstance(val, torch.Tensor) and isinstance(a, torch.Tensor):
                for s, got in zip(val.shape, a.shape):
                    if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol:
                        bindings[s.node.expr] = int(got)
        return bindings

    def _compile(self, args: Sequence[Any]) -> tuple[Executable, dict[Any, int]]:
        from oxla_frontend_torch.api import compile_module
        from oxla_frontend_torch.importer import Symbols, lower_graph

        key = tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args)
        bindings = self._bindings(args)
        exe = self.executables.get(key)
        if exe is None:
            arg_nodes = [n for n in self.placeholders if _is_tensor_node(n)]
            module = self._from_dynamic(arg_nodes, args)
            if module is None:
                module = lower_graph(self.gm, arg_nodes, {}, self.tensor_outs,
                                     Symbols(bindings))
            exe = compile_module(module, self.backend)
            self.modules[key] = module
            self.executables[key] = exe
        return exe, bindings

    def _from_dynamic(self, arg_nodes: list[torch.fx.Node], args: Sequence[Any]
                      ) -> Module | None:
        """The dynamic program refined to ``args``' shapes, lowering it on first use; None
        for a static graph or one whose ops do not all support ``?`` dims."""
        from oxla_frontend_torch.api import refine_module
        from oxla_frontend_torch.importer import Symbols, lower_graph

        if not self.symbolic or self.dynamic_error is not None:
            return None
        if self.dynamic_module is None:
            try:
                self.dynamic_module = lower_graph(self.gm, arg_nodes, {}, self.tensor_outs,
                                                  Symbols({}, dynamic=True))
            except LoweringError as exc:
                self.dynamic_error = str(exc).splitlines()[0]
                return None
        shapes = [tuple(a.shape) for n, a in zip(self.placeholders, args) if _is_tensor_node(n)]
        try:
            return refine_module(self.dynamic_module, shapes)
        except OxlaError as exc:
            self.dynamic_error = str(exc).splitlines()[0]
            return None

    def __call__(self, *args_copy: Any) -> list[Any]:
        from oxla_frontend_torch.api import to_numpy, to_torch
        from oxla_frontend_torch.importer import Symbols

        exe, bindings = self._compile(args_copy)
        arrays = [to_numpy(a) for n, a in zip(self.placeholders, args_copy)
                  if _is_tensor_node(n)]
        results = iter(to_torch(r) for r in exe(*arrays))
        dim = Symbols(bindings)
        outs: list[Any] = []
        for o in self.outs:
            if _is_tensor_node(o):
                outs.append(next(results))
            elif isinstance(o, torch.fx.Node):
                outs.append(dim(o.meta.get("val")))
            else:
                outs.append(o)
        return outs


def _is_tensor_node(n: Any) -> bool:
    return isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)
