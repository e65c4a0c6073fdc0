"""Sharding in the compile path: annotate (``--mesh``/``--shard``), import GSPMD
strings, propagate, partition; used by ``oxla compile`` and :func:`compile_sharded`."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from oxla.errors import OxlaError
from oxla.ir.operation import Module
from oxla.sharding.partition import PartitionReport, partition


def is_sharded(module: Module) -> bool:
    """True when ``module`` carries shardings (``sdy.mesh`` or ``mhlo.sharding``)."""
    if any(op.name == "sdy.mesh" for op in module.body.ops):
        return True
    for f in module.functions:
        if "mhlo.sharding" in str(f.attributes.get("arg_attrs", "")):
            return True
        if any("mhlo.sharding" in op.attributes for op in f.walk()):
            return True
    return False


def shard_module(module: Module, mesh: str | None, shards: Sequence[str] = (),
                 link_gbps: float = 100.0, explain: bool = False,
                 hoist_weights: bool = False) -> tuple[Module, PartitionReport]:
    """The per-device module of ``module`` (in place) and the partitioner's report;
    ``hoist_weights`` slices sharded constants at compile time (``report.weights``:
    trailing arguments of the per-device program).

    Raises:
        OxlaError: ``--shard`` without ``--mesh``, malformed items (user errors).
        NotSupportedError: what the partitioner cannot do yet.
    """
    from oxla.sharding.annotate import annotate, parse_mesh
    from oxla.sharding.cost import explain as explain_text
    from oxla.sharding.importer import ImportShardings

    if shards and mesh is None:
        raise OxlaError("--shard needs --mesh (e.g. --mesh data=2,model=2)")
    if mesh is not None:
        annotate(module, parse_mesh(mesh), list(shards))
    ImportShardings().run(module)
    report = partition(module, hoist_weights=hoist_weights)
    if explain:
        sys.stdout.write(explain_text(report, link_gbps))
    return module, report


def compile_sharded(module: Module, backend: str = "interpreter", mesh: str | None = None,
                    shards: Sequence[str] = ()):
    """Partitions and compiles ``module``; ``exe.stats`` gains ``collectives`` (counts
    by kind), ``collective_bytes`` (per device per call) and ``num_devices``.

    The executable is the per-device program: run it on a device grid
    (:func:`oxla.sharding.run.run_sharded` in one process, ``oxla launch`` under MPI).
    """
    import oxla
    from oxla.sharding.cost import summary

    m, report = shard_module(module, mesh, shards)
    exe = oxla.compile(m, backend=backend)
    exe.stats.update(summary(report))
    return exe, report


__all__ = ["shard_module", "compile_sharded", "is_sharded"]
