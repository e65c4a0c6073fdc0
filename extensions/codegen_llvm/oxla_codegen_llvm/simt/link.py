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
