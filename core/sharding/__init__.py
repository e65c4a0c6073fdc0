"""oxla.sharding: shardings in Shardy's model, propagation, and the SPMD partitioner.

A user annotates a few tensors (``sdy.sharding`` from JAX, ``mhlo.sharding`` GSPMD
strings, or ``oxla compile --mesh/--shard``); :class:`ShardingPropagation` completes
the shardings, :func:`partition` rewrites the module into one per-device program with
local shapes and collectives, and :func:`run_sharded` runs it on an in-process grid::

    from oxla.sharding import propagate, partition, run_sharded
"""

from __future__ import annotations

from oxla.sharding.gspmd import GspmdSharding, mesh_for, parse_gspmd
from oxla.sharding.propagation import ShardingPropagation


def builtin_passes() -> list:
    """The sharding passes, as :class:`~oxla.protocols.PassInfo` for ``oxla_passes``."""
    from oxla.protocols import PassInfo
    from oxla.sharding.importer import ImportShardings
    from oxla.sharding.partition import SpmdPartition

    return [PassInfo(c.name, c, (c.__doc__ or "").strip().splitlines()[0])
            for c in (ShardingPropagation, SpmdPartition, ImportShardings)]


__all__ = ["GspmdSharding", "parse_gspmd", "mesh_for", "ShardingPropagation",
           "builtin_passes"]
