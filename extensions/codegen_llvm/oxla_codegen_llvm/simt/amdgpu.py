"""SIMT IR to AMDGPU code objects through LLVM's AMDGPU backend (issue #15).

Each kernel gets an ``amdgpu_kernel`` entry (triple ``amdgcn-amd-amdhsa``): its buffers
are ``ptr addrspace(1)`` (cast to generic for the regions; LLVM's address-space
inference turns the accesses back into ``global_load``/``global_store``), its private
area an ``alloca`` in address space 5 (the stack; every ``alloca`` of the kernels' IR is
moved there too, as the AMDGPU data layout requires), and between its regions the
barrier HIP's ``__syncthreads`` is: a workgroup release fence, ``s_barrier``, an acquire
fence. The model's intrinsics become ``llvm.amdgcn.workitem.id.*`` /
``workgroup.id.*``, the workgroup and grid sizes of the dispatch packet
(``llvm.amdgcn.dispatch.ptr``), the dynamic LDS array (address space 3, sized at launch)
and ``ds_bpermute`` for shuffles.

Wavefronts are 64 lanes on CDNA (gfx90a, gfx942) and 32 on RDNA3 (gfx1100):
``oxla.simt.warp_size`` returns the arch's; ``oxla.simt.shfl.down`` has the model's
width-32 semantics on both (a lane whose source is outside its 32-lane segment keeps
its value), which is what the row reduction's last 32 lanes need
(:mod:`oxla_codegen_llvm.simt.reduce` checks ``warp_size() >= 32``).

Math: the model's math intrinsics become LLVM intrinsics where AMDGPU lowers one
correctly rounded (sqrt, fabs, floor, ...) and ROCm's device library ``__ocml_*``
functions otherwise, linked from ``ocml.bc`` (ROCm's ``amdgcn/bitcode``, Debian's
``rocm-device-libs``) and internalized, with the ``__oclc_*`` control constants defined
here for the arch (no fast math, no denormal flushing, correctly rounded sqrt). Without
the library a kernel that needs it raises ``NotSupportedError``; the others compile.

Code objects are version 5 (module flag ``amdhsa_code_object_version`` 500: LLVM 22
defaults to 6, which Debian's ``ld.lld-16`` rejects); ``ld.lld`` links the relocatable
object into the ``.hsaco`` a runtime loads (``hipModuleLoadData``). One module per arch,
parsed afresh from the kernels' text (code generation mutates a module).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache

import llvmlite.binding as llvm

from oxla.errors import LoweringError, NotSupportedError
from oxla_codegen_llvm.simt.link import entry, infos, link, math_used
from oxla_codegen_llvm.simt.model import AXES, TWO_ARG_MATH, Kernel, KernelInfo

TRIPLE = "amdgcn-amd-amdhsa"
ARCHS = ("gfx90a", "gfx942", "gfx1100")
"""The AMD GPUs oxla emits code objects for: MI200 (gfx90a), MI300 (gfx942), RDNA3
(gfx1100)."""
WAVEFRONT = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32}
ISA_VERSION = {"gfx90a": 9010, "gfx942": 9402, "gfx1100": 11000}
"""``__oclc_ISA_version`` of each arch (major * 1000 + minor * 100 + stepping)."""
CODE_OBJECT_VERSION = 500
NATIVE_MATH = {"sqrt", "fabs", "floor", "ceil", "roundeven", "round", "copysign",
               "maximum", "minimum", "trunc"}
"""Math functions AMDGPU lowers as LLVM intrinsics, correctly rounded (the others call
ocml). ``llvm.sqrt.f32`` is correctly rounded unless ``afn``/fast-math flags allow less."""
DEVICE_LIB_GLOBS = ("/opt/rocm/amdgcn/bitcode", "/opt/rocm/lib/llvm/lib/clang/*/lib/amdgcn/bitcode",
                    "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode", "/usr/lib/*/amdgcn/bitcode")
LLD_NAMES = ("ld.lld-16", "ld.lld-17", "ld.lld-18", "ld.lld-19", "ld.lld", "ld.lld-15")
_ALLOCA = re.compile(r"^(\s*)(%(?:\"[^\"]+\"|[-\w.$]+)) = alloca (.*)$", re.M)


def check_arch(arch: str) -> str:
    """``arch`` when it is one oxla emits for.

    Raises:
        ValueError: an unknown arch (the message lists the known ones).
    """
    if arch not in ARCHS:
        raise ValueError(f"unknown AMD GPU architecture {arch!r}; known: {', '.join(ARCHS)}")
    return arch


@cache
def _init() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(arch: str, opt: int = 3) -> llvm.TargetMachine:
    """LLVM's AMDGPU target machine for ``arch`` (wave32 on gfx1100, its default)."""
    _init()
    t = llvm.Target.from_triple(TRIPLE)
    return t.create_target_machine(cpu=check_arch(arch), features="", opt=opt,
                                   reloc="pic")


@cache
def device_lib_dir() -> str | None:
    """The directory of ROCm's device-library bitcode (``ocml.bc``):
    ``$OXLA_ROCM_DEVICE_LIBS``, ROCm's, then Debian's ``rocm-device-libs``; None when
    none is found."""
    env = os.environ.get("OXLA_ROCM_DEVICE_LIBS")
    if env:
        return env if os.path.exists(os.path.join(env, "ocml.bc")) else None
    for pattern in DEVICE_LIB_GLOBS:
        for d in sorted(glob.glob(pattern), reverse=True):
            if os.path.exists(os.path.join(d, "ocml.bc")):
                return d
    return None


def isa_bitcode(arch: str) -> str | None:
    """The device library's ``oclc_isa_version_<N>.bc`` of ``arch``, None when that
    installation lacks it (Debian 12's ROCm 5.2.3 has gfx90a, not gfx942 or gfx1100;
    oxla defines ``__oclc_ISA_version`` itself, so only the report uses this)."""
    d = device_lib_dir()
    if d is None:
        return None
    path = os.path.join(d, f"oclc_isa_version_{arch[3:]}.bc")
    return path if os.path.exists(path) else None


@cache
def _ocml(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def lld_path() -> str | None:
    """``ld.lld``: ``$OXLA_LLD``, else the first of :data:`LLD_NAMES` on PATH (Debian's
    ``lld-16`` package installs ``ld.lld-16``)."""
    env = os.environ.get("OXLA_LLD")
    if env:
        return env
    for name in LLD_NAMES:
        hit = shutil.which(name)
        if hit:
            return hit
    return None


def _ty(t: str) -> str:
    return "float" if t == "f32" else "double"


def _math_defs(used: set[tuple[str, str]]) -> tuple[str, bool]:
    """Definitions of the neutral math intrinsics; True when ocml is needed."""
    lines, needs = [], False
    for name, t in sorted(used):
        ty = _ty(t)
        n = 2 if name in TWO_ARG_MATH else 1
        params = ", ".join(f"{ty} %a{i}" for i in range(n))
        if name in NATIVE_MATH:
            callee = f"llvm.{name}.{t}"
        else:
            callee = f"__ocml_{name}_{t}"
            needs = True
        lines.append(f"declare {ty} @{callee}({', '.join([ty] * n)})")
        lines.append(f'define {ty} @"oxla.simt.math.{name}.{t}"({params}) alwaysinline {{\n'
                     f"  %r = call {ty} @{callee}({params})\n  ret {ty} %r\n}}")
    return "\n".join(lines), needs


def _oclc(arch: str) -> str:
    """The ``__oclc_*`` constants ocml reads (what ROCm's ``oclc_*.bc`` files define)."""
    consts = {"__oclc_finite_only_opt": ("i8", 0), "__oclc_unsafe_math_opt": ("i8", 0),
              "__oclc_daz_opt": ("i8", 0), "__oclc_correctly_rounded_sqrt32": ("i8", 1),
              "__oclc_wavefrontsize64": ("i8", int(WAVEFRONT[arch] == 64)),
              "__oclc_ISA_version": ("i32", ISA_VERSION[arch]),
              "__oclc_ABI_version": ("i32", CODE_OBJECT_VERSION)}
    return "\n".join(f"@{k} = linkonce_odr protected local_unnamed_addr addrspace(4) "
                     f"constant {t} {v}" for k, (t, v) in consts.items())


def _entry(info: KernelInfo, threads: int) -> str:
    attrs = f'"amdgpu-flat-work-group-size"="1,{max(threads, 1)}" "uniform-work-group-size"="true"'
    return entry(info, "amdgpu_kernel", "oxla.amdgpu.barrier", private_space=5, attrs=attrs)


def _shuffle(arch: str) -> str:
    """``oxla.simt.shfl.down`` by ``ds_bpermute`` with the model's width-32 semantics."""
    lane = ["  %lo = call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)"]
    if WAVEFRONT[arch] == 64:
        lane.append("  %lane = call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 %lo)")
    else:
        lane.append("  %lane = add i32 %lo, 0")
    return "\n".join([
        'define i32 @"oxla.simt.shfl.down"(i32 %v, i32 %d) alwaysinline {', *lane,
        "  %seg = and i32 %lane, 31", "  %to = add i32 %seg, %d",
        "  %out = icmp uge i32 %to, 32", "  %src = add i32 %lane, %d",
        "  %pick = select i1 %out, i32 %lane, i32 %src", "  %addr = shl i32 %pick, 2",
        "  %r = call i32 @llvm.amdgcn.ds.bpermute(i32 %addr, i32 %v)", "  ret i32 %r", "}"])


def runtime_text(kernels: Sequence[Kernel], arch: str) -> tuple[str, bool]:
    """The AMDGPU runtime of ``kernels``: entries, intrinsic definitions and the code
    object version flag (module doc); True when the math needs ocml."""
    wave = WAVEFRONT[check_arch(arch)]
    parts = [f'target triple = "{TRIPLE}"',
             "@oxla_simt_shared = external addrspace(3) global [0 x i8], align 16",
             "declare void @llvm.amdgcn.s.barrier()",
             "declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()",
             "declare i32 @llvm.amdgcn.mbcnt.lo(i32, i32)",
             "declare i32 @llvm.amdgcn.mbcnt.hi(i32, i32)",
             "declare i32 @llvm.amdgcn.ds.bpermute(i32, i32)",
             'define void @oxla.amdgpu.barrier() alwaysinline {\n'
             '  fence syncscope("workgroup") release\n  call void @llvm.amdgcn.s.barrier()\n'
             '  fence syncscope("workgroup") acquire\n  ret void\n}']
    for i, a in enumerate(AXES):
        for reg, intr in (("tid", "workitem"), ("ctaid", "workgroup")):
            parts.append(f"declare i32 @llvm.amdgcn.{intr}.id.{a}()")
            parts.append(f'define i32 @"oxla.simt.{reg}.{a}"() alwaysinline {{\n'
                         f"  %v = call i32 @llvm.amdgcn.{intr}.id.{a}()\n  ret i32 %v\n}}")
        # hsa_kernel_dispatch_packet_t: workgroup_size_{x,y,z} (u16) at 4, 6, 8;
        # grid_size_{x,y,z} (u32, in work-items) at 12, 16, 20
        parts.append(f'define i32 @"oxla.simt.ntid.{a}"() alwaysinline {{\n'
                     "  %d = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()\n"
                     f"  %p = getelementptr i8, ptr addrspace(4) %d, i64 {4 + 2 * i}\n"
                     "  %s = load i16, ptr addrspace(4) %p, align 2, !invariant.load !0\n"
                     "  %v = zext i16 %s to i32\n  ret i32 %v\n}")
        parts.append(f'define i32 @"oxla.simt.nctaid.{a}"() alwaysinline {{\n'
                     "  %d = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()\n"
                     f"  %pg = getelementptr i8, ptr addrspace(4) %d, i64 {12 + 4 * i}\n"
                     "  %g = load i32, ptr addrspace(4) %pg, align 4, !invariant.load !0\n"
                     f'  %w = call i32 @"oxla.simt.ntid.{a}"()\n'
                     "  %w1 = sub i32 %w, 1\n  %n = add i32 %g, %w1\n"
                     "  %v = udiv i32 %n, %w\n  ret i32 %v\n}")
    parts += [
        'define ptr @"oxla.simt.shared"() alwaysinline {\n'
        "  %p = addrspacecast ptr addrspace(3) @oxla_simt_shared to ptr\n  ret ptr %p\n}",
        'define i1 @"oxla.simt.has_shuffle"() alwaysinline {\n  ret i1 true\n}',
        f'define i32 @"oxla.simt.warp_size"() alwaysinline {{\n  ret i32 {wave}\n}}',
        _shuffle(arch)]
    math, needs = _math_defs(math_used(kernels))
    parts.append(math)
    if needs:
        parts.append(_oclc(arch))
    block = {k.name: k.block[0] * k.block[1] * k.block[2] for k in kernels}
    parts += [_entry(i, block.get(i.name, 1024)) for i in infos(kernels)]
    parts += ["!0 = !{}", "!llvm.module.flags = !{!1}",
              f'!1 = !{{i32 1, !"amdhsa_code_object_version", i32 {CODE_OBJECT_VERSION}}}']
    return "\n".join(parts) + "\n", needs


def private_allocas(text: str) -> str:
    """``text`` with each ``alloca`` in address space 5 (the AMDGPU stack), cast back to
    the generic pointer the region's code uses."""

    def one(m: re.Match[str]) -> str:
        indent, name, rest = m.groups()
        stack = name[:-1] + '.as5"' if name.endswith('"') else name + ".as5"
        return (f"{indent}{stack} = alloca {rest}, addrspace(5)\n"
                f"{indent}{name} = addrspacecast ptr addrspace(5) {stack} to ptr")

    return _ALLOCA.sub(one, text)


def optimized_module(kernels: Sequence[Kernel], arch: str) -> tuple[llvm.ModuleRef,
                                                                     llvm.TargetMachine]:
    """One fresh, linked and optimized AMDGPU module of ``kernels`` for ``arch``.

    Raises:
        NotSupportedError: a math function needs ROCm's device library and none is found.
        LoweringError: the kernels' IR is invalid (a bug in the generators).
    """
    text, needs = runtime_text(kernels, arch)
    extra = []
    if needs:
        d = device_lib_dir()
        if d is None:
            raise NotSupportedError("math functions on AMD GPUs need ROCm's device library "
                                    "(ocml.bc: Debian's rocm-device-libs, /opt/rocm, or "
                                    "$OXLA_ROCM_DEVICE_LIBS)")
        extra.append(llvm.parse_bitcode(_ocml(os.path.join(d, "ocml.bc"))))
    tm = target_machine(arch)
    moved = [dataclasses.replace(k, llvm_ir=private_allocas(k.llvm_ir)) for k in kernels]
    mod = link(text, moved, extra)
    mod.triple = TRIPLE
    mod.data_layout = str(tm.target_data)
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=3))
    pb.getModulePassManager().run(mod, pb)
    return mod, tm


def to_amdgcn(kernels: Sequence[Kernel], arch: str = "gfx942") -> str:
    """The AMDGCN assembly of ``kernels`` for ``arch`` (``--emit asm``)."""
    mod, tm = optimized_module(kernels, arch)
    return tm.emit_assembly(mod)


def to_object(kernels: Sequence[Kernel], arch: str = "gfx942") -> bytes:
    """The relocatable ELF object of ``kernels`` for ``arch``."""
    mod, tm = optimized_module(kernels, arch)
    return tm.emit_object(mod)


def link_hsaco(obj: bytes) -> bytes:
    """The loadable code object (``.hsaco``) of a relocatable object: ``ld.lld -shared``.

    Raises:
        NotSupportedError: no ``ld.lld`` is installed (Debian: ``apt-get install lld-16``).
        LoweringError: the linker rejected the object (its log in the message).
    """
    exe = lld_path()
    if exe is None:
        raise NotSupportedError("ld.lld not found: linking AMDGPU code objects needs LLVM's "
                                "lld (Debian: apt-get install lld-16; or $OXLA_LLD)")
    with tempfile.TemporaryDirectory(prefix="oxla-lld-") as d:
        src, out = os.path.join(d, "k.o"), os.path.join(d, "k.hsaco")
        with open(src, "wb") as f:
            f.write(obj)
        proc = subprocess.run([exe, "-shared", "--no-undefined", src, "-o", out],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise LoweringError(f"{os.path.basename(exe)} rejected the AMDGPU object:\n"
                                f"{proc.stderr or proc.stdout}")
        with open(out, "rb") as f:
            return f.read()


def to_hsaco(kernels: Sequence[Kernel], arch: str = "gfx942") -> bytes:
    """The ``.hsaco`` code object of ``kernels`` for ``arch`` (object, then ld.lld)."""
    return link_hsaco(to_object(kernels, arch))
