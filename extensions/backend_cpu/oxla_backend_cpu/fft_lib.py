"""pocketfft's fixed-radix passes as a library compiled once, not into every program.

A loop-form FFT line (:mod:`oxla_backend_cpu.fft_pocket`) calls one function per
radix pass, ``void pass(T* cc, T* ch, T* wa, i64 ido, i64 l1)``, the same for every
length: it depends on the radix (complex 2, 3, 4, 5, 7, 8, 11; real 2, 3, 4, 5), the
direction and the precision only. Optimizing and generating those functions at -O3 was
most of an FFT program's compile time (rfft of 1024: ~65 of ~90 ms of LLVM work; a
complex FFT of 16384 with radix 8 and 4 passes: ~110 of ~150 ms), and a lighter
pipeline makes the large lines 10-40% slower (the passes' loops are vectorized).

So a program only *declares* its passes (symbols named by :func:`pass_symbol`);
:func:`library_objects` gives the object code that defines them, one object per pass,
made once per process and target (read from the installed runtime library,
:mod:`oxla_backend_cpu.rtlib`, when prebuilt there, and kept in the compile cache's
runtime object store when the cache is on), loaded into the program's engine beside it
(:func:`oxla_codegen_llvm.jit.load_object`'s ``libraries``; a ``.oxla`` artifact
carries them as members ``lib/<i>.o``). The code is the one the program used to
contain (same IR, same -O3 pipeline), so the same bits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from oxla_backend_cpu.cache import code_stamp
from oxla_backend_cpu.fft_pocket import (
    ARG_LIMIT,
    COMPLEX_RADICES,
    PREFIX,
    REAL_RADICES,
    define_pass,
    parse_symbol,
    pass_symbol,
)

__all__ = ["ARG_LIMIT", "COMPLEX_RADICES", "PREFIX", "REAL_RADICES", "STATS", "declared",
           "library_objects", "module_text", "parse_symbol", "pass_symbol"]

_DECLARED = re.compile(r'declare void @"(oxla_pocketfft_pass_[a-z0-9]+_[sd])"\(')
"""A declaration as llvmlite prints it (unanchored: 0.5 ms on 300 kB of IR, where a
line-anchored pattern took 4 ms; a false match only loads one more pass object)."""

_OBJECTS: dict[tuple[str, str, str, str], bytes] = {}
STATS = {"builds": 0}
"""How many pass objects this process optimized and generated."""


def declared(ir_text: str) -> tuple[str, ...]:
    """The pass symbols a program's LLVM IR (llvmlite's text) declares, sorted."""
    return tuple(sorted(set(_DECLARED.findall(ir_text))))


def module_text(name: str, triple: str = "") -> str:
    """The LLVM IR of a module that defines pass ``name`` (external linkage)."""
    import llvmlite.ir as ir

    module = ir.Module(f"oxla_fft_{name}")
    module.triple = triple
    fn = define_pass(module, name, *parse_symbol(name))
    ido, l1 = (f'i64 %"{a.name}"' for a in fn.args[3:])
    text = str(module)
    head = f'{ido}, {l1})'  # llvmlite has no range attribute: added to the text
    assert text.count(head) == 1, "unexpected pass signature"
    rng = f"i64 range(i64 1, {ARG_LIMIT})"
    return text.replace(head, f'{rng} {ido[4:]}, {rng} {l1[4:]})')


def library_objects(names: Sequence[str], target, store: Any = None,
                    library: Any = None) -> tuple[bytes, ...]:
    """The object code defining each pass of ``names`` for ``target``, in order: made
    (optimized at -O3 and generated) once per process, target and pass, or read from
    ``store`` (``load(key)``/``save(key, bytes)``, the cpu compile cache's runtime
    object store; None: no persistence). A stored object's key is the SHA-256 of the
    pass's name, the target and :func:`oxla_backend_cpu.cache.code_stamp` (the code
    that generates it), so a hit costs no IR generation. ``library``: an object with
    ``fft(target, name) -> bytes | None`` (:data:`oxla_backend_cpu.rtlib.LIBRARY`, the
    installed runtime library), asked before ``store``; None: not asked.

    Raises:
        LoweringError: a name is not a pass of this library.
    """
    from oxla_codegen_llvm.jit import optimize

    out = []
    for name in names:
        key = (target.triple, target.cpu, target.features, name)
        obj = _OBJECTS.get(key)
        if obj is None:
            parse_symbol(name)
            disk_key = ""
            if library is not None:
                obj = library.fft(target, name)
            if obj is None and store is not None:
                disk_key = "fft-" + hashlib.sha256("\0".join(
                    (*key, code_stamp())).encode()).hexdigest()
                obj = store.load(disk_key)
            if obj is None:
                text = module_text(name, target.triple)
                obj = target.target_machine().emit_object(optimize(text, target))
                STATS["builds"] += 1
                if store is not None:
                    store.save(disk_key, obj)
            _OBJECTS[key] = obj
        out.append(obj)
    return tuple(out)
