"""``oxla launch -n N``: run a partitioned artifact with one MPI process per device.

A thin wrapper: it finds the ``mpiexec`` installed with the ``mpich`` wheel (beside
the Python interpreter, else on ``PATH``), or Open MPI's with ``--mpi openmpi``, and
runs ``mpiexec -n N python -m oxla.sharding.mpi ARTIFACT ...`` (see
:mod:`oxla.sharding.mpi`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import click

from oxla.errors import OxlaError
from oxla.sharding.mpi import launcher, mpi_env, mpi_name


def find_mpiexec() -> str:
    """MPICH's ``mpiexec`` (beside the Python interpreter, else on ``PATH``).

    Raises:
        OxlaError: none is installed (says how to get one).
    """
    return launcher("mpich")[0]


@click.command("launch", context_settings={"ignore_unknown_options": True})
@click.option("-n", "ranks", type=int, required=True, help="number of MPI processes")
@click.option("--hosts", default=None, metavar="H1,H2",
              help="hosts to run on (mpiexec -hosts); default: this machine")
@click.option("--mpiexec-arg", "mpiexec_args", multiple=True, metavar="ARG",
              help="an extra mpiexec argument, in order (e.g. -launcher-exec ./enter.sh)")
@click.option("--mpi", "mpi", default=None, metavar="NAME",
              help="mpich (default, or $OXLA_MPI) or openmpi: the MPI the artifact was "
                   "compiled for (oxla compile --mpi)")
@click.option("--timeout", "timeout", type=float, default=None,
              help="seconds a collective may wait (sets OXLA_COLLECTIVE_TIMEOUT)")
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False))
@click.option("--input", "inputs", multiple=True, type=click.Path(exists=True),
              help="a .npy file per argument, in order (every rank keeps its shard)")
@click.option("--output", default=None, type=click.Path(),
              help="where rank 0 writes the assembled results (.npz, or .npy for one)")
@click.option("--keep-sharded", is_flag=True,
              help="leave results sharded: rank r writes its shards to OUTPUT.rank{r}.npz "
                   "(result{i} and result{i}.index, [start, stop) per dimension)")
def launch_command(ranks: int, hosts: str | None, mpiexec_args: tuple[str, ...],
                   mpi: str | None, timeout: float | None, artifact: str, inputs: tuple[str, ...],
                   output: str | None, keep_sharded: bool) -> None:
    """Run ARTIFACT (compiled with --mesh) on N MPI ranks, one per device."""
    if ranks < 1:
        raise OxlaError(f"-n must be at least 1, got {ranks}")
    name = mpi_name(mpi)
    cmd = launcher(name) + ["-n", str(ranks)]
    if hosts:
        cmd += ["--host" if name == "openmpi" else "-hosts", hosts]
    cmd += list(mpiexec_args)
    cmd += [sys.executable, "-m", "oxla.sharding.mpi", artifact]
    for p in inputs:
        cmd += ["--input", p]
    if output:
        cmd += ["--output", output]
    if keep_sharded:
        cmd += ["--keep-sharded"]
    env = dict(os.environ, **mpi_env(name))
    if name == "mpich":  # mpi4py then finds MPICH beside the interpreter
        env.pop("MPI4PY_LIBMPI", None)
        env.pop("MPI4PY_MPIABI", None)
    if timeout is not None:
        env["OXLA_COLLECTIVE_TIMEOUT"] = str(timeout)
    rc = subprocess.call(cmd, env=env)
    if rc:
        sys.exit(rc if rc in (1, 2) else 1)
