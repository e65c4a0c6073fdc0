"""From LLVM IR text to callable machine code (MCJIT), and to object files."""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

from oxla.errors import LoweringError
from oxla_codegen_llvm.target import Target


@dataclass
class JitModule:
    """A module compiled in this process; keeps the engine alive.

    Attributes:
        engine: the llvmlite execution engine owning the code.
        ir_text: the optimized LLVM IR.
    """

    engine: llvm.ExecutionEngine
    ir_text: str

    def address(self, name: str) -> int:
        """The address of function ``name`` (0 when absent)."""
        return self.engine.get_function_address(name)


def compile_ir(ir_text: str, target: Target, symbols: dict[str, int] | None = None,
               opt: int = 3) -> JitModule:
    """Parses, verifies, optimizes and JIT-compiles LLVM IR.

    Args:
        ir_text: a module's LLVM IR (text).
        target: the target to compile for (must be the host for JIT).
        symbols: external symbol name -> address (BLAS routines), registered globally.
        opt: LLVM optimization level, 0..3.

    Raises:
        LoweringError: the IR does not parse or verify (a bug in the emitters).
    """
    for name, addr in (symbols or {}).items():
        llvm.add_symbol(name, addr)
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as exc:
        raise LoweringError(f"generated LLVM IR is invalid: {exc}") from exc
    tm = target.target_machine(opt)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    return JitModule(engine, str(mod))


def emit_object(ir_text: str, target: Target) -> bytes:
    """The object code of a module for ``target`` (stored in artifacts)."""
    mod = llvm.parse_assembly(ir_text)
    return target.target_machine().emit_object(mod)
