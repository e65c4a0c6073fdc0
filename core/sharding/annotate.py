"""User annotations without a framework: ``--mesh data=2,model=2`` and ``--shard``.

``--shard`` items (repeatable):

- ``arg0=data,_``: argument 0, dimension 0 on axis ``data``, dimension 1 replicated;
- ``param:model.layers.*.mlp.up_proj.weight=model,_``: every weight constant whose
  name (the torch frontend names a parameter's constant by its ``state_dict`` key,
  as a ``loc("...")``) matches the glob;
- ``result0=...``: result 0 of the entry function.

A dimension item is ``_`` (replicated) or axis names joined by ``+`` (``data+model``,
major first). Annotated dimensions are closed: propagation completes the rest.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

from oxla.errors import OxlaError
from oxla.ir import types as T
from oxla.ir.location import NameLoc
from oxla.ir.operation import Module, Operation
from oxla.ir.sdy import AxisRef, DimSharding, MeshAttr, ShardingPerValueAttr, TensorShardingAttr
from oxla.sharding import model as M


def parse_mesh(text: str) -> MeshAttr:
    """``data=2,model=2`` -> a mesh.

    Raises:
        OxlaError: malformed text (a user error: one line).
    """
    axes = []
    for item in text.split(","):
        name, _, size = item.strip().partition("=")
        if not name or not size.strip().isdigit() or int(size) < 1:
            raise OxlaError(f"invalid --mesh '{text}': expected NAME=SIZE items such as "
                            "'data=2,model=2'")
        axes.append((name.strip(), int(size)))
    if len({n for n, _ in axes}) != len(axes):
        raise OxlaError(f"invalid --mesh '{text}': an axis is named twice")
    return MeshAttr(tuple(axes))


def spec_text(spec: str | Sequence[Any]) -> str:
    """The ``--shard`` form (``data,_``, ``data+model,_``) of a spec.

    Raises:
        OxlaError: an item that is not None, an axis name or a tuple of names.
    """
    if isinstance(spec, str):
        return spec
    items = []
    for d in spec:
        if d is None or d == "_":
            items.append("_")
        elif isinstance(d, str):
            items.append(d)
        elif isinstance(d, tuple | list) and all(isinstance(a, str) for a in d):
            items.append("+".join(d) if d else "_")
        else:
            raise OxlaError(f"invalid sharding spec item {d!r}: expected None, an axis "
                            "name or a tuple of axis names")
    return ",".join(items)


def parse_spec(text: str, rank: int, mesh: MeshAttr, what: str) -> TensorShardingAttr:
    """The sharding ``text`` gives a tensor of ``rank`` dimensions on ``mesh`` (``@mesh``):
    one item per dimension, ``_`` whole or mesh axes joined by ``+`` (``data,_``).

    Raises:
        OxlaError: a wrong number of items or an unknown axis (names ``what``).
    """
    items = [s.strip() for s in text.split(",")]
    if len(items) != rank:
        raise OxlaError(f"--shard for {what}: {len(items)} dimensions given, the tensor has "
                        f"{rank}")
    dims = []
    for it in items:
        if it in ("_", ""):
            dims.append(DimSharding(()))
            continue
        axes = []
        for a in it.split("+"):
            if a not in mesh.names:
                raise OxlaError(f"--shard for {what}: unknown mesh axis '{a}'; the mesh has "
                                + ", ".join(mesh.names))
            axes.append(AxisRef(a))
        dims.append(DimSharding(tuple(axes)))
    return TensorShardingAttr("mesh", tuple(dims))


def _entry(module: Module) -> Operation:
    from oxla.ir import func_name, func_visibility

    pub = [f for f in module.functions if func_visibility(f) == "public"]
    if not pub:
        raise OxlaError("the module has no public function to annotate")
    return next((f for f in pub if func_name(f) == "main"), pub[0])


def _name_of(op: Operation) -> str | None:
    loc = op.loc
    while loc is not None:
        if isinstance(loc, NameLoc):
            return loc.name
        loc = getattr(loc, "child", None)
    return None


def annotate(module: Module, mesh: MeshAttr, shards: list[str]) -> int:
    """Adds ``sdy.mesh @mesh`` and the shardings ``shards`` describe, in place.

    Returns:
        The number of tensors annotated.

    Raises:
        OxlaError: a malformed item, an unknown axis, or a pattern that matches nothing.
    """
    M.ensure_mesh(module, mesh)
    f = _entry(module)
    ft = f.attributes["function_type"].type  # type: ignore[attr-defined]
    count = 0
    for item in shards:
        target, eq, spec = item.partition("=")
        target = target.strip()
        if not eq:
            raise OxlaError(f"invalid --shard '{item}': expected TARGET=SPEC, e.g. "
                            "'arg0=data,_' or 'param:layers.*.weight=_,model'")
        if target.startswith("arg") and target[3:].isdigit():
            i = int(target[3:])
            if i >= len(ft.inputs):
                raise OxlaError(f"--shard '{item}': the function has {len(ft.inputs)} "
                                "arguments")
            M.set_arg_sharding(f, i, parse_spec(spec, _rank(ft.inputs[i]), mesh, target))
            count += 1
        elif target.startswith("result") and target[6:].isdigit():
            i = int(target[6:])
            if i >= len(ft.results):
                raise OxlaError(f"--shard '{item}': the function has {len(ft.results)} "
                                "results")
            M.set_result_sharding(f, i, parse_spec(spec, _rank(ft.results[i]), mesh, target))
            count += 1
        elif target.startswith("param:"):
            pattern = target[6:]
            hits = [op for op in f.walk() if op.name == "stablehlo.constant"
                    and (n := _name_of(op)) is not None and fnmatch.fnmatchcase(n, pattern)]
            if not hits:
                raise OxlaError(f"--shard '{item}': no parameter matches '{pattern}'")
            for op in hits:
                s = parse_spec(spec, _rank(op.results[0].type), mesh, _name_of(op) or pattern)
                op.attributes[M.KEY] = ShardingPerValueAttr((s,))
                count += 1
        else:
            raise OxlaError(f"invalid --shard target '{target}': expected argN, resultN or "
                            "param:GLOB")
    return count


def _rank(t) -> int:
    return len(t.shape) if isinstance(t, T.TensorType) else 0


__all__ = ["parse_mesh", "parse_spec", "spec_text", "annotate"]
