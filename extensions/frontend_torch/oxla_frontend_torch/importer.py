"""torch.export ``ExportedProgram`` -> StableHLO module, through the lowering table.

The program is first decomposed to Core ATen (keeping
``aten.scaled_dot_product_attention`` whole), then every FX node is lowered by the rule
registered for its ``OpOverload`` in :data:`oxla_frontend_torch.registry.LOWERINGS`.
"""

from __future__ import annotations

import linecache
import operator
import os
import re
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import Builder, FileLineColLoc, Location, Module, NameLoc, Value, verify
from oxla.ir.location import SourceFile
from oxla.ir.types import TensorType
from oxla_frontend_torch import rules  # noqa: F401  (fills LOWERINGS)
from oxla_frontend_torch.registry import DYNAMIC_SAFE, LOWERINGS, LoweringContext, Unavailable
from oxla_frontend_torch.sharding import ARGS_ATTR, undistribute

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
_TORCH_DIR = os.path.dirname(torch.__file__)
_NO_RESULT = object()

CUSTOM_ROUTE = ("supply it from a plugin: an `oxla_patterns` rewrite or an "
                "`oxla_custom_calls` kernel bound to a `stablehlo.custom_call` target, "
                "or open an issue for a lowering rule in oxla_frontend_torch.rules")


def decomposition_table() -> dict[Any, Any]:
    """Core ATen decompositions without the one for ``scaled_dot_product_attention``."""
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    return table


def export_module(module: torch.nn.Module, example_inputs: Sequence[Any],
                  example_kwargs: dict[str, Any] | None = None,
                  dynamic_shapes: Any = None) -> ExportedProgram:
    """``torch.export.export(strict=False)`` of ``module`` in eval mode, decomposed; the
    module's own train/eval mode is restored afterwards."""
    training = module.training
    try:
        ep = torch.export.export(module.eval(), tuple(example_inputs), example_kwargs,
                                 dynamic_shapes=dynamic_shapes, strict=False)
    finally:
        module.train(training)
    return decompose_program(ep)


def decompose_program(ep: ExportedProgram) -> ExportedProgram:
    """``ep.run_decompositions`` with oxla's table, without torch's own FutureWarning
    (pytree ``LeafSpec``, from deep-copying the module call graph) on every import.

    A program with DTensors is exported again first without them, parameters and
    buffers holding their whole values marked with their placements
    (:func:`oxla_frontend_torch.sharding.undistribute`)."""
    ep = undistribute(ep)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*LeafSpec", category=FutureWarning)
        out = ep.run_decompositions(decomposition_table())
    if hasattr(ep, ARGS_ATTR):
        setattr(out, ARGS_ATTR, getattr(ep, ARGS_ATTR))
    return out


def warn_dropped_mutations(ep: ExportedProgram) -> None:
    """Warns (``UserWarning``) when the program updates buffers in place, such as a
    train-mode BatchNorm's running statistics: oxla returns only the user outputs, so
    those updates are dropped. The message names the buffers and their modules."""
    mutated = ep.graph_signature.buffers_to_mutate
    if not mutated:
        return
    import warnings

    nodes = {n.name: n for n in ep.graph.nodes}
    owners: dict[str, list[str]] = {}
    for out, fqn in mutated.items():
        path, _, buf = fqn.rpartition(".")
        stack = (nodes[out].meta.get("nn_module_stack") or {}) if out in nodes else {}
        cls = next(reversed(stack.values()))[1] if stack else ""
        cls = getattr(cls, "__name__", str(cls)).rpartition(".")[2]
        key = f"'{path or '<root>'}'" + (f" ({cls})" if cls else "")
        owners.setdefault(key, []).append(buf)
    where = "; ".join(f"module {k}: {', '.join(v)}" for k, v in owners.items())
    warnings.warn(f"the exported program updates buffers in place ({where}), but oxla "
                  "returns only the model's outputs: these updates are dropped (a "
                  "train-mode BatchNorm's running statistics stay unchanged). Export the "
                  "model after model.eval() for inference", UserWarning, stacklevel=3)


def node_location(node: torch.fx.Node) -> Location:
    """``NameLoc(aten op, FileLineColLoc(user file, line, col))`` from the stack trace.

    The user's frame is the innermost one outside torch's own package; the name also says
    which submodule the op came from (``aten.hardtanh.default in 'features.0.2' (ReLU6)``)
    when that call is inside torch (an ``nn.Sequential`` of library modules).
    """
    name = f"{node.target}" if node.op == "call_function" else node.name
    owner = _module_of_node(node)
    if owner:
        name = f"{name} in {owner}"
    trace = node.meta.get("stack_trace") or ""
    frames = [m for m in _FRAME.finditer(trace)]
    user = [m for m in frames if not m.group("file").startswith(_TORCH_DIR)]
    pick = (user or frames)[-1] if frames else None
    if pick is None:
        return NameLoc(name)
    file, line = pick.group("file"), int(pick.group("line"))
    text = linecache.getline(file, line)
    col = len(text) - len(text.lstrip()) + 1 if text.strip() else 1
    lines = linecache.getlines(file)
    source = SourceFile(file, "".join(lines)) if lines else None
    length = max(1, len(text.strip()))
    return NameLoc(name, FileLineColLoc(file, line, col, length, source))


_DYNAMO_ROOT = re.compile(r"^L\['[^']*'\]\.?|^L__self___?")


def _module_of_node(node: torch.fx.Node) -> str:
    """``'path.to.sub' (Class)`` of the innermost module whose forward made ``node``, from
    ``nn_module_stack`` (export and dynamo graphs), or ``""`` for the root module."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, cls = next(reversed(stack.values()))[:2]
    path = _DYNAMO_ROOT.sub("", str(path))
    path = re.sub(r"\[(\d+)\]", r".\1", path).replace("._modules['", ".").replace("']", "")
    cls = getattr(cls, "__name__", str(cls)).rpartition(".")[2].strip("'>")
    return f"'{path}' ({cls})" if path else ""


class Symbols:
    """Maps torch sizes (ints or SymInts) to ints, with optional concrete bindings.

    With ``dynamic``, an unbound symbolic size maps to None (a ``?`` dimension) and
    ``sources`` says which function argument dimension each symbol is read from.
    """

    def __init__(self, bindings: dict[Any, int], dynamic: bool = False,
                 names: dict[Any, str] | None = None, spec: str = ""):
        self.bindings = bindings
        self.dynamic = dynamic
        self.sources: dict[Any, tuple[Value, int]] = {}
        self.names = names or {}
        self.spec = spec

    def __call__(self, s: Any) -> Any:
        if isinstance(s, int):
            return s
        if isinstance(s, torch.SymInt | torch.SymFloat | torch.SymBool):
            expr = s.node.expr
            if expr.is_number:
                return int(expr)
            val = expr.subs(self.bindings)
            if val.is_number:
                return int(val)
            if self.dynamic:
                return None
            syms = sorted(expr.free_symbols, key=str)
            what = "; ".join(self.names.get(x, f"torch symbol {x}") for x in syms)
            size = f"size {expr}" if not expr.is_Symbol else "size"
            spec = self.spec or "2x8:f32"
            raise NotSupportedError(
                f"{size} of {what} is dynamic; oxla imports torch programs for concrete "
                "shapes",
                notes=[f"pass arg_shapes=[...] (CLI: --input-spec per input, e.g. {spec}) "
                       "or call the compiled function (oxla_frontend_torch.compile), which "
                       "specializes per input shape"])
        return int(s)


def _describe_symbols(user_nodes: list[torch.fx.Node]) -> tuple[dict[Any, str], str]:
    """Names of the inputs' dynamic size symbols (``Dim 'batch' (dim 0 of input 'x')``;
    the Dim name is known while the export's shape env is, not after ``torch.export.load``)
    and an ``--input-spec`` suggestion with the example sizes and the inputs' dtypes."""
    from oxla_frontend_torch.registry import element_type

    names: dict[Any, str] = {}
    specs = []
    for node in user_nodes:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            continue
        dims = []
        for i, s in enumerate(val.shape):
            if not isinstance(s, torch.SymInt):
                dims.append(str(int(s)))
                continue
            env = s.node.shape_env
            expr = s.node.expr
            if expr.is_Symbol and expr not in names:
                where = f"dim {i} of input '{node.name}'"
                dim_name = None
                for src in getattr(env, "var_to_sources", {}).get(expr, []):
                    key = src.name() if callable(src.name) else src.name
                    dim_name = getattr(env, "source_name_to_debug_name", {}).get(key)
                    if dim_name:
                        break
                names[expr] = (f"Dim '{dim_name}' ({where}, torch symbol {expr})" if dim_name
                               else f"{where} (torch symbol {expr})")
            vals = getattr(env, "backed_var_to_val", None)
            hint = expr.xreplace(vals if vals is not None else getattr(env, "var_to_val", {}))
            dims.append(str(int(hint)) if hint.is_number else "N")
        try:
            et = str(element_type(val.dtype))
        except LoweringError:
            et = str(val.dtype)
        specs.append("x".join(dims) + ":" + et)
    return names, " ".join(f"--input-spec {s}" for s in specs)


def _bind_symbols(ep: ExportedProgram, user_nodes: list[torch.fx.Node],
                  arg_shapes: Sequence[Sequence[int]] | None) -> dict[Any, int]:
    if not arg_shapes:
        return {}
    if len(arg_shapes) != len(user_nodes):
        raise LoweringError(f"expected {len(user_nodes)} arg_shapes, got {len(arg_shapes)}")
    bindings: dict[Any, int] = {}
    for node, shape in zip(user_nodes, arg_shapes):
        val = node.meta["val"]
        if len(val.shape) != len(shape):
            raise LoweringError(f"input '{node.name}' has rank {len(val.shape)}, "
                                f"got shape {tuple(shape)}")
        for s, want in zip(val.shape, shape):
            if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol:
                bindings[s.node.expr] = int(want)
            elif isinstance(s, int) and s != want:
                raise LoweringError(f"input '{node.name}' has static shape "
                                    f"{tuple(val.shape)}, got {tuple(shape)}")
    return bindings


def import_program(ep: ExportedProgram, params_as_inputs: bool = False,
                   arg_shapes: Sequence[Sequence[int]] | None = None,
                   decompose: bool = True, name: str = "main", dynamic: bool = False
                   ) -> Module:
    """Imports an ExportedProgram as a StableHLO module with one function ``main``.

    Args:
        ep: the program (``torch.export.export`` or ``torch.export.load``).
        params_as_inputs: make parameters and buffers leading function arguments (in
            ``ep.graph_signature`` order) instead of constants.
        arg_shapes: concrete shapes of the user inputs, for programs with
            ``torch.export.Dim`` dynamic dims.
        decompose: run the Core ATen decompositions first.
        name: the entry function's name.
        dynamic: keep ``torch.export.Dim`` dims as ``?`` dimensions (sizes read with
            ``get_dimension_size``, ``dynamic_reshape``/``dynamic_broadcast_in_dim``);
            ops whose dynamic form has no rule yet raise NotSupportedError naming the op.

    Returns:
        A verified module; ``main`` takes the user's tensor inputs (after the parameters
        when ``params_as_inputs``) and returns the flattened user outputs.

    Raises:
        LoweringError: an op without a rule, naming the ATen op and the user's source line.
        NotSupportedError: dynamic sizes with no concrete binding, non-tensor inputs.

    Warns:
        UserWarning: the program mutates buffers (``warn_dropped_mutations``).
    """
    if decompose:
        ep = decompose_program(ep)
    warn_dropped_mutations(ep)
    gm = ep.graph_module
    sig = ep.graph_signature
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    specs = {s.arg.name: s for s in sig.input_specs}
    user_nodes = [n for n in placeholders if specs[n.name].kind == InputKind.USER_INPUT]
    dim = Symbols(_bind_symbols(ep, user_nodes, arg_shapes), dynamic,
                  *_describe_symbols(user_nodes))
    state = dict(ep.state_dict)
    state.update(ep.constants)

    arg_nodes: list[torch.fx.Node] = []
    const_nodes: dict[str, torch.Tensor] = {}
    for n in placeholders:
        spec = specs[n.name]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(n.meta.get("val"), torch.Tensor):
                raise NotSupportedError(f"input '{n.name}' is not a tensor "
                                        f"({type(n.meta.get('val')).__name__})",
                                        notes=["make non-tensor arguments constants of the "
                                               "module, or keep them out of forward()"])
            arg_nodes.append(n)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            tensor = state[spec.target]
            if params_as_inputs and spec.kind != InputKind.CONSTANT_TENSOR:
                arg_nodes.append(n)
            else:
                const_nodes[n.name] = tensor
        else:
            raise NotSupportedError(f"input '{n.name}' of kind {spec.kind.name} is not "
                                    "supported", notes=["export without custom objects"])
    if params_as_inputs:  # parameters first, then user inputs, as in the graph signature
        arg_nodes.sort(key=lambda n: specs[n.name].kind == InputKind.USER_INPUT)

    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outs = list(out_node.args[0])
    user_outs = [o for o, s in zip(outs, sig.output_specs) if s.kind == OutputKind.USER_OUTPUT]
    consts = {n: (str(specs[n.name].target), t) for n in placeholders
              if (t := const_nodes.get(n.name)) is not None}
    return lower_graph(gm, arg_nodes, consts, user_outs, dim, name)


def lower_graph(gm: torch.fx.GraphModule, arg_nodes: Sequence[torch.fx.Node],
                consts: dict[torch.fx.Node, tuple[str, torch.Tensor]],
                outs: Sequence[Any], dim: Any, name: str = "main") -> Module:
    """Lowers an ATen FX graph to a module with one function ``name``.

    Args:
        gm: the graph (Core ATen ops; ``getitem`` on multi-output ops).
        arg_nodes: placeholders that become the function's arguments, in order.
        consts: placeholders that become constants: node -> (label, tensor).
        outs: the nodes returned, each with a tensor ``meta['val']``.
        dim: maps a possibly symbolic torch size to an int.
        name: the function's name.

    Raises:
        LoweringError: an op without a rule (naming the op and the user's source line).
        NotSupportedError: a non-tensor output.
    """
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    ctx0 = LoweringContext(Builder.at_end(Module().body), out_node, dim)
    arg_types = [ctx0.tensor_type(n.meta["val"]) for n in arg_nodes]
    for o in outs:
        if not isinstance(o, torch.fx.Node) or not isinstance(o.meta.get("val"), torch.Tensor):
            raise NotSupportedError(f"output {o!r} is not a tensor; oxla returns tensors only")
    result_types = [ctx0.tensor_type(o.meta["val"]) for o in outs]

    module = Builder.module()
    _, entry = Builder(module.body).func(name, arg_types, result_types)
    values: dict[torch.fx.Node, Any] = dict(zip(arg_nodes, entry.args))
    if isinstance(dim, Symbols) and dim.dynamic:
        for n, a in zip(arg_nodes, entry.args):
            for i, s in enumerate(n.meta["val"].shape):
                if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol:
                    dim.sources.setdefault(s.node.expr, (a, i))
    for n in gm.graph.nodes:  # size placeholders (dynamo's SymInts): rules read them
        if n.op == "placeholder" and n not in values and n not in consts:
            val = n.meta.get("val")
            if isinstance(val, int | torch.SymInt | torch.SymFloat | torch.SymBool):
                values[n] = val
    b = Builder(entry)
    for n, (label, tensor) in consts.items():
        b.loc = NameLoc(label)
        t = tensor.detach()
        values[n] = b.constant(_to_numpy(t), ctx0.tensor_type(t))

    for node in gm.graph.nodes:
        if node.op == "get_attr":  # a tensor constant of the graph (dynamo, AOTAutograd)
            t = _attr(gm, str(node.target))
            if isinstance(t, torch.Tensor):
                b.loc = NameLoc(str(node.target))
                values[node] = b.constant(_to_numpy(t.detach()), ctx0.tensor_type(t))
            continue
        if node.op != "call_function":
            continue
        b.loc = node_location(node)
        values[node] = _lower_node(node, values, LoweringContext(b, node, dim, _inliner(b, dim)))

    results = []
    for o, t in zip(outs, result_types):
        v = values[o]
        if not isinstance(v, Value):
            raise LoweringError(f"output '{o.name}' was not lowered to a tensor")
        results.append(v if v.type == t else b.convert(v, t.element_type))
    b.loc = NameLoc("output")
    b.return_(*results)
    verify(module)
    return module


def _inliner(b: Builder, dim: Any) -> Any:
    """The ``LoweringContext.inline`` of rules: lowers a traced ATen graph (a
    decomposition) at the builder's position and location, its placeholders bound to the
    given values; ``get_attr`` tensors (constants the trace made) become constants."""

    def inline(gm: torch.fx.GraphModule, inputs: Sequence[Value]) -> Any:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise LoweringError(f"decomposition takes {len(placeholders)} tensors, "
                                f"got {len(inputs)}", loc=b.loc)
        values: dict[torch.fx.Node, Any] = dict(zip(placeholders, inputs))
        ctx0 = LoweringContext(b, placeholders[0] if placeholders else None, dim)
        out: Any = None
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                t = _attr(gm, str(node.target)).detach()
                values[node] = b.constant(_to_numpy(t), ctx0.tensor_type(t))
            elif node.op == "call_function":
                values[node] = _lower_node(node, values, LoweringContext(b, node, dim, inline))
            elif node.op == "output":
                out = node.args[0]

        def pick(n: torch.fx.Node) -> Any:
            v = values.get(n)
            return None if v is _NO_RESULT else v

        return torch.fx.node.map_arg(out, pick)

    return inline


def _attr(gm: torch.fx.GraphModule, target: str) -> Any:
    """The object a ``get_attr`` node names (a dotted path from the graph module)."""
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _has_dynamic_dims(node: torch.fx.Node, args: Any, kwargs: Any,
                      ctx: LoweringContext) -> bool:
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    if any(isinstance(v, Value) and isinstance(v.type, TensorType) and None in v.type.shape
           for v in leaves):
        return True
    vals = torch.utils._pytree.tree_leaves(node.meta.get("val"))
    return any(isinstance(v, torch.Tensor) and None in ctx.tensor_type(v).shape for v in vals)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _lower_node(node: torch.fx.Node, values: dict[torch.fx.Node, Any],
                ctx: LoweringContext) -> Any:
    def lookup(n: torch.fx.Node) -> Any:
        v = values.get(n)
        if v is None or v is _NO_RESULT:
            raise LoweringError(f"'{node.target}' uses '{n.name}', which has no value",
                                loc=ctx.b.loc)
        if isinstance(v, Unavailable):
            raise NotSupportedError(f"'{node.target}' uses {v.what}", loc=ctx.b.loc,
                                    notes=[CUSTOM_ROUTE])
        return v

    val = node.meta.get("val")
    if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool):
        return val  # a size computation; rules read it through ctx.dim / ctx.sym_value
    args = torch.fx.node.map_arg(node.args, lookup)
    kwargs = torch.fx.node.map_arg(node.kwargs, lookup)
    if getattr(ctx.dim, "dynamic", False) and node.target not in DYNAMIC_SAFE \
            and _has_dynamic_dims(node, args, kwargs, ctx):
        raise NotSupportedError(
            f"'{node.target}' on dynamic ('?') dimensions is not supported yet",
            loc=ctx.b.loc,
            notes=["import for concrete shapes instead (arg_shapes=[...], CLI --input-spec) "
                   "or call the compiled TorchFunction, which compiles once per input shape"])
    if node.target is operator.getitem:
        seq, i = args
        return seq[i]
    rule = LOWERINGS.get(node.target)
    if rule is None:
        raise LoweringError(f"no lowering rule for ATen op '{node.target}'", loc=ctx.b.loc,
                            notes=[CUSTOM_ROUTE])
    out = rule(ctx, *args, **kwargs)
    if out is None:
        return _NO_RESULT
    if isinstance(out, Value):
        want = node.meta.get("val")
        if isinstance(want, torch.Tensor):
            t = ctx.out_type()
            if out.type != t:
                if isinstance(out.type, TensorType) and out.type.shape == t.shape:
                    out = ctx.b.convert(out, t.element_type)
                else:
                    raise LoweringError(f"rule for '{node.target}' produced {out.type}, "
                                        f"expected {t}", loc=ctx.b.loc)
    return out
