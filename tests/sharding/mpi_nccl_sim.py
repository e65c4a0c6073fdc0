"""Run under ``mpiexec -n 4`` by test_sharding_mpi.py: a cuda program on the simulated
device (``OXLA_CUDA_DEVICE=sim``; with ``hip``, a hip program on ``OXLA_HIP_DEVICE=sim``,
whose calls a real AMD GPU would give RCCL) whose collectives run as NCCL calls
(``exe.attach_mpi``; :mod:`oxla_codegen_llvm.gpu.nccl`, executed over MPI on the device's
memory) where NCCL has the form, and as host-staged steps where it has not (an ``or``
reduction, a strided ``all_gather``), twice; rank 0 checks every rank's results against
the interpreter on an in-process 1x4 grid, and prints the summary and ``nccl ok``.

Each rank's simulated device is device ``local_rank % OXLA_SIM_DEVICE_COUNT``; rank 0
prints the ordinals. With ``split`` the launcher's local-rank variables are removed
first, so ``attach_mpi`` finds the local rank by an ``MPI_COMM_TYPE_SHARED`` split.
Arguments: ``[split] [hip]``."""

from __future__ import annotations

import os
import sys

import numpy as np
from mpi4py import MPI

import oxla
from oxla.sharding.mpi import MpiGrid, mpi_library

sys.path.insert(0, os.path.dirname(__file__))
from mpi_native_ops import compare_with_interpreter  # noqa: E402


def _ch(h: int) -> str:
    return f"channel_handle = #stablehlo.channel_handle<handle = {h}, type = 1>"


def _body(op: str, t: str) -> str:
    return (f"^bb0(%a: tensor<{t}>, %b: tensor<{t}>):\n"
            f"    %s = \"stablehlo.{op}\"(%a, %b) : (tensor<{t}>, tensor<{t}>) -> tensor<{t}>\n"
            f"    \"stablehlo.return\"(%s) : (tensor<{t}>) -> ()")


PROGRAM = f"""
func.func @main(%x: tensor<4x3xf32>, %y: tensor<5xi32>, %z: tensor<8x2xf64>,
                %w: tensor<6xi32>, %g: tensor<2x3xf16>, %p: tensor<8xi8>, %q: tensor<3x5xf32>)
    -> (tensor<4x3xf32>, tensor<5xi32>, tensor<2x2xf64>, tensor<6xi32>, tensor<2x12xf16>,
        tensor<8x3xf16>, tensor<8xi8>, tensor<3x5xf32>, tensor<4x3xf32>) {{
  %a = "stablehlo.all_reduce"(%x) ({{
  {_body("add", "f32")}
  }}) {{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, {_ch(1)},
      use_global_device_ids}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %b = "stablehlo.all_reduce"(%y) ({{
  {_body("maximum", "i32")}
  }}) {{replica_groups = dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>, {_ch(2)},
      use_global_device_ids}} : (tensor<5xi32>) -> tensor<5xi32>
  %c = "stablehlo.reduce_scatter"(%z) ({{
  {_body("multiply", "f64")}
  }}) {{scatter_dimension = 0 : i64, replica_groups = dense<[[3, 2, 1, 0]]> : tensor<1x4xi64>,
      {_ch(3)}, use_global_device_ids}} : (tensor<8x2xf64>) -> tensor<2x2xf64>
  %d = "stablehlo.all_reduce"(%w) ({{
  {_body("or", "i32")}
  }}) {{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, {_ch(4)},
      use_global_device_ids}} : (tensor<6xi32>) -> tensor<6xi32>
  %e = "stablehlo.all_gather"(%g) {{all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, {_ch(5)},
      use_global_device_ids}} : (tensor<2x3xf16>) -> tensor<2x12xf16>
  %f = "stablehlo.all_gather"(%g) {{all_gather_dim = 0 : i64,
      replica_groups = dense<[[1, 0, 3, 2]]> : tensor<1x4xi64>, {_ch(6)},
      use_global_device_ids}} : (tensor<2x3xf16>) -> tensor<8x3xf16>
  %h = "stablehlo.all_to_all"(%p) {{split_dimension = 0 : i64, concat_dimension = 0 : i64,
      split_count = 2 : i64, replica_groups = dense<[[0, 3], [2, 1]]> : tensor<2x2xi64>,
      {_ch(7)}}} : (tensor<8xi8>) -> tensor<8xi8>
  %k = "stablehlo.collective_permute"(%q) {{
      source_target_pairs = dense<[[0, 2], [2, 1], [1, 0]]> : tensor<3x2xi64>,
      {_ch(8)}}} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %m = "stablehlo.all_reduce"(%a) ({{
  {_body("minimum", "f32")}
  }}) {{replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>, {_ch(9)},
      use_global_device_ids}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %a, %b, %c, %d, %e, %f, %h, %k, %m : tensor<4x3xf32>, tensor<5xi32>,
      tensor<2x2xf64>, tensor<6xi32>, tensor<2x12xf16>, tensor<8x3xf16>, tensor<8xi8>,
      tensor<3x5xf32>, tensor<4x3xf32>
}}
"""

SHAPES = [((4, 3), np.float32), ((5,), np.int32), ((8, 2), np.float64), ((6,), np.int32),
          ((2, 3), np.float16), ((8,), np.int8), ((3, 5), np.float32)]


def inputs(rank: int, call: int) -> list[np.ndarray]:
    """Integer-valued floats: NCCL's reduction order is not the interpreter's."""
    rng = np.random.default_rng(100 * call + rank)
    return [rng.integers(-9, 10, s).astype(dt) for s, dt in SHAPES]


def main() -> int:
    from oxla_codegen_llvm.gpu.device import LOCAL_RANK_VARS

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    launcher = os.environ.get("MPI_LOCALRANKID")
    if "split" in sys.argv[1:]:
        for name in LOCAL_RANK_VARS:
            os.environ.pop(name, None)
    timeout = float(os.environ.get("OXLA_COLLECTIVE_TIMEOUT", "60"))
    exe = oxla.compile(PROGRAM, backend="hip" if "hip" in sys.argv[1:] else "cuda")
    nc = exe.attach_mpi(comm, mpi_library()["family"], timeout)
    mine = (exe.runtime().device.ordinal, os.environ.get("OXLA_LOCAL_RANK"), launcher)
    seen = comm.gather(mine, root=0)
    if rank == 0:
        print(f"device ordinals by local rank: {[s[0] for s in seen]} "
              f"(OXLA_LOCAL_RANK {[s[1] for s in seen]}, hydra's {[s[2] for s in seen]})",
              flush=True)
    grid = MpiGrid(comm, timeout)
    bad = compare_with_interpreter(exe, PROGRAM, inputs, comm, grid)
    if rank == 0:
        print(nc.summary(), flush=True)
        print("\n".join(bad) if bad else "nccl ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
