"""Artifacts, input validation, unsupported ops, LLVM validity, random programs."""

from __future__ import annotations

import json
import threading
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oxla.errors import NotSupportedError, OxlaError, RuntimeInputError
from tests.backend_cpu.conftest import compile_cpu, run_both

PROGRAM = """
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x3xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
    : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = stablehlo.exponential %a : tensor<2x3xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<2x3xf32>
}"""
ARGS = [np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
        np.arange(12, dtype=np.float32).reshape(3, 4) / 5]


def test_artifact_round_trip(tmp_path):
    from oxla_backend_cpu.backend import CPUBackend

    exe = compile_cpu(PROGRAM)
    path = tmp_path / "prog.oxla"
    exe.save(path)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
        assert {"module.mlir", "program.ll", "program.o"} <= set(zf.namelist())
    assert manifest["backend"] == "cpu" and manifest["cpu_features"]
    loaded = CPUBackend().load(path)
    for g, w in zip(loaded(*ARGS), exe(*ARGS)):
        np.testing.assert_array_equal(g, w)


def _rewrite(src, dst, fn):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, fn(name, zin.read(name)))


def test_corrupt_truncated_and_foreign_artifacts(tmp_path):
    from oxla_backend_cpu.backend import CPUBackend

    good = tmp_path / "good.oxla"
    compile_cpu(PROGRAM).save(good)
    truncated = tmp_path / "trunc.oxla"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(OxlaError, match="not an oxla artifact"):
        CPUBackend().load(truncated)
    corrupt = tmp_path / "corrupt.oxla"
    _rewrite(good, corrupt, lambda n, d: d.replace(b"entry", b"entrx") if n == "program.ll"
             else d)
    with pytest.raises(OxlaError, match="checksum mismatch in member 'program.ll'"):
        CPUBackend().load(corrupt)

    def foreign(name, data):
        if name != "manifest.json":
            return data
        m = json.loads(data)
        m["cpu_features"] = m["cpu_features"] + ["imaginary-feature"]
        # A genuine artifact from another machine: its manifest checksum matches.
        from oxla.artifact import MANIFEST_SUM, _manifest_digest

        m[MANIFEST_SUM] = _manifest_digest(m)
        return json.dumps(m).encode()

    other = tmp_path / "foreign.oxla"
    _rewrite(good, other, foreign)
    with pytest.raises(OxlaError, match="lacks: imaginary-feature"):
        CPUBackend().load(other)


def test_wrong_shape_and_count():
    exe = compile_cpu(PROGRAM)
    with pytest.raises(RuntimeInputError, match="shape"):
        exe(ARGS[1], ARGS[0])
    with pytest.raises(RuntimeInputError, match="expected 2 arguments, got 1"):
        exe(ARGS[0])
    with pytest.raises(RuntimeInputError, match="dtype"):
        exe(ARGS[0].astype(np.float64), ARGS[1])


def test_unsupported_op_names_op_location_and_backend():
    text = """func.func @main(%a: tensor<f32>, %b: tensor<f32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[4]> : tensor<1xi64>
  %0 = "stablehlo.rng"(%a, %b, %c) {rng_distribution = #stablehlo<rng_distribution UNIFORM>}
      : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(NotSupportedError) as err:
        compile_cpu(text)
    assert "'stablehlo.rng' is not supported by the cpu backend yet" in str(err.value)
    assert "test.mlir:3:" in str(err.value)


def test_generated_llvm_parses_and_verifies(tmp_path):
    import llvmlite.binding as llvm

    exe = compile_cpu(PROGRAM, dump_dir=str(tmp_path))
    for name in ("5-codegen.ll", "6-optimized.ll"):
        llvm.parse_assembly((tmp_path / name).read_text()).verify()
    llvm.parse_assembly(exe.llvm_ir).verify()
    assert "fusion:" in (tmp_path / "2-4-plan.txt").read_text()


def test_concurrent_calls():
    exe = compile_cpu(PROGRAM)
    want = exe(*ARGS)
    errors = []

    def work():
        for _ in range(50):
            got = exe(*ARGS)
            if not all(np.array_equal(g, w) for g, w in zip(got, want)):
                errors.append(got)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


INT_OPS = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "and",
           "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical"]
FLOAT_OPS = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]
FLOAT_UNARY = ["negate", "abs", "exponential", "tanh", "floor", "sine", "logistic"]


@st.composite
def programs(draw):
    """A random elementwise program over 3 inputs of one element type."""
    ty = draw(st.sampled_from(["i32", "i64", "f32", "f64"]))
    is_int = ty.startswith("i")
    t = f"tensor<6x{ty}>"
    names = ["%a", "%b", "%c"]
    lines = []
    for i in range(draw(st.integers(1, 8))):
        if not is_int and draw(st.booleans()):
            op = draw(st.sampled_from(FLOAT_UNARY))
            lines.append(f"  %v{i} = stablehlo.{op} {draw(st.sampled_from(names))} : {t}")
        else:
            op = draw(st.sampled_from(INT_OPS if is_int else FLOAT_OPS))
            x, y = draw(st.sampled_from(names)), draw(st.sampled_from(names))
            lines.append(f"  %v{i} = stablehlo.{op} {x}, {y} : {t}")
        names.append(f"%v{i}")
    body = "\n".join(lines)
    text = (f"func.func @main(%a: {t}, %b: {t}, %c: {t}) -> {t} {{\n{body}\n"
            f"  return {names[-1]} : {t}\n}}")
    seed = draw(st.integers(0, 2**32 - 1))
    return text, ty, seed


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_elementwise_programs(case):
    text, ty, seed = case
    rng = np.random.default_rng(seed)
    dt = np.dtype({"i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}[ty])
    if dt.kind == "i":
        special = np.array([0, -1, 1, 31, 63, np.iinfo(dt).min, np.iinfo(dt).max], dt)
        args = [rng.choice(np.concatenate([special, rng.integers(-100, 100, 8).astype(dt)]),
                           6) for _ in range(3)]
        run_both(text, args)
    else:
        args = [rng.standard_normal(6).astype(dt) * 3 for _ in range(3)]
        # transcendental functions: libm vs the interpreter's f64-then-round, a few ulp
        with np.errstate(all="ignore"):
            run_both(text, args, rtol=1e-5 if ty == "f32" else 1e-12, atol=1e-30)


def test_call_fast_and_general_paths_agree():
    """C-contiguous numpy arrays of the exact type (read-only ones too) skip the general
    argument check; a strided view goes through it; the results are the same."""
    text = """func.func @main(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.subtract %a, %b : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}"""
    exe = compile_cpu(text)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(12, dtype=np.float32).reshape(4, 3).T  # a strided view, same shape
    want = a - b
    np.testing.assert_array_equal(exe(a, b)[0], want)
    np.testing.assert_array_equal(exe(a, np.ascontiguousarray(b))[0], want)
    ro = a.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(exe(ro, b)[0], want)
    with pytest.raises(RuntimeInputError, match="shape"):
        exe(a, b.T)
    with pytest.raises(RuntimeInputError, match="dtype"):
        exe(a, b.astype(np.float16))
    with pytest.raises(RuntimeInputError, match=r"a list converts to float64; pass np\.asarray"):
        exe(a.tolist(), b)


@pytest.mark.parametrize("dtype,et", [(np.int32, "i32"), (np.int64, "i64"),
                                      (np.uint8, "ui8"), (np.float64, "f64")])
def test_numpy_scalars_of_the_exact_type_take_the_fast_path(dtype, et):
    """A numpy scalar (``np.int32(3)``, as JAX users pass start indices) for a rank-0
    input of its dtype is used as its own 0-d array; one of another dtype, or a Python
    number, still goes through the general check and its error."""
    text = f"""func.func @main(%x: tensor<6xf32>, %i: tensor<{et}>) -> tensor<2xf32> {{
  %j = stablehlo.convert %i : (tensor<{et}>) -> tensor<i32>
  %r = stablehlo.dynamic_slice %x, %j, sizes = [2] : (tensor<6xf32>, tensor<i32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}}"""
    exe = compile_cpu(text)
    x = np.arange(6, dtype=np.float32) * 1.5
    for i in (0, 3, 5):
        np.testing.assert_array_equal(exe(x, dtype(i))[0], x[min(i, 4):min(i, 4) + 2])
        np.testing.assert_array_equal(exe(x, np.array(i, dtype))[0], exe(x, dtype(i))[0])
    other = np.float32 if dtype != np.float32 else np.int32
    with pytest.raises(RuntimeInputError, match="dtype"):
        exe(x, other(1))
    with pytest.raises(RuntimeInputError, match="dtype"):
        exe(x.astype(np.float64), dtype(1))
