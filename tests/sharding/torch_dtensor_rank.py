"""Run as 2 processes (``RANK`` 0/1, gloo) by test_sharding_torch.py: a Megatron MLP
whose parameters are DTensors (fc1 column-parallel: weight and bias ``Shard(0)``; fc2
row-parallel: weight ``Shard(1)``, bias ``Replicate()``) and whose input is a replicated
DTensor is exported by torch.export (which keeps the placements) and compiled by oxla;
each rank prints ``rank R: SHARDING COLLECTIVES MAX_ERROR MAX_LOGIT``, then whether a
``Partial`` placement (a pending sum, no sharding of the value) is refused."""

from __future__ import annotations

import os
import sys

import oxla_frontend_torch as ot
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

from oxla.errors import NotSupportedError


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> int:
    rank, backend = int(os.environ["RANK"]), sys.argv[1]
    dist.init_process_group("gloo", rank=rank, world_size=2)
    mesh = init_device_mesh("cpu", (2,), mesh_dim_names=("model",))
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 16)
    want = model(x).detach()
    for lin, w, b in ((model.fc1, Shard(0), Shard(0)), (model.fc2, Shard(1), Replicate())):
        lin.weight = torch.nn.Parameter(distribute_tensor(lin.weight.detach(), mesh, [w]))
        lin.bias = torch.nn.Parameter(distribute_tensor(lin.bias.detach(), mesh, [b]))
    xd = distribute_tensor(x, mesh, [Replicate()])
    f = ot.compile(model, (xd,), backend=backend)
    err = float((f(x) - want).abs().max())
    print(f"rank {rank}: {f.sharding} {f.stats['collectives']} {err:.3g} "
          f"{float(want.abs().max()):.3g}", flush=True)
    lin = torch.nn.Linear(4, 4, bias=False)
    lin.weight = torch.nn.Parameter(DTensor.from_local(torch.ones(4, 4), mesh, [Partial()]))
    try:
        ot.compile(lin, (distribute_tensor(torch.ones(2, 4), mesh, [Replicate()]),),
                   backend=backend)
        print(f"rank {rank}: partial accepted", flush=True)
    except NotSupportedError as e:
        print(f"rank {rank}: refused: {str(e).splitlines()[0]}", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
