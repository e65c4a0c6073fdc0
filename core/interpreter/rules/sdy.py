"""The ``sdy`` ops in the global view (one process holding whole tensors).

Shardings do not change values: ``sharding_constraint``, ``reshard``, the
propagation helpers and the explicit resharding collectives (``all_gather``,
``all_slice``, ``all_to_all``, ``collective_permute``) are the identity on a global
tensor; ``sdy.constant`` is its value. ``sdy.manual_computation`` and the reducing
collectives (``all_reduce``, ``reduce_scatter``) are per-device code: they run after
partitioning (``oxla.sharding.run.run_sharded``), here only on a one-device mesh.
"""

from __future__ import annotations

import numpy as np

from oxla.errors import NotSupportedError
from oxla.interpreter.registry import interpreter_rule


@interpreter_rule("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier",
                  "sdy.data_flow_edge", "sdy.func_data_flow_edge", "sdy.all_gather",
                  "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute")
def identity(ctx, op, args):
    return [args[0]]


@interpreter_rule("sdy.constant")
def constant(ctx, op, args):
    return [np.array(op.attributes["value"].array)]


@interpreter_rule("sdy.sharding_group", "sdy.mesh")
def nothing(ctx, op, args):
    return []


@interpreter_rule("sdy.return")
def return_(ctx, op, args):
    return list(args)


@interpreter_rule("sdy.manual_computation", "sdy.all_reduce", "sdy.reduce_scatter")
def per_device(ctx, op, args):
    if op.name == "sdy.manual_computation" and not op.attributes["manual_axes"].axes:
        return ctx.run_region(op.regions[0], args)
    raise NotSupportedError(f"'{op.name}' is per-device code: partition the program first "
                            "(oxla.sharding.run.run_sharded, or oxla compile + oxla launch)",
                            op.loc)
