"""Run under ``mpiexec -n 4`` by test_sharding_mpi.py: a cpu program whose collectives
(``all_to_all`` over several split/concat dimensions, dtypes and groups,
``collective_permute`` on a ring and on partial pairs, ``all_gather`` along a
non-leading dimension) all run in native code calling MPI (``exe.attach_mpi``, whose
result is dropped: the executable keeps its dispatcher alive), twice;
rank 0 checks every rank's results against the interpreter running the same program on
an in-process 1x4 grid, and prints ``native ok`` and the dispatcher's summary."""

from __future__ import annotations

import gc
import os
import sys
import threading

import numpy as np
from mpi4py import MPI

import oxla
from oxla.interpreter import Context, run_function
from oxla.interpreter.rules.collectives import ProcessGrid
from oxla.ir import parse_module
from oxla.sharding.mpi import MpiGrid, mpi_library


def _ch(h: int) -> str:
    return f"channel_handle = #stablehlo.channel_handle<handle = {h}, type = 1>"


PROGRAM = f"""
func.func @main(%x: tensor<4x6xf32>, %y: tensor<2x8x3xi32>, %z: tensor<3x4xf64>,
                %h: tensor<8xf16>, %p: tensor<3x5xf32>, %q: tensor<7xi8>,
                %g: tensor<2x3xf32>)
    -> (tensor<1x24xf32>, tensor<2x4x6xi32>, tensor<3x4xf64>, tensor<8xf16>,
        tensor<3x5xf32>, tensor<7xi8>, tensor<2x12xf32>) {{
  %a = "stablehlo.all_to_all"(%x) {{split_dimension = 0 : i64, concat_dimension = 1 : i64,
      split_count = 4 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>,
      {_ch(1)}}} : (tensor<4x6xf32>) -> tensor<1x24xf32>
  %b = "stablehlo.all_to_all"(%y) {{split_dimension = 1 : i64, concat_dimension = 2 : i64,
      split_count = 2 : i64, replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>,
      {_ch(2)}}} : (tensor<2x8x3xi32>) -> tensor<2x4x6xi32>
  %c = "stablehlo.all_to_all"(%z) {{split_dimension = 1 : i64, concat_dimension = 1 : i64,
      split_count = 2 : i64, replica_groups = dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>,
      {_ch(3)}}} : (tensor<3x4xf64>) -> tensor<3x4xf64>
  %d = "stablehlo.all_to_all"(%h) {{split_dimension = 0 : i64, concat_dimension = 0 : i64,
      split_count = 4 : i64, replica_groups = dense<[[3, 2, 1, 0]]> : tensor<1x4xi64>,
      {_ch(4)}}} : (tensor<8xf16>) -> tensor<8xf16>
  %e = "stablehlo.collective_permute"(%p) {{
      source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>,
      {_ch(5)}}} : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %f = "stablehlo.collective_permute"(%q) {{
      source_target_pairs = dense<[[0, 2], [2, 1]]> : tensor<2x2xi64>,
      {_ch(6)}}} : (tensor<7xi8>) -> tensor<7xi8>
  %k = "stablehlo.all_gather"(%g) {{all_gather_dim = 1 : i64,
      replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, {_ch(7)},
      use_global_device_ids}} : (tensor<2x3xf32>) -> tensor<2x12xf32>
  func.return %a, %b, %c, %d, %e, %f, %k : tensor<1x24xf32>, tensor<2x4x6xi32>,
      tensor<3x4xf64>, tensor<8xf16>, tensor<3x5xf32>, tensor<7xi8>, tensor<2x12xf32>
}}
"""

SHAPES = [((4, 6), np.float32), ((2, 8, 3), np.int32), ((3, 4), np.float64),
          ((8,), np.float16), ((3, 5), np.float32), ((7,), np.int8), ((2, 3), np.float32)]


def inputs(rank: int, call: int) -> list[np.ndarray]:
    rng = np.random.default_rng(100 * call + rank)
    return [(rng.standard_normal(s) * 50).astype(dt) for s, dt in SHAPES]


def interpret(module, args_by_rank: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """The interpreter's results of every process of a 1 x N in-process grid."""
    n = len(args_by_rank)
    grid = ProcessGrid(1, n)
    outs: list = [None] * n

    def work(p: int) -> None:
        ctx = Context(module=module, process=(0, p), grid=grid)
        outs[p] = [np.asarray(o) for o in run_function(module, "main", args_by_rank[p], ctx)]

    threads = [threading.Thread(target=work, args=(p,)) for p in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return outs


def compare_with_interpreter(exe, program: str, inputs, comm, grid, calls: int = 2) -> list[str]:
    """Runs ``exe`` as this rank ``calls`` times on ``inputs(rank, call)`` and, on rank 0,
    compares every rank's results with the interpreter's grid of the same program (exact:
    dtype, shape and values; a second call reuses the communicators, types and ops); returns
    the differences found (empty elsewhere)."""
    rank, bad = comm.Get_rank(), []
    for call in range(calls):
        got = [np.asarray(o) for o in exe.call_as_process(grid, (0, rank), *inputs(rank, call))]
        everyone = comm.gather(got, root=0)
        if rank == 0:
            want = interpret(parse_module(program, "p.mlir"),
                             [inputs(r, call) for r in range(comm.Get_size())])
            for r, (g, w) in enumerate(zip(everyone, want)):
                for i, (a, b) in enumerate(zip(g, w)):
                    if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
                        bad.append(f"call {call} rank {r} result {i}: {a!r} != {b!r}")
    return bad


def main() -> int:
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    timeout = float(os.environ.get("OXLA_COLLECTIVE_TIMEOUT", "60"))
    exe = oxla.compile(PROGRAM, backend="cpu")
    # the dispatcher lives with the executable, not with the caller's reference
    summary = exe.attach_mpi(comm, mpi_library()["family"], timeout).summary()
    gc.collect()
    grid = MpiGrid(comm, timeout)
    bad = compare_with_interpreter(exe, PROGRAM, inputs, comm, grid)
    if rank == 0:
        print(summary, flush=True)
        print("\n".join(bad) if bad else "native ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
