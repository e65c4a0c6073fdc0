"""``python -m oxla_backend_cpu.prebuild``: builds the installed runtime library
(:mod:`oxla_backend_cpu.rtlib`) for this host.

It writes, into :func:`oxla_backend_cpu.rtlib.library_dir` (or ``--dir``), the whole
parallel runtime with every registered runtime extension, the bare parallel runtime
(programs without an extension), and every FFT radix pass
(:data:`oxla_backend_cpu.fft_lib.COMPLEX_RADICES` and ``REAL_RADICES``, both
directions, f32 and f64), each keyed by the code, LLVM and the host CPU. Library files
of other keys (stale ones) are removed; other files are left alone. Takes a few seconds of CPU (LLVM -O3 of ~1 s of
runtime and ~45 passes). ``scripts/_venv.sh`` runs it after the install with
``--quiet``; a failure there is a warning, compiles then build what they need in memory.

Exit status 0 on success, 1 when the directory cannot be written or LLVM fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

from oxla_codegen_llvm.jit import optimize
from oxla_codegen_llvm.target import CPUTarget

import oxla_backend_cpu.backend  # noqa: F401  (registers the runtime extensions)
from oxla_backend_cpu import fft_lib, rtlib
from oxla_backend_cpu.parallel import runtime_extensions, runtime_module


def build(directory: str | None = None, quiet: bool = False,
          fft_passes: Sequence[str] | None = None) -> list[str]:
    """Builds the library into ``directory`` (default: the library directory).
    ``fft_passes``: the FFT pass symbols to build (None: all of them).

    Returns:
        The paths written.

    Raises:
        OSError: the directory cannot be written.
        RuntimeError: the library is off (``$OXLA_RUNTIME_DIR=off``) and no directory
            was given.
    """
    d = directory or rtlib.library_dir()
    if d is None:
        raise RuntimeError(f"the runtime library is off (${rtlib.ENV}=off)")
    target = CPUTarget.host()
    tm = target.target_machine()
    items: list[tuple[dict, object]] = []
    for names in dict.fromkeys((runtime_extensions(), ())):
        items.append(({"runtime": list(names)},
                      lambda n=names: runtime_module(target.triple, n)))
    for real, radices in ((False, fft_lib.COMPLEX_RADICES), (True, fft_lib.REAL_RADICES)):
        for radix in radices:
            for direction in "fb":
                for wide in (False, True):
                    name = fft_lib.pass_symbol(f"{'r' if real else 'c'}{radix}{direction}",
                                               wide)
                    if fft_passes is not None and name not in fft_passes:
                        continue
                    items.append(({"fft": name},
                                  lambda n=name: fft_lib.module_text(n, target.triple)))
    written = []
    for what, text in items:
        t0 = time.process_time()
        meta = rtlib.key_material(target, what)
        obj = tm.emit_object(optimize(text(), target))
        written.append(rtlib.save(meta, obj, d))
        if not quiet:
            print(f"{what}: {len(obj)} bytes, {time.process_time() - t0:.2f} s CPU")
    keep = {os.path.basename(p) for p in written}
    for name in os.listdir(d):
        path = os.path.join(d, name)
        if name.endswith(".o") and name not in keep and _is_library_file(path):
            os.remove(path)
    return written


def _is_library_file(path: str) -> bool:
    """Whether ``path`` starts as a library file does (other files in a directory
    named by ``$OXLA_RUNTIME_DIR`` are never removed)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(rtlib.MAGIC)) == rtlib.MAGIC
    except OSError:
        return False


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m oxla_backend_cpu.prebuild",
                                 description="build the cpu runtime library for this host")
    ap.add_argument("--dir", help="where to write it (default: $OXLA_RUNTIME_DIR, else "
                                  "the package's _runtime directory)")
    ap.add_argument("--quiet", action="store_true", help="print only errors")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    try:
        paths = build(args.dir, args.quiet)
    except OSError as exc:  # the directory cannot be written: the user's setting
        where = exc.filename or args.dir or "the runtime library directory"
        print(f"error: cannot write the cpu runtime library to {where}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # the library is off ($OXLA_RUNTIME_DIR=off)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"{len(paths)} objects in {os.path.dirname(paths[0])}, "
              f"{time.process_time() - t0:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
