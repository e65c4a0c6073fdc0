"""Run under mpiexec by test_sharding_mpi.py: every rank enters an all-reduce, except
rank VICTIM, which dies (``die``) or never arrives (``hang``). The all-reduce is an
MpiGrid's (Python), or, with ``native ARTIFACT X W``, that of a cpu artifact whose code
calls MPI itself (oxla_backend_cpu.mpi_native, through exe.attach_mpi), or, with
``nccl-hang``/``nccl-die``, a cuda program's NCCL all-reduce over {0, 1} and {2, 3} on
the simulated device (OXLA_CUDA_DEVICE=sim; oxla_codegen_llvm.gpu.nccl), or a hip
program's (``nccl-hang 2 hip``, OXLA_HIP_DEVICE=sim: the calls RCCL would run)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from mpi4py import MPI

from oxla.sharding.mpi import MpiGrid

NCCL_PROGRAM = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.all_reduce"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>,
      channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
      use_global_device_ids} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""

mode, victim = sys.argv[1], int(sys.argv[2])
comm = MPI.COMM_WORLD
timeout = float(os.environ.get("OXLA_COLLECTIVE_TIMEOUT", "300"))
grid = MpiGrid(comm, timeout)
rank = comm.Get_rank()
if mode == "native":
    import oxla
    from oxla.sharding import model as M
    from oxla.sharding.mpi import mpi_library, read_sidecar

    path = sys.argv[3]
    exe = oxla.load(path)
    native = exe.attach_mpi(comm, mpi_library()["family"], timeout)
    assert native is not None and native.native, "no native collectives"
    side = read_sidecar(path)
    mesh = M.MeshAttr(tuple((a, int(k)) for a, k in side["mesh"]["axes"]))
    from oxla.ir import parse_attribute

    args = [M.shard_array(np.load(p), parse_attribute(s["sharding"]), mesh)[rank]
            for p, s in zip(sys.argv[4:], side["inputs"])]
    if rank == victim:
        time.sleep(120)
    exe.call_as_process(grid, (0, rank), *args)
    print("completed", flush=True)
    sys.exit(0)
if mode.startswith("nccl-"):
    import oxla
    from oxla.sharding.mpi import mpi_library

    exe = oxla.compile(NCCL_PROGRAM, backend=sys.argv[3] if len(sys.argv) > 3 else "cuda")
    nc = exe.attach_mpi(comm, mpi_library()["family"], timeout)
    if rank == victim:
        if mode == "nccl-die":
            os._exit(9)
        time.sleep(120)
    (out,) = exe.call_as_process(grid, (0, rank), np.full(4, rank + 1.0, np.float32))
    assert nc.native and not nc.fallback, nc.summary()
    print(f"completed {out.tolist()}", flush=True)
    sys.exit(0)
if rank == victim:
    if mode == "die":
        os._exit(9)
    time.sleep(120)
group = [(0, r) for r in range(comm.Get_size())]
grid.rendezvous("all_reduce", 1, group, (0, rank), np.ones(4))
print("completed", flush=True)
