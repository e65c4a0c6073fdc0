"""What the partitioner emits on each device: its coordinates in the mesh, collectives,
reshards (``all_gather`` to remove axes, ``dynamic_slice`` to add them, ``all_to_all``
to move them from one dimension to another), and the report
of what was inserted (:class:`Collective`, :class:`PartitionReport`).

Device ids come from ``partition_id + replica_id`` (a ``1 x N`` or ``N x 1`` grid);
collectives carry a ``channel_handle`` and ``use_global_device_ids`` (spec
"flattened_ids"), their replica groups ordered by shard number.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.builder import Builder
from oxla.ir.operation import Block, Operation, Region, Value
from oxla.ir.sdy import AxisRef, DimSharding, MeshAttr, TensorShardingAttr
from oxla.sharding import model as M

I32 = T.IntegerType(32)


@dataclass
class Collective:
    """One collective the partitioner inserted: kind, bytes each device sends in,
    its axes, why (``reduction`` or ``reshard``), the op it serves."""

    kind: str
    bytes: int
    axes: tuple[str, ...]
    reason: str
    op: str
    group: int = 1


@dataclass
class Weight:
    """A sharded constant the partitioner sliced at compile time: it became a trailing
    argument of the per-device program, and ``pieces[device]`` is that device's shard
    (so no device's program holds the whole tensor)."""

    name: str
    sharding: TensorShardingAttr
    global_type: T.TensorType
    pieces: list

    @property
    def bytes_per_device(self) -> int:
        return int(self.pieces[0].nbytes) if self.pieces else 0


@dataclass
class PartitionReport:
    """What :func:`partition` did: the mesh, every function's argument and result
    shardings (to shard inputs and assemble outputs), the inserted collectives."""

    mesh: MeshAttr | None = None
    in_shardings: dict[str, list] = field(default_factory=dict)
    out_shardings: dict[str, list] = field(default_factory=dict)
    global_types: dict[str, tuple] = field(default_factory=dict)
    collectives: list[Collective] = field(default_factory=list)
    op_shardings: list[tuple[str, str]] = field(default_factory=list)
    weights: dict[str, list[Weight]] = field(default_factory=dict)
    # scatters of sharded indices/updates (not into a table sharded on its indexed
    # dimension), by the form taken: ``all_reduce`` (local scatters combined) or
    # ``gather`` (indices and updates gathered)
    scatter_forms: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.collectives:
            out[c.kind] = out.get(c.kind, 0) + 1
        return out


def _nbytes(t) -> int:
    if not isinstance(t, T.TensorType):
        return 0
    return t.num_elements * t.element_type.dtype.itemsize


def _tensor(shape, et) -> T.TensorType:
    return T.TensorType(tuple(shape), et)


def _replicated(mesh_name, rank: int) -> TensorShardingAttr:
    return TensorShardingAttr(mesh_name, tuple(DimSharding(()) for _ in range(rank)))


def _axes(s: TensorShardingAttr | None, d: int) -> tuple[AxisRef, ...]:
    if s is None or d >= len(s.dims):
        return ()
    return s.dims[d].axes



def _add_region(et) -> Region:
    """The ``(a, b) -> a + b`` body of a summing collective."""
    blk = Block()
    s = _tensor((), et)
    a0, a1 = blk.add_arg(s), blk.add_arg(s)
    bb = Builder.at_end(blk)
    bb.insert(Operation.create("stablehlo.return", [bb.add(a0, a1)]))
    body = Region()
    body.add_block(blk)
    return body


class DeviceOps:
    """Emits per-device code into ``self.b`` for a mesh ``self.mesh``; subclasses set
    ``mesh``, ``b``, ``report``, ``channel`` and ``_coords``."""

    mesh: MeshAttr
    b: Builder
    report: PartitionReport
    channel: list[int]
    _coords: dict[str, Value]

    # -- device coordinates and collectives ---------------------------------------
    def _mk(self, name: str, operands, types, attrs=None, regions=()) -> Operation:
        return self.b.insert(Operation.create(name, operands, types, attrs, regions))

    def _const_i32(self, v: int) -> Value:
        return self.b.constant(np.array(v, dtype=np.int32))

    def coord(self, a: AxisRef) -> Value:
        key = str(a)
        if key in self._coords:
            return self._coords[key]
        if "__pos" not in self._coords:
            # the device id on a 1 x N grid (partitions) or an N x 1 grid (replicas)
            u32 = _tensor((), T.IntegerType(32, unsigned=True))
            pid = self._mk("stablehlo.partition_id", [], [u32]).results[0]
            rid = self._mk("stablehlo.replica_id", [], [u32]).results[0]
            pos = self.b.add(self.b.convert(pid, I32), self.b.convert(rid, I32))
            self._coords["__dev"] = pos
            if self.mesh.device_ids is not None:
                inv = np.zeros(self.mesh.num_devices, dtype=np.int32)
                for p, d in enumerate(self.mesh.device_ids):
                    inv[d] = p
                table = self.b.constant(inv)
                one = self._mk("stablehlo.dynamic_slice", [table, pos],
                                    [_tensor((1,), I32)],
                                    {"slice_sizes": A.i64_array((1,))}).results[0]
                pos = self.b.reshape(one, ())
            self._coords["__pos"] = pos
        pos = self._coords["__pos"]
        stride = 1
        names = self.mesh.names
        for n in names[names.index(a.name) + 1:]:
            stride *= self.mesh.axis_size(n)
        size = self.mesh.axis_size(a.name)
        if a.sub is not None:
            pre, sub = a.sub
            stride *= size // (pre * sub)
            size = sub
        c = self.b.divide(pos, self._const_i32(stride))
        c = self.b.remainder(c, self._const_i32(size))
        self._coords[key] = c
        return c

    def shard_number(self, axes) -> Value:
        idx = self._const_i32(0)
        for a in axes:
            idx = self.b.add(self.b.multiply(idx, self._const_i32(a.size(self.mesh))),
                             self.coord(a))
        return idx

    def _groups_attr(self, axes) -> A.DenseElementsAttr:
        groups = M.device_groups(axes, self.mesh)
        arr = np.array(groups, dtype=np.int64)
        return A.dense(arr, _tensor(arr.shape, T.IntegerType(64)))

    def _channel(self) -> A.StructAttr:
        self.channel[0] += 1
        return A.StructAttr("stablehlo.channel_handle", (("handle", self.channel[0]),
                                                        ("type", 1)))

    def all_reduce(self, x: Value, axes, body: Region | None, reason: str, why: str) -> Value:
        if body is None:
            body = _add_region(x.type.element_type)
        op = self._mk("stablehlo.all_reduce", [x], [x.type], {
            "replica_groups": self._groups_attr(axes), "channel_handle": self._channel(),
            "use_global_device_ids": A.UnitAttr()}, regions=[body])
        self._record("all_reduce", x.type, axes, reason, why)
        return op.results[0]

    def reduce_scatter(self, x: Value, axes, dim: int, body: Region | None, why: str) -> Value:
        """Sums ``x`` over ``axes`` and keeps this device's part of dimension ``dim``
        (the axes become its minor sharding)."""
        if body is None:
            body = _add_region(x.type.element_type)
        shape = list(x.type.shape)
        shape[dim] //= self._count(axes)
        op = self._mk("stablehlo.reduce_scatter", [x], [_tensor(shape, x.type.element_type)], {
            "scatter_dimension": A.i64_attr(dim), "replica_groups": self._groups_attr(axes),
            "channel_handle": self._channel(), "use_global_device_ids": A.UnitAttr()},
            regions=[body])
        self._record("reduce_scatter", x.type, axes, "reduction", why)
        return op.results[0]

    def permute(self, x: Value, pairs, axes, why: str) -> Value:
        """``collective_permute`` of ``x`` along ``pairs`` of device ids (a device that
        no pair targets receives zeros); recorded as a halo exchange."""
        arr = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        op = self._mk("stablehlo.collective_permute", [x], [x.type], {
            "source_target_pairs": A.dense(arr, _tensor(arr.shape, T.IntegerType(64))),
            "channel_handle": self._channel()})
        self._record("collective_permute", x.type, axes, "halo", why)
        return op.results[0]

    def _record(self, kind, t, axes, reason, why) -> None:
        self.report.collectives.append(Collective(kind, _nbytes(t), tuple(str(a) for a in axes),
                                                  reason, why, self._count(axes)))

    # -- resharding -----------------------------------------------------------------
    def reshard(self, x: Value, cur: TensorShardingAttr | None, tgt: TensorShardingAttr | None,
                gshape, why: str) -> Value:
        """``x`` (local, sharded as ``cur``) sharded as ``tgt``.

        A dimension whose shard count does not divide it is padded at its end (local
        size ``ceil(size / k)``); padded layouts of different counts do not nest, so such
        a dimension is gathered whole (and the padding sliced off) before it is split
        again (zero-padded, then sliced at the device's offset).
        """
        rank = len(gshape)
        gather: dict[int, tuple] = {}
        add: dict[int, tuple] = {}
        odd: set[int] = set()
        for d in range(rank):
            c, t = _axes(cur, d), _axes(tgt, d)
            if c == t:
                continue
            if gshape[d] % self._count(c) or gshape[d] % self._count(t):
                odd.add(d)
                if c:
                    gather[d] = ((), c)
                if t:
                    add[d] = t
            elif t[:len(c)] == c:
                add[d] = t
            elif c[:len(t)] == t:
                gather[d] = (t, c[len(t):])
            else:
                gather[d] = ((), c)
                if t:
                    add[d] = t
        now = [list(_axes(cur, d)) for d in range(rank)]
        # axes leaving the minor end of one dimension for the minor end of another move
        # in one all_to_all (each device sends each peer the part it will own)
        for d1, (keep, extra) in list(gather.items()):
            for d2, t in list(add.items()):
                if d2 == d1 or d2 in gather or not extra or d1 in odd or d2 in odd or \
                        tuple(t[len(now[d2]):]) != tuple(extra):
                    continue
                now[d1], now[d2] = list(keep), list(t)
                shape = [self._local(gshape[k], now[k]) for k in range(rank)]
                op = self._mk("stablehlo.all_to_all", [x], [_tensor(shape, x.type.element_type)], {
                    "split_dimension": A.i64_attr(d2), "concat_dimension": A.i64_attr(d1),
                    "split_count": A.i64_attr(self._count(extra)),
                    "replica_groups": self._groups_attr(extra),
                    "channel_handle": self._channel()})
                self._record("all_to_all", x.type, extra, "reshard", why)
                x = op.results[0]
                del gather[d1], add[d2]
                break
        for d, (keep, extra) in gather.items():
            now[d] = list(keep)
            shape = list(x.type.shape)
            shape[d] *= self._count(extra)
            op = self._mk("stablehlo.all_gather", [x], [_tensor(shape, x.type.element_type)], {
                "all_gather_dim": A.i64_attr(d), "replica_groups": self._groups_attr(extra),
                "channel_handle": self._channel(), "use_global_device_ids": A.UnitAttr()})
            self._record("all_gather", x.type, extra, "reshard", why)
            x = op.results[0]
            if shape[d] != self._local(gshape[d], now[d]):  # drop the padding
                lim = list(shape)
                lim[d] = gshape[d]
                x = self.b.slice(x, [0] * rank, lim, [1] * rank)
        if add:
            starts = []
            pad_hi = [0] * rank
            for d in range(rank):
                if d in add:
                    new_local = self._local(gshape[d], add[d])
                    extra = add[d][len(now[d]):]
                    pad_hi[d] = new_local * self._count(extra) - x.type.shape[d]
                    idx = self.shard_number(extra)
                    starts.append(self.b.multiply(idx, self._const_i32(new_local)))
                    now[d] = list(add[d])
                else:
                    starts.append(self._const_i32(0))
            if any(pad_hi):
                x = self.pad_high(x, pad_hi)
            shape = [self._local(gshape[k], now[k]) for k in range(rank)]
            x = self._mk("stablehlo.dynamic_slice", [x, *starts],
                              [_tensor(shape, x.type.element_type)],
                              {"slice_sizes": A.i64_array(shape)}).results[0]
        return x

    def pad_high(self, x: Value, high) -> Value:
        """``x`` with ``high[d]`` zeros after the end of each dimension ``d``."""
        et = x.type.element_type
        zero = self.b.constant(np.zeros((), et.dtype), et)
        shape = [s + h for s, h in zip(x.type.shape, high)]
        rank = len(shape)
        return self._mk("stablehlo.pad", [x, zero], [_tensor(shape, et)], {
            "edge_padding_low": A.i64_array([0] * rank), "edge_padding_high": A.i64_array(
                list(high)), "interior_padding": A.i64_array([0] * rank)}).results[0]

    def mask_padding(self, x: Value, dim: int, axes, size: int, fill: Value) -> Value:
        """``x`` (a shard of a dimension of global ``size`` split over ``axes``, padded at
        its end) with the padding along ``dim`` replaced by the scalar ``fill`` (the
        reduction's identity), so a reduction over it ignores the padding."""
        t = x.type
        local = t.shape[dim]
        start = self.b.multiply(self.shard_number(axes), self._const_i32(local))
        iota = self.b.iota(t.shape, I32, dim)
        pos = self.b.add(iota, self.b.broadcast_in_dim(start, t.shape, ()))
        valid = self.b.compare("LT", pos, self.b.broadcast_in_dim(
            self._const_i32(size), t.shape, ()))
        return self.b.select(valid, x, self.b.broadcast_in_dim(fill, t.shape, ()))

    def _local(self, size: int, axes) -> int:
        return -(-size // self._count(axes))

    def _count(self, axes) -> int:
        n = 1
        for a in axes:
            n *= a.size(self.mesh)
        return n


    def broadcast_from(self, x: Value, device: int, why: str) -> Value:
        """Every device gets ``x`` as computed on ``device`` (masked all-reduce)."""
        if not isinstance(x.type, T.TensorType):
            return x
        self.coord(AxisRef(self.mesh.names[0])) if self.mesh.names else None
        dev = self._coords["__dev"]
        is_k = self.b.compare("EQ", dev, self._const_i32(device))
        mask = self.b.broadcast_in_dim(is_k, x.type.shape, ())
        zero = self.b.constant(np.zeros((), x.type.element_type.dtype), x.type.element_type)
        zeros = self.b.broadcast_in_dim(zero, x.type.shape, ())
        picked = self.b.select(mask, x, zeros)
        return self.all_reduce(picked, tuple(AxisRef(n) for n in self.mesh.names), None,
                               "broadcast", why)

