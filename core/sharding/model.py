"""Where shardings live in the IR, and what they mean for shapes and devices.

A value's sharding is read from (and written to) the places Shardy uses: a function
argument's or result's ``sdy.sharding`` attribute, an op's ``sdy.sharding``
(``#sdy.sharding_per_value``, one per result), and the ``sharding`` of
``sdy.sharding_constraint``/``sdy.reshard``. A value without one is replicated.
"""

from __future__ import annotations

import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.operation import BlockArgument, Module, Operation, OpResult, Value
from oxla.ir.sdy import (
    AxisRef,
    DimSharding,
    MeshAttr,
    ShardingPerValueAttr,
    TensorShardingAttr,
)

KEY = "sdy.sharding"


def meshes(module: Module) -> dict[str, MeshAttr]:
    """The ``sdy.mesh`` symbols of ``module``, by name."""
    return {op.attributes["sym_name"].value: op.attributes["mesh"]  # type: ignore[attr-defined]
            for op in module.body.ops if op.name == "sdy.mesh"}



def ensure_mesh(module: Module, mesh: MeshAttr, name: str = "mesh") -> None:
    """Declares ``sdy.mesh @name = mesh`` first in ``module`` unless a mesh of that name
    exists already."""
    if name in meshes(module):
        return
    op = Operation.create("sdy.mesh", attributes={"sym_name": A.StringAttr(name),
                                                  "mesh": mesh})
    first = module.body.ops[0] if module.body.ops else None
    if first is None:
        module.body.append(op)
    else:
        module.body.insert_before(first, op)

def mesh_of(sh: TensorShardingAttr, table: dict[str, MeshAttr]) -> MeshAttr:
    """The mesh a sharding refers to.

    Raises:
        NotSupportedError: an unknown mesh symbol.
    """
    if isinstance(sh.mesh, MeshAttr):
        return sh.mesh
    if sh.mesh not in table:
        raise NotSupportedError(f"sharding refers to unknown mesh '@{sh.mesh}'; known: "
                                + (", ".join("@" + k for k in table) or "none"))
    return table[sh.mesh]


def _dict_at(attrs: A.Attribute | None, i: int) -> dict:
    if isinstance(attrs, A.ArrayAttr) and i < len(attrs):
        d = attrs[i]
        if isinstance(d, A.DictionaryAttr):
            return dict(d.entries)
    return {}


def _set_dict_at(func: Operation, key: str, i: int, n: int, name: str, value) -> None:
    cur = func.attributes.get(key)
    items = [_dict_at(cur, k) for k in range(n)]
    if value is None:
        items[i].pop(name, None)
    else:
        items[i][name] = value
    if any(items):
        func.attributes[key] = A.ArrayAttr(tuple(A.DictionaryAttr(tuple(d.items()))
                                                 for d in items))
    else:
        func.attributes.pop(key, None)


def arg_sharding(func: Operation, i: int) -> TensorShardingAttr | None:
    s = _dict_at(func.attributes.get("arg_attrs"), i).get(KEY)
    return s if isinstance(s, TensorShardingAttr) else None


def result_sharding(func: Operation, i: int) -> TensorShardingAttr | None:
    s = _dict_at(func.attributes.get("res_attrs"), i).get(KEY)
    return s if isinstance(s, TensorShardingAttr) else None


def set_arg_sharding(func: Operation, i: int, sh: TensorShardingAttr | None) -> None:
    n = len(func.attributes["function_type"].type.inputs)  # type: ignore[attr-defined]
    _set_dict_at(func, "arg_attrs", i, n, KEY, sh)


def set_result_sharding(func: Operation, i: int, sh: TensorShardingAttr | None) -> None:
    n = len(func.attributes["function_type"].type.results)  # type: ignore[attr-defined]
    _set_dict_at(func, "res_attrs", i, n, KEY, sh)


def value_sharding(v: Value) -> TensorShardingAttr | None:
    """The sharding the IR gives ``v`` (None: none given)."""
    if isinstance(v, BlockArgument):
        block = v.owner if hasattr(v, "owner") else None
        region = getattr(block, "parent", None)
        op = getattr(region, "parent", None)
        if op is not None and op.name == "func.func":
            return arg_sharding(op, v.index)
        if op is not None and op.name == "sdy.manual_computation":
            return None
        return None
    if isinstance(v, OpResult):
        op = v.owner
        if op.name in ("sdy.sharding_constraint", "sdy.reshard"):
            return op.attributes["sharding"]  # type: ignore[return-value]
        if op.name == "sdy.data_flow_edge":
            s = op.attributes.get("sharding")
            return s if isinstance(s, TensorShardingAttr) else None
        if op.name in ("sdy.all_gather", "sdy.all_slice", "sdy.reduce_scatter",
                       "sdy.all_reduce", "sdy.all_to_all", "sdy.collective_permute"):
            return op.attributes["out_sharding"]  # type: ignore[return-value]
        if op.name == "sdy.manual_computation":
            return op.attributes["out_shardings"].shardings[v.index]  # type: ignore[attr-defined]
        s = op.attributes.get(KEY)
        if isinstance(s, ShardingPerValueAttr) and v.index < len(s.shardings):
            return s.shardings[v.index]
    return None


def set_op_shardings(op: Operation, shs: list[TensorShardingAttr | None], mesh: str) -> None:
    """Writes ``sdy.sharding`` of ``op``; results without one get a fully open sharding."""
    if all(s is None for s in shs):
        op.attributes.pop(KEY, None)
        return
    out = []
    for r, s in zip(op.results, shs):
        if s is None:
            rank = len(r.type.shape) if isinstance(r.type, T.TensorType) else 0
            s = TensorShardingAttr(mesh, tuple(DimSharding((), False) for _ in range(rank)))
        out.append(s)
    op.attributes[KEY] = ShardingPerValueAttr(tuple(out))


def dim_shards(sh: TensorShardingAttr | None, mesh: MeshAttr, dim: int) -> int:
    if sh is None or dim >= len(sh.dims):
        return 1
    n = 1
    for a in sh.dims[dim].axes:
        n *= a.size(mesh)
    return n


def local_shape(shape, sh: TensorShardingAttr | None, mesh: MeshAttr | None) -> tuple[int, ...]:
    """The per-device shape of a tensor of ``shape`` sharded as ``sh``: each dimension
    split into ``k`` shards has ``ceil(size / k)`` elements per device (uneven shards are
    padded at the end of the last ones, as XLA pads them)."""
    if sh is None or mesh is None:
        return tuple(shape)
    return tuple(-(-s // dim_shards(sh, mesh, d)) for d, s in enumerate(shape))


def axis_coords(mesh: MeshAttr) -> dict[str, np.ndarray]:
    """For every axis, its coordinate on each device id (``coords[axis][device]``)."""
    sizes = [k for _, k in mesh.axes]
    devs = mesh.devices()
    out = {n: np.zeros(mesh.num_devices, dtype=np.int64) for n, _ in mesh.axes}
    for pos, dev in enumerate(devs):
        idx = np.unravel_index(pos, sizes) if sizes else ()
        for (n, _), c in zip(mesh.axes, idx):
            out[n][dev] = c
    return out


def axis_ref_coord(ref: AxisRef, mesh: MeshAttr, coords: dict[str, np.ndarray]) -> np.ndarray:
    """Each device's coordinate along an axis or sub-axis ``name:(pre)size``."""
    c = coords[ref.name]
    if ref.sub is None:
        return c
    pre, size = ref.sub
    full = mesh.axis_size(ref.name)
    return (c // (full // (pre * size))) % size


def shard_index(axes, mesh: MeshAttr) -> np.ndarray:
    """Each device's shard number along a dimension sharded over ``axes`` (major first)."""
    coords = axis_coords(mesh)
    idx = np.zeros(mesh.num_devices, dtype=np.int64)
    for a in axes:
        idx = idx * a.size(mesh) + axis_ref_coord(a, mesh, coords)
    return idx


def device_groups(axes, mesh: MeshAttr) -> list[list[int]]:
    """Device ids grouped by their coordinates outside ``axes``, each group ordered by
    the shard number over ``axes`` (the replica groups of a collective over ``axes``)."""
    coords = axis_coords(mesh)
    names = {a.name for a in axes}
    if any(a.sub is not None for a in axes):
        raise NotSupportedError("collectives over sub-axes are not supported yet")
    idx = shard_index(axes, mesh)
    groups: dict[tuple, list[int]] = {}
    for dev in range(mesh.num_devices):
        key = tuple(int(coords[n][dev]) for n in mesh.names if n not in names)
        groups.setdefault(key, []).append(dev)
    return [sorted(g, key=lambda d: int(idx[d])) for _, g in sorted(groups.items())]


def device_indices(shape, sh: TensorShardingAttr | None, mesh: MeshAttr
                   ) -> list[tuple[slice, ...]]:
    """Per device (index = device id), the part of a global array of ``shape`` it
    holds under ``sh``: one slice per dimension, clipped to the array (the last shard
    of an uneven dimension is shorter than the local shape, or empty)."""
    shape = tuple(int(n) for n in shape)
    idx = [shard_index(sh.dims[d].axes, mesh) if sh is not None and d < len(sh.dims)
           else None for d in range(len(shape))]
    loc = local_shape(shape, sh, mesh)
    return [tuple(slice(0, n) if idx[d] is None else
                  slice(min(int(idx[d][dev]) * loc[d], n),
                        min((int(idx[d][dev]) + 1) * loc[d], n))
                  for d, n in enumerate(shape))
            for dev in range(mesh.num_devices)]


def shard_array(x: np.ndarray, sh: TensorShardingAttr | None, mesh: MeshAttr) -> list:
    """The per-device pieces of a global array (index = device id); an uneven shard is
    padded with zeros after the end to the local shape."""
    x = np.asarray(x)
    loc = local_shape(x.shape, sh, mesh)
    out = []
    for sl in device_indices(x.shape, sh, mesh):
        piece = np.array(x[sl], order="C")  # (ascontiguousarray makes scalars 1-d)
        if piece.shape != loc:  # an uneven shard: zeros after the end
            piece = np.pad(piece, [(0, w - h) for h, w in zip(piece.shape, loc)])
        out.append(piece)
    return out


def unshard_array(pieces: list, sh: TensorShardingAttr | None, mesh: MeshAttr,
                  shape) -> np.ndarray:
    """The global array assembled from per-device pieces (replicated parts from the
    first device holding them; the padding of uneven shards dropped)."""
    first = np.asarray(pieces[0])
    out = np.empty(tuple(shape), dtype=first.dtype)
    for dev, sl in enumerate(device_indices(shape, sh, mesh)):
        out[sl] = np.asarray(pieces[dev])[tuple(slice(0, q.stop - q.start) for q in sl)]
    return out


def drop_shardings(module: Module) -> Module:
    """Removes every sharding (``sdy.mesh``, ``sdy.sharding``, constraints and reshards)
    in place: the unsharded program, to compare a partitioned run against.

    Raises:
        NotSupportedError: a ``sdy.manual_computation`` (per-device code has no
            unsharded form).
    """
    for op in list(module.walk()):
        if op.name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier"):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
        elif op.name == "sdy.constant":
            c = Operation.create("stablehlo.constant", [], [op.results[0].type],
                                 {"value": op.attributes["value"]}, loc=op.loc)
            op.parent.insert_before(op, c)
            op.results[0].replace_all_uses_with(c.results[0])
            op.erase()
        elif op.name == "sdy.manual_computation":
            raise NotSupportedError("a manual computation has no unsharded form", op.loc)
        elif op.name == "sdy.mesh":
            op.erase()
        else:
            op.attributes.pop(KEY, None)
    for f in module.functions:
        ft = f.attributes["function_type"].type  # type: ignore[attr-defined]
        for i in range(len(ft.inputs)):
            set_arg_sharding(f, i, None)
        for i in range(len(ft.results)):
            set_result_sharding(f, i, None)
    return module
