"""One gpuocelot launch, run as a script in its own process (standard library only, so
it starts in milliseconds): ``python -I -S ocelot_child.py JOB.json``. The job names
the library, the PTX, the launch dimensions and the arguments (a buffer as ``[file,
offset]`` in a file both processes map, a scalar as an integer); see
:mod:`oxla_codegen_llvm.simt.ocelot`."""

from __future__ import annotations

import ctypes
import json
import mmap
import sys


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    lib = ctypes.CDLL(job["lib"])
    lib.ptx_run.argtypes = [ctypes.c_char_p, ctypes.c_int,
                            ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 7
    lib.ptx_run.restype = None
    maps: dict[str, tuple] = {}
    vals = []
    for a in job["args"]:
        if isinstance(a, list):
            path, off = a
            if path not in maps:
                fh = open(path, "r+b")
                m = mmap.mmap(fh.fileno(), 0)
                maps[path] = (fh, m, ctypes.c_char.from_buffer(m))
            vals.append(ctypes.addressof(maps[path][2]) + off)
        else:
            vals.append(a & 0xFFFFFFFFFFFFFFFF)
    argv = (ctypes.c_void_p * max(len(vals), 1))(*vals)
    g, b = job["grid"], job["block"]
    lib.ptx_run(job["ptx"].encode(), len(vals), argv, b[0], b[1], b[2], g[0], g[1], g[2],
                job["shared"])
    for _fh, m, _ in maps.values():
        m.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
