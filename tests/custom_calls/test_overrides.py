"""Bottleneck overrides: the demo's RMSNorm pattern matched as a DAG (commutative
operands, folded broadcasts), its constraints reported, per backend, disabled by name,
verified against the interpreter, and through ``oxla compile``'s two flags."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest
from click.testing import CliRunner

import oxla
from oxla import hookimpl, plugins
from oxla.errors import OxlaError
from oxla.ir import parse_module, print_module
from oxla.passes import run_pipeline
from oxla.plugins import PluginSource
from tests.custom_calls.demo_pkg import demo_registry

pytest.importorskip("oxla_backend_cpu")
NAME = "demo.llama-rmsnorm"
CUDA_NAME = "demo.llama-rmsnorm-cuda"


def rmsnorm_program(swap: bool = False, folded: bool = True, eps_arg: bool = False,
                    extra_use: bool = False, n: float = 16.0) -> str:
    """An RMSNorm over ``tensor<2x3x16xf32>`` in the forms frontends and passes leave."""
    t, r, k = "tensor<2x3x16xf32>", "tensor<2x3xf32>", "tensor<2x3x1xf32>"

    def scalar(name: str, value: float, ty: str) -> str:
        if folded:
            return f"  %{name} = stablehlo.constant dense<{value:e}> : {ty}\n"
        return (f"  %{name}s = stablehlo.constant dense<{value:e}> : tensor<f32>\n"
                f"  %{name} = stablehlo.broadcast_in_dim %{name}s, dims = [] : "
                f"(tensor<f32>) -> {ty}\n")

    eps = (f"  %eb = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<f32>) -> {k}\n"
           if eps_arg else scalar("eb", 1e-6, k))
    mul = "%x, %rb" if not swap else "%rb, %x"
    out = "%wb, %y" if not swap else "%y, %wb"
    ret = "%out, %mean" if extra_use else "%out"
    rtypes = f"{t}, {r}" if extra_use else t
    args = "%x: tensor<2x3x16xf32>, %w: tensor<16xf32>" + (", %e: tensor<f32>" if eps_arg
                                                            else "")
    return (f"func.func @main({args}) -> ({rtypes}) {{\n"
            f"  %sq = stablehlo.multiply %x, %x : {t}\n"
            "  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>\n"
            f"  %sum = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across "
            f"dimensions = [2] : ({t}, tensor<f32>) -> {r}\n"
            + scalar("nb", n, r) +
            f"  %mean = stablehlo.divide %sum, %nb : {r}\n"
            f"  %rr = stablehlo.reshape %mean : ({r}) -> {k}\n" + eps +
            f"  %a = stablehlo.add %rr, %eb : {k}\n"
            f"  %rs = stablehlo.rsqrt %a : {k}\n"
            f"  %rb = stablehlo.broadcast_in_dim %rs, dims = [0, 1, 2] : ({k}) -> {t}\n"
            f"  %y = stablehlo.multiply {mul} : {t}\n"
            f"  %wb = stablehlo.broadcast_in_dim %w, dims = [2] : (tensor<16xf32>) -> {t}\n"
            f"  %out = stablehlo.multiply {out} : {t}\n"
            f"  return {ret} : {rtypes}\n}}\n")


def _inputs(eps_arg: bool = False):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 16), dtype=np.float32)
    w = rng.standard_normal(16, dtype=np.float32)
    return (x, w, np.float32(1e-6)) if eps_arg else (x, w)


def _summary(exe) -> dict:
    (entry,) = [e for e in exe.stats["overrides"] if e["override"] == NAME]
    return entry


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("folded", [False, True])
def test_fires_on_commuted_and_broadcast_forms_and_matches(demo, swap, folded):
    text = rmsnorm_program(swap=swap, folded=folded)
    exe = oxla.compile(text, backend="cpu", cache=False)
    assert _summary(exe)["fired"] == 1
    args = _inputs()
    ref = oxla.compile(text, backend="interpreter")(*args)[0]
    got = exe(*args)[0]
    assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))


@pytest.mark.parametrize("kwargs, reason", [
    ({"eps_arg": True}, "constraint failed: %eps is a constant"),
    ({"n": 15.0}, "constraint failed: %n equals the normalized dim"),
    ({"extra_use": True}, "used outside it"),
])
def test_reports_why_it_did_not_fire(demo, kwargs, reason):
    text = rmsnorm_program(**kwargs)
    exe = oxla.compile(text, backend="cpu", cache=False)
    entry = _summary(exe)
    assert entry["fired"] == 0 and reason in entry["reason"], entry
    args = _inputs(kwargs.get("eps_arg", False))
    np.testing.assert_allclose(exe(*args)[0], oxla.compile(text, backend="interpreter")(
        *args)[0], rtol=1e-5, atol=1e-6)


def test_a_cpu_override_never_changes_another_backends_program(demo):
    text = rmsnorm_program()
    module = parse_module(text)
    for other in ("interpreter", "cuda", "hip"):
        run_pipeline(module, f"plugin-patterns{{backend={other}}}")
        assert print_module(module) == print_module(parse_module(text)), other
    run_pipeline(module, "plugin-patterns{backend=cpu}")
    assert "demo.rmsnorm" in print_module(module)
    exe = oxla.compile(text, backend="interpreter")
    assert "custom_call" not in print_module(exe.module)
    assert "overrides" not in exe.stats
    for other in ("cuda", "hip"):  # compiling needs no device
        if importlib.util.find_spec(f"oxla_backend_{other}") is None:
            continue
        exe = oxla.compile(text, backend=other, cache=False)
        assert exe.program.custom == [] and "overrides" not in exe.stats, other
        assert all(st["op"] != "custom" for st in exe.program.steps)


class _CudaOverride:
    """The demo's pattern, for the cuda backend only (its CUDA C implementation)."""

    @hookimpl
    def oxla_patterns(self):
        from oxla_kernels import Override
        from oxla_kernels_demo.kernels import RMSNORM, RMSNORM_OVERRIDE

        over = Override(CUDA_NAME, RMSNORM_OVERRIDE.pattern, RMSNORM,
                        operands=RMSNORM_OVERRIDE.operands, attrs=RMSNORM_OVERRIDE.attrs,
                        constraints=RMSNORM_OVERRIDE.constraints, backends=("cuda",))
        return [over.pattern_info()]


def test_a_cuda_override_fires_on_cuda_only_and_runs_on_the_simulated_device(monkeypatch):
    pytest.importorskip("oxla_backend_cuda")
    from oxla_codegen_llvm.simt import ocelot

    lib, why = ocelot.library()
    if lib is None:
        assert os.environ.get("CI") != "true", f"gpuocelot must load in CI: {why}"
        pytest.skip(why)
    monkeypatch.setenv("OXLA_CUDA_DEVICE", "sim")
    reg = demo_registry()
    reg.register(_CudaOverride(), PluginSource("t-cuda-override", "0", "t = x"))
    old = plugins.set_registry(reg)
    try:
        text = rmsnorm_program()
        cuda = oxla.compile(text, backend="cuda", cache=False)
        (entry,) = cuda.stats["overrides"]  # the cpu override is not cuda's
        assert entry["override"] == CUDA_NAME and entry["fired"] == 1
        assert [r.entry for r in cuda.program.custom] == ["demo_rmsnorm"]
        args = _inputs()
        ref = oxla.compile(text, backend="interpreter")(*args)[0]
        got = cuda(*args)[0]
        assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))
        cpu = oxla.compile(text, backend="cpu", cache=False)
        assert [e["override"] for e in cpu.stats["overrides"]] == [NAME]
    finally:
        plugins.set_registry(old)


def test_disabled_by_name(demo, monkeypatch):
    monkeypatch.setenv("OXLA_DISABLE_OVERRIDES", f"other,{NAME}")
    exe = oxla.compile(rmsnorm_program(), backend="cpu")
    assert _summary(exe) == {"override": NAME, "fired": 0, "where": [],
                             "reason": "disabled by OXLA_DISABLE_OVERRIDES"}
    monkeypatch.delenv("OXLA_DISABLE_OVERRIDES")
    assert _summary(oxla.compile(rmsnorm_program(), backend="cpu"))["fired"] == 1  # cached


def test_verify_overrides_checks_the_kernel_against_the_interpreter(demo, monkeypatch):
    text = rmsnorm_program()
    exe = oxla.compile(text, backend="cpu", cache=False, extra={"verify_overrides": True})
    args = _inputs()
    exe(*args)
    (rep,) = exe.verify_report
    assert rep["override"] == NAME and rep["max_error"] <= 1e-5 * rep["max_reference"]
    impl = demo.RMSNORM.impl("c")
    wrong = impl.source.replace("w[i] * (xr[i] * inv)", "1.001f * w[i] * (xr[i] * inv)")
    monkeypatch.setattr(impl, "source", wrong)
    monkeypatch.setattr(impl, "_fn", None)
    plugins.set_registry(demo_registry())  # the demo fixture restores the previous one
    bad = oxla.compile(text, backend="cpu", cache=False, extra={"verify_overrides": True})
    with pytest.raises(OxlaError, match=f"override '{NAME}'.*exceeds 1e-05"):
        bad(*args)


def test_cli_explain_and_verify(demo, tmp_path):
    from oxla.cli.main import cli

    src = tmp_path / "m.mlir"
    src.write_text(rmsnorm_program())
    bad = tmp_path / "bad.mlir"
    bad.write_text(rmsnorm_program(n=15.0))
    run = CliRunner().invoke(cli, ["compile", str(src), "--backend", "cpu",
                                   "--explain-overrides", "--verify-overrides", "-o",
                                   str(tmp_path / "m.oxla")])
    assert run.exit_code == 0, run.output
    assert f"override {NAME}: fired 1 time(s)" in run.output
    assert f"verified override {NAME} at " in run.output
    run = CliRunner().invoke(cli, ["compile", str(bad), "--backend", "cpu",
                                   "--explain-overrides", "-o", str(tmp_path / "b.oxla")])
    assert run.exit_code == 0, run.output
    assert f"override {NAME}: not fired: constraint failed: %n equals" in run.output
