"""Error messages (unsupported op, wrong file, wrong input shape) and the CLI round trip."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("oxla_frontend_torch")

import numpy as np
import oxla_frontend_torch as ot
import torch
from click.testing import CliRunner

import oxla
from oxla import plugins
from oxla.cli.main import cli
from oxla.errors import LoweringError, RuntimeInputError


class _Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.fc(x)) * 2.0


@torch.library.custom_op("oxla_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class _WithCustomOp(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + 1
        return torch.ops.oxla_test.twice(y)  # the unsupported line


def test_unsupported_op_names_op_source_line_and_route() -> None:
    with pytest.raises(LoweringError) as ei:
        ot.compile(_WithCustomOp(), (torch.randn(3),))
    msg = str(ei.value)
    first = msg.splitlines()[0]
    assert "no lowering rule for ATen op 'oxla_test.twice.default'" in first
    assert "test_errors_cli.py:" in first  # the user's file and line
    assert "return torch.ops.oxla_test.twice(y)  # the unsupported line" in msg
    assert "oxla_custom_calls" in msg and "oxla_patterns" in msg


def test_wrong_input_shape_says_expected_and_given() -> None:
    f = ot.compile(_Small(), (torch.randn(2, 4),))
    with pytest.raises(RuntimeInputError) as ei:
        f(torch.randn(3, 4))
    msg = ei.value.one_line()
    assert "(3, 4)" in msg and "expected 2x4" in msg


def test_oxla_compile_dispatches_torch_modules() -> None:
    m = _Small().eval()
    x = torch.randn(2, 4)
    f = oxla.compile(m, example_inputs=(x,))
    with torch.no_grad():
        want = m(x)
    got = f(x)
    assert isinstance(got, torch.Tensor)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_params_as_inputs_and_locations() -> None:
    m = _Small().eval()
    x = torch.randn(2, 4)
    ep = torch.export.export(m, (x,))
    mod = ot.import_program(ep, params_as_inputs=True)
    func = mod.body.ops[0]
    args = func.regions[0].blocks[0].args
    assert [tuple(a.type.shape) for a in args] == [(3, 4), (3,), (2, 4)]
    out = oxla.compile(mod)(m.fc.weight.detach().numpy(), m.fc.bias.detach().numpy(),
                            x.numpy())[0]
    np.testing.assert_allclose(out, m(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    locs = [str(op.loc) for op in func.regions[0].blocks[0].ops]
    assert any("test_errors_cli.py" in s and "aten.tanh" in s for s in locs), locs


def test_dynamic_dims_specialize_per_shape() -> None:
    m = _Small().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    f = ot.compile(m, (torch.randn(2, 4),), dynamic_shapes=({0: batch},))
    for n in (2, 5):
        x = torch.randn(n, 4)
        with torch.no_grad():
            assert torch.allclose(f(x), m(x), rtol=1e-5, atol=1e-6)
    assert len(f.executables) == 2
    with pytest.raises(RuntimeInputError, match=r"expected \?x4"):
        f(torch.randn(2, 5))


def test_cli_compile_run_and_emit(tmp_path) -> None:
    m = _Small().eval()
    x = torch.randn(2, 4)
    src = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(m, (x,)), str(src))
    assert plugins.detect_frontend(str(src)) == "torch"
    np.save(tmp_path / "x.npy", x.numpy())
    runner = CliRunner()
    out = tmp_path / "small.oxla"
    r = runner.invoke(cli, ["compile", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "frontend torch" in r.output
    r = runner.invoke(cli, ["run", str(out), "--input", str(tmp_path / "x.npy"),
                            "--output", str(tmp_path / "o.npz")])
    assert r.exit_code == 0, r.output
    with torch.no_grad():
        want = m(x).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["result0"], want, rtol=1e-5,
                               atol=1e-6)
    r = runner.invoke(cli, ["compile", str(src), "--emit", "stablehlo"])
    assert r.exit_code == 0, r.output
    assert "stablehlo.tanh" in r.output and "stablehlo.dot_general" in r.output


def test_cli_rejects_torchscript_and_state_dict(tmp_path) -> None:
    m = _Small().eval()
    ts = tmp_path / "model.pt"
    torch.jit.script(m).save(str(ts))
    sd = tmp_path / "weights.pth"
    torch.save(m.state_dict(), str(sd))
    runner = CliRunner()
    r = runner.invoke(cli, ["compile", str(ts), "-o", str(tmp_path / "a.oxla")])
    assert r.exit_code == 2, r.output
    lines = [s for s in r.output.splitlines() if s.strip()]
    assert len(lines) == 1, r.output
    assert "TorchScript archive" in lines[0] and "torch.export.save" in lines[0]
    r = runner.invoke(cli, ["compile", "--frontend", "torch", str(sd), "-o",
                            str(tmp_path / "b.oxla")])
    assert r.exit_code == 2, r.output
    assert "state dict" in r.output and "torch.export.save" in r.output


def test_cli_params_as_inputs(tmp_path) -> None:
    m = _Small().eval()
    x = torch.randn(2, 4)
    src = tmp_path / "small.pt2"
    torch.export.save(torch.export.export(m, (x,)), str(src))
    runner = CliRunner()
    r = runner.invoke(cli, ["compile", "--frontend", "torch", str(src), "--emit", "stablehlo",
                            "--params-as-inputs"])
    assert r.exit_code == 0, r.output
    head = next(s for s in r.output.splitlines() if "func.func" in s)
    assert "tensor<3x4xf32>" in head and "tensor<3xf32>" in head and "tensor<2x4xf32>" in head
    consts = [s for s in r.output.splitlines() if "stablehlo.constant" in s]
    assert not [s for s in consts if "3x4xf32" in s or "tensor<3xf32>" in s], consts
    out = tmp_path / "p.oxla"
    r = runner.invoke(cli, ["compile", str(src), "--params-as-inputs", "-o", str(out)])
    assert r.exit_code == 0, r.output
    arrays = [m.fc.weight.detach().numpy(), m.fc.bias.detach().numpy(), x.numpy()]
    for i, a in enumerate(arrays):
        np.save(tmp_path / f"a{i}.npy", a)
    args = [a for i in range(3) for a in ("--input", str(tmp_path / f"a{i}.npy"))]
    r = runner.invoke(cli, ["run", str(out), *args, "--output", str(tmp_path / "o.npz")])
    assert r.exit_code == 0, r.output
    with torch.no_grad():
        want = m(x).numpy()
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["result0"], want, rtol=1e-5,
                               atol=1e-6)
