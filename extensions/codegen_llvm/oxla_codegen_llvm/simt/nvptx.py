"""SIMT IR to PTX through LLVM's NVPTX backend, and the ptxas check.

Each kernel gets a ``ptx_kernel`` entry: its buffers are ``ptr addrspace(1)`` (cast to
generic for the regions, which LLVM's address-space inference turns back into
``ld.global``/``st.global``), its private area an ``alloca``, and a ``bar.sync 0``
between its regions. The model's intrinsics become ``llvm.nvvm.read.ptx.sreg.*``,
``shfl.sync.down`` (sm_70 and up) and the dynamic ``.extern .shared`` array (address
space 3); math functions are PTX instructions where one is correctly rounded (sqrt,
floor, ...) and libdevice's ``__nv_*`` functions otherwise (``libdevice.10.bc`` of the
CUDA toolkit or the ``nvidia-cuda-nvcc`` wheel).

No fast math and no FMA contraction: the IR carries no fast-math flags, LLVM's
``-nvptx-fma-level=0`` keeps its backend from fusing (so a multiply and an add stay
``mul.rn``/``add.rn``, which ptxas does not contract either), and :func:`check_ptx`
passes ``--fmad=false`` to ptxas, as the runtime must pass it to the JIT.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache

import llvmlite.binding as llvm

from oxla.errors import LoweringError, NotSupportedError
from oxla_codegen_llvm.simt.link import entry, infos, link, math_used
from oxla_codegen_llvm.simt.model import AXES, SREGS, Kernel
from oxla_codegen_llvm.target import NVPTXTarget

NATIVE_MATH = {"sqrt", "fabs", "floor", "ceil", "roundeven", "round", "copysign",
               "maximum", "minimum", "trunc"}
"""Math functions NVPTX has a correctly rounded instruction for (kept as LLVM
intrinsics); every other one calls libdevice."""
LIBDEVICE_GLOBS = ("/usr/local/cuda*/nvvm/libdevice/libdevice*.bc",
                   "/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice*.bc")


def _wheel_files(pattern: str) -> list[str]:
    """Files matching ``pattern`` under the ``nvidia`` namespace package (the CUDA
    wheels: ``nvidia/cu13/bin/ptxas``, ``nvidia/cu13/nvvm/libdevice/libdevice.10.bc``)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    return sorted(h for r in roots for h in glob.glob(os.path.join(r, pattern)))


@cache
def libdevice_path() -> str | None:
    """libdevice's bitcode: ``$OXLA_LIBDEVICE``, the ``nvidia-cuda-nvcc`` wheel's, then the
    CUDA toolkit's; None when none is found."""
    env = os.environ.get("OXLA_LIBDEVICE")
    if env:
        return env if os.path.exists(env) else None
    hits = _wheel_files("*/nvvm/libdevice/libdevice*.bc")
    for pattern in LIBDEVICE_GLOBS:
        hits = hits or sorted(glob.glob(pattern))
    return hits[-1] if hits else None


def _ty(name: str) -> str:
    return "float" if name == "f32" else "double"


def _math_defs(used: set[tuple[str, str]]) -> tuple[str, bool]:
    """Definitions of the neutral math intrinsics; True when libdevice is needed."""
    lines, needs = [], False
    for name, t in sorted(used):
        ty = _ty(t)
        n = 2 if name in ("pow", "maximum", "minimum", "copysign", "atan2", "hypot") else 1
        params = ", ".join(f"{ty} %a{i}" for i in range(n))
        args = ", ".join(f"{ty} %a{i}" for i in range(n))
        if name in NATIVE_MATH:
            callee = f"llvm.{name}.{t}"
        else:
            callee = f"__nv_{name}{'f' if t == 'f32' else ''}"
            needs = True
        lines.append(f"declare {ty} @{callee}({', '.join([ty] * n)})")
        lines.append(f'define {ty} @"oxla.simt.math.{name}.{t}"({params}) alwaysinline {{\n'
                     f"  %r = call {ty} @{callee}({args})\n  ret {ty} %r\n}}")
    return "\n".join(lines), needs


def runtime_text(kernels: Sequence[Kernel], target: NVPTXTarget) -> tuple[str, bool]:
    """The NVPTX runtime of ``kernels``: entries and intrinsic definitions (module doc);
    True when the math needs libdevice."""
    parts = [f'target triple = "{target.triple}"',
             "@oxla_simt_shared = external addrspace(3) global [0 x i8], align 16",
             "declare void @llvm.nvvm.barrier0()",
             "declare i32 @llvm.nvvm.shfl.sync.down.i32(i32, i32, i32, i32)"]
    for reg in SREGS:
        for a in AXES:
            sreg = target.sreg(reg, a)
            parts.append(f"declare i32 @{sreg}()")
            parts.append(f'define i32 @"oxla.simt.{reg}.{a}"() alwaysinline {{\n'
                         f"  %v = call i32 @{sreg}()\n  ret i32 %v\n}}")
    shfl = ("  %r = call i32 @llvm.nvvm.shfl.sync.down.i32(i32 -1, i32 %v, i32 %d, i32 31)"
            if target.has_shuffle else "  %r = add i32 %v, 0")
    parts += [
        'define ptr @"oxla.simt.shared"() alwaysinline {\n'
        "  %p = addrspacecast ptr addrspace(3) @oxla_simt_shared to ptr\n  ret ptr %p\n}",
        f'define i1 @"oxla.simt.has_shuffle"() alwaysinline {{\n'
        f"  ret i1 {'true' if target.has_shuffle else 'false'}\n}}",
        f'define i32 @"oxla.simt.warp_size"() alwaysinline {{\n  ret i32 {target.warp_size}\n}}',
        f'define i32 @"oxla.simt.shfl.down"(i32 %v, i32 %d) alwaysinline {{\n{shfl}\n'
        "  ret i32 %r\n}"]
    math, needs = _math_defs(math_used(kernels))
    parts.append(math)
    parts += [entry(i, "ptx_kernel", "llvm.nvvm.barrier0") for i in infos(kernels)]
    return "\n".join(parts) + "\n", needs


@cache
def _libdevice_bitcode(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def to_ptx(kernels: Sequence[Kernel], arch: str = "sm_90") -> str:
    """One PTX module holding every kernel of ``kernels`` for ``arch``.

    Raises:
        NotSupportedError: a math function needs libdevice and none is installed.
        LoweringError: the kernels' IR is invalid (a bug in the generators).
    """
    target = NVPTXTarget(arch=arch)
    text, needs = runtime_text(kernels, target)
    extra = []
    if needs:
        path = libdevice_path()
        if path is None:
            raise NotSupportedError("math functions on the GPU need libdevice (the "
                                    "nvidia-cuda-nvcc wheel oxla-backend-cuda depends on, "
                                    "the CUDA toolkit, or $OXLA_LIBDEVICE)")
        extra.append(llvm.parse_bitcode(_libdevice_bitcode(path)))
    tm = target.new_target_machine(3)
    mod = link(text, kernels, extra)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    return tm.emit_assembly(mod)


def ptxas_path() -> str | None:
    """ptxas: ``$OXLA_PTXAS``, the ``nvidia-cuda-nvcc`` wheel's (the version the CUDA
    backend pins), or the one on PATH."""
    env = os.environ.get("OXLA_PTXAS")
    if env:
        return env
    hits = [h for h in _wheel_files("*/bin/ptxas") if os.access(h, os.X_OK)]
    return hits[-1] if hits else shutil.which("ptxas")


def check_ptx(ptx: str, arch: str) -> None:
    """Assembles ``ptx`` with ptxas for ``arch`` (``--fmad=false``, as the runtime JITs).

    Raises:
        NotSupportedError: no ptxas is installed.
        LoweringError: ptxas rejected the PTX (its log in the message).
    """
    exe = ptxas_path()
    if exe is None:
        raise NotSupportedError("ptxas not found (the nvidia-cuda-nvcc wheel "
                                "oxla-backend-cuda depends on, or the CUDA toolkit's bin "
                                "on PATH)")
    with tempfile.TemporaryDirectory(prefix="oxla-ptxas-") as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([exe, f"--gpu-name={arch}", "--fmad=false", "-O3", src,
                               "-o", os.path.join(d, "k.cubin")],
                              capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise LoweringError(f"ptxas --gpu-name={arch} rejected the PTX:\n"
                            f"{proc.stderr or proc.stdout}")
