"""The custom-call SDK (oxla_kernels): one declaration, implementations per backend, each
checked against the numpy reference (the interpreter's implementation)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import oxla
from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import parse_type
from tests.custom_calls.demo_pkg import ROOT, demo_modules

CI = os.environ.get("CI") == "true"
kernels_sdk = pytest.importorskip("oxla_kernels")


def _inputs(shape=(2, 3, 40), seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape, dtype=np.float32),
            rng.standard_normal(shape[-1:], dtype=np.float32))


def _types(shape=(2, 3, 40)):
    x = parse_type(f"tensor<{'x'.join(map(str, shape))}xf32>")
    return [x, parse_type(f"tensor<{shape[-1]}xf32>")], [x]


def _rel_err(got, ref) -> float:
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def test_c_implementation_matches_the_reference():
    kernels, _ = demo_modules()
    x, w = _inputs()
    ref = kernels.rmsnorm_reference(x, w, 1e-5)
    got = kernels.RMSNORM.run("c", x, w, eps=1e-5)[0]
    assert got.shape == ref.shape and _rel_err(got, ref) <= 1e-6


def test_c_is_compiled_once_per_content_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("OXLA_KERNEL_CACHE", str(tmp_path))
    src = "void k(void** o, const void** i, const char* c, unsigned long n) {}\n"
    a = kernels_sdk.compile_shared(src)
    mtime = a.stat().st_mtime_ns
    assert kernels_sdk.compile_shared(src) == a and a.stat().st_mtime_ns == mtime
    b = kernels_sdk.compile_shared(src + "/* edited */\n")
    assert b != a and b.parent == tmp_path
    with pytest.raises(LoweringError, match="compiling a c kernel failed"):
        kernels_sdk.compile_shared("this is not C")


def _program(kernel, shape=(2, 3, 40), eps=1e-5) -> str:
    ins, outs = _types(shape)
    attrs = kernel.op_attributes(ins, outs, {"eps": eps})
    body = ", ".join(f"{k} = {v}" for k, v in attrs.items() if k != "call_target_name")
    t, wt = ins
    return (f"func.func @main(%x: {t}, %w: {wt}) -> {t} {{\n"
            f"  %0 = stablehlo.custom_call @{kernel.target}(%x, %w) {{{body}}} : "
            f"({t}, {wt}) -> {t}\n  return %0 : {t}\n}}\n")


def test_cpu_program_calls_the_c_kernel_like_the_interpreter_calls_numpy(demo):
    text = _program(demo.RMSNORM)
    assert "sdy.sharding_rule = #sdy.op_sharding_rule<([i, j, k], [k])->([i, j, k]) " \
           "{i=2, j=3, k=40}>" in text
    x, w = _inputs()
    cpu = oxla.compile(text, backend="cpu", cache=False)(x, w)[0]
    ref = oxla.compile(text, backend="interpreter")(x, w)[0]
    assert _rel_err(np.asarray(cpu), np.asarray(ref)) <= 1e-6
    assert _rel_err(np.asarray(ref), demo.rmsnorm_reference(x, w, 1e-5)) == 0


def test_declaration_is_checked():
    K = kernels_sdk.Kernel
    with pytest.raises(ValueError, match="is not of the form"):
        K("t", ["f32 4"], [])
    with pytest.raises(ValueError, match="sharding rule"):
        K("t", ["f32[n]"], ["f32[n]"], sharding_rule="([i, j]) -> ([i])")
    k = K("t", ["f32[n, 4]"], ["f32[n]"], attributes={"axis": 1})
    assert k.result_types([parse_type("tensor<3x4xf32>")]) == [parse_type("tensor<3xf32>")]
    with pytest.raises(NotSupportedError, match="operand 0"):
        k.result_types([parse_type("tensor<3x5xf32>")])
    with pytest.raises(NotSupportedError, match="no attribute 'eps'"):
        k.attrs({"eps": 1.0})
    cfg = kernels_sdk.encode_config({"axis": 2}, [parse_type("tensor<3x4xf32>")],
                                    [parse_type("tensor<3xf32>")])
    assert cfg == "in0=3x4;out0=3;axis=2;"
    assert kernels_sdk.decode_config(cfg, k.attributes) == {"axis": 2}


def test_sycl_implementation_matches_the_interpreter():
    ok, why = kernels_sdk.sycl_device_status()
    if not ok:
        assert not CI, f"SYCL must run in CI: {why}"
        pytest.skip(why)
    kernels, _ = demo_modules()
    x, w = _inputs()
    impl = kernels.RMSNORM.impl("sycl")
    assert impl.spirv[:4] == b"\x03\x02\x23\x07"  # the demo ships a SPIR-V device image
    got = kernels.RMSNORM.run("sycl", x, w)[0]
    ref = kernels.RMSNORM.run("numpy", x, w)[0]
    assert _rel_err(got, ref) <= 1e-6
    # the OpenCL C it was compiled from runs the same on the device
    src = kernels.SRC / "rmsnorm.cl"
    k = kernels_sdk.Kernel("t.rmsnorm_cl", kernels.RMSNORM.operands, kernels.RMSNORM.results,
                           attributes={"eps": 1e-6}, impls=[kernels_sdk.SyclImpl(
                               "demo_rmsnorm", impl.global_size, opencl=src.read_text(),
                               scalars=impl.scalars)])
    assert _rel_err(k.run("sycl", x, w)[0], ref) <= 1e-6


def test_cuda_c_compiles_to_ptx_with_the_launch_record():
    kernels, _ = demo_modules()
    ins, outs = _types()
    rec = kernels.RMSNORM.impl("cuda").device_kernel(ins, outs, {"eps": 1e-6})
    ptx = rec.extra["ptx"].decode()
    assert ".entry demo_rmsnorm" in ptx and ".target sm_90" in ptx
    assert rec.grid == (6, 1, 1) and rec.block == (128, 1, 1) and rec.scalars == (40, 1e-6)
    if kernels_sdk.gpu.find_ptxas():
        assert rec.format in ("cubin", "ptx")
        if rec.format == "cubin":
            assert rec.image[:4] == b"\x7fELF"


def _need_triton() -> None:
    ok, why = kernels_sdk.triton_status()
    if not ok:
        assert not CI, f"Triton must be installed in CI: {why}"
        pytest.skip(why)


def test_triton_compiles_to_ptx_cubin_and_hsaco():
    _need_triton()
    kernels, _ = demo_modules()
    ins, outs = _types()
    impl = kernels.RMSNORM.impl("triton")
    cuda = impl.device_kernel(ins, outs, {"eps": 1e-6})
    assert cuda.format == "cubin" and cuda.image[:4] == b"\x7fELF"
    assert ".entry demo_rmsnorm" in cuda.extra["ptx"].decode() and cuda.grid == (6, 1, 1)
    assert cuda.scalars == (1e-6,) and cuda.entry == "demo_rmsnorm"
    hip = impl.device_kernel(ins, outs, {"eps": 1e-6}, target="hip:gfx90a")
    assert hip.backend == "hip" and hip.format == "hsaco" and hip.image[:4] == b"\x7fELF"


def test_triton_semantics_on_cpu_with_the_triton_interpreter():
    _need_triton()
    kernels, _ = demo_modules()
    x, w = _inputs((3, 5, 40), seed=1)
    got = kernels.RMSNORM.run("triton", x, w)[0]
    ref = kernels.RMSNORM.run("numpy", x, w)[0]
    assert _rel_err(got, ref) <= 1e-6


def test_triton_stays_out_of_oxla_processes():
    """Triton on sys.path would be imported by torch._dynamo and abort beside TensorFlow."""
    code = "import importlib.util, oxla_kernels; print(importlib.util.find_spec('triton'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "None", out.stdout + out.stderr


def test_hip_compiles_with_hipcc_or_says_it_is_missing():
    kernels, _ = demo_modules()
    ins, outs = _types()
    impl = kernels.RMSNORM.impl("hip")
    if not (os.environ.get("OXLA_HIPCC") or shutil.which("hipcc")):
        with pytest.raises(LoweringError, match="hipcc not found"):
            impl.device_kernel(ins, outs, {"eps": 1e-6})
        assert not CI, "hipcc must be installed in CI (scripts/test installs Debian's)"
        pytest.skip("hipcc is not installed (Debian: apt-get install hipcc)")
    rec = impl.device_kernel(ins, outs, {"eps": 1e-6})
    assert rec.format == "hsaco" and rec.image[:4] == b"\x7fELF"
    assert int.from_bytes(rec.image[18:20], "little") == 224  # e_machine: EM_AMDGPU
    assert b"demo_rmsnorm.kd" in rec.image  # the kernel descriptor hipModuleLaunch reads
    assert rec.grid == (6, 1, 1) and rec.block == (128, 1, 1) and rec.scalars == (40, 1e-6)


def test_a_prebuilt_shared_library_is_an_implementation(tmp_path, monkeypatch):
    kernels, _ = demo_modules()
    monkeypatch.setenv("OXLA_KERNEL_CACHE", str(tmp_path))
    lib = kernels.RMSNORM.impl("c").library()  # what a package would ship in its wheel
    k = kernels_sdk.Kernel("t.rmsnorm", ["f32[b, s, d]", "f32[d]"], ["f32[b, s, d]"],
                           attributes={"eps": 1e-6},
                           impls=[kernels_sdk.SharedLibImpl(lib.name, "demo_rmsnorm",
                                                            package_dir=lib.parent)])
    x, w = _inputs()
    assert _rel_err(k.run("cpu", x, w)[0], kernels.rmsnorm_reference(x, w)) <= 1e-6
    bad = kernels_sdk.SharedLibImpl(lib, "no_such_symbol")
    bad.bind(k)
    with pytest.raises(LoweringError, match="has no symbol 'no_such_symbol'"):
        bad.function()


def test_a_spirv_module_that_does_not_build_is_a_clear_error():
    ok, why = kernels_sdk.sycl_device_status()
    if not ok:
        pytest.skip(why)
    k = kernels_sdk.Kernel("t.spirv", ["f32[n]"], ["f32[n]"], impls=[
        kernels_sdk.SyclImpl("k", lambda ins, a: (ins[0].shape[0],), spirv=b"\x03\x02#\x07" +
                             bytes(16))])
    with pytest.raises(LoweringError, match="SYCL program of 't.spirv' failed to build"):
        k.run("sycl", np.ones(4, np.float32))
