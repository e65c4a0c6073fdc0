"""HIP kernels on the host: how a HIP implementation runs on the simulated device
(``OXLA_HIP_DEVICE=sim``), where no AMDGPU emulator exists.

The kernel's own HIP C++ source is compiled for the host with the system C++ compiler
against a shim ``hip/hip_runtime.h`` (``include/hip_host``, found before any ROCm
header): the grid's blocks run one after another and a block's threads are POSIX
threads meeting at ``__syncthreads()``, so ``__shared__`` arrays are one buffer per
block. :func:`host_source` rewrites ``extern __shared__ T name[];`` (dynamic shared
memory) to the block's buffer and adds an entry, ``oxla_hip_host_run``, that calls the
kernel with its arguments typed as the launch passes them (pointers, 64-bit ints,
32-bit floats). The library is cached by content hash like a C kernel
(:func:`oxla_kernels.native.compile_shared`).

This checks the source's semantics (indexing, shared memory, barriers, arithmetic), not
the AMDGPU code object ``hipcc`` made from it. What the shim lacks (warp intrinsics
such as ``__shfl_down``, ``__ballot``, textures, cooperative groups) fails to compile,
which is reported as a ``LoweringError`` with the compiler's log.
"""

from __future__ import annotations

import ctypes
import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from oxla.errors import LoweringError
from oxla_kernels.native import INCLUDE_DIR, compile_shared

SHIM_DIR = INCLUDE_DIR / "hip_host"
SHIM = SHIM_DIR / "hip" / "hip_runtime.h"
MAX_THREADS = 1024
_EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?"
    r"([^;\[\]\n]+?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;")
_C_TYPES = {"ptr": "void*", "i64": "long long", "f32": "float"}


def host_source(source: str, entry: str, kinds: Sequence[str]) -> str:
    """``source`` made into a host library (module doc); ``kinds`` are the kernel's
    parameters in order: ``ptr``, ``i64`` or ``f32``."""
    body = _EXTERN_SHARED.sub(
        lambda m: f"\n#define {m.group(2)} (({m.group(1).strip()}*)oxla_shared_base())\n",
        source)
    params = ", ".join(_C_TYPES[k] for k in kinds) or "void"
    args = ", ".join(f"a[{i}]" if k == "ptr" else f"*({_C_TYPES[k]}*)a[{i}]"
                     for i, k in enumerate(kinds))
    shim = hashlib.sha256(SHIM.read_bytes()).hexdigest()[:16]
    return (f"// oxla HIP host shim {shim}\n#define OXLA_HIP_HOST_RUNTIME\n"
            f"#include <hip/hip_runtime.h>\n{body}\n"
            f"static void oxla_body(void** a) {{\n"
            f"  reinterpret_cast<void (*)({params})>(&{entry})({args});\n}}\n"
            f'extern "C" int oxla_hip_host_run(void** a, unsigned gx, unsigned gy, '
            f"unsigned gz, unsigned bx, unsigned by, unsigned bz, size_t shared) {{\n"
            f"  return oxla_run_grid(oxla_body, a, gx, gy, gz, bx, by, bz, shared);\n}}\n")


def host_library(source: str, entry: str, kinds: Sequence[str]) -> Path:
    """The compiled host library of a HIP kernel (cached).

    Raises:
        LoweringError: the source does not compile against the shim (its log).
    """
    try:
        return compile_shared(host_source(source, entry, kinds), "c++",
                              flags=["-std=c++17", "-pthread", "-w"],
                              include_dirs=[SHIM_DIR])
    except LoweringError as exc:
        raise LoweringError(f"HIP kernel {entry} does not compile for the host shim the "
                            "simulated hip device runs it with (it may use warp "
                            "intrinsics or other features the shim lacks)",
                            notes=exc.notes) from None


def run_on_host(source: str, entry: str, kinds: Sequence[str], grid: Sequence[int],
                block: Sequence[int], shared_mem: int, scalars: Sequence[float | int],
                buffers: list[np.ndarray]) -> None:
    """Runs the kernel over ``grid`` x ``block`` on host memory: ``buffers`` (the
    operands' then the results' bytes, written in place) then ``scalars``.

    Raises:
        LoweringError: it does not compile, or a block has over :data:`MAX_THREADS`
            threads, or a thread could not be started.
    """
    threads = int(np.prod(block))
    if threads > MAX_THREADS:
        raise LoweringError(f"HIP kernel {entry}: {threads} threads per block (at most "
                            f"{MAX_THREADS})")
    lib = ctypes.CDLL(str(host_library(source, entry, kinds)))
    fn = lib.oxla_hip_host_run
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_uint] * 6 + [ctypes.c_size_t]
    keep = [ctypes.c_longlong(int(v)) if k == "i64" else ctypes.c_float(float(v))
            for k, v in zip(kinds[len(buffers):], scalars)]
    ptrs = [b.ctypes.data for b in buffers] + [ctypes.addressof(v) for v in keep]
    arr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
    if fn(arr, *grid, *block, int(shared_mem)):
        raise LoweringError(f"HIP kernel {entry}: a host thread could not be started")
