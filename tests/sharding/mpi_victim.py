"""Run under mpiexec by test_sharding_mpi.py: every rank enters an all-reduce at an MpiGrid,
except rank VICTIM, which dies (``die``) or never arrives (``hang``)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from mpi4py import MPI

from oxla.sharding.mpi import MpiGrid

mode, victim = sys.argv[1], int(sys.argv[2])
comm = MPI.COMM_WORLD
grid = MpiGrid(comm, float(os.environ.get("OXLA_COLLECTIVE_TIMEOUT", "300")))
rank = comm.Get_rank()
if rank == victim:
    if mode == "die":
        os._exit(9)
    time.sleep(120)
group = [(0, r) for r in range(comm.Get_size())]
grid.rendezvous("all_reduce", 1, group, (0, rank), np.ones(4))
print("completed", flush=True)
