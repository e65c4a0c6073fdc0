"""GSPMD sharding strings (``mhlo.sharding``), read into oxla's sharding model.

JAX with ``jax_use_shardy_partitioner=False`` writes XLA ``HloSharding`` text::

    {replicated}   {manual}   {maximal device=1}
    {devices=[2,1,2]<=[4] last_tile_dim_replicate}
    {devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
    {devices=[2,2]0,2,1,3}   {devices=[2,1,2]<=[4] last_tile_dims={manual}}
    {{replicated}, {devices=[2,1]<=[2]}}        (a tuple, one per result)

:func:`parse_gspmd` reads one into a :class:`GspmdSharding` (``str()`` writes it back
unchanged); :meth:`GspmdSharding.to_sdy` converts it to a
:class:`~oxla.ir.sdy.TensorShardingAttr` over the mesh :func:`mesh_for` derives
from the device count: one axis per prime factor (``_axis_0``, ...), major to minor,
so that an iota tile assignment ``<=[d...]T(perm)`` is a permutation of those axes.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

from oxla.errors import NotSupportedError, ParseError
from oxla.ir.sdy import AxisRef, DimSharding, MeshAttr, TensorShardingAttr


@dataclass(frozen=True)
class GspmdSharding:
    """One ``HloSharding``.

    Attributes:
        kind: ``replicated``, ``manual``, ``maximal``, ``tiled`` or ``tuple``.
        tile: tile counts per dimension (``devices=[...]``), trailing subgroup dims included.
        iota: ``(reshape dims, transpose perm or None)`` of an iota tile assignment.
        devices: the explicit device list (when not iota).
        last_tile_replicate: the last tile dimension replicates.
        last_tile_dims: kinds of the trailing subgroup dimensions (``last_tile_dims=``).
        device: the device of ``maximal``.
        elements: the members of a ``tuple``.
    """

    kind: str
    tile: tuple[int, ...] = ()
    iota: tuple[tuple[int, ...], tuple[int, ...] | None] | None = None
    devices: tuple[int, ...] = ()
    last_tile_replicate: bool = False
    last_tile_dims: tuple[str, ...] = ()
    device: int = 0
    elements: tuple[GspmdSharding, ...] = ()

    def __str__(self) -> str:
        if self.kind == "tuple":
            return "{" + ", ".join(str(e) for e in self.elements) + "}"
        if self.kind in ("replicated", "manual"):
            return "{" + self.kind + "}"
        if self.kind == "maximal":
            return f"{{maximal device={self.device}}}"
        s = "{devices=[" + ",".join(map(str, self.tile)) + "]"
        if self.iota is not None:
            s += "<=[" + ",".join(map(str, self.iota[0])) + "]"
            if self.iota[1] is not None:
                s += "T(" + ",".join(map(str, self.iota[1])) + ")"
        else:
            s += ",".join(map(str, self.devices))
        if self.last_tile_replicate:
            s += " last_tile_dim_replicate"
        if self.last_tile_dims:
            s += " last_tile_dims={" + ", ".join(self.last_tile_dims) + "}"
        return s + "}"

    @property
    def num_devices(self) -> int:
        return int(np.prod(self.tile)) if self.kind == "tiled" else 1

    def device_array(self) -> np.ndarray:
        """The tile assignment: device ids in an array of shape ``tile``."""
        if self.iota is not None:
            dims, perm = self.iota
            arr = np.arange(int(np.prod(dims))).reshape(dims)
            if perm is not None:
                arr = arr.transpose(perm)
            return arr.reshape(self.tile)
        return np.array(self.devices, dtype=np.int64).reshape(self.tile)

    def axis_groups(self, mesh: MeshAttr) -> list[tuple[str, ...]]:
        """The mesh axes (major to minor) of each tile dimension, subgroups included.

        Raises:
            NotSupportedError: a device order that is no permutation of the mesh axes.
        """
        order = _axis_order(self.device_array().reshape(-1), mesh)
        sizes = dict(mesh.axes)
        pos = 0
        groups = []
        for t in self.tile:
            axes = []
            while t > 1:
                name = order[pos]
                axes.append(name)
                t //= sizes[name]
                pos += 1
            groups.append(tuple(axes))
        return groups

    def to_sdy(self, rank: int, mesh: MeshAttr, mesh_name: str = "mesh") -> TensorShardingAttr:
        """This sharding over ``mesh`` (from :func:`mesh_for`) for a tensor of ``rank``.

        Raises:
            NotSupportedError: ``maximal``, ``manual`` (that is a manual computation), a
                tuple, or a device order that is no permutation of the mesh axes.
        """
        closed = tuple(DimSharding(()) for _ in range(rank))
        if self.kind == "replicated":
            return TensorShardingAttr(mesh_name, closed)
        if self.kind != "tiled":
            raise NotSupportedError(f"GSPMD sharding '{self}' has no sdy equivalent here")
        n_sub = len(self.last_tile_dims) + (1 if self.last_tile_replicate else 0)
        if len(self.tile) - n_sub != rank:
            raise NotSupportedError(f"GSPMD sharding '{self}' has {len(self.tile) - n_sub} "
                                    f"tiled dimensions, expected {rank}")
        groups = [tuple(AxisRef(a) for a in g) for g in self.axis_groups(mesh)]
        dims = []
        for g in groups[:rank]:
            dims.append(DimSharding(g))
        replicated = tuple(a for g in groups[rank:] for a in g)
        return TensorShardingAttr(mesh_name, tuple(dims), tuple(
            sorted(replicated, key=lambda a: mesh.names.index(a.name))))


def _axis_order(flat: np.ndarray, mesh: MeshAttr) -> list[str]:
    """The mesh axes in the (major to minor) order in which ``flat`` enumerates devices.

    Raises:
        NotSupportedError: ``flat`` is no transpose of the mesh's device array.
    """
    sizes = [k for _, k in mesh.axes]
    base = np.arange(mesh.num_devices).reshape(sizes)
    for perm in itertools.permutations(range(len(sizes))):
        if np.array_equal(base.transpose(perm).reshape(-1), flat):
            return [mesh.axes[i][0] for i in perm]
    raise NotSupportedError("GSPMD tile assignment " + ",".join(map(str, flat.tolist()))
                            + " is not a transpose of the device mesh")


def _primes(n: int) -> list[int]:
    out, f = [], 2
    while n > 1:
        while n % f == 0:
            out.append(f)
            n //= f
        f += 1
    return out


def mesh_for(num_devices: int) -> MeshAttr:
    """The mesh GSPMD shardings of ``num_devices`` are read over: one axis per prime
    factor, ``_axis_0`` major."""
    return MeshAttr(tuple((f"_axis_{i}", p) for i, p in enumerate(_primes(num_devices))))


_TILED_RE = re.compile(
    r"devices=\[([\d,]+)\](?:<=\[([\d,]+)\](?:T\(([\d,]+)\))?|([\d,]+))"
    r"((?:\s+last_tile_dim_replicate)?)(?:\s+last_tile_dims=\{([\w,\s]*)\})?")


def parse_gspmd(text: str) -> GspmdSharding:
    """Reads an ``mhlo.sharding`` string.

    Raises:
        ParseError: malformed text (the message quotes it).
    """
    s = text.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise ParseError(f"malformed GSPMD sharding '{text}': expected '{{...}}'")
    body = s[1:-1].strip()
    if body.startswith("{"):
        parts, depth, start = [], 0, 0
        for i, ch in enumerate(body):
            depth += ch == "{"
            depth -= ch == "}"
            if ch == "," and depth == 0:
                parts.append(body[start:i])
                start = i + 1
        parts.append(body[start:])
        return GspmdSharding("tuple", elements=tuple(parse_gspmd(p) for p in parts))
    if body in ("replicated", "manual"):
        return GspmdSharding(body)
    m = re.fullmatch(r"maximal device=(\d+)", body)
    if m:
        return GspmdSharding("maximal", device=int(m.group(1)))
    m = _TILED_RE.fullmatch(body)
    if m is None:
        raise ParseError(f"malformed GSPMD sharding '{text}'")
    tile = tuple(int(x) for x in m.group(1).split(","))
    iota = devices = None
    if m.group(2):
        dims = tuple(int(x) for x in m.group(2).split(","))
        perm = tuple(int(x) for x in m.group(3).split(",")) if m.group(3) else None
        iota = (dims, perm)
    else:
        devices = tuple(int(x) for x in m.group(4).split(","))
        if len(devices) != int(np.prod(tile)):
            raise ParseError(f"malformed GSPMD sharding '{text}': {len(devices)} devices "
                             f"for a {'x'.join(map(str, tile))} tile")
    last = tuple(x.strip() for x in m.group(6).split(",")) if m.group(6) else ()
    return GspmdSharding("tiled", tile, iota, devices or (), bool(m.group(5).strip()), last)


__all__ = ["GspmdSharding", "parse_gspmd", "mesh_for"]
