"""Results left sharded: a global array held as per-device pieces, as ``jax.Array``.

When a user asks for a result to stay sharded (a result's ``sdy.sharding``, or
``out_shardings=`` of :class:`~oxla.sharding.run.ShardedExecutable`, as in
``jax.jit(..., out_shardings=...)``), no collective assembles it: each device keeps
its piece. A :class:`ShardedArray` holds those pieces with the part of the global
array each covers (``.shards``, like ``jax.Array.addressable_shards``);
``np.asarray`` assembles the global array when every piece is here (one process), and
refuses in one line when other processes hold some (under MPI each rank holds its own
shard only, as a JAX process holds its addressable shards only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from oxla.errors import OxlaError
from oxla.ir.sdy import MeshAttr, TensorShardingAttr
from oxla.sharding import model as M


class Shard(NamedTuple):
    """One device's piece of a :class:`ShardedArray`.

    Attributes:
        device: the device id (MPI rank) holding it.
        index: one slice per dimension: the part of the global array it covers.
        replica_id: 0 for the first device holding this part, 1 for the next...
        data: the values, of the shape ``index`` covers (an uneven shard's padding
            dropped), the result's dtype.
    """

    device: int
    index: tuple[slice, ...]
    replica_id: int
    data: np.ndarray


class ShardedArray:
    """A global array of ``shape``/``dtype`` held as per-device pieces under
    ``sharding`` on ``mesh``.

    Attributes:
        shape, dtype, ndim, size: the global array's.
        sharding: the result's :class:`~oxla.ir.sdy.TensorShardingAttr` (None:
            replicated). mesh: its :class:`~oxla.ir.sdy.MeshAttr`.
        shards: the pieces held here (:class:`Shard`, by device id); all of them in
            one process, this rank's only under MPI. ``addressable_shards`` is the
            same list (JAX's name).
    """

    def __init__(self, shards: Sequence[Shard], shape: Sequence[int], dtype: Any,
                 sharding: TensorShardingAttr | None, mesh: MeshAttr):
        self.shards = list(shards)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.mesh = mesh

    @classmethod
    def from_pieces(cls, pieces: Sequence[np.ndarray], sharding: TensorShardingAttr | None,
                    mesh: MeshAttr, shape: Sequence[int],
                    devices: Sequence[int] | None = None) -> ShardedArray:
        """The array whose devices ``devices`` (default: all, in order) hold
        ``pieces`` (local shapes: an uneven shard padded after the end)."""
        devices = list(range(mesh.num_devices)) if devices is None else list(devices)
        if len(pieces) != len(devices):
            raise OxlaError(f"{len(pieces)} pieces for {len(devices)} devices")
        index = M.device_indices(shape, sharding, mesh)
        first: dict[tuple, int] = {}
        replica = []
        for sl in index:
            key = tuple((q.start, q.stop) for q in sl)
            first[key] = first.get(key, -1) + 1
            replica.append(first[key])
        shards = []
        for dev, p in zip(devices, pieces):
            sl = index[dev]
            data = np.asarray(p)[tuple(slice(0, q.stop - q.start) for q in sl)]
            shards.append(Shard(dev, sl, replica[dev], data))
        dtype = np.asarray(pieces[0]).dtype if pieces else np.float32
        return cls(shards, shape, dtype, sharding, mesh)

    @property
    def addressable_shards(self) -> list[Shard]:
        return self.shards

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def is_fully_addressable(self) -> bool:
        """True when the pieces held here cover every part of the global array."""
        have = {tuple((q.start, q.stop) for q in s.index) for s in self.shards}
        need = {tuple((q.start, q.stop) for q in sl)
                for sl in M.device_indices(self.shape, self.sharding, self.mesh)}
        return need <= have

    @property
    def is_fully_replicated(self) -> bool:
        """True when every device holds the whole array."""
        return all(q.start == 0 and q.stop == n
                   for sl in M.device_indices(self.shape, self.sharding, self.mesh)
                   for q, n in zip(sl, self.shape))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """The global array, assembled from the pieces held here.

        Raises:
            OxlaError: some parts are held by other processes only (under MPI).
        """
        if not self.is_fully_addressable:
            devs = ", ".join(str(s.device) for s in self.shards)
            raise OxlaError(f"this process holds only device {devs}'s shard of a "
                            f"{list(self.shape)} result; the other shards are on other "
                            "ranks (use .shards, or run without keeping results sharded)")
        out = np.empty(self.shape, dtype=self.dtype)
        for s in self.shards:
            if s.replica_id == 0:
                out[s.index] = s.data
        return out if dtype is None else out.astype(dtype, copy=False)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self) -> str:
        sh = "replicated" if self.sharding is None else str(self.sharding)
        return (f"ShardedArray({self.dtype}{list(self.shape)}, {sh}, "
                f"{len(self.shards)} of {self.mesh.num_devices} shards here)")


__all__ = ["Shard", "ShardedArray"]
