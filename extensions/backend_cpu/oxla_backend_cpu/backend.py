"""The ``cpu`` backend: StableHLO to native code, as named stages read top to bottom.

1. core pipeline (``oxla.passes.run_pipeline``) when the core provides it;
2. fusion (:mod:`oxla_backend_cpu.fusion`);
3. scheduling (greedy by live bytes, :mod:`oxla_backend_cpu.schedule`);
4. buffer assignment (in place, inside results, one arena first fit,
   :mod:`oxla_backend_cpu.buffers`);
5. codegen (:mod:`oxla_backend_cpu.codegen`, emitters in ``oxla_codegen_llvm``);
6. JIT and executable (:mod:`oxla_backend_cpu.executable`).

A persistent compile cache (:mod:`oxla_backend_cpu.cache`) sits in front of all of it
unless ``CompileOptions(cache=False)`` or a ``dump_dir`` is given.

With ``CompileOptions.dump_dir`` each stage writes what it produced there.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

from oxla.ir import Module, print_module, verify
from oxla.protocols import CompileOptions
from oxla_backend_cpu.executable import BACKEND, CPUExecutable, load_artifact


def _inline_composites(module: Module) -> int:
    """Replaces every ``composite`` by a copy of its ``decomposition`` function's body
    (spec ``composite``: its semantics are the decomposition's); returns how many.

    Raises:
        LoweringError: the decomposition function is missing or has no body.
    """
    from oxla.errors import LoweringError
    from oxla.passes.inline import Inline

    funcs = {f.attributes["sym_name"].value: f for f in module.functions}
    n = 0
    for _ in range(64):  # decompositions may hold composites themselves
        ops = [op for op in module.walk() if op.name == "stablehlo.composite"]
        if not ops:
            return n
        for op in ops:
            ref = op.attributes["decomposition"]
            name = getattr(ref, "value", str(ref)).lstrip("@")
            target = funcs.get(name)
            if target is None or not target.regions or not target.regions[0].blocks:
                raise LoweringError(f"'stablehlo.composite' at {op.loc}: decomposition "
                                    f"@{name} has no body to compile on the cpu backend")
            Inline._inline(op, target)
            n += 1
    raise LoweringError("'stablehlo.composite': decompositions nest more than 64 deep")


def _core_pipeline(module: Module, options: CompileOptions) -> tuple[Module, str]:
    try:
        from oxla.passes import run_pipeline
    except ImportError:
        return module, "core pipeline: not yet available"
    spec = options.pipeline or "default"
    out = run_pipeline(module, spec)
    return (out if isinstance(out, Module) else module), f"core pipeline: {spec}"


class CPUBackend:
    """Compiles StableHLO for the host CPU through LLVM; BLAS for dots."""

    name = BACKEND

    def available(self) -> tuple[bool, str]:
        try:
            import llvmlite.binding  # noqa: F401
            import scipy.linalg.cython_blas  # noqa: F401
        except ImportError as exc:
            return False, f"missing dependency: {exc.name}"
        return True, ""

    def compile(self, module: Module, options: CompileOptions | None = None) -> CPUExecutable:
        """Compiles ``module``'s ``main``.

        Raises:
            NotSupportedError: an op, type or form this backend cannot compile yet (the
                message names the op and its location).
            VerifyError: the module is invalid.
        """
        from oxla_codegen_llvm import CPUTarget
        from oxla_codegen_llvm.jit import compile_ir

        from oxla_backend_cpu import cache
        from oxla_backend_cpu.blas import blas_symbols
        from oxla_backend_cpu.buffers import assign_best
        from oxla_backend_cpu.codegen import emit_program
        from oxla_backend_cpu.dot_layout import absorb_transposes
        from oxla_backend_cpu.fusion import fuse
        from oxla_backend_cpu.probe import probes_to_custom_calls
        from oxla_backend_cpu.profile import enabled
        from oxla_backend_cpu.rowlib import SOFTMAX  # noqa: F401 - registers row kernels
        from oxla_backend_cpu.schedule import schedule

        options = options or CompileOptions()
        if "profile" not in options.extra and enabled(options.extra):  # in the cache key
            options = dataclasses.replace(options, extra={**options.extra, "profile": True})
        t0 = time.perf_counter()
        key, known = None, {}
        if options.cache and not options.dump_dir:
            # An entry's text was verified when it was compiled: a hit skips verify.
            # Weights are hashed from their bytes, never printed (see cache.module_key).
            key, known = cache.module_key(module, options, CPUTarget.host())
            hit = cache.lookup(key, known)
            if hit is not None:
                hit.stats.update(cache="hit", compile_seconds=time.perf_counter() - t0)
                return hit
        verify(module)
        dump = _Dumper(options.dump_dir)
        _inline_composites(module)
        probes_to_custom_calls(module)  # interpreter.probe: identity that records
        module, note = _core_pipeline(module, options)
        absorbed = absorb_transposes(module)
        dump("1-core-pipeline.mlir", lambda: print_module(module))
        plan = fuse(module)
        plan.notes.insert(0, note)
        plan.notes.insert(1, f"dot layout: {absorbed} transposed dot operands read in place")
        program_order = list(plan.kernels)
        plan = schedule(plan)
        plan = assign_best(plan, program_order)
        dump("2-4-plan.txt", plan.describe)
        target = CPUTarget.host()
        labels: list[str] | None = [] if enabled(options.extra) else None
        recipes: list[dict | None] = []
        ir_text, constants = emit_program(plan, target, options.fast_math, labels, recipes)
        dump("5-codegen.ll", ir_text)
        jit = compile_ir(ir_text, target, blas_symbols(),
                         store=cache.RUNTIME_OBJECTS if key else None)
        dump("6-optimized.ll", jit.ir_text)
        plan.notes.append(f"codegen: {len(plan.kernels)} kernels, llvm -O3 for {target.cpu}")
        stats = {"compile_seconds": time.perf_counter() - t0,
                 "kernel_count": len(plan.kernels), "temp_bytes": plan.temp_bytes,
                 "cache": "miss" if key else "off"}
        if labels is not None:
            stats["profile_labels"] = labels
        from oxla.ir import func_type
        from oxla.protocols import Signature
        from oxla_backend_cpu.codegen import INLINE_CONSTANT_BYTES

        ft = func_type(module.main)
        # Weights travel as .npy members: the stored StableHLO elides them.
        text = print_module(module, elide_constants_over=INLINE_CONSTANT_BYTES)
        exe = CPUExecutable(text, jit.ir_text, jit, target, stats, list(plan.notes),
                            Signature(tuple(ft.inputs), tuple(ft.results)),
                            constants=constants, constant_recipes=recipes)
        if key:
            cache.store(key, exe, known)
        return exe

    def load(self, path: str | os.PathLike[str]) -> CPUExecutable:
        """Loads an artifact written by :meth:`CPUExecutable.save` (see
        :func:`~oxla_backend_cpu.executable.load_artifact`)."""
        return load_artifact(path)

    def run_parallel(self, programs, args, infeed=None) -> tuple[list, list]:
        """Runs a replica x partition grid of executables of this backend, one thread
        per process, with in-process collectives (see
        :func:`oxla_backend_cpu.collectives_runtime.run_parallel`)."""
        from oxla_backend_cpu.collectives_runtime import run_parallel

        return run_parallel(programs, args, infeed)


class _Dumper:
    def __init__(self, where: str | None):
        self.where = where
        if where:
            os.makedirs(where, exist_ok=True)

    def __call__(self, name: str, text: Any) -> None:
        """Writes ``text`` (or what it returns when callable: made only when dumping)."""
        if self.where:
            with open(os.path.join(self.where, name), "w") as f:
                f.write(str(text() if callable(text) else text))
