"""The AMDGPU code objects, read back: for gfx90a, gfx942 and gfx1100 every kernel of a
program links into a ``.hsaco`` (code object v5) whose metadata note (msgpack, parsed in
Python; cross-checked with ``llvm-readelf --notes`` where installed) has the kernarg
size, LDS, workgroup size and wavefront the runtime's launches need."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from oxla_backend_hip.metadata import LDS_BYTES, check_launches, read_metadata
from oxla_codegen_llvm.simt.amdgpu import ARCHS, WAVEFRONT, private_allocas, to_amdgcn

from oxla.errors import LoweringError
from tests.hip.conftest import compile_hip

# A row reduction (LDS tree and shuffles), an elementwise loop with ocml math (exp),
# a column reduction, a dynamic slice and a dot.
PROGRAM = """
func.func @main(%x: tensor<8x256xf32>, %y: tensor<256x8xf32>, %i: tensor<i32>) -> (tensor<8xf32>, tensor<8x256xf32>, tensor<256xf32>, tensor<8x8xf32>, tensor<2x256xf32>) {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<8x256xf32>
  %r = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1] : (tensor<8x256xf32>, tensor<f32>) -> tensor<8xf32>
  %c = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [1] : (tensor<256x8xf32>, tensor<f32>) -> tensor<256xf32>
  %d = stablehlo.dot_general %x, %y, contracting_dims = [1] x [0] : (tensor<8x256xf32>, tensor<256x8xf32>) -> tensor<8x8xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %s = stablehlo.dynamic_slice %e, %i, %c0, sizes = [2, 256] : (tensor<8x256xf32>, tensor<i32>, tensor<i32>) -> tensor<2x256xf32>
  return %r, %e, %c, %d, %s : tensor<8xf32>, tensor<8x256xf32>, tensor<256xf32>, tensor<8x8xf32>, tensor<2x256xf32>
}
"""


@pytest.fixture(scope="module")
def exe():
    return compile_hip(PROGRAM, hip_arch=",".join(ARCHS))


def _launches(exe) -> dict[str, dict]:
    return {s["kernel"]: s for s in exe.program.steps if s["op"] == "launch"}


@pytest.mark.parametrize("arch", ARCHS)
def test_descriptors_match_what_the_runtime_passes(exe, arch):
    hsaco = exe.image.hsacos[arch]
    meta = read_metadata(hsaco)
    assert meta["amdhsa.version"] == [1, 2]  # code object v5
    assert meta["amdhsa.target"].startswith(f"amdgcn-amd-amdhsa--{arch}")
    kernels = {k[".name"]: k for k in meta["amdhsa.kernels"]}
    launches = _launches(exe)
    assert set(kernels) == {k.name for k in exe.program.kernels} == set(launches)
    shared = 0
    for name, st in launches.items():
        k = kernels[name]
        assert k[".kernarg_segment_size"] == 8 * len(st["args"])
        assert [a[".size"] for a in k[".args"]] == [8] * len(st["args"])
        kinds = [a[".value_kind"] for a in k[".args"]]
        assert kinds == ["global_buffer" if kind == "buf" else "by_value"
                         for kind, _ in st["args"]]
        assert k[".wavefront_size"] == WAVEFRONT[arch]
        threads = st["block"][0] * st["block"][1] * st["block"][2]
        assert k[".max_flat_workgroup_size"] == threads
        assert k[".group_segment_fixed_size"] + st["shared"] <= LDS_BYTES
        assert k[".private_segment_fixed_size"] == 0 or not k[".uses_dynamic_stack"]
        shared += st["shared"]
    assert shared > 0  # the reductions use dynamic LDS
    assert check_launches(hsaco, arch, exe.program.steps) == len(launches)


def test_llvm_readelf_reads_the_same_notes(exe):
    tool = next((t for t in ("llvm-readelf-16", "llvm-readelf") if shutil.which(t)), None)
    if tool is None:
        pytest.skip("llvm-readelf is not installed")
    import tempfile

    for arch in ARCHS:
        with tempfile.NamedTemporaryFile(suffix=".hsaco") as f:
            f.write(exe.image.hsacos[arch])
            f.flush()
            out = subprocess.run([tool, "--notes", f.name], capture_output=True, text=True,
                                 check=True).stdout
        sizes = [int(v) for v in re.findall(r"\.kernarg_segment_size:\s+(\d+)", out)]
        waves = {int(v) for v in re.findall(r"\.wavefront_size:\s+(\d+)", out)}
        meta = read_metadata(exe.image.hsacos[arch])
        assert sizes == [k[".kernarg_segment_size"] for k in meta["amdhsa.kernels"]]
        assert waves == {WAVEFRONT[arch]}


def test_a_launch_that_disagrees_is_refused(exe):
    steps = [dict(s) for s in exe.program.steps]
    launch = next(s for s in steps if s["op"] == "launch")
    launch["args"] = launch["args"] + [["i64", 0]]
    with pytest.raises(LoweringError, match="kernarg bytes"):
        check_launches(exe.image.hsacos["gfx942"], "gfx942", steps)
    with pytest.raises(LoweringError, match="has target"):
        check_launches(exe.image.hsacos["gfx942"], "gfx1100", exe.program.steps)


def test_amdgcn_assembly(exe):
    asm = {a: to_amdgcn(exe.program.kernels, a) for a in ARCHS}
    for arch, text in asm.items():
        assert f'.amdgcn_target "amdgcn-amd-amdhsa--{arch}' in text
        assert ".amdhsa_code_object_version 5" in text
        assert "s_barrier" in text  # between the reduction's regions
        assert "ds_bpermute_b32" in text  # the row reduction's last 32 lanes
        assert "__ocml_" not in text  # the library is linked and inlined, not called
    assert ".amdhsa_wavefront_size32 1" in asm["gfx1100"]


MUL_ADD = """
func.func @main(%a: tensor<64xf32>, %b: tensor<64xf32>, %c: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.multiply %a, %b : tensor<64xf32>
  %1 = stablehlo.add %0, %c : tensor<64xf32>
  return %1 : tensor<64xf32>
}
"""


@pytest.mark.parametrize("arch", ARCHS)
def test_no_fma_contraction(arch):
    exe = compile_hip(MUL_ADD, hip_arch=arch)
    text = exe.emit("asm")
    assert re.search(r"\bv_mul_f32", text) and re.search(r"\bv_add_f32", text)
    assert not re.search(r"\bv_(pk_)?(fma|fmac|mad|mac)_f32", text)


def test_allocas_move_to_the_stack_address_space():
    text = '  %"acc" = alloca float, align 4\n  %.5 = alloca double, i64 3\n'
    out = private_allocas(text)
    assert '%"acc.as5" = alloca float, align 4, addrspace(5)' in out
    assert '%"acc" = addrspacecast ptr addrspace(5) %"acc.as5" to ptr' in out
    assert "%.5.as5 = alloca double, i64 3, addrspace(5)" in out
