"""Custom calls with GPU kernels compiled with ``--backend cuda`` and launched on the
simulated device (``OXLA_CUDA_DEVICE=sim``): CUDA C through NVRTC, its PTX run by
gpuocelot; Triton through Triton's interpreter. The numpy implementation (what the
interpreter runs) is the oracle."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import oxla
from oxla import hookimpl, plugins
from oxla.errors import LoweringError, NotSupportedError, OxlaError
from oxla.ir import parse_type
from oxla.plugins import PluginRegistry, PluginSource
from tests.custom_calls.demo_pkg import demo_modules
from tests.custom_calls.test_sdk import _inputs, _program, _rel_err, _types

CI = os.environ.get("CI") == "true"
kernels_sdk = pytest.importorskip("oxla_kernels")
from oxla_kernels import hip_host  # noqa: E402

pytest.importorskip("oxla_backend_cuda")
from oxla_codegen_llvm.gpu import custom_call  # noqa: E402
from oxla_codegen_llvm.simt import ocelot  # noqa: E402


def _need_ocelot() -> None:
    lib, why = ocelot.library()
    if lib is None:
        assert not CI, f"gpuocelot must load in CI: {why}"
        pytest.skip(why)


class _Plugin:
    def __init__(self, kernel):
        self.kernel = kernel

    @hookimpl
    def oxla_custom_calls(self):
        return self.kernel.custom_calls()


@pytest.fixture
def register(monkeypatch):
    """``register(kernel)`` installs a kernel's implementations for the test."""
    monkeypatch.setenv("OXLA_CUDA_DEVICE", "sim")
    monkeypatch.setenv("OXLA_HIP_DEVICE", "sim")
    old = plugins.get_registry()

    def reg(kernel):
        r = PluginRegistry()
        r.register_builtins()
        r.load_entry_points()
        r.register(_Plugin(kernel), PluginSource("t-kernels", "0", "t = x"))
        plugins.set_registry(r)
    yield reg
    plugins.set_registry(old)


def _with_only(kernel, which: str):
    return kernels_sdk.Kernel(kernel.target, kernel.operands, kernel.results,
                              attributes=kernel.attributes,
                              impls=[kernel.impl("numpy"), kernel.impl(which)])


def test_cuda_c_kernel_runs_on_the_simulated_device_like_the_interpreter(register, tmp_path):
    _need_ocelot()
    kernels, _ = demo_modules()
    register(kernels.RMSNORM)
    text = _program(kernels.RMSNORM, (2, 3, 40))
    x, w = _inputs((2, 3, 40), seed=3)
    exe = oxla.compile(text, backend="cuda", cache=False)
    assert exe.program.custom[0].entry == "demo_rmsnorm"
    step = exe.program.steps[-1]
    assert step["op"] == "custom" and step["grid"] == [6, 1, 1] and step["block"] == [128, 1, 1]
    assert [a[0] for a in step["args"]] == ["in", "in", "out", "i64", "f32"]
    got = np.asarray(exe(x, w)[0])
    ref = np.asarray(oxla.compile(text, backend="interpreter")(x, w)[0])
    assert _rel_err(got, ref) <= 1e-6
    assert _rel_err(np.asarray(exe(2 * x, w)[0]), kernels.rmsnorm_reference(2 * x, w, 1e-5)) \
        <= 1e-6  # a second call replays the captured graph with new inputs
    with pytest.raises(NotSupportedError, match="custom-call kernels cannot be saved yet"):
        exe.save(tmp_path / "a.oxla")


def _mixed_program(kernel, shape=(1, 4, 64)) -> str:
    """``exp(kernel(x + x, w))``: the custom call between two of oxla's own kernels."""
    t, wt = f"tensor<{'x'.join(map(str, shape))}xf32>", f"tensor<{shape[-1]}xf32>"
    body = _program(kernel, shape).split("\n")[1].strip()
    body = body.replace("(%x, %w)", "(%a, %w)").replace("%0 =", "%b =")
    return (f"func.func @main(%x: {t}, %w: {wt}) -> {t} {{\n"
            f"  %a = stablehlo.add %x, %x : {t}\n  {body}\n"
            f"  %c = stablehlo.exponential %b : {t}\n  return %c : {t}\n}}\n")


def test_cuda_c_kernel_feeds_and_is_fed_by_generated_kernels(register):
    """The custom call between two oxla kernels: buffers in the arena, in order."""
    _need_ocelot()
    kernels, _ = demo_modules()
    register(kernels.RMSNORM)
    text = _mixed_program(kernels.RMSNORM)
    x, w = _inputs((1, 4, 64), seed=4)
    got = np.asarray(oxla.compile(text, backend="cuda", cache=False)(x, w)[0])
    ref = np.exp(kernels.rmsnorm_reference(2 * x, w, 1e-5))
    assert _rel_err(got, ref) <= 1e-6


def test_ptx_with_what_ocelot_lacks_is_refused_naming_it(register):
    src = """extern "C" __global__ void k(const float* x, float* y, long long n) {
      float v = x[threadIdx.x];
      v += __shfl_down_sync(0xffffffff, v, 1);
      y[threadIdx.x] = v;
    }"""
    k = kernels_sdk.Kernel("t.shfl", ["f32[32]"], ["f32[32]"], impls=[
        kernels_sdk.CudaImpl(src, "k", grid=lambda ins, a: (1,), block=(32,),
                             scalars=(lambda ins, a: 32,))])
    register(k)
    t = "tensor<32xf32>"
    attrs = k.op_attributes([parse_type(t)], [parse_type(t)])
    body = ", ".join(f"{n} = {v}" for n, v in attrs.items() if n != "call_target_name")
    text = (f"func.func @main(%x: {t}) -> {t} {{\n  %0 = stablehlo.custom_call @t.shfl(%x) "
            f"{{{body}}} : ({t}) -> {t}\n  return %0 : {t}\n}}\n")
    exe = oxla.compile(text, backend="cuda", cache=False)  # compiling needs no device
    with pytest.raises(NotSupportedError, match=r"gpuocelot lacks warp shuffles \(shfl\) "
                                                r"\(`shfl\.sync"):
        exe(np.ones(32, np.float32))


def test_a_target_without_a_cuda_implementation_is_a_clear_error(register):
    kernels, _ = demo_modules()
    register(kernels_sdk.Kernel(kernels.RMSNORM.target, kernels.RMSNORM.operands,
                                kernels.RMSNORM.results, attributes={"eps": 1e-6},
                                impls=[kernels.RMSNORM.impl("c")]))
    with pytest.raises(LoweringError, match="no implementation of custom call target "
                                            "'demo.rmsnorm' for the cuda backend"):
        oxla.compile(_program(kernels.RMSNORM), backend="cuda", cache=False)


def test_typed_ffi_calls_are_refused_on_cuda(register):
    kernels, _ = demo_modules()
    register(kernels.RMSNORM)
    text = _program(kernels.RMSNORM).replace("api_version = 1 : i32", "api_version = 4 : i32")
    assert "api_version = 4" in text
    with pytest.raises(NotSupportedError, match="typed FFI call"):
        oxla.compile(text, backend="cuda", cache=False)


def test_ocelot_ptx_rewrites_the_target_only():
    rec = kernels_sdk.DeviceKernel("cuda", "ptx", b"", "k", (1, 1, 1), (1, 1, 1),
                                   extra={"ptx": b".version 9.0\n.target sm_90\n"
                                                 b".address_size 64\n// .f16 in a comment\n"})
    assert custom_call.ocelot_ptx(rec) == ".version 9.0\n.target sm_35\n.address_size 64\n" \
                                          "// .f16 in a comment\n"


def test_triton_kernel_runs_on_the_simulated_device_through_its_interpreter(register):
    ok, why = kernels_sdk.triton_status()
    if not ok:
        assert not CI, f"Triton must be installed in CI: {why}"
        pytest.skip(why)
    kernels, _ = demo_modules()
    k = _with_only(kernels.RMSNORM, "triton")
    register(k)
    text = _program(k, (2, 2, 32))
    x, w = _inputs((2, 2, 32), seed=5)
    exe = oxla.compile(text, backend="cuda", cache=False)
    rec = exe.program.custom[0]
    assert rec.format == "cubin" and rec.arch == "sm_90" and rec.host is not None
    got = np.asarray(exe(x, w)[0])
    assert _rel_err(got, kernels.rmsnorm_reference(x, w, 1e-5)) <= 1e-6


class _FakeDriver:
    """The three ``cuda.bindings.driver`` calls a custom kernel's load and launch make,
    recorded (``(error, value)`` results as cuda-python returns them)."""

    def __init__(self):
        self.calls: list[tuple] = []

    def cuCtxSetCurrent(self, ctx):
        return (0,)

    def cuModuleLoadData(self, image):
        self.calls.append(("load", bytes(image)))
        return (0, "module")

    def cuModuleGetFunction(self, module, name):
        self.calls.append(("function", module, name))
        return (0, "function")

    def cuLaunchKernel(self, fn, *rest):
        self.calls.append(("launch", fn, *rest))
        return (0,)


def test_a_driver_loads_the_cubin_or_jits_the_ptx_and_launches_with_the_declared_grid():
    """The real-driver path without a GPU: what reaches cuModuleLoadData/cuLaunchKernel."""
    import ctypes

    from oxla_backend_cuda.driver import DriverDevice

    kernels, _ = demo_modules()
    ins, outs = _types((2, 3, 40))
    rec = kernels.RMSNORM.impl("cuda").device_kernel(ins, outs, {"eps": 1e-6})
    for arch in ("sm_90", "sm_100"):  # its cubin as it is; its PTX JIT-compiled forward
        dev = DriverDevice.__new__(DriverDevice)
        dev._d, dev._ctx, dev.arch = _FakeDriver(), None, arch
        kernel = dev.load_custom(rec)
        (_, image), fn = dev._d.calls[0], dev._d.calls[1]
        assert image[:4] == b"\x7fELF" and fn == ("function", "module", b"demo_rmsnorm")
        if rec.format == "cubin":
            assert (image == rec.image) == (arch == rec.arch == "sm_90")
        dev.launch_custom(kernel, (6, 1, 1), (128, 1, 1), 512, "stream",
                          [("in", 0x1000, 960), ("in", 0x2000, 160), ("out", 0x3000, 960),
                           ("i64", 40, 0), ("f32", 1e-6, 0)])
        launch = dev._d.calls[2]
        assert launch[:9] == ("launch", "function", 6, 1, 1, 128, 1, 1, 512)
        assert launch[9] == "stream"
        values, types = launch[10]
        assert values == (0x1000, 0x2000, 0x3000, 40, 1e-6)
        assert types == (ctypes.c_void_p,) * 3 + (ctypes.c_int64, ctypes.c_float)


def _need_hipcc() -> None:
    if not (os.environ.get("OXLA_HIPCC") or shutil.which("hipcc")):
        assert not CI, "hipcc must be installed in CI (scripts/test installs Debian's)"
        pytest.skip("hipcc is not installed (Debian: apt-get install hipcc)")


def test_hip_kernel_runs_on_the_simulated_hip_device_like_the_interpreter(register):
    """--backend hip: the code object is compiled and recorded; the simulated device runs
    the same HIP source on the host (oxla_kernels.hip_host: blocks in turn, threads as
    POSIX threads meeting at __syncthreads)."""
    pytest.importorskip("oxla_backend_hip")
    _need_hipcc()
    kernels, _ = demo_modules()
    k = _with_only(kernels.RMSNORM, "hip")
    register(k)
    text = _mixed_program(k, (2, 3, 200))
    exe = oxla.compile(text, backend="hip", cache=False)
    rec = exe.program.custom[0]
    assert rec.format == "hsaco" and rec.arch == "gfx90a" and rec.image[:4] == b"\x7fELF"
    assert [s["op"] for s in exe.program.steps].count("custom") == 1
    x, w = _inputs((2, 3, 200), seed=6)
    got = np.asarray(exe(x, w)[0])
    ref = np.asarray(oxla.compile(text, backend="interpreter")(x, w)[0])
    assert _rel_err(got, ref) <= 1e-6


def test_hip_host_shim_refuses_warp_intrinsics_clearly():
    src = """#include <hip/hip_runtime.h>
    extern "C" __global__ void k(const float* x, float* y) {
      y[threadIdx.x] = __shfl_down(x[threadIdx.x], 1);
    }"""
    with pytest.raises(LoweringError, match="does not compile for the host shim"):
        hip_host.run_on_host(src, "k", ["ptr", "ptr"], (1, 1, 1), (32, 1, 1), 0, [],
                             [np.zeros(128, np.uint8), np.zeros(128, np.uint8)])


class _FakeHip:
    """The HIP runtime calls a custom kernel's load and launch make, recorded."""

    def __init__(self):
        self.calls: list[tuple] = []

    def hipModuleLoadData(self, module, image):
        self.calls.append(("load", image.value))
        return 0

    def hipModuleGetFunction(self, fn, module, name):
        self.calls.append(("function", name))
        return 0

    def hipModuleLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, shared, stream, params,
                              extra):
        import ctypes

        kinds = (ctypes.c_void_p,) * 3 + (ctypes.c_int64, ctypes.c_float)
        vals = [ctypes.cast(params[i], ctypes.POINTER(t)).contents.value
                for i, t in enumerate(kinds)]
        self.calls.append(("launch", *(v.value for v in (gx, gy, gz, bx, by, bz, shared)),
                           stream, vals))
        return 0


def test_a_hip_runtime_loads_the_code_object_and_launches_with_typed_parameters():
    pytest.importorskip("oxla_backend_hip")
    from oxla_backend_hip.hip import HIPDevice

    rec = kernels_sdk.DeviceKernel("hip", "hsaco", b"\x7fELF code object", "demo_rmsnorm",
                                   (6, 1, 1), (128, 1, 1), 512, (40, 1e-6), arch="gfx90a")
    dev = HIPDevice.__new__(HIPDevice)
    dev._h, dev.arch = _FakeHip(), "gfx90a"
    kernel = dev.load_custom(rec)
    assert dev._h.calls[:2] == [("load", b"\x7fELF code object"), ("function", b"demo_rmsnorm")]
    dev.launch_custom(kernel, (6, 1, 1), (128, 1, 1), 512, "stream",
                      [("in", 0x1000, 960), ("in", 0x2000, 160), ("out", 0x3000, 960),
                       ("i64", 40, 0), ("f32", 1e-6, 0)])
    launch = dev._h.calls[2]
    assert launch[:9] == ("launch", 6, 1, 1, 128, 1, 1, 512, "stream")
    assert launch[9][:4] == [0x1000, 0x2000, 0x3000, 40]
    assert launch[9][4] == pytest.approx(1e-6, rel=1e-7)  # passed as a 32-bit float
    dev.arch = "gfx942"
    with pytest.raises(OxlaError, match="code object for gfx90a, not gfx942"):
        dev.load_custom(rec)
