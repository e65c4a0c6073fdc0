"""What both lowerings of SIMT IR share: one module from the kernels' texts and a
target's runtime text, with only the entries left visible."""

from __future__ import annotations

import re
from collections.abc import Sequence

import llvmlite.binding as llvm

from oxla.errors import LoweringError
from oxla_codegen_llvm.simt.model import MATH_PREFIX, Kernel, KernelInfo, kernel_info

_MATH = re.compile(r"@\"?" + re.escape(MATH_PREFIX) + r"(\w+)\.(f32|f64)\"?\(")


def math_used(kernels: Sequence[Kernel]) -> set[tuple[str, str]]:
    """``(name, f32|f64)`` of every neutral math intrinsic the kernels call."""
    return {(m.group(1), m.group(2)) for k in kernels for m in _MATH.finditer(k.llvm_ir)}


def infos(kernels: Sequence[Kernel]) -> list[KernelInfo]:
    """The header of each kernel; raises LoweringError on a repeated name."""
    out = [kernel_info(k.llvm_ir) for k in kernels]
    names = [i.name for i in out]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise LoweringError(f"kernel names repeat in one module: {', '.join(dup)}")
    return out


def entry(info: KernelInfo, convention: str, barrier: str, private_space: int = 0,
          attrs: str = "") -> str:
    """The GPU entry of kernel ``info`` (LLVM IR text) and the declarations of its
    regions: a ``convention`` function (``ptx_kernel``, ``amdgpu_kernel``) with ``attrs``
    after its parameters, taking each buffer as an ``addrspace(1)`` pointer (cast to a
    generic one) and each scalar as ``i64``; it allocates the kernel's private scratch
    (at least 8 bytes, in address space ``private_space``, cast to generic when not 0) and
    calls regions ``r0, r1, ...`` in order, ``call void @<barrier>()`` between two."""
    ps, call, body = [], [], []
    for i, kind in enumerate(info.params):
        if kind == "buf":
            ps.append(f"ptr addrspace(1) noundef %p{i}")
            body.append(f"  %g{i} = addrspacecast ptr addrspace(1) %p{i} to ptr")
            call.append(f"ptr %g{i}")
        else:
            ps.append(f"i64 %p{i}")
            call.append(f"i64 %p{i}")
    priv = max(info.private, 8)
    if private_space:
        body.append(f"  %priv{private_space} = alloca [{priv} x i8], align 8, "
                    f"addrspace({private_space})")
        body.append(f"  %priv = addrspacecast ptr addrspace({private_space}) "
                    f"%priv{private_space} to ptr")
    else:
        body.append(f"  %priv = alloca [{priv} x i8], align 8")
    call.append("ptr %priv")
    for r in range(info.regions):
        if r:
            body.append(f"  call void @{barrier}()")
        body.append(f'  call void @"{info.name}.r{r}"({", ".join(call)})')
    types = ", ".join(["ptr" if k == "buf" else "i64" for k in info.params] + ["ptr"])
    decls = "".join(f'declare void @"{info.name}.r{r}"({types})\n'
                    for r in range(info.regions))
    head = f'define {convention} void @"{info.name}"({", ".join(ps)}) {attrs}'.rstrip()
    return decls + head + " {\n" + "\n".join(body) + "\n  ret void\n}"


def parse(text: str, what: str) -> llvm.ModuleRef:
    """Parses and verifies one IR text (a bug in the generators when it fails)."""
    try:
        mod = llvm.parse_assembly(text)
        mod.verify()
    except RuntimeError as exc:
        raise LoweringError(f"SIMT IR of {what} is invalid: {exc}") from exc
    return mod


def link(runtime: str, kernels: Sequence[Kernel], extra: Sequence[llvm.ModuleRef] = ()
         ) -> llvm.ModuleRef:
    """The target's ``runtime`` text (entries, intrinsic definitions) with every kernel
    linked in; every function but the kernels' entries becomes internal."""
    mod = parse(runtime, "the target runtime")
    for k in kernels:
        mod.link_in(parse(k.llvm_ir, f"kernel {k.name}"))
    for m in extra:
        mod.link_in(m)
    entries = {k.name for k in kernels}
    for fn in mod.functions:
        if not fn.is_declaration and fn.name not in entries:
            fn.linkage = llvm.Linkage.internal
    for g in mod.global_variables:
        if not g.is_declaration:
            g.linkage = llvm.Linkage.internal
    return mod
