"""The ONNX rule table: one lowering per ``(domain, op_type, since_version)``.

A rule is registered for the opset version from which its semantics hold::

    @rule("Squeeze", since=13)       # axes is an input from opset 13 on
    def _squeeze(ctx: NodeContext) -> list[Value]: ...

For a node of a model importing ``domain`` at opset ``v``, the rule with the largest
``since <= v`` applies, so each opset's semantics are explicit. A rule receives a
:class:`NodeContext` and returns one value per node output (``None`` for an optional
output nobody reads).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from oxla.errors import LoweringError
from oxla.ir import Builder, Value
from oxla.ir import attributes as A
from oxla.ir.types import ElementType, IntegerType, TensorType, element_type_from_dtype

if TYPE_CHECKING:
    import onnx

Rule = Callable[["NodeContext"], Sequence[Value | None]]

RULES: dict[tuple[str, str], dict[int, Rule]] = {}
"""``(domain, op_type) -> {since_version: rule}``; the ONNX domain is ``""``."""


def rule(*op_types: str, since: int = 1, domain: str = "") -> Callable[[Rule], Rule]:
    """Registers the decorated function for ``op_types`` of ``domain`` from opset ``since``.

    Raises:
        ValueError: the same ``(domain, op_type, since)`` registered twice.
    """

    def deco(fn: Rule) -> Rule:
        for op in op_types:
            table = RULES.setdefault((domain, op), {})
            if since in table:
                raise ValueError(f"duplicate ONNX rule for {domain or 'ai.onnx'}::{op} "
                                 f"since {since}")
            table[since] = fn
        return fn

    return deco


_PLUGIN_RULES: dict[int, list[str]] = {}


def load_plugin_rules() -> list[str]:
    """Adds the rules of every ``oxla_onnx_rules`` hook of the current plugin registry
    (once per registry); returns their ``domain::op_type@since`` keys.

    Raises:
        PluginError: a plugin claims a key oxla already has.
    """
    from oxla import plugins
    from oxla.errors import PluginError
    from oxla_frontend_onnx import hookspecs

    pm = plugins.get_plugin_manager()
    if id(pm) in _PLUGIN_RULES:
        return _PLUGIN_RULES[id(pm)]
    if not hasattr(pm.hook, "oxla_onnx_rules") or not pm.hook.oxla_onnx_rules.spec:
        pm.add_hookspecs(hookspecs)
    added = []
    for impl in pm.hook.oxla_onnx_rules.get_hookimpls():
        for (domain, op, since), fn in (impl.function() or {}).items():
            table = RULES.setdefault((domain, op), {})
            if since in table and table[since] is not fn:
                raise PluginError(f"ONNX rule {domain or 'ai.onnx'}::{op} since {since} from "
                                  f"plugin '{impl.plugin_name}' is already defined")
            table[since] = fn
            added.append(f"{domain or 'ai.onnx'}::{op}@{since}")
    _PLUGIN_RULES[id(pm)] = added
    return added


def lookup(domain: str, op_type: str, opset: int) -> Rule | None:
    """The rule for ``op_type`` at ``opset`` of ``domain`` (plugins' rules included), or
    None."""
    load_plugin_rules()
    table = RULES.get((domain, op_type))
    if not table:
        return None
    versions = [v for v in table if v <= opset]
    return table[max(versions)] if versions else None


def supported_ops() -> list[str]:
    """``domain::op_type`` of every op with at least one rule, sorted."""
    return sorted(f"{d or 'ai.onnx'}::{o}" for d, o in RULES)


ONNX_TO_NP: dict[int, Any] = {}


def np_dtype(onnx_type: int) -> np.dtype:
    """numpy/ml_dtypes dtype of an ONNX ``TensorProto.DataType``.

    Raises:
        LoweringError: a type with no StableHLO counterpart (string).
    """
    from onnx import helper

    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
    except Exception as exc:  # onnx raises KeyError/ValueError for undefined types
        raise LoweringError(f"ONNX element type {onnx_type} is not supported") from exc


def element_type(onnx_type: int) -> ElementType:
    """StableHLO element type of an ONNX ``TensorProto.DataType``."""
    import onnx

    if onnx_type in (onnx.TensorProto.STRING, onnx.TensorProto.UNDEFINED):
        raise LoweringError(f"ONNX element type "
                            f"{onnx.TensorProto.DataType.Name(onnx_type)} is not supported")
    name = onnx.TensorProto.DataType.Name(onnx_type)
    special = {"INT4": IntegerType(4), "UINT4": IntegerType(4, unsigned=True)}
    if name in special:
        return special[name]
    try:
        return element_type_from_dtype(np_dtype(onnx_type))
    except ValueError as exc:
        raise LoweringError(f"ONNX element type {name} is not supported") from exc


@dataclass
class NodeContext:
    """What a rule sees of one node.

    Attributes:
        node: the ``NodeProto``.
        opset: the opset version of the node's domain in this model.
        b: the builder inserting at the node's position.
        graph: the importer of the enclosing graph (values, constants, subgraphs).
        index: the node's position in its graph.
    """

    node: onnx.NodeProto
    opset: int
    b: Builder
    graph: Any  # the GraphImporter lowering this node's graph
    index: int

    # -- inputs ---------------------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return len(self.node.input)

    def has(self, i: int) -> bool:
        """True when input ``i`` is given (not missing nor the empty name)."""
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int) -> Value:
        """Input ``i`` as a StableHLO value (a constant is materialized on demand)."""
        if not self.has(i):
            raise LoweringError(self.where(f"input #{i} is required"))
        return self.graph.value(self.node.input[i], self.b)

    def sequence(self, i: int) -> list:
        """Input ``i`` as a sequence (a list of values with a static count)."""
        if not self.has(i):
            raise LoweringError(self.where(f"input #{i} is required"))
        return list(self.graph.sequence(self.node.input[i]))

    def inputs(self) -> list[Value]:
        return [self.input(i) for i in range(self.n_inputs) if self.has(i)]

    def const(self, i: int) -> np.ndarray | None:
        """Input ``i``'s value when known at import time (initializer, folded), else None."""
        if not self.has(i):
            return None
        return self.graph.constant_value(self.node.input[i])

    def const_required(self, i: int, what: str) -> np.ndarray:
        """Input ``i``'s value; it must be known at import time.

        Raises:
            NotSupportedError: the value is computed at run time.
        """
        from oxla.errors import NotSupportedError

        v = self.const(i)
        if v is None:
            raise NotSupportedError(self.where(
                f"{what} (input #{i} '{self.node.input[i]}') must be a constant at import "
                "time; it is computed at run time"))
        return v

    def ints(self, i: int, default: Sequence[int] | None = None) -> list[int] | None:
        """An integer-list input read as constants (``None``/``default`` when absent)."""
        if not self.has(i):
            return None if default is None else list(default)
        return [int(v) for v in np.asarray(self.const_required(i, "this input")).reshape(-1)]

    # -- attributes -----------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The attribute's Python value (``onnx.helper.get_attribute_value``), bytes
        decoded to str, or ``default``."""
        from onnx import helper

        for a in self.node.attribute:
            if a.name == name:
                v = helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    return v.decode()
                if isinstance(v, list) and v and isinstance(v[0], bytes):
                    return [x.decode() for x in v]
                return v
        return default

    def has_attr(self, name: str) -> bool:
        return any(a.name == name for a in self.node.attribute)

    # -- outputs --------------------------------------------------------------------
    def out_elem(self, i: int = 0) -> ElementType | None:
        """The element type shape inference gave output ``i``, or None."""
        return self.graph.inferred_elem(self.node.output[i]) if i < len(
            self.node.output) else None

    def out_shape(self, i: int = 0) -> tuple[int | None, ...] | None:
        return self.graph.inferred_shape(self.node.output[i]) if i < len(
            self.node.output) else None

    def wants(self, i: int) -> bool:
        """True when output ``i`` exists and has a name."""
        return i < len(self.node.output) and self.node.output[i] != ""

    # -- helpers --------------------------------------------------------------------
    def where(self, msg: str) -> str:
        n = self.node
        dom = n.domain or "ai.onnx"
        name = f" '{n.name}'" if n.name else ""
        return f"{n.op_type} node{name} (#{self.index}, {dom} opset {self.opset}): {msg}"

    def fail(self, msg: str) -> LoweringError:
        from oxla.errors import NotSupportedError

        return NotSupportedError(self.where(msg))

    def constant(self, value: Any, et: ElementType) -> Value:
        """A ``stablehlo.constant`` of ``value`` converted to ``et``."""
        arr = np.asarray(value).astype(et.dtype)
        return self.b.constant(arr, TensorType(arr.shape, et))

    def scalar_like(self, value: Any, like: Value) -> Value:
        """``value`` broadcast to the shape and type of ``like``."""
        t = like.type
        assert isinstance(t, TensorType)
        arr = np.asarray(value).astype(t.element_type.dtype)
        attr = A.splat(arr.item() if arr.ndim == 0 else arr, t)
        return self.b.create("stablehlo.constant", [], {"value": attr}, [t]).results[0]


def value_type(vi: Any) -> tuple[ElementType, tuple[int | None, ...]] | None:
    """``(element type, shape)`` of a ``ValueInfoProto`` (None dims are symbolic), or
    None when it is not a tensor with a known rank."""
    t = vi.type
    if not t.HasField("tensor_type"):
        return None
    tt = t.tensor_type
    if not tt.HasField("shape"):
        return None
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    return element_type(tt.elem_type), shape
