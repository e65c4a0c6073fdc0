"""oxla.sharding: shardings in Shardy's model, propagation, and the SPMD partitioner.

A user annotates a few tensors (``sdy.sharding`` from JAX, ``mhlo.sharding`` GSPMD
strings, or ``oxla compile --mesh/--shard``); :class:`ShardingPropagation` completes
the shardings, :func:`partition` rewrites the module into one per-device program with
local shapes and collectives, and :func:`run_sharded` runs it on an in-process grid::

    from oxla.sharding import propagate, partition, run_sharded
"""

from __future__ import annotations

from typing import Any

_LAZY = {"GspmdSharding": "oxla.sharding.gspmd", "parse_gspmd": "oxla.sharding.gspmd",
         "mesh_for": "oxla.sharding.gspmd", "ShardingPropagation": "oxla.sharding.propagation"}

PASSES = (
    ("sharding-propagation", "oxla.sharding.propagation", "ShardingPropagation",
     "Completes the shardings of a module annotated with ``sdy`` shardings."),
    ("spmd-partition", "oxla.sharding.partition", "SpmdPartition",
     "Rewrites a sharded module into its per-device SPMD program (local shapes,"),
    ("import-shardings", "oxla.sharding.importer", "ImportShardings",
     "Converts GSPMD ``mhlo.sharding`` annotations into sdy shardings over one mesh."),
)
"""The sharding passes: (pipeline name, module, class, its docstring's first line).
Named, not imported: the plugin registry lists every pass at a process's first compile,
and importing these (~10 ms) would be paid by every program, sharded or not."""


def builtin_passes() -> list:
    """The sharding passes, as :class:`~oxla.protocols.PassInfo` for ``oxla_passes``
    (each a :class:`~oxla.protocols.LazyPass`, imported when a pipeline names it)."""
    from oxla.protocols import LazyPass, PassInfo

    return [PassInfo(name, LazyPass(module, attr), doc) for name, module, attr, doc in PASSES]


def __getattr__(name: str) -> Any:
    """The package's names, imported at first use (``import oxla.sharding`` is cheap)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'oxla.sharding' has no attribute '{name}'")


__all__ = ["GspmdSharding", "parse_gspmd", "mesh_for", "ShardingPropagation",
           "builtin_passes"]
