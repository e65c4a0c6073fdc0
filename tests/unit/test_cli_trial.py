"""CLI problems found by a second new-user trial: each test runs the ``oxla`` command
as a user would and checks what it prints, the exit status and the files it writes."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import oxla
from oxla.cli.main import cli

ADD = """func.func @main(%a: tensor<4x{t}>) -> tensor<4x{t}> {{
  %0 = stablehlo.add %a, %a : tensor<4x{t}>
  return %0 : tensor<4x{t}>
}}
"""


def run(*args: str):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _backends():
    return [b for b in ("interpreter", "cpu") if b in oxla.plugins.backends()]


def test_duplicate_main_is_refused_by_every_command(tmp_path):
    one = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
    src = tmp_path / "dup.mlir"
    src.write_text(one + one)
    for args in (("compile", src, "-o", tmp_path / "d.oxla"), ("opt", src)):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert f"{src}:4:1: error: redefinition of symbol 'main'" in result.stderr
        assert f"note: see existing symbol definition at {src}:1:1" in result.stderr
    result = run("interpret", src)
    assert result.exit_code == 1 and "redefinition of symbol 'main'" in result.output


@pytest.mark.parametrize("backend", _backends())
def test_run_reads_bfloat16_saved_by_numpy(tmp_path, backend):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    src = tmp_path / "bf.mlir"
    src.write_text(ADD.format(t="bf16"))
    art = tmp_path / "bf.oxla"
    assert run("compile", src, "--backend", backend, "-o", art).exit_code == 0
    x = np.array([1.5, -2.0, 3.25, 0.0], bf16)
    np.save(tmp_path / "raw.npy", x)  # numpy writes |V2
    assert np.load(tmp_path / "raw.npy").dtype.kind == "V"
    np.save(tmp_path / "u16.npy", x.view(np.uint16))
    for inp in ("raw.npy", "u16.npy"):
        out = tmp_path / f"{inp}.out.npz"
        result = run("run", art, "-i", tmp_path / inp, "-o", out)
        assert result.exit_code == 0, result.output
        assert "dtype bfloat16" in result.stdout
        got = np.load(out)["result0"]
        np.testing.assert_array_equal(got.view(bf16), x + x)
    # what oxla run wrote feeds back into oxla run
    np.save(tmp_path / "again.npy", np.load(tmp_path / "raw.npy.out.npz")["result0"])
    assert run("run", art, "-i", tmp_path / "again.npy").exit_code == 0
    # a float32 file is still a dtype error, not a silent reinterpretation
    np.save(tmp_path / "f32.npy", x.astype(np.float32))
    result = run("run", art, "-i", tmp_path / "f32.npy")
    assert result.exit_code == 2 and "has dtype float32, expected bfloat16" in result.stderr
    assert "ml_dtypes" in run("run", "--help").stdout


def test_run_output_is_written_at_exactly_the_given_path(tmp_path):
    src = tmp_path / "a.mlir"
    src.write_text(ADD.format(t="f32"))
    art = tmp_path / "a.oxla"
    assert run("compile", src, "-o", art).exit_code == 0
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    for name in ("o.npy", "o.npz", "o.bin"):
        result = run("run", art, "-i", tmp_path / "x.npy", "-o", tmp_path / name)
        assert result.exit_code == 0, result.output
        assert f"wrote {tmp_path / name}" in result.stdout
        assert (tmp_path / name).exists() and not (tmp_path / f"{name}.npz").exists()
        data = np.load(tmp_path / name)
        got = data if name.endswith(".npy") else data["result0"]
        np.testing.assert_array_equal(got, 2 * np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("command", ["compile", "opt", "interpret", "conformance", "run"])
def test_missing_input_file_is_one_line(tmp_path, command):
    missing = tmp_path / "nope.mlir"
    result = run(command, missing)
    assert result.exit_code == 2
    assert result.stderr == f"error: no such file: {missing}\n"


def test_text_file_given_as_npy_is_not_called_pickled(tmp_path):
    src = tmp_path / "a.mlir"
    src.write_text(ADD.format(t="f32"))
    assert run("compile", src, "-o", tmp_path / "a.oxla").exit_code == 0
    (tmp_path / "x.npy").write_text("1 2 3 4\n")
    result = run("run", tmp_path / "a.oxla", "-i", tmp_path / "x.npy")
    assert result.exit_code == 2
    assert "is not a .npy file" in result.stderr and "pickle" not in result.stderr


DYN = """func.func @main(%a: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = stablehlo.add %a, %a : tensor<?x8xf32>
  %1 = stablehlo.exponential %0 : tensor<?x8xf32>
  return %1 : tensor<?x8xf32>
}
"""


@pytest.mark.parametrize("backend", _backends())
def test_stablehlo_input_spec_refines_dynamic_dims(tmp_path, backend):
    src = tmp_path / "dyn.mlir"
    src.write_text(DYN)
    art = tmp_path / "dyn.oxla"
    result = run("compile", src, "--backend", backend, "--input-spec", "3x8:f32", "-o", art)
    assert result.exit_code == 0, result.output
    x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
    want = oxla.compile(DYN, backend="interpreter")(x)[0]  # the dynamic module as written
    np.testing.assert_allclose(oxla.load(art)(x)[0], want, rtol=1e-6)
    assert str(oxla.load(art).signature.inputs[0]) == "tensor<3x8xf32>"
    result = run("compile", src, "--input-spec", "3x9:f32")
    assert result.exit_code == 2
    assert result.stderr == ("error: input spec #0 '3x9:f32' does not fit argument #0 of "
                             "@main, tensor<?x8xf32>\n")


def test_cpu_refuses_dynamic_program_saying_what_to_do(tmp_path):
    if "cpu" not in oxla.plugins.backends():
        pytest.skip("cpu backend not installed")
    src = tmp_path / "dyn.mlir"
    src.write_text(DYN)
    result = run("compile", src, "--backend", "cpu", "-o", tmp_path / "d.oxla")
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{src}:1:1: error: argument #0 (%a) of @main has dynamic shape "
                            "tensor<?x8xf32>")
    assert "--input-spec Nx8:f32" in result.stderr
    assert "stablehlo-refine-shapes" in result.stderr


@pytest.mark.parametrize("spec, why", [
    ("3xx8:f32", "dimension '' is not a size"),
    ("3x8:f3", "'f3' is not an element type"),
])
def test_bad_input_spec_is_one_line(tmp_path, spec, why):
    src = tmp_path / "dyn.mlir"
    src.write_text(DYN)
    result = run("compile", src, "--input-spec", spec)
    assert result.exit_code == 2
    assert result.stderr == f"error: invalid input spec '{spec}': {why}; expected e.g. 4x8:f32\n"


NAN_MAX = """func.func @main(%arg0: tensor<8x33xf32>) -> tensor<8xf32> {
  %0 = stablehlo.constant dense<1.000000e+00> : tensor<8x33xf32>
  %1 = stablehlo.compare  GT, %arg0, %0 : (tensor<8x33xf32>, tensor<8x33xf32>) -> tensor<8x33xi1>
  %2 = stablehlo.constant dense<0x7FC00000> : tensor<8x33xf32>
  %3 = stablehlo.select %1, %2, %arg0 : tensor<8x33xi1>, tensor<8x33xf32>
  %4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %5 = stablehlo.reduce(%3 init: %4) applies stablehlo.maximum across dimensions = [1] :
    (tensor<8x33xf32>, tensor<f32>) -> tensor<8xf32>
  func.return %5 : tensor<8xf32>
}
"""


def test_llvm_remarks_only_with_debug(tmp_path):
    """LLVM's diagnostic lines (written by C++ to fd 2, e.g. "loop not vectorized" for a
    loop the vectorizer declines) are dropped unless --debug/OXLA_DEBUG; other fd-2
    output still gets through, and a cpu compile prints nothing."""
    import os
    import subprocess
    import sys

    if "cpu" not in oxla.plugins.backends():
        pytest.skip("cpu backend not installed")
    src = tmp_path / "nanmax.mlir"
    src.write_text(NAN_MAX)
    env = {k: v for k, v in os.environ.items() if k != "OXLA_DEBUG"}
    env["OXLA_CACHE_DIR"] = str(tmp_path / "cache")
    cmd = [sys.executable, "-m", "oxla.cli.main", "compile", str(src),
           "--backend", "cpu", "-o", str(tmp_path / "o.oxla")]
    quiet = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""

    # What LLVM's default handler prints, written to fd 2 the way C++ does.
    script = (
        "import os\n"
        "from oxla_codegen_llvm.diagnostics import llvm_diagnostics_quiet\n"
        "with llvm_diagnostics_quiet():\n"
        "    os.write(2, b'remark: <unknown>:0:0: loop not vectorized: x\\n')\n"
        "    os.write(2, b'warning: <unknown>:0:0: loop not vectorized: y\\n')\n"
        "    os.write(2, b'kept line\\n')\n")

    def run_script(debug: bool) -> str:
        e = dict(env, OXLA_DEBUG="1") if debug else env
        r = subprocess.run([sys.executable, "-c", script], env=e, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r.stderr

    assert run_script(False) == "kept line\n"
    loud = run_script(True)
    assert "remark: <unknown>:0:0: loop not vectorized" in loud and "kept line" in loud


@pytest.fixture
def bare_registry():
    """A process-wide registry with only the built-ins (restored afterwards)."""
    from oxla import plugins

    reg = plugins.PluginRegistry()
    reg.register_builtins()
    old = plugins.set_registry(reg)
    yield reg
    plugins.set_registry(old)


def test_torch_frontend_that_failed_to_load_is_not_called_missing(tmp_path, bare_registry):
    import importlib.metadata as md

    from oxla.plugins import PluginWarning

    ep = md.EntryPoint("frontend_torch", "oxla_no_such_module_xyz.plugin", "oxla")
    with pytest.warns(PluginWarning):
        bare_registry.load_entry_points(entry_points=[(ep, "oxla-frontend-torch", "0.1")])
    model = tmp_path / "cnn.pt2"
    model.write_bytes(b"PK\x03\x04")
    result = run("compile", model)
    assert result.exit_code == 2
    assert "pip install" not in result.stderr
    assert ("the torch frontend is unavailable: plugin distribution 'oxla-frontend-torch' is "
            "installed but failed to load: ModuleNotFoundError") in result.stderr
    rows = [line.split() for line in run("plugins").stdout.splitlines()]
    torch_row = next(r for r in rows if r[0] == "torch")
    assert torch_row[1:5] == ["frontend", "oxla-frontend-torch", "0.1", "unavailable:"]


def test_torch_frontend_left_out_by_oxla_load_plugins(tmp_path, bare_registry, monkeypatch):
    import importlib.metadata as md

    monkeypatch.setenv("OXLA_LOAD_PLUGINS", "oxla-backend-cpu")
    eps = [(md.EntryPoint("frontend_torch", "oxla_frontend_torch.plugin", "oxla"),
            "oxla-frontend-torch", "0.1"),
           (md.EntryPoint("backend_cpu", "oxla_no_such_module_xyz", "oxla"),
            "oxla-backend-cpu", "0.1")]
    with pytest.warns(oxla.plugins.PluginWarning):  # the cpu one, loaded, fails
        bare_registry.load_entry_points(entry_points=eps)
    model = tmp_path / "cnn.pt2"
    model.write_bytes(b"PK\x03\x04")
    for args in (("compile", model), ("compile", model, "--frontend", "torch")):
        result = run(*args)
        assert result.exit_code == 2
        assert ("'oxla-frontend-torch' is installed but not loaded: "
                "OXLA_LOAD_PLUGINS=oxla-backend-cpu leaves it out") in result.stderr
        assert "pip install" not in result.stderr


def test_plugins_lists_each_pattern_once(bare_registry):
    names = [r.name for r in bare_registry.records() if r.kind == "pattern"]
    assert "and_or_self" in names  # one pattern rooted at both and and or
    assert len(names) == len(set(names))


def test_stablehlo_frontend_on_a_binary_file_names_it(tmp_path):
    model = tmp_path / "cnn.pt2"
    model.write_bytes(b"PK\x03\x04\x14\x00\x00\x08\xff\xfe\x00\x00")
    result = run("compile", model, "--frontend", "stablehlo")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: '{model}' is not StableHLO text")


def test_interpret_prints_plain_numbers(tmp_path):
    src = tmp_path / "chk.mlir"
    src.write_text("""func.func @main() {
  %0 = stablehlo.constant dense<[1.0, 3.5]> : tensor<2xf32>
  %1 = stablehlo.add %0, %0 : tensor<2xf32>
  check.expect_eq_const %1, dense<[2.0, 6.5]> : tensor<2xf32>
  %2 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  check.expect_eq_const %2, dense<[true, true]> : tensor<2xi1>
  func.return
}
""")
    result = run("interpret", src)
    assert result.exit_code == 1
    assert "at [1]: expected 6.5, got 7.0" in result.stdout
    assert "at [1]: expected True, got False" in result.stdout
    assert "np." not in result.stdout


def test_opt_print_ir_after_unknown_pass_is_an_error(tmp_path):
    src = tmp_path / "a.mlir"
    src.write_text(ADD.format(t="f32"))
    result = run("opt", src, "-p", "default", "--print-ir-after", "nope")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: --print-ir-after 'nope' is not a known pass; the "
                               "pipeline runs: inline")
    assert lines[1].startswith("note: known passes: ") and "stablehlo-refine-shapes" in lines[1]
    result = run("opt", src, "-p", "cse", "--print-ir-after", "dce")
    assert result.exit_code == 2 and "'dce' is not in the pipeline" in result.stderr
    result = run("opt", src, "-p", "cse,dce", "--print-ir-after", "dce")
    assert result.exit_code == 0 and "IR Dump After dce" in result.stderr


CUSTOM = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""


def test_interpreter_checks_custom_call_targets_at_compile_time(tmp_path, bare_registry):
    from oxla import hookimpl
    from oxla.plugins import PluginSource
    from oxla.protocols import CustomCallInfo

    src = tmp_path / "cc.mlir"
    src.write_text(CUSTOM)
    result = run("compile", src, "-o", tmp_path / "cc.oxla")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == (f"{src}:2:8: error: stablehlo.custom_call: no implementation of "
                        "custom call target 'my_kernel' for the interpreter backend")
    assert "CustomCallInfo(target='my_kernel', backend='interpreter'" in result.stderr
    assert not (tmp_path / "cc.oxla").exists()

    class Kernel:
        @hookimpl
        def oxla_custom_calls(self):
            return [CustomCallInfo("my_kernel", "interpreter", lambda ctx, op, args: [
                args[0] * 3])]

    bare_registry.register(Kernel(), PluginSource("oxla-test-kernel", "1", "k = x"))
    assert run("compile", src, "-o", tmp_path / "cc.oxla").exit_code == 0
    out = oxla.load(tmp_path / "cc.oxla")(np.arange(4, dtype=np.float32))[0]
    np.testing.assert_array_equal(out, 3 * np.arange(4, dtype=np.float32))
