"""ONNX ``ModelProto`` -> StableHLO module, node by node through :mod:`.registry`.

Steps: load (path, bytes or object; external data next to the model), check with
``onnx.checker`` (its message is the error), upgrade opsets older than 7 with onnx's
version converter, fix input shapes from ``input_specs``, run
``onnx.shape_inference.infer_shapes(data_prop=True)``, then lower each node with the rule
for its ``(domain, op_type, opset)``. Values known at import time (initializers,
``Constant``, ``Shape`` of a static value and anything computed only from those) are
folded with onnx's reference evaluator, so shape computations become constants.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import LoweringError, NotSupportedError, OxlaError
from oxla.ir import Builder, Module, NameLoc, Value, parse_input_spec, verify
from oxla.ir import attributes as A
from oxla.ir.types import ElementType, FunctionType, TensorType
from oxla_frontend_onnx import rules  # noqa: F401  (fills RULES)
from oxla_frontend_onnx.registry import NodeContext, element_type, lookup, np_dtype, value_type

MIN_OPSET = 7
"""Older models are upgraded to this opset with ``onnx.version_converter``."""

FOLD_LIMIT = 1 << 16
"""Largest folded result (elements) of an op that is not a pure shape computation."""

NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
           "Multinomial", "Bernoulli", "If", "Loop", "Scan", "Dropout"}
DATA_DEPENDENT_SHAPES = {
    "NonZero": "the number of nonzero elements",
    "Unique": "the number of distinct values",
    "Compress": "how many conditions are true",
}
"""Ops whose output shape depends on input values: folded at import whenever their inputs
are constants (any element type, any size), refused with this reason otherwise."""
SHAPE_OPS = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "Squeeze", "Unsqueeze",
             "Concat", "Gather", "Slice", "Cast", "Reshape", "Identity", "Expand", "Transpose",
             "Flatten", "Split"}
"""Data movement and shape ops, folded whatever their element type."""
INT_FOLD = {"Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min", "Equal", "Less",
            "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "Sum",
            "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "Sign", "Clip", "Ceil",
            "Floor", "Sqrt", "Relu", "Tile", "ScatterND", "ScatterElements", "GatherElements",
            "GatherND", "NonZero", "ArgMax", "ArgMin", "CumSum", "Trilu", "OneHot", "Pad"}
"""Ops folded when every input is an integer or bool tensor (shape arithmetic); float
computations are never folded here, they are lowered."""

CUSTOM_ROUTE = ("add a rule from a plugin: an `oxla_onnx_rules` hook returning "
                "{(domain, op_type, since_version): fn}; the rule may emit a "
                "`stablehlo.custom_call` whose kernel an `oxla_custom_calls` plugin provides; "
                "or open an issue for a rule in oxla_frontend_onnx.rules")


class SymbolicDimsError(NotSupportedError):
    """A graph input has symbolic dims and no shape was given for it.

    Attributes:
        input_names: the graph inputs the model takes, in order (initializers and static
            inputs left out), so a caller can compile per shape instead.
    """

    def __init__(self, message: str, input_names: list[str]) -> None:
        super().__init__(message)
        self.input_names = input_names


def load_model(model: Any, external_data: bool = True) -> Any:
    """Reads a model: a ``ModelProto``, a path (external data files next to it) or bytes.

    Args:
        model: the model or where it is.
        external_data: also read the tensors stored in external files; without it the
            initializers keep their references (checking and shape inference do not need
            the weights, and models over 2 GB cannot be serialized whole for them).

    Raises:
        OxlaError: the file cannot be read or is not an ONNX model.
    """
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, bytes | bytearray):
            return onnx.load_from_string(bytes(model))
        path = os.fspath(model)
        return onnx.load(path, load_external_data=external_data)
    except OSError as exc:
        raise OxlaError(f"cannot read ONNX model '{model}': {exc}") from None
    except Exception as exc:  # protobuf DecodeError and friends
        raise OxlaError(f"'{model}' is not an ONNX model: {exc}") from None


def prepare(model: Any, input_specs: Sequence[Any] | None = None,
            check: bool = True, path: str | None = None) -> Any:
    """Checks, upgrades and shape-infers a model; returns the inferred ``ModelProto``.

    Args:
        model: the loaded model.
        input_specs: one shape per graph input (``2x3`` / ``2x3:f32`` strings or int
            tuples), replacing symbolic dims; ``None`` keeps the model's shapes.
        check: run ``onnx.checker.check_model`` first.
        path: the model's file, checked by path (external data, models over 2 GB).

    Raises:
        OxlaError: the checker rejects the model (its message), or the spec count is wrong.
    """
    import onnx
    from onnx import shape_inference, version_converter

    if check:
        try:
            onnx.checker.check_model(path if path is not None else model, full_check=False)
        except onnx.checker.ValidationError as exc:
            raise OxlaError(f"invalid ONNX model: {str(exc).strip().splitlines()[0]}",
                            notes=[str(exc).strip()]) from None
    opset = _opset_of(model, "")
    if opset is not None and opset < MIN_OPSET:
        model = version_converter.convert_version(model, MIN_OPSET)
    if input_specs:
        model = _with_input_shapes(model, input_specs)
    try:
        model = shape_inference.infer_shapes(model, check_type=False, strict_mode=False,
                                             data_prop=True)
    except Exception as exc:  # inference is a help, not a requirement
        import warnings

        warnings.warn(f"onnx shape inference failed ({exc}); importing with the model's "
                      "own shapes", UserWarning, stacklevel=2)
    return model


def _opset_of(model: Any, domain: str) -> int | None:
    for o in model.opset_import:
        if o.domain in ((domain,) if domain else ("", "ai.onnx")):
            return int(o.version)
    return None


def graph_inputs(graph: Any) -> list[Any]:
    """The graph's real inputs (older models also list initializers as inputs)."""
    inits = {t.name for t in graph.initializer}
    return [i for i in graph.input if i.name not in inits]


def _with_input_shapes(model: Any, specs: Sequence[Any]) -> Any:
    import onnx

    model = onnx.ModelProto.FromString(model.SerializeToString())
    inputs = graph_inputs(model.graph)
    if len(specs) != len(inputs):
        raise OxlaError(f"{len(specs)} input specs given, the model has {len(inputs)} "
                        f"inputs ({', '.join(i.name for i in inputs)})")
    for inp, spec in zip(inputs, specs):
        shape, elem = _spec_shape(spec)
        tt = inp.type.tensor_type
        if tt.HasField("shape") and len(tt.shape.dim) != len(shape):
            raise OxlaError(f"input '{inp.name}' has rank {len(tt.shape.dim)}, the spec "
                            f"'{spec}' gives rank {len(shape)}")
        if elem is not None and tt.elem_type and elem != element_type(tt.elem_type):
            raise OxlaError(f"input '{inp.name}' has element type "
                            f"{element_type(tt.elem_type)}, the spec '{spec}' gives {elem}")
        fixed = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        clash = [i for i, (d, s) in enumerate(zip(fixed, shape)) if d is not None and d != s]
        if tt.HasField("shape") and clash:
            raise OxlaError(f"input '{inp.name}' has dimension {clash[0]} of size "
                            f"{fixed[clash[0]]}, the spec '{spec}' gives {shape[clash[0]]}")
        tt.ClearField("shape")
        tt.shape.SetInParent()
        for d in shape:
            tt.shape.dim.add().dim_value = d
    return model


def _data_dependent(op_type: str, domain: str) -> str | None:
    """Why ``op_type`` cannot be compiled, when its output shape depends on the data."""
    what = DATA_DEPENDENT_SHAPES.get(op_type) if domain in ("", "ai.onnx") else None
    if what is None:
        return None
    return (f"its output shape depends on the input values ({what}), and oxla compiles "
            "for static shapes; it works when its input is a constant (folded at import)")


def _spec_shape(spec: Any) -> tuple[tuple[int, ...], ElementType | None]:
    """``(shape, element type or None)`` of one input spec (``2x3`` / ``2x3:f32`` / ints).

    Raises:
        RuntimeInputError: a malformed spec string.
    """
    if isinstance(spec, str):
        return parse_input_spec(spec)
    return tuple(int(d) for d in spec), None


class GraphImporter:
    """Lowers one ONNX graph (the model's, or a subgraph of If/Loop/Scan) into a block.

    Args:
        opsets: domain -> opset version of the model.
        graph: the ``GraphProto``.
        infos: name -> ``ValueInfoProto`` from shape inference (shared with subgraphs).
        parent: the enclosing graph's importer (outer-scope values), or None.
    """

    def __init__(self, opsets: dict[str, int], graph: Any, infos: dict[str, Any],
                 parent: GraphImporter | None = None) -> None:
        self.opsets = opsets
        self.graph = graph
        self.infos = infos
        self.parent = parent
        self.values: dict[str, Value] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.seqs: dict[str, list[Value]] = {}
        self._materialized: dict[tuple[str, int], Value] = {}

    def subgraph(self, graph: Any) -> GraphImporter:
        """An importer for ``graph`` (a body of If/Loop/Scan) nested in this one, its
        initializers added."""
        gi = GraphImporter(self.opsets, graph, self.infos, parent=self)
        gi.add_initializers()
        return gi

    # -- values -----------------------------------------------------------------------
    def value(self, name: str, b: Builder) -> Value:
        """The value called ``name`` here or in an enclosing graph; constants are
        materialized in ``b``'s block (once per block)."""
        g: GraphImporter | None = self
        while g is not None:
            if name in g.values:
                return g.values[name]
            if name in g.consts:
                key = (name, id(b.block))
                if key not in g._materialized:
                    arr = g.consts[name]
                    et = _np_elem(arr)
                    g._materialized[key] = b.constant(arr.astype(et.dtype),
                                                      TensorType(arr.shape, et))
                return g._materialized[key]
            g = g.parent
        raise LoweringError(f"ONNX value '{name}' is used before it is defined")

    def sequence(self, name: str) -> list[Value]:
        """The sequence called ``name`` (a list of values with a static count).

        Raises:
            NotSupportedError: ``name`` is not a sequence this importer built (a sequence
                graph input, or one with a run-time length).
        """
        g: GraphImporter | None = self
        while g is not None:
            if name in g.seqs:
                return g.seqs[name]
            g = g.parent
        raise NotSupportedError(f"ONNX sequence '{name}' is not a sequence of static length "
                                "built in the graph (sequence inputs are not supported)")

    def constant_value(self, name: str) -> np.ndarray | None:
        g: GraphImporter | None = self
        while g is not None:
            if name in g.consts:
                return g.consts[name]
            if name in g.values:
                return None
            g = g.parent
        return None

    def inferred(self, name: str) -> tuple[ElementType, tuple[int | None, ...]] | None:
        vi = self.infos.get(name)
        try:
            return value_type(vi) if vi is not None else None
        except LoweringError:
            return None

    def inferred_elem(self, name: str) -> ElementType | None:
        if name in self.infos:
            t = self.infos[name].type
            if t.HasField("tensor_type") and t.tensor_type.elem_type:
                try:
                    return element_type(t.tensor_type.elem_type)
                except LoweringError:
                    return None
        return None

    def inferred_shape(self, name: str) -> tuple[int | None, ...] | None:
        r = self.inferred(name)
        return None if r is None else r[1]

    # -- nodes ------------------------------------------------------------------------
    def add_initializers(self) -> None:
        from onnx import numpy_helper

        for t in self.graph.initializer:
            self.consts[t.name] = numpy_helper.to_array(t)
        for t in self.graph.sparse_initializer:
            self.consts[t.values.name] = _sparse_to_dense(t)

    def lower_nodes(self, b: Builder, path: str = "") -> None:
        """Lowers every node of the graph in order at ``b``."""
        for index, node in enumerate(self.graph.node):
            self.lower_node(node, index, b, path)

    def lower_node(self, node: Any, index: int, b: Builder, path: str = "") -> None:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        opset = self.opsets.get(domain)
        if opset is None:
            opset = 1
        if self._try_fold(node, domain, opset):
            return
        fn = lookup(domain, node.op_type, opset)
        name = node.name or f"{node.op_type}_{index}"
        ctx = NodeContext(node, opset, Builder(b.block, b.insertion_point,
                                               NameLoc(f"{path}{name}")), self, index)
        if fn is None:
            known = lookup(domain, node.op_type, 10_000)
            why = (f"no rule for opset {opset} (rules exist for later opsets)" if known
                   else _data_dependent(node.op_type, domain)
                   or "this op is not supported by oxla's ONNX frontend")
            raise NotSupportedError(ctx.where(why), notes=[CUSTOM_ROUTE])
        outs = list(fn(ctx))
        for i, out_name in enumerate(node.output):
            if not out_name:
                continue
            if i >= len(outs) or outs[i] is None:
                raise LoweringError(ctx.where(f"output #{i} '{out_name}' is not produced"))
            self._bind(out_name, outs[i])

    def _bind(self, name: str, v: Value | np.ndarray | list) -> None:
        if isinstance(v, list):
            self.seqs[name] = v
        elif isinstance(v, np.ndarray):
            self.consts[name] = v
        else:
            self.values[name] = v

    def _try_fold(self, node: Any, domain: str, opset: int) -> bool:
        """Evaluates ``node`` now when every input is known; True when it was folded."""
        if domain != "" or node.op_type in NO_FOLD or "Sequence" in node.op_type or any(
                a.type in (5, 10) for a in node.attribute):  # GRAPH(S) attributes
            return False
        if node.op_type == "Shape" and self._fold_shape(node, opset):
            return True
        if node.op_type == "Size" and self._static_shape(node.input[0]) is not None:
            self.consts[node.output[0]] = np.array(
                int(np.prod(self._static_shape(node.input[0]))), np.int64)
            return True
        ins = []
        for name in node.input:
            if name == "":
                ins.append(None)
                continue
            v = self.constant_value(name)
            if v is None:
                return False
            ins.append(v)
        if node.op_type not in SHAPE_OPS and node.op_type not in DATA_DEPENDENT_SHAPES and (
                node.op_type not in INT_FOLD or any(
                v is not None and v.dtype.kind not in "biu" for v in ins) or sum(
                int(v.size) for v in ins if v is not None) > FOLD_LIMIT):
            return False
        try:
            outs = _evaluate(node, opset, ins)
        except Exception:
            return False  # the rule lowers it; its errors are clearer
        if len(outs) < len([o for o in node.output if o]):
            return False
        for out_name, val in zip(node.output, outs):
            if out_name:
                self.consts[out_name] = np.asarray(val)
        return True

    def _static_shape(self, name: str) -> tuple[int, ...] | None:
        c = self.constant_value(name)
        if c is not None:
            return tuple(c.shape)
        g: GraphImporter | None = self
        while g is not None:
            if name in g.values:
                t = g.values[name].type
                if isinstance(t, TensorType) and t.is_static:
                    return t.shape  # type: ignore[return-value]
                return None
            g = g.parent
        return None

    def _fold_shape(self, node: Any, opset: int) -> bool:
        shape = self._static_shape(node.input[0])
        if shape is None:
            return False
        start, end = 0, None
        for a in node.attribute:
            if a.name == "start":
                start = a.i
            elif a.name == "end":
                end = a.i
        self.consts[node.output[0]] = np.array(shape[start:end], dtype=np.int64)
        return True


def _np_elem(arr: np.ndarray) -> ElementType:
    from oxla.ir.types import element_type_from_dtype

    return element_type_from_dtype(arr.dtype)


def _sparse_to_dense(t: Any) -> np.ndarray:
    from onnx import numpy_helper

    values = numpy_helper.to_array(t.values)
    idx = numpy_helper.to_array(t.indices)
    out = np.zeros(int(np.prod(t.dims)), values.dtype)
    out[idx.reshape(-1) if idx.ndim == 1 else np.ravel_multi_index(idx.T, tuple(t.dims))] = \
        values
    return out.reshape(tuple(t.dims))


def _evaluate(node: Any, opset: int, inputs: list[np.ndarray | None]) -> list[np.ndarray]:
    """Runs one node with onnx's reference evaluator."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names = [f"i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    outs = [f"o{k}" if o else "" for k, o in enumerate(node.output)]
    n = helper.make_node(node.op_type, names, outs, domain=node.domain)
    n.attribute.extend(node.attribute)
    ev = ReferenceEvaluator(n, opsets={"": opset})
    feeds = {nm: v for nm, v in zip(names, inputs) if v is not None}
    return list(ev.run(None, feeds))


def import_model(model: Any, *, input_specs: Sequence[Any] | None = None,
                 params_as_inputs: bool = False, check: bool = True,
                 func_name: str = "main",
                 static_inputs: dict[str, np.ndarray] | None = None) -> Module:
    """Imports an ONNX model into a StableHLO module with one public function.

    Args:
        model: a ``ModelProto``, a ``.onnx`` path or the serialized bytes.
        input_specs: static shapes for the graph inputs (``--input-spec``), in order.
        params_as_inputs: floating-point initializers become leading function arguments
            (in initializer order) instead of constants.
        check: run onnx's checker first.
        func_name: the function's name.
        static_inputs: graph inputs bound to values at import time (like a static
            argument of ``jax.jit``): they are folded like initializers and are not
            function arguments. Shape-determining inputs (``Reshape``'s shape,
            ``ReduceSum``'s axes...) must be static for StableHLO's static shapes.

    Returns:
        The module; its function takes the graph inputs (in order, their names in the
        ``onnx.name`` argument attribute) and returns the graph outputs.

    Raises:
        OxlaError: an invalid model (onnx's checker message).
        NotSupportedError: an op without a rule (naming op, domain, opset, node, index),
            or a dynamic dimension where a static one is needed.
    """
    base = None
    if not isinstance(model, bytes | bytearray) and not hasattr(model, "graph"):
        base = os.path.dirname(os.path.abspath(os.fspath(model)))
    path = None if base is None else os.fspath(model)
    model = prepare(load_model(model, external_data=base is None), input_specs, check, path)
    if base is not None:  # the weights come in after checking and shape inference
        from onnx.external_data_helper import load_external_data_for_model

        try:
            load_external_data_for_model(model, base)
        except OSError as exc:
            raise OxlaError(f"cannot read the model's external data: {exc}") from None
    graph = model.graph
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
              for o in model.opset_import}
    infos = {vi.name: vi for vi in (*graph.value_info, *graph.input, *graph.output)}
    _collect_subgraph_infos(graph, infos)
    gi = GraphImporter(opsets, graph, infos)
    gi.add_initializers()
    arg_names: list[str] = []
    arg_types: list[TensorType] = []
    if params_as_inputs:
        for t in graph.initializer:
            arr = gi.consts[t.name]
            if np.issubdtype(arr.dtype, np.floating):
                arg_names.append(t.name)
                arg_types.append(TensorType(arr.shape, _np_elem(arr)))
                del gi.consts[t.name]
    static_inputs = dict(static_inputs or {})
    for name, val in static_inputs.items():
        gi.consts[name] = np.asarray(val)
    for inp in graph_inputs(graph):
        if inp.name in static_inputs:
            continue
        vt = value_type(inp)
        if vt is None:
            raise NotSupportedError(f"graph input '{inp.name}' is not a tensor of known rank "
                                    "(sequence, map or optional inputs are not supported)")
        if None in vt[1]:
            dims = "x".join("?" if d is None else str(d) for d in vt[1])
            sym = [d.dim_param or "?" for d in inp.type.tensor_type.shape.dim
                   if not d.HasField("dim_value")]
            raise SymbolicDimsError(
                f"graph input '{inp.name}' has symbolic dims ({', '.join(sym)}: {dims}); "
                "oxla compiles ONNX models for static shapes: give each input its shape "
                "(--input-spec 2x16:i64 per input in order; input_specs= in Python, or "
                "oxla_frontend_onnx.compile(model) without it to compile per call shape)",
                [i.name for i in graph_inputs(graph) if i.name not in static_inputs])
        arg_names.append(inp.name)
        arg_types.append(TensorType(vt[1], vt[0]))
    module = Builder.module()
    fb = Builder(module.body)
    func, entry = fb.func(func_name, arg_types, [])
    for name, arg in zip(arg_names, entry.args):
        gi.values[name] = arg
    b = Builder(entry)
    gi.lower_nodes(b)
    results, res_attrs = [], []
    for o in graph.output:  # a sequence output becomes one result per element
        if o.name in gi.seqs:
            for k, v in enumerate(gi.seqs[o.name]):
                results.append(v)
                res_attrs.append((("onnx.name", A.StringAttr(o.name)),
                                  ("onnx.sequence", A.i64_attr(k))))
            continue
        results.append(gi.value(o.name, b))
        res_attrs.append((("onnx.name", A.StringAttr(o.name)),))
    b.return_(*results)
    func.attributes["function_type"] = A.TypeAttr(FunctionType(
        tuple(arg_types), tuple(r.type for r in results)))
    func.attributes["arg_attrs"] = A.ArrayAttr(tuple(
        A.DictionaryAttr((("onnx.name", A.StringAttr(n)),)) for n in arg_names))
    func.attributes["res_attrs"] = A.ArrayAttr(tuple(A.DictionaryAttr(a) for a in res_attrs))
    verify(module)
    return module


def _collect_subgraph_infos(graph: Any, infos: dict[str, Any]) -> None:
    for node in graph.node:
        for a in node.attribute:
            subs = [a.g] if a.type == 5 else list(a.graphs) if a.type == 10 else []
            for g in subs:
                for vi in (*g.value_info, *g.output):
                    infos.setdefault(vi.name, vi)
                _collect_subgraph_infos(g, infos)


def input_names(module: Module) -> list[str]:
    """The ONNX names of the public function's arguments, in order."""
    func = next(op for op in module.body.ops if op.name == "func.func")
    attrs = func.attributes.get("arg_attrs")
    out = []
    for d in (attrs.value if attrs is not None else ()):
        entries = dict(d.entries)
        out.append(entries["onnx.name"].value if "onnx.name" in entries else "")
    return out


def result_names(module: Module) -> list[str]:
    """The ONNX names of the graph outputs, in order (a sequence output once)."""
    names: list[str] = []
    for name, _ in result_layout(module):
        if not names or names[-1] != name:
            names.append(name)
    return names


def result_layout(module: Module) -> list[tuple[str, int | None]]:
    """Per function result: its graph output's name and, for an element of a sequence
    output, its index in the sequence (None for a tensor output)."""
    func = next(op for op in module.body.ops if op.name == "func.func")
    attrs = func.attributes.get("res_attrs")
    out = []
    for d in (attrs.value if attrs else ()):
        e = dict(d.entries)
        out.append((e["onnx.name"].value, e["onnx.sequence"].value if "onnx.sequence" in e
                    else None))
    return out


def group_results(module: Module, flat: Sequence[Any]) -> list[Any]:
    """The executable's flat results regrouped per graph output (a list for a
    sequence output)."""
    out: list[Any] = []
    last = None
    for (name, k), v in zip(result_layout(module), flat):
        if k is None:
            out.append(v)
        elif last == name and isinstance(out[-1], list):
            out[-1].append(v)
        else:
            out.append([v])
        last = name
    return out


__all__ = ["import_model", "load_model", "prepare", "GraphImporter", "input_names",
           "result_names",            "np_dtype"]
