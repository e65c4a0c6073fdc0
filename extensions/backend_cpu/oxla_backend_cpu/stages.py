"""The cpu backend's own stages, after :mod:`oxla.lowering`'s target-free ones.

1. ``codegen``: the plan as one LLVM module (:mod:`oxla_backend_cpu.codegen`, kernels
   through the shared emitter of ``oxla_codegen_llvm``);
2. ``jit``: LLVM -O3 for the host and the shared runtime's symbols
   (:func:`oxla_codegen_llvm.jit.compile_ir`), with the precompiled FFT passes the
   program calls (:mod:`oxla_backend_cpu.fft_lib`); the runtime and the passes come
   from the installed runtime library when prebuilt (:mod:`oxla_backend_cpu.rtlib`,
   read with the compile cache on or off);
3. ``executable``: a :class:`~oxla_backend_cpu.executable.CPUExecutable` with its
   stats, notes and signature.
"""

from __future__ import annotations

import time

from oxla_codegen_llvm.jit import compile_ir

from oxla.ir import func_type, print_module
from oxla.lowering import Compilation, Stage
from oxla.protocols import Signature
from oxla_backend_cpu import cache
from oxla_backend_cpu.blas import BLAS_SYMBOLS
from oxla_backend_cpu.codegen import INLINE_CONSTANT_BYTES, emit_program
from oxla_backend_cpu.executable import CPUExecutable
from oxla_backend_cpu.fft_lib import declared, library_objects
from oxla_backend_cpu.parallel import HOST_RUNTIME
from oxla_backend_cpu.profile import enabled
from oxla_backend_cpu.rtlib import LIBRARY


def _codegen(c: Compilation) -> None:
    assert c.plan is not None
    labels: list[str] | None = [] if enabled(c.options.extra) else None
    recipes: list[dict | None] = []
    ir_text, constants = emit_program(c.plan, c.target, c.options.fast_math, labels, recipes)
    c.dump("5-codegen.ll", ir_text)
    c.artifacts.update(ir_text=ir_text, constants=constants, labels=labels, recipes=recipes)


def _jit(c: Compilation) -> None:
    assert c.plan is not None
    cached = c.options.cache and not c.options.dump_dir  # the compile cache is in use
    store = cache.RUNTIME_OBJECTS if cached else None
    text = c.artifacts["ir_text"]
    libs = library_objects(declared(text), c.target, store, LIBRARY)  # its FFT passes
    jit = compile_ir(text, c.target, BLAS_SYMBOLS, store=store, runtime=HOST_RUNTIME,
                     libraries=libs, library=LIBRARY)
    c.dump("6-optimized.ll", jit.ir_text)
    c.plan.notes.append(f"codegen: {len(c.plan.kernels)} kernels, llvm -O3 for {c.target.cpu}")
    c.artifacts["jit"] = jit


def _executable(c: Compilation) -> None:
    plan, a = c.plan, c.artifacts
    assert plan is not None
    cached = c.options.cache and not c.options.dump_dir
    stats = {"compile_seconds": time.perf_counter() - c.started,
             "kernel_count": len(plan.kernels), "temp_bytes": plan.temp_bytes,
             "cache": "miss" if cached else "off"}
    if a["labels"] is not None:
        stats["profile_labels"] = a["labels"]
    ft = func_type(c.module.main)
    # Weights travel as .npy members: the stored StableHLO elides them.
    text = print_module(c.module, elide_constants_over=INLINE_CONSTANT_BYTES)
    jit = a["jit"]
    c.result = CPUExecutable(text, jit.ir_text, jit, c.target, stats, list(plan.notes),
                             Signature(tuple(ft.inputs), tuple(ft.results)),
                             constants=a["constants"], constant_recipes=a["recipes"])


STAGES = (Stage("codegen", _codegen), Stage("jit", _jit), Stage("executable", _executable))
"""The cpu backend's stages, in order."""
