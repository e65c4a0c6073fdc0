"""jax.export artifacts: file round trip, the CLI, shape polymorphism, input errors."""

from __future__ import annotations

import pytest

pytest.importorskip("jax")
pytest.importorskip("oxla_frontend_jax")

import jax
import jax.numpy as jnp
import numpy as np
import oxla_frontend_jax as oj
from click.testing import CliRunner
from jax import export
from jax.example_libraries import stax

import oxla
from oxla import plugins
from oxla.cli.main import cli
from oxla.errors import NotSupportedError, RuntimeInputError

pytest.importorskip("flatbuffers")


def _cnn():
    init, apply = stax.serial(
        stax.Conv(4, (3, 3), padding="SAME"), stax.Relu, stax.Flatten, stax.Dense(5),
        stax.Softmax,
    )
    _, params = init(jax.random.PRNGKey(2), (2, 6, 6, 1))
    x = jax.random.normal(jax.random.PRNGKey(3), (2, 6, 6, 1), jnp.float32)
    return apply, params, x


def _elementwise(x, y):
    return {"a": jnp.sin(x) * jnp.sum(y), "b": jnp.exp(x) + 1.0}


def test_export_file_round_trip(tmp_path, backend, assert_close):
    apply, params, x = _cnn()
    path = tmp_path / "cnn.jaxexport"
    path.write_bytes(export.export(jax.jit(apply))(params, x).serialize())
    try:
        fn = oj.compile_exported(path, backend=backend)
    except NotSupportedError as exc:
        if backend in ("interpreter", "cpu"):  # both compile every op of these
            raise
        pytest.xfail(f"backend {backend}: {exc.one_line()}")
    assert_close(fn(params, x), jax.jit(apply)(params, x))


def test_export_with_several_platforms_selects_cpu(assert_close):
    x, y = jnp.ones((2, 3)), jnp.arange(3.0)
    exp = export.export(jax.jit(_elementwise), platforms=["cuda", "cpu"])(x, y)
    module = oj.import_exported(exp.serialize())
    assert len(module.main.regions[0].block.args) == 2
    assert_close(oj.compile_exported(exp)(x, y), _elementwise(x, y))


def test_cli_compile_and_run(tmp_path):
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    y = np.arange(3, dtype=np.float32)
    src = tmp_path / "f.jaxexport"
    src.write_bytes(export.export(jax.jit(_elementwise))(x, y).serialize())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    runner = CliRunner()
    out = tmp_path / "f.oxla"
    r = runner.invoke(cli, ["compile", str(src), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "frontend jax" in r.output
    r = runner.invoke(cli, ["run", str(out), "--input", str(tmp_path / "x.npy"), "--input",
                            str(tmp_path / "y.npy"), "--output", str(tmp_path / "o.npz")])
    assert r.exit_code == 0, r.output
    assert "result0: shape (2, 3) dtype float32" in r.output
    got = np.load(tmp_path / "o.npz")
    want = _elementwise(x, y)
    np.testing.assert_allclose(got["result0"], want["a"], rtol=1e-5)
    np.testing.assert_allclose(got["result1"], want["b"], rtol=1e-5)


def test_cli_emit_stablehlo_and_mlir_input(tmp_path):
    src = tmp_path / "f.jaxexport"
    src.write_bytes(export.export(jax.jit(jnp.cos))(jnp.ones(4)).serialize())
    runner = CliRunner()
    mlir = tmp_path / "f.mlir"
    r = runner.invoke(cli, ["compile", "--frontend", "jax", str(src), "--emit", "stablehlo",
                            "-o", str(mlir)])
    assert r.exit_code == 0, r.output
    assert "stablehlo.cosine" in mlir.read_text()
    r = runner.invoke(cli, ["compile", str(mlir), "-o", str(tmp_path / "g.oxla")])
    assert r.exit_code == 0, r.output
    assert "frontend stablehlo" in r.output
    np.testing.assert_allclose(oxla.load(tmp_path / "g.oxla")(np.zeros(4, np.float32))[0],
                               np.ones(4, np.float32))


def test_frontend_detection():
    assert plugins.detect_frontend("model.jaxexport") == "jax"
    assert plugins.detect_frontend("model.mlir") == "stablehlo"


def _poly_export():
    (b,) = export.symbolic_shape("b")
    spec = (jax.ShapeDtypeStruct((b, 3), jnp.float32), jax.ShapeDtypeStruct((3,), jnp.float32))
    return export.export(jax.jit(_elementwise))(*spec)


@pytest.mark.parametrize("batch", [2, 5])
def test_shape_polymorphic_export_at_two_sizes(batch, backend, assert_close):
    exp = _poly_export()
    x = jax.random.normal(jax.random.PRNGKey(batch), (batch, 3), jnp.float32)
    y = jnp.arange(3.0)
    if "stablehlo-refine-shapes" not in plugins.passes():
        with pytest.raises(NotSupportedError, match="needs the 'stablehlo-refine-shapes' pass"):
            oj.compile_exported(exp, arg_shapes=[(batch, 3), (3,)])
        # the dynamic module itself still runs on the interpreter, at any batch
        fn = oj.compile_exported(exp, backend="interpreter")
    else:
        try:
            fn = oj.compile_exported(exp, backend=backend, arg_shapes=[(batch, 3), (3,)])
        except NotSupportedError as exc:
            if backend in ("interpreter", "cpu"):
                raise
            pytest.xfail(f"backend {backend}: {exc.one_line()}")
        assert fn.executable.signature.inputs[0].shape == (batch, 3)
    assert_close(fn(x, y), _elementwise(x, y))


def test_polymorphic_cli_input_spec(tmp_path):
    src = tmp_path / "p.jaxexport"
    src.write_bytes(_poly_export().serialize())
    r = CliRunner().invoke(cli, ["compile", str(src), "--input-spec", "4x3:f32",
                                 "--input-spec", "3:f32", "-o", str(tmp_path / "p.oxla")])
    if "stablehlo-refine-shapes" in plugins.passes():
        assert r.exit_code == 0, r.output
    else:
        assert r.exit_code == 2
        assert "stablehlo-refine-shapes" in r.output


def test_input_spec_that_contradicts_the_export():
    with pytest.raises(RuntimeInputError, match=r"argument #0 has shape \(4, 2\), expected"):
        oj.import_exported(_poly_export(), arg_shapes=["4x2:f32", "3:f32"])


def test_wrong_shape_call_reports_expected_and_given():
    exp = export.export(jax.jit(_elementwise))(jnp.ones((2, 3)), jnp.ones(3))
    fn = oj.compile_exported(exp)
    with pytest.raises(RuntimeInputError, match=r"shape \(4, 3\), expected 2x3"):
        fn(jnp.ones((4, 3)), jnp.ones(3))


def test_not_an_export_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.jaxexport"
    bad.write_bytes(b"not a flatbuffer")
    with pytest.raises(oxla.OxlaError, match="is not a jax.export artifact") as info:
        oj.import_exported(bad)
    assert info.value.one_line().count("error:") == 1  # was "error: ... error: unpack_from"
