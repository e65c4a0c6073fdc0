"""The AMDGPU metadata of a code object (``.hsaco``), read back in Python: the ELF note
``AMDGPU`` of type ``NT_AMDGPU_METADATA`` (32), a msgpack map (code object v3 and up;
``llvm-readelf --notes`` prints the same as YAML).

:func:`check_launches` holds each kernel's descriptor against what the runtime passes at
a launch (the launch program's steps): the explicit kernarg size (8 bytes per ``buf`` or
``i64`` parameter, no hidden arguments needed), the block against
``.max_flat_workgroup_size``, static plus dynamic LDS against the 64 KiB a workgroup
has, and the wavefront size against the arch's.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack
from oxla_codegen_llvm.simt.amdgpu import WAVEFRONT

from oxla.errors import LoweringError

NT_AMDGPU_METADATA = 32
LDS_BYTES = 65536
"""LDS per workgroup on gfx90a, gfx942 and gfx1100."""
ELF_MACHINE_AMDGPU = 224


def _notes(data: bytes, off: int, size: int) -> list[tuple[str, int, bytes]]:
    out, end = [], off + size
    while off + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", data, off)
        off += 12
        name = data[off:off + namesz].rstrip(b"\0").decode("ascii", "replace")
        off += (namesz + 3) & ~3
        out.append((name, ntype, data[off:off + descsz]))
        off += (descsz + 3) & ~3
    return out


def read_metadata(hsaco: bytes) -> dict[str, Any]:
    """The code object's AMDGPU metadata map (``amdhsa.version``, ``amdhsa.target``,
    ``amdhsa.kernels``).

    Raises:
        LoweringError: not a 64-bit little-endian AMDGPU ELF, or no metadata note.
    """
    if hsaco[:4] != b"\x7fELF" or hsaco[4] != 2 or hsaco[5] != 1:
        raise LoweringError("not a 64-bit little-endian ELF code object")
    machine = struct.unpack_from("<H", hsaco, 18)[0]
    if machine != ELF_MACHINE_AMDGPU:
        raise LoweringError(f"ELF machine {machine} is not AMDGPU ({ELF_MACHINE_AMDGPU})")
    shoff = struct.unpack_from("<Q", hsaco, 40)[0]
    shentsize, shnum = struct.unpack_from("<HH", hsaco, 58)
    for i in range(shnum):
        base = shoff + i * shentsize
        sh_type = struct.unpack_from("<I", hsaco, base + 4)[0]
        if sh_type != 7:  # SHT_NOTE
            continue
        off, size = struct.unpack_from("<QQ", hsaco, base + 24)
        for name, ntype, desc in _notes(hsaco, off, size):
            if name == "AMDGPU" and ntype == NT_AMDGPU_METADATA:
                return msgpack.unpackb(desc, raw=False, strict_map_key=False)
    raise LoweringError("the code object has no AMDGPU metadata note")


def kernel_descriptors(hsaco: bytes) -> dict[str, dict[str, Any]]:
    """Each kernel's metadata (``.kernarg_segment_size``, ``.group_segment_fixed_size``,
    ``.wavefront_size``, ``.max_flat_workgroup_size``, ``.args``...), by name."""
    return {k[".name"]: k for k in read_metadata(hsaco).get("amdhsa.kernels", [])}


def _launches(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for s in steps:
        if s["op"] == "launch":
            out.append(s)
        for key in ("init", "cond", "body"):
            out += _launches(s.get(key, []))
        for branch in s.get("branches", []):
            out += _launches(branch)
    return out


def check_launches(hsaco: bytes, arch: str, steps: list[dict[str, Any]]) -> int:
    """Checks every launch of ``steps`` against the descriptors of ``hsaco`` (module
    doc); returns how many launches were checked.

    Raises:
        LoweringError: a kernel missing from the code object, or a descriptor that
            disagrees with a launch (the message names the kernel and the field).
    """
    meta = read_metadata(hsaco)
    target = str(meta.get("amdhsa.target", ""))
    if not target.startswith(f"amdgcn-amd-amdhsa--{arch}"):
        raise LoweringError(f"code object for {arch} has target '{target}'")
    kernels = {k[".name"]: k for k in meta.get("amdhsa.kernels", [])}
    launches = _launches(steps)
    for st in launches:
        name = st["kernel"]
        k = kernels.get(name)
        if k is None:
            raise LoweringError(f"{arch}: kernel {name} is not in the code object")
        want = 8 * len(st["args"])
        if k[".kernarg_segment_size"] != want:
            raise LoweringError(f"{arch}: kernel {name} takes {k['.kernarg_segment_size']} "
                                f"kernarg bytes, the runtime passes {want}")
        threads = st["block"][0] * st["block"][1] * st["block"][2]
        if threads > k[".max_flat_workgroup_size"]:
            raise LoweringError(f"{arch}: kernel {name} launched with {threads} threads, "
                                f"max_flat_workgroup_size {k['.max_flat_workgroup_size']}")
        lds = k[".group_segment_fixed_size"] + st["shared"]
        if lds > LDS_BYTES:
            raise LoweringError(f"{arch}: kernel {name} needs {lds} bytes of LDS")
        if k[".wavefront_size"] != WAVEFRONT[arch]:
            raise LoweringError(f"{arch}: kernel {name} has wavefront {k['.wavefront_size']}, "
                                f"the arch {WAVEFRONT[arch]}")
        if k.get(".private_segment_fixed_size", 0) and k.get(".uses_dynamic_stack"):
            raise LoweringError(f"{arch}: kernel {name} uses a dynamic stack")
    return len(launches)
