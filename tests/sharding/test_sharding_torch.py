"""Sharding from torch: ``oxla_frontend_torch.shard`` marks on parameters and inputs, or
``shardings=`` by name; the compiled function takes and returns whole tensors and runs
the partitioned program on an in-process grid."""

from __future__ import annotations

import pytest

from oxla.errors import OxlaError

torch = pytest.importorskip("torch")
ot = pytest.importorskip("oxla_frontend_torch")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


@pytest.fixture
def mlp():
    torch.manual_seed(0)
    return MLP().eval(), torch.randn(4, 16)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_marked_weights_give_megatron_mlp(mlp, backend):
    from oxla import plugins

    if backend not in plugins.backends():
        pytest.skip(f"backend {backend} not installed")
    model, x = mlp
    ot.shard(model.fc1.weight, "model=2", ("model", None))  # column-parallel
    ot.shard(model.fc2.weight, {"model": 2}, (None, "model"))  # row-parallel
    f = ot.compile(model, (x,), backend=backend)
    got = f(x)
    want = model(x).detach()
    assert got.shape == want.shape
    assert float((got - want).abs().max()) <= 1e-5 * float(want.abs().max())
    # the hidden activation stays sharded: one all-reduce after the row-parallel dot
    assert f.stats["collectives"] == {"all_reduce": 1}
    assert f.stats["num_devices"] == 2


def test_shardings_by_name_through_oxla_compile(mlp):
    import oxla

    model, x = mlp
    f = oxla.compile(model, backend="interpreter", example_inputs=(x,), mesh="data=2",
                     shardings={"arg0": ("data", None)})
    want = model(x).detach()
    assert float((f(x) - want).abs().max()) <= 1e-5 * float(want.abs().max())
    assert f.stats["collectives"] == {}  # data parallel forward: no communication
    g = oxla.compile(model, backend="interpreter", example_inputs=(x,),
                     mesh="data=2,model=2",
                     shardings={"arg0": "data,_", "fc1.weight": "model,_",
                                "fc2.weight": "_,model"})
    assert float((g(x) - want).abs().max()) <= 1e-5 * float(want.abs().max())
    assert g.stats["collectives"] == {"all_reduce": 1}


def test_bad_annotations_are_user_errors(mlp):
    model, x = mlp
    with pytest.raises(OxlaError, match="needs 2 items"):
        ot.shard(model.fc1.weight, "model=2", ("model",))
    with pytest.raises(OxlaError, match="needs mesh="):
        ot.compile(model, (x,), backend="interpreter", shardings={"arg0": "data,_"})
    with pytest.raises(OxlaError, match="no parameter matches"):
        ot.compile(model, (x,), backend="interpreter", mesh="m=2",
                   shardings={"fc9.weight": "m,_"})


def test_dtensor_placements_kept_by_torch_export_are_the_shardings():
    """Two gloo ranks (torch_dtensor_rank.py): DTensor parameters (Megatron MLP) and a
    DTensor input become oxla's shardings, the program matches eager with the whole
    weights and has the one all-reduce Megatron needs; a Partial placement is refused."""
    import os
    import socket
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("torch.distributed.tensor")
    if not torch.distributed.is_gloo_available():
        pytest.skip("torch has no gloo")
    here = Path(__file__).resolve().parent
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               PYTHONPATH=str(here.parent.parent))
    procs = [subprocess.Popen([sys.executable, str(here / "torch_dtensor_rank.py"),
                               "interpreter"], env=dict(env, RANK=str(r)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for r, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err[-3000:]
        lines = [ln for ln in out.splitlines() if ln.startswith(f"rank {r}:")]
        assert len(lines) == 2, out
        want = ("('model=2', ['param:fc1.weight=model,_', 'param:fc1.bias=model', "
                "'param:fc2.weight=_,model', 'param:fc2.bias=_', 'arg0=_,_']) "
                "{'all_reduce': 1} ")
        assert lines[0].startswith(f"rank {r}: {want}"), lines[0]
        error, logit = map(float, lines[0][len(f"rank {r}: {want}"):].split())
        assert error <= 1e-5 * logit
        assert "refused: error: 'weight' is a DTensor with placement Partial" in lines[1], lines[1]
