"""Running a partitioned program on one process: the in-process device grid.

:func:`run_sharded` partitions a sharded module, gives each device its shard of the
global inputs, runs the per-device program on a ``1 x N`` grid of the chosen backend
(the interpreter's threads and rendezvous, or the cpu backend's ``run_parallel``) and
assembles the global outputs from the per-device results.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla.ir.operation import Module
from oxla.sharding import model as M
from oxla.sharding.array import ShardedArray
from oxla.sharding.partition import PartitionReport, partition


def _entry(module: Module) -> str:
    from oxla.ir import func_name, func_visibility

    pub = [f for f in module.functions if func_visibility(f) == "public"]
    if not pub:
        raise OxlaError("the module has no public function to run")
    names = [func_name(f) for f in pub]
    return "main" if "main" in names else names[0]


def set_out_shardings(m: Module, out_shardings: Sequence[Any]) -> None:
    """Gives the entry function's results of ``m`` the shardings ``out_shardings`` ask
    for, in place (after GSPMD strings are imported): one item per result, None (keep
    the module's), a :class:`~oxla.ir.sdy.TensorShardingAttr`, or a spec as
    ``oxla_frontend_torch.shard`` takes (``("data", None)``, ``"data,_"``) over the
    module's only mesh (``jax.jit(..., out_shardings=...)``).

    Raises:
        OxlaError: a wrong number of items, no mesh or several, a malformed spec.
    """
    from dataclasses import replace

    from oxla.ir import func_name
    from oxla.ir.sdy import TensorShardingAttr
    from oxla.sharding.annotate import parse_spec, spec_text

    entry = _entry(m)
    f = next(g for g in m.functions if func_name(g) == entry)
    results = f.attributes["function_type"].type.results  # type: ignore[attr-defined]
    if len(out_shardings) != len(results):
        raise OxlaError(f"out_shardings has {len(out_shardings)} items, the function has "
                        f"{len(results)} results")
    table = M.meshes(m)
    for i, (spec, t) in enumerate(zip(out_shardings, results)):
        if spec is None:
            continue
        if not isinstance(spec, TensorShardingAttr):
            if len(table) != 1:
                raise OxlaError(f"out_shardings needs a module with one mesh, it has "
                                f"{len(table)}; give a TensorShardingAttr")
            name, mesh = next(iter(table.items()))
            spec = replace(parse_spec(spec_text(spec), len(t.shape), mesh, f"result{i}"),
                           mesh=name)
        M.set_result_sharding(f, i, spec)


def prepare(module: Module | str, hoist_weights: bool = False,
            out_shardings: Sequence[Any] | None = None
            ) -> tuple[Module, PartitionReport, str]:
    """Parses (when text), imports GSPMD shardings, sets ``out_shardings``
    (:func:`set_out_shardings`), partitions (slicing sharded weights at compile time
    with ``hoist_weights``); returns the per-device module, the report and the entry
    function's name."""
    from oxla.ir import parse_module
    from oxla.sharding.importer import ImportShardings

    m = parse_module(module) if isinstance(module, str) else module.clone()
    ImportShardings().run(m)
    if out_shardings is not None:
        set_out_shardings(m, out_shardings)
    report = partition(m, hoist_weights=hoist_weights)
    return m, report, _entry(m)


def shard_inputs(report: PartitionReport, name: str, args: Sequence[Any]) -> list[list]:
    """Per device, its pieces of ``args`` (device-major), then its shards of the
    weights sliced at compile time."""
    mesh = report.mesh
    n = mesh.num_devices if mesh is not None else 1
    per = [M.shard_array(np.asarray(a), s, mesh) if mesh is not None else [np.asarray(a)]
           for a, s in zip(args, report.in_shardings.get(name, [None] * len(args)))]
    per += [w.pieces for w in report.weights.get(name, [])]
    return [[p[d] for p in per] for d in range(n)]


def gather_outputs(report: PartitionReport, name: str, results: list[list],
                   keep_sharded: bool = False) -> list:
    """The global outputs from every device's results (``results[device]``): numpy
    arrays, or with ``keep_sharded`` each a :class:`~oxla.sharding.array.ShardedArray`
    of the devices' pieces (nothing assembled; ``np.asarray`` assembles)."""
    mesh = report.mesh
    if mesh is None:
        return list(results[0])
    _, gtypes = report.global_types[name]
    outs = []
    for i, (s, t) in enumerate(zip(report.out_shardings[name], gtypes)):
        pieces = [r[i] for r in results]
        outs.append(ShardedArray.from_pieces(pieces, s, mesh, t.shape) if keep_sharded
                    else M.unshard_array(pieces, s, mesh, t.shape))
    return outs


def grid_backend(backend: str | None) -> str:
    """The backend a sharded program runs on in one process: ``backend``, or (None) the
    cpu backend when it is available here, else the interpreter."""
    if backend is not None:
        return backend
    from oxla.plugins import available_backends

    return "cpu" if "cpu" in available_backends(("cpu",)) else "interpreter"


class ShardedExecutable:
    """A partitioned program compiled once and run on an in-process device grid.

    Called like the unsharded program (global numpy inputs in, global outputs out):
    each device gets its shard of every input, the per-device program runs on a
    ``1 x N`` grid of the backend (the interpreter's threads and rendezvous, or the cpu
    backend's ``run_parallel``), and the outputs are assembled from the devices' pieces.

    Sharded constants (weights) are sliced at compile time: the per-device program
    takes each device's shard as a trailing argument (``report.weights``), so no
    program holds a whole sharded weight.

    Attributes:
        module: the per-device module. report: the :class:`PartitionReport`.
        entry: the entry function's name. backend: the backend's name.
        executable: the per-device executable (None on the interpreter).
        stats: the executable's stats plus ``collectives``, ``collective_bytes`` and
            ``num_devices`` (:func:`oxla.sharding.cost.summary`).

    Results left sharded (``jax.jit(..., out_shardings=...)``): ``out_shardings`` sets
    the results' shardings (:func:`set_out_shardings`), and with ``keep_sharded``
    (default: True when ``out_shardings`` is given) each call returns every result as
    a :class:`~oxla.sharding.array.ShardedArray` of the devices' pieces, with no
    collective to assemble it; ``np.asarray(result)`` gives the global array.

    Raises:
        NotSupportedError: what the partitioner cannot do yet (at construction).
        OxlaError: malformed ``out_shardings``.
    """

    def __init__(self, module: Module | str, backend: str | None = None,
                 out_shardings: Sequence[Any] | None = None,
                 keep_sharded: bool | None = None):
        from oxla.sharding.cost import summary

        self.module, self.report, self.entry = prepare(module, hoist_weights=True,
                                                       out_shardings=out_shardings)
        self.keep_sharded = (out_shardings is not None) if keep_sharded is None \
            else bool(keep_sharded)
        self.backend = grid_backend(backend)
        mesh = self.report.mesh
        self.num_devices = mesh.num_devices if mesh is not None else 1
        self.executable = None
        self._be = None
        stats: dict[str, Any] = {}
        if self.backend != "interpreter":
            from oxla.plugins import get_backend

            self._be = get_backend(self.backend)
            self.executable = self._be.compile(self.module)
            stats.update(getattr(self.executable, "stats", {}) or {})
        stats.update(summary(self.report))
        stats["weight_bytes_per_device"] = sum(
            w.bytes_per_device for w in self.report.weights.get(self.entry, []))
        self.stats = stats

    def __call__(self, *args: Any) -> list:
        pieces = shard_inputs(self.report, self.entry, args)
        n = self.num_devices
        if self.executable is None:
            results = _run_interpreter(self.module, self.entry, pieces)
        elif n == 1:
            results = [list(self.executable(*pieces[0]))]
        else:
            assert self._be is not None
            flat, _ = self._be.run_parallel([[self.executable] * n],
                                            [a for p in pieces for a in p])
            k = len(flat) // n
            results = [list(flat[d * k:(d + 1) * k]) for d in range(n)]
        return gather_outputs(self.report, self.entry, results, self.keep_sharded)

    def save(self, path: str) -> None:
        """Writes the per-device program as a ``.oxla`` artifact and its sharding
        sidecar (``path.sharding.json``), for ``oxla launch -n N path``.

        Raises:
            NotSupportedError: on the interpreter (nothing compiled to save).
        """
        from oxla.errors import NotSupportedError
        from oxla.sharding.mpi import write_sidecar, write_weights

        if self.executable is None:
            raise NotSupportedError("a sharded program run on the interpreter has no "
                                    "artifact to save; compile it with backend='cpu'")
        self.executable.save(path)
        write_sidecar(str(path), self.report, self.entry)
        write_weights(str(path), self.report, self.entry)


def run_sharded(module: Module | str, args: Sequence[Any], backend: str = "interpreter"
                ) -> tuple[list, PartitionReport]:
    """Partitions ``module`` and runs it on an in-process grid of its mesh's devices.

    Args:
        module: a sharded module (``sdy`` or GSPMD form) or its text.
        args: the global inputs of its public entry function.
        backend: ``interpreter`` or a backend with ``run_parallel`` (``cpu``).

    Returns:
        (the global outputs, the :class:`PartitionReport`).

    Raises:
        NotSupportedError: what the partitioner cannot do yet; OxlaError from a device.
    """
    exe = ShardedExecutable(module, backend)
    return exe(*args), exe.report


def _run_interpreter(m: Module, name: str, pieces: list[list]) -> list[list]:
    from oxla.interpreter import Context, run_function
    from oxla.interpreter.rules.collectives import ProcessGrid

    n = len(pieces)
    grid = ProcessGrid(1, n)
    outs: list[Any] = [None] * n
    errors: list[BaseException | None] = [None] * n

    def work(d: int) -> None:
        try:
            ctx = Context(module=m, process=(0, d), grid=grid)
            outs[d] = run_function(m, name, pieces[d], ctx)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors[d] = e
            grid.abort(e)

    threads = [threading.Thread(target=work, args=(d,), daemon=True) for d in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return [list(o) for o in outs]


__all__ = ["run_sharded", "ShardedExecutable", "grid_backend", "prepare", "shard_inputs",
           "gather_outputs", "set_out_shardings"]
