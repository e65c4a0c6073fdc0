"""The models users bring, on the ``cpu`` backend, against eager (max |error| <= 1e-4 of
max |output|): through ``oxla compile`` (the CLI, each in a fresh process, as a user runs
it), through
``torch.compile(backend="oxla")`` at two input sizes, and two SGD steps of training
(loss, every gradient, running statistics)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")
pytest.importorskip("transformers")

import numpy as np  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import oxla  # noqa: E402
from oxla import plugins  # noqa: E402
from tests.frontend_torch.zoo import MODELS, TRAIN, all_tensors, first_tensor  # noqa: E402


@pytest.fixture(autouse=True)
def _cpu_and_fresh_dynamo():
    if "cpu" not in plugins.backends():
        pytest.skip("the cpu backend is not installed")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _close(got, want, what: str) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, what
    scale = np.abs(want).max()
    assert scale > 0, what
    err = np.abs(got - want).max()
    assert err <= 1e-4 * scale, f"{what}: max |error| {err:.3g}, max |output| {scale:.3g}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_cli_compile_on_cpu_matches_eager(name: str, tmp_path) -> None:
    make, inputs, sizes = MODELS[name]
    model = make().eval()
    args = inputs(*sizes[0])
    src = tmp_path / f"{name}.pt2"
    torch.export.save(torch.export.export(model, args, strict=False), str(src))
    out = tmp_path / f"{name}.oxla"
    r = subprocess.run([sys.executable, "-m", "oxla.cli.main", "compile", str(src),
                        "--backend", "cpu", "-o", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.strip() == "", r.stderr  # no warnings on a supported model
    got = oxla.load(str(out))(*[a.numpy() for a in args])
    with torch.no_grad():
        want = all_tensors(model(*args))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g, w.numpy(), f"{name} output {i}")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torch_compile_two_sizes_matches_eager(name: str) -> None:
    make, inputs, sizes = MODELS[name]
    model = make().eval()
    compiled = torch.compile(model, backend="oxla")  # default backend: cpu
    for b, s in sizes:
        args = inputs(b, s)
        with torch.no_grad():
            want, got = all_tensors(model(*args)), all_tensors(compiled(*args))
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, f"{name} at {(b, s)}, output {i}")


def _loss(fwd, args: tuple, classes: int) -> torch.Tensor:
    out = first_tensor(fwd(*args))
    if classes == 0:  # causal LM: predict the next id
        ids = args[0]
        return F.cross_entropy(out[:, :-1].reshape(-1, out.shape[-1]), ids[:, 1:].reshape(-1))
    return F.cross_entropy(out, torch.arange(out.shape[0]) % classes)


def _two_steps(model, fwd, inputs, classes: int) -> list:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    steps = []
    for batch in (4, 4):
        opt.zero_grad()
        loss = _loss(fwd, inputs(batch, 8), classes)
        loss.backward()
        steps.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}))
        opt.step()
    return steps


@pytest.mark.parametrize("name", sorted(TRAIN))
def test_two_sgd_steps_match_eager(name: str) -> None:
    make, inputs, classes = TRAIN[name]
    eager = make().train()
    model = copy.deepcopy(eager)
    want = _two_steps(eager, eager, inputs, classes)
    got = _two_steps(model, torch.compile(model, backend="oxla"), inputs, classes)
    for step, ((gl, gg), (wl, wg)) in enumerate(zip(got, want)):
        _close(gl, wl, f"{name} step {step} loss")
        for pname, w in wg.items():
            # a gradient that is zero in exact arithmetic (a key bias under softmax)
            # carries rounding noise only: bound it by 1e-8 absolute
            err = (gg[pname] - w).abs().max().item()
            assert err <= 1e-4 * w.abs().max().item() + 1e-8, f"{name} step {step} {pname}"
    for (bname, got_buf), want_buf in zip(model.named_buffers(), eager.buffers()):
        if got_buf.dtype == torch.long:
            assert torch.equal(got_buf, want_buf), bname
        else:
            _close(got_buf, want_buf, f"{name} buffer {bname}")
