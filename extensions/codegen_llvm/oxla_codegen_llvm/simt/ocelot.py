"""Running SIMT kernels' PTX in gpuocelot's emulator (``../shared/tools/gpuocelot``).

gpuocelot accepts PTX for ``.target`` up to sm_35 (no f16 arithmetic, no shuffles) and
aborts the whole process on an instruction it lacks, so each launch runs in its own
Python subprocess (:mod:`oxla_codegen_llvm.simt.ocelot_child`, a standard-library
script). The buffers are
files in a temporary directory (``/dev/shm`` where there is one) that both processes map,
so the child's writes are the parent's arrays: no copies. :class:`OcelotDevice` allocates
them and launches; :func:`library` finds the emulator and says why it cannot be used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from oxla.errors import LoweringError

ARCH = "sm_35"
CHILD = Path(__file__).with_name("ocelot_child.py")


@cache
def library() -> tuple[Path | None, str]:
    """(path of ``libgpuocelot.so``, "") when it can be loaded, else (None, why).

    Looked up at ``$OXLA_GPUOCELOT``, then ``shared/tools/gpuocelot`` next to this
    checkout."""
    env = os.environ.get("OXLA_GPUOCELOT")
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve()
    cands += [p / "shared" / "tools" / "gpuocelot" / "libgpuocelot.so"
              for p in here.parents]
    for c in cands:
        if c.is_file():
            probe = subprocess.run([sys.executable, "-I", "-S", "-c",
                                    f"import ctypes; ctypes.CDLL({str(c)!r})"],
                                   capture_output=True, text=True, timeout=60)
            if probe.returncode != 0:
                err = (probe.stderr.strip().splitlines() or ["?"])[-1]
                return None, f"{c} does not load: {err}"
            return c, ""
    return None, "gpuocelot not found (../shared/tools/gpuocelot/libgpuocelot.so)"


class OcelotDevice:
    """Host memory shared with the emulator's processes, and launches.

    Args:
        lib: ``libgpuocelot.so`` (see :func:`library`).
    """

    def __init__(self, lib: Path):
        self.lib = lib
        root = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self._dir = tempfile.TemporaryDirectory(prefix="oxla-ocelot-", dir=root)
        self._arrays: list[tuple[int, int, str, np.memmap]] = []  # (addr, nbytes, file, map)

    def close(self) -> None:
        self._arrays.clear()
        self._dir.cleanup()

    def __enter__(self) -> OcelotDevice:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def alloc(self, nbytes: int) -> np.ndarray:
        """A zeroed byte array the emulator's processes see (at least 16 bytes)."""
        path = os.path.join(self._dir.name, f"buf{len(self._arrays)}")
        n = max(int(nbytes), 16)
        with open(path, "wb") as f:
            f.truncate(n)
        m = np.memmap(path, dtype=np.uint8, mode="r+", shape=(n,))
        self._arrays.append((m.ctypes.data, n, path, m))
        return m

    def _where(self, addr: int) -> tuple[str, int]:
        for base, n, path, _ in self._arrays:
            if base <= addr <= base + n:
                return path, addr - base
        raise LoweringError(f"gpuocelot: address {addr:#x} is not in a device buffer")

    def launch(self, ptx: str, kernel: str, kinds: Sequence[str], args: Sequence[int],
               grid: Sequence[int], block: Sequence[int], shared_bytes: int,
               timeout: float = 120) -> None:
        """Runs entry ``kernel`` of ``ptx`` in a subprocess.

        Args:
            kinds: each argument's kind (``buf``/``i64``); a ``buf`` address must lie in
                an array of :meth:`alloc`.

        Raises:
            LoweringError: the emulator failed (its exit status and output).
        """
        for a in self._arrays:
            a[3].flush()
        ptx = _only_entry(ptx, kernel)
        job = {"lib": str(self.lib), "ptx": ptx, "grid": list(grid), "block": list(block),
               "shared": int(shared_bytes),
               "args": [list(self._where(a)) if k == "buf" else int(a)
                        for k, a in zip(kinds, args)]}
        path = os.path.join(self._dir.name, "job.json")
        with open(path, "w") as f:
            json.dump(job, f)
        proc = subprocess.run([sys.executable, "-I", "-S", str(CHILD), path],
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            raise LoweringError(f"gpuocelot: kernel {kernel} failed (exit "
                                f"{proc.returncode}):\n{tail}")


def _only_entry(ptx: str, kernel: str) -> str:
    """``ptx`` as it is: gpuocelot's ``ptx_run`` launches the module's first entry, so the
    caller emits one kernel per module (``to_ptx([kernel], "sm_35")``)."""
    if ptx.count(".entry") != 1 or f".entry {kernel}(" not in ptx:
        raise LoweringError(f"gpuocelot: the PTX must hold exactly kernel {kernel}")
    return ptx
