"""The ONNX importer on hand-built models, checked against onnxruntime (the source
framework's own runtime) on every installed backend."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import need
from onnx import TensorProto, helper
from onnx_helpers import mlp, model, ort_run
from oxla_frontend_onnx import compile as onnx_compile
from oxla_frontend_onnx import import_model, supported_ops
from oxla_frontend_onnx.registry import RULES, lookup

import oxla
from oxla.errors import NotSupportedError, OxlaError, RuntimeInputError

need("onnxruntime")


def test_rule_table_is_keyed_by_domain_op_and_version():
    # Squeeze reads axes from an attribute before opset 13, from an input after
    assert sorted(RULES[("", "Squeeze")]) == [1, 13]
    assert sorted(RULES[("", "Softmax")]) == [1, 13]  # the 2-D coercion ends at 13
    assert lookup("", "Softmax", 12) is not lookup("", "Softmax", 13)
    assert lookup("", "Softmax", 21) is lookup("", "Softmax", 13)
    assert lookup("", "Attention", 22) is None and lookup("", "Attention", 23) is not None
    assert ("", "Conv") in RULES and "ai.onnx::Conv" in supported_ops()


def test_mlp_matches_onnxruntime_with_two_batch_sizes(backend):
    m = mlp()
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 8)).astype(np.float32)
        fn = onnx_compile(m, backend, input_specs=[f"{batch}x8"])
        (y,) = fn(x)
        (ref,) = ort_run(m, x)
        assert y.shape == (batch, 4)
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_inputs_by_name_and_signature_names():
    fn = onnx_compile(mlp(), "interpreter", input_specs=["2x8"])
    assert fn.input_names == ["x"] and fn.output_names == ["y"]
    x = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(fn(x=x)[0], fn(x)[0])
    np.testing.assert_array_equal(fn.run(["y"], {"x": x})[0], fn(x)[0])
    with pytest.raises(RuntimeInputError, match="unknown input"):
        fn(z=x)


def test_oxla_compile_takes_a_model_proto_and_a_path(tmp_path):
    import onnx

    m = mlp()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
    path = tmp_path / "mlp.onnx"
    onnx.save(m, path)
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    (ref,) = ort_run(m, x)
    for program in (m, str(path)):
        fn = oxla.compile(program, backend="interpreter")
        np.testing.assert_allclose(fn(x)[0], ref, rtol=1e-5, atol=1e-6)


def test_symbolic_dim_without_spec_is_a_clear_error():
    with pytest.raises(NotSupportedError, match="'x' has symbolic dims \\(batch: \\?x8\\).*"
                                                "--input-spec"):
        import_model(mlp())


def test_symbolic_dims_without_spec_compile_per_call_shape(tmp_path):
    m = mlp()
    fn = onnx_compile(m, backend="cpu")
    rng = np.random.default_rng(2)
    for batch in (2, 5, 2):
        x = rng.standard_normal((batch, 8)).astype(np.float32)
        (ref,) = ort_run(m, x)
        np.testing.assert_allclose(fn(x)[0], ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(fn(x=x)[0], ref, rtol=1e-5, atol=1e-6)
    assert sorted(k[0][0] for k in fn.compiled) == [(2, 8), (5, 8)]
    with pytest.raises(OxlaError, match="compiled per input shape"):
        fn.save(tmp_path / "m.oxla")
    with pytest.raises(RuntimeInputError, match="unknown input"):
        fn(y=x)


def test_unsupported_op_names_op_domain_opset_node_index_and_route():
    m = model([helper.make_node("Relu", ["x"], ["r"]),
               helper.make_node("Unique", ["r"], ["y"], name="uniq")],
              [("x", TensorProto.FLOAT, [4])], [("y", TensorProto.FLOAT, ["u"])])
    with pytest.raises(NotSupportedError) as info:
        import_model(m)
    text = info.value.render()
    assert "Unique node 'uniq' (#1, ai.onnx opset 18)" in text
    assert "oxla_onnx_rules" in text and "custom_call" in text
    assert "output shape depends on the input values (the number of distinct values)" in text


def test_data_dependent_op_on_a_constant_is_folded():
    c = np.array([0, 1, 0, 2, 3], np.float32)
    m = model([helper.make_node("NonZero", ["c"], ["nz"]),
               helper.make_node("Add", ["nz", "x"], ["y"])],
              [("x", TensorProto.INT64, [1, 3])], [("y", TensorProto.INT64, [1, 3])],
              {"c": c})
    x = np.array([[10, 20, 30]], np.int64)
    out = onnx_compile(m, "interpreter")(x)[0]
    np.testing.assert_array_equal(out, np.nonzero(c)[0][None] + x)


@pytest.mark.parametrize("spec, message", [
    ("2x8:i64", "input 'x' has element type f32, the spec '2x8:i64' gives i64"),
    ("2x9:f32", "input 'x' has dimension 1 of size 8, the spec '2x9:f32' gives 9"),
    ("2x8x1", "input 'x' has rank 2, the spec '2x8x1' gives rank 3"),
    ("2xq", "invalid input spec '2xq'"),
])
def test_input_spec_that_does_not_fit_the_model_is_refused(spec, message):
    with pytest.raises(OxlaError, match=message.replace("(", "\\(")):
        import_model(mlp(), input_specs=[spec])


def test_invalid_model_gets_the_checker_message():
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", TensorProto.FLOAT, [4])],
              [("y", TensorProto.FLOAT, [4])])
    m.graph.node[0].input[0] = "nope"
    with pytest.raises(OxlaError, match="invalid ONNX model: .*nope"):
        import_model(m)


def test_shape_chains_fold_to_constants():
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape becomes a static reshape."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
             helper.make_node("Unsqueeze", ["d0", "ax"], ["d0u"]),
             helper.make_node("Concat", ["d0u", "m1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    m = model(nodes, [("x", TensorProto.FLOAT, ["n", 3, 4])],
              [("y", TensorProto.FLOAT, ["u"])],
              {"i0": np.array(0, np.int64), "ax": np.array([0], np.int64),
               "m1": np.array([-1], np.int64)})
    mod = import_model(m, input_specs=["2x3x4"])
    ops = [op.name for op in mod.body.ops[0].regions[0].block.ops]
    assert ops == ["stablehlo.reshape", "func.return"]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(oxla.compile(mod)(x)[0], x.reshape(2, 12))


def test_params_as_inputs():
    m = mlp()
    mod = import_model(m, input_specs=["2x8"], params_as_inputs=True)
    from oxla_frontend_onnx.importer import input_names

    assert input_names(mod) == ["w1", "b1", "w2", "b2", "x"]


def _if_model() -> object:
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    return model([node], [("c", TensorProto.BOOL, []), ("x", TensorProto.FLOAT, [3])],
                 [("y", TensorProto.FLOAT, [3])])


def test_if_reads_outer_scope_values(backend):
    m = _if_model()
    fn = onnx_compile(m, backend)
    x = np.array([1, -2, 3], np.float32)
    for c in (True, False):
        np.testing.assert_array_equal(fn(np.array(c), x)[0], ort_run(m, np.array(c), x)[0])
    mod = import_model(m)
    assert any(op.name == "stablehlo.if" for op in mod.body.ops[0].regions[0].block.ops)


def test_loop_with_carried_value_and_scan_output(backend):
    body = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("scan", TensorProto.FLOAT, [2])])
    node = helper.make_node("Loop", ["M", "c", "a0"], ["acc", "scans"], body=body)
    m = model([node], [("x", TensorProto.FLOAT, [2]), ("a0", TensorProto.FLOAT, [2])],
              [("acc", TensorProto.FLOAT, [2]), ("scans", TensorProto.FLOAT, [4, 2])],
              {"M": np.array(4, np.int64), "c": np.array(True)})
    x, a0 = np.array([1, 2], np.float32), np.array([10, 20], np.float32)
    got = onnx_compile(m, backend)(x, a0)
    for g, r in zip(got, ort_run(m, x, a0)):
        np.testing.assert_array_equal(g, r)


def test_qdq_matmul_matches_onnxruntime_within_one_step(backend):
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 127, (16, 8)).astype(np.int8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["wd"], axis=1),
             helper.make_node("MatMul", ["xd", "wd"], ["h"]),
             helper.make_node("QuantizeLinear", ["h", "ys", "yz"], ["y"])]
    m = model(nodes, [("x", TensorProto.FLOAT, [4, 16])], [("y", TensorProto.INT8, [4, 8])],
              {"xs": np.array(0.02, np.float32), "xz": np.array(0, np.int8), "w": w,
               "ws": (rng.random(8) * 0.01 + 0.001).astype(np.float32),
               "ys": np.array(0.05, np.float32), "yz": np.array(3, np.int8)})
    x = rng.standard_normal((4, 16)).astype(np.float32)
    (y,) = onnx_compile(m, backend)(x)
    (ref,) = ort_run(m, x)
    assert y.dtype == np.int8
    assert np.abs(y.astype(np.int32) - ref.astype(np.int32)).max() <= 1


def test_external_data_next_to_the_model(tmp_path):
    import onnx

    m = mlp()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    path = tmp_path / "ext.onnx"
    onnx.save(onnx.ModelProto.FromString(m.SerializeToString()), path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    assert (tmp_path / "ext.data").exists()
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(onnx_compile(str(path))(x)[0], ort_run(m, x)[0], rtol=1e-5)


def test_plugin_rule_through_the_oxla_onnx_rules_hook():
    import types

    from oxla import hookimpl, plugins
    from oxla.plugins import PluginRegistry, PluginSource

    def twice(ctx):
        x = ctx.input(0)
        return [ctx.b.add(x, x)]

    plugin = types.ModuleType("oxla_test_onnx_rules")

    @hookimpl
    def oxla_onnx_rules():
        return {("com.example", "Twice", 1): twice}

    plugin.oxla_onnx_rules = oxla_onnx_rules
    reg = PluginRegistry()
    reg.register_builtins()
    reg.register(plugin, PluginSource("oxla-test-onnx-rules", "0", "rules = x"))
    old = plugins.set_registry(reg)
    try:
        m = model([helper.make_node("Twice", ["x"], ["y"], domain="com.example")],
                  [("x", TensorProto.FLOAT, [3])], [("y", TensorProto.FLOAT, [3])],
                  extra_opsets={"com.example": 1})
        x = np.array([1, 2, 3], np.float32)
        np.testing.assert_array_equal(onnx_compile(m)(x)[0], 2 * x)
    finally:
        plugins.set_registry(old)
        RULES.pop(("com.example", "Twice"), None)


def test_static_sequences(backend):
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1),
             helper.make_node("SequenceAt", ["seq", "one"], ["second"]),
             helper.make_node("SequenceInsert", ["seq", "second"], ["seq2"]),
             helper.make_node("ConcatFromSequence", ["seq2"], ["stacked"], axis=0,
                              new_axis=1)]
    m = model(nodes, [("x", TensorProto.FLOAT, [2, 3])],
              [("second", TensorProto.FLOAT, [2, 1]), ("stacked", TensorProto.FLOAT, None),
               ("seq", TensorProto.FLOAT, None)], {"one": np.array(1, np.int64)})
    m.graph.output[2].type.CopyFrom(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 1])))
    m.graph.output[1].type.tensor_type.shape.dim.add().dim_param = "s"
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = onnx_compile(m, backend)(x)
    ref = ort_run(m, x)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    assert len(got[2]) == 3
    for g, r in zip(got[2], ref[2]):
        np.testing.assert_array_equal(g, r)
