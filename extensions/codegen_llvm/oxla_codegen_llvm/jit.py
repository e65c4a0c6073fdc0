"""From LLVM IR text to callable machine code, and to object files.

One code generation per compile: the optimized module is turned into an object file
once (:func:`compile_ir`), and that object is what MCJIT loads (its runtime linker
resolves libm, libc and the registered BLAS symbols). The same bytes are what the
persistent compile cache and ``.oxla`` artifacts store, so :func:`load_object` brings a
program back without parsing, optimizing or generating code again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import llvmlite.binding as llvm

from oxla.errors import LoweringError
from oxla_codegen_llvm.diagnostics import llvm_diagnostics_quiet
from oxla_codegen_llvm.target import Target


class Runtime(Protocol):
    """A backend's runtime as the host JIT loads it next to programs (the cpu backend's
    parallel-for and worker pool, ``oxla_backend_cpu.parallel.HOST_RUNTIME``): compiled
    once per process and target, linked to every program that declares one of its
    symbols."""

    def symbols(self) -> frozenset[str]:
        """The functions and globals it defines that programs may declare."""

    def key(self) -> tuple[str, ...]:
        """What is in it beyond its code's text (registered extensions), for caching."""

    def module_text(self, triple: str) -> str:
        """Its LLVM IR for target ``triple``."""

    def subset(self, declared: frozenset[str]) -> Runtime:
        """The part of it a program that declares ``declared`` (a subset of
        :meth:`symbols`) is loaded with: each program pays the code generation of what
        it calls only."""


@dataclass
class JitModule:
    """Machine code loaded in this process; keeps the engine alive.

    Attributes:
        engine: the llvmlite execution engine owning the code.
        ir_text: the optimized LLVM IR (``""`` when loaded from an object only).
        object_code: the object file the engine loaded (ELF on Linux).
        runtime_code: the parallel runtime's object loaded next to it (``b""`` when the
            program does not call it), see :func:`runtime_object`.
        library_code: other objects loaded next to it that define functions it
            declares (the cpu backend's precompiled FFT passes), in load order.
    """

    engine: llvm.ExecutionEngine
    ir_text: str
    object_code: bytes = b""
    runtime_code: bytes = b""
    library_code: tuple[bytes, ...] = ()

    def address(self, name: str) -> int:
        """The address of function ``name`` (0 when absent)."""
        return self.engine.get_function_address(name)

    def global_address(self, name: str) -> int:
        """The address of global variable ``name`` (0 when absent)."""
        return self.engine.get_global_value_address(name)


def optimize(ir_text: str, target: Target, opt: int = 3) -> llvm.ModuleRef:
    """Parses, verifies and optimizes LLVM IR for ``target``.

    The pass pipeline is LLVM's ``-O<opt>`` with the loop and SLP vectorizers on (from
    ``opt >= 2``), for the target machine's CPU and features (the host's on the CPU),
    so loops are vectorized for AVX2/AVX-512/NEON as available. No fast-math flags are
    added here: whatever the emitters did not mark stays IEEE-exact.

    Raises:
        LoweringError: the IR does not parse or verify (a bug in the emitters).
    """
    try:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
    except RuntimeError as exc:
        raise LoweringError(f"generated LLVM IR is invalid: {exc}") from exc
    tm = target.target_machine(opt)
    mod.triple = target.triple
    mod.data_layout = str(tm.target_data)
    _merge_identical_functions(mod, tm)
    _keep_functions_apart(mod)
    if opt >= 2 and control_only(mod):  # nothing the pipeline would make faster
        return mod
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    with llvm_diagnostics_quiet():  # "remark: loop not vectorized" unless OXLA_DEBUG
        pb.getModulePassManager().run(mod, pb)
    return mod


def _merge_identical_functions(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Runs LLVM's MergeFunctions before the pipeline: kernels emitted to the same IR (a
    model's repeated layers: GPT-2 small's 373 functions become 158) are optimized and
    compiled once and called from every site (GPT-2's -O3 + codegen 2.6 -> 0.7 s CPU).
    Identical code, so run times do not change."""
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_merge_functions_pass()
    mpm.run(mod, pb)


def _keep_functions_apart(mod: llvm.ModuleRef) -> None:
    """Marks every defined function ``noinline`` unless it asks to be inlined.

    Kernels are internal functions called once, so LLVM would inline all of them into
    the entry function; optimizing and generating code for that one huge function is
    superlinear (a transformer block: an 11k-line entry, 2 s of -O3). Separate kernels
    optimize just as well (each is a loop nest over its own pointers) and faster.
    """
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        attrs = {a.decode() if isinstance(a, bytes) else str(a) for a in fn.attributes}
        if not any("alwaysinline" in a for a in attrs):
            fn.add_function_attribute("noinline")


def _register(symbols: Mapping[str, int] | None, objects: tuple[bytes, ...]) -> None:
    """Registers each of ``symbols`` that one of ``objects`` names (an undefined symbol's
    name is in its object's string table). Only then is its address asked for: a
    mapping that loads its library at the first lookup (the cpu backend's BLAS, ~20 ms
    of imports and ``dlopen``) costs nothing to programs that do not call it."""
    for name in symbols or ():
        key = name.encode()
        if any(key in obj for obj in objects):
            addr = symbols.get(name)
            if addr:
                llvm.add_symbol(name, addr)


def _engine(target: Target) -> llvm.ExecutionEngine:
    empty = llvm.parse_assembly("")
    empty.triple = target.triple
    return llvm.create_mcjit_compiler(empty, target.new_target_machine())


def compile_ir(ir_text: str, target: Target, symbols: Mapping[str, int] | None = None,
               opt: int = 3, store: Any = None, runtime: Runtime | None = None,
               libraries: tuple[bytes, ...] = (), library: Any = None) -> JitModule:
    """Optimizes ``ir_text``, generates its object code once and loads it.

    Args:
        ir_text: a module's LLVM IR (text).
        target: the target to compile for (must be the host to be loaded).
        symbols: external symbol name -> address (BLAS routines), registered globally
            when the loaded code names them (see :func:`_register`).
        opt: LLVM optimization level, 0..3.
        store: where the runtime object persists between processes, or None (see
            :func:`runtime_object`).
        runtime: the backend's runtime; when the program declares some of its
            symbols, the program is loaded with ``runtime.subset(those)``, built once
            per process (:func:`runtime_object`); None: the program uses no runtime.
        libraries: object code (for ``target``) of functions the program declares and
            does not define, loaded into its engine (see :func:`load_object`).
        library: the backend's installed runtime library, read before ``store`` (see
            :func:`runtime_object`), or None.

    Raises:
        LoweringError: the IR does not parse or verify (a bug in the emitters).
    """
    mod = optimize(ir_text, target, opt)
    tm = target.fast_codegen_machine() if control_only(mod) else target.target_machine(opt)
    obj = tm.emit_object(mod)
    code = b""
    declared = _runtime_calls(mod, runtime) if runtime is not None else frozenset()
    if runtime is not None and declared:
        code = runtime_object(target, store, runtime.subset(declared), library)
    return load_object(obj, target, symbols, str(mod), code, libraries)


CONTROL_WRAPPER_INSTRUCTIONS = 256
"""Most instructions of a loop-free function next to ``optnone`` control code for the
module to count as :func:`control_only` (task wrappers and an entry calling kernels are
tens)."""


def control_only(mod: llvm.ModuleRef) -> bool:
    """True when the module has no code worth optimizing: at least one defined
    function is ``optnone`` (scalar control code, such as a GEMM-mode convolution's chunk
    loop calling BLAS and the runtime) and every other defined function is small and
    has no loop (task wrappers, the entry calling kernels, copy kernels calling the
    runtime; at most :data:`CONTROL_WRAPPER_INSTRUCTIONS`). Such a module skips the
    ``-O3`` pipeline (:func:`optimize`: ~4 ms of a transposed convolution's ~10 ms of
    LLVM, for code that runs once per call) and is generated at code generation level
    0 (:meth:`Target.fast_codegen_machine`): the -O3 code generator took about 8 ms on
    a small convolution's control code against 2.5 ms, for code that runs a few times
    per chunk of work."""
    some = False
    for fn in mod.functions:
        if fn.is_declaration:
            continue
        attrs = {a.decode() if isinstance(a, bytes) else str(a) for a in fn.attributes}
        if any("optnone" in a for a in attrs):
            some = True
        elif not _small_loop_free(fn, CONTROL_WRAPPER_INSTRUCTIONS):
            return False
    return some


def _small_loop_free(fn: llvm.ValueRef, limit: int) -> bool:
    """True when ``fn`` has at most ``limit`` instructions and no branch back to its
    own or an earlier block (how the emitters' loops close); a block without a name
    answers False unless it is the only one (then any branch is a loop)."""
    seen: set[str] = set()
    n = 0
    blocks = list(fn.blocks)
    for block in blocks:
        if not block.name and len(blocks) > 1:
            return False
        seen.add(block.name)
        last = None
        for ins in block.instructions:
            n += 1
            if n > limit:
                return False
            last = ins
        if last is not None and last.opcode in ("br", "switch", "indirectbr") and \
                (len(blocks) == 1 or any(op.name in seen for op in last.operands)):
            return False
    return True


def _runtime_calls(mod: llvm.ModuleRef, runtime: Runtime) -> frozenset[str]:
    """The symbols ``runtime`` defines that the module declares (the cpu backend's
    parallel-for, ``oxla_num_threads``, a runtime extension's function)."""
    names = runtime.symbols()
    return frozenset(v.name for v in (*mod.functions, *mod.global_variables)
                     if v.is_declaration and v.name in names)


_RUNTIME: dict[tuple, bytes] = {}
STATS = {"runtime_builds": 0}
"""How many runtime objects this process optimized and generated (not found in memory,
the library or the store)."""


def runtime_object(target: Target, store: Any = None, runtime: Runtime | None = None,
                   library: Any = None) -> bytes:
    """The object code of ``runtime`` (``runtime.module_text``) for ``target``, compiled at
    ``-O3`` once per process and target: programs only declare its symbols, so the
    optimizing and code generation (with the backends' runtime extensions, 0.2-0.4 s)
    are not paid again by every compile.

    ``store``: an object with ``load(key) -> bytes | None`` and ``save(key, bytes)``
    (the cpu backend's compile cache) that keeps the object between processes. Its key
    is the SHA-256 of the runtime's LLVM IR text (generated again, ~30 ms, so any change
    of the code that writes it is a new key), the target, and the llvmlite version.

    ``library``: an object with ``runtime(target, runtime) -> bytes | None``, the
    backend's installed runtime library (``oxla_backend_cpu.rtlib``), asked first: its
    object is found without generating the runtime's IR, whatever ``store`` is.
    """
    if runtime is None:
        raise LoweringError("runtime_object needs the backend's runtime")
    key = (target.triple, target.cpu, target.features, type(runtime).__qualname__,
           runtime.key())
    obj = _RUNTIME.get(key)
    if obj is not None:
        return obj
    if library is not None:
        obj = library.runtime(target, runtime)
        if obj is not None:
            _RUNTIME[key] = obj
            return obj
    text = runtime.module_text(target.triple)
    disk_key = ""
    if store is not None:
        h = hashlib.sha256("\0".join((target.triple, target.cpu, target.features,
                                       llvm_version(), text)).encode())
        disk_key = h.hexdigest()
        obj = store.load(disk_key)
    if obj is None:
        obj = target.target_machine().emit_object(optimize(text, target))
        STATS["runtime_builds"] += 1
        if store is not None:
            store.save(disk_key, obj)
    _RUNTIME[key] = obj
    return obj


def llvm_version() -> str:
    """llvmlite's version and the LLVM it was built with (``0.50.0/22.1.0``)."""
    import llvmlite

    return f"{llvmlite.__version__}/{'.'.join(map(str, llvm.llvm_version_info))}"


def load_object(obj: bytes, target: Target, symbols: Mapping[str, int] | None = None,
                ir_text: str = "", runtime: bytes = b"",
                libraries: tuple[bytes, ...] = ()) -> JitModule:
    """Loads object code made by :func:`compile_ir` for this host, with the parallel
    runtime's object ``runtime`` (its :attr:`JitModule.runtime_code`) when not empty
    and the ``libraries`` objects (its :attr:`JitModule.library_code`).

    Raises:
        LoweringError: the bytes are not an object file for this target.
    """
    _register(symbols, (obj, runtime, *libraries))
    engine = _engine(target)
    try:
        if runtime:  # each engine has its own copy: its own pool and thread count
            engine.add_object_file(llvm.ObjectFileRef.from_data(runtime))
        for lib in libraries:
            engine.add_object_file(llvm.ObjectFileRef.from_data(lib))
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    except RuntimeError as exc:
        raise LoweringError(f"object code does not load: {exc}") from exc
    return JitModule(engine, ir_text, obj, runtime, tuple(libraries))


def emit_object(ir_text: str, target: Target) -> bytes:
    """The object code of a module for ``target``."""
    mod = llvm.parse_assembly(ir_text)
    return target.target_machine().emit_object(mod)


def emit_assembly(ir_text: str, target: Target, opt: int = 3) -> str:
    """The optimized assembly of a module for ``target`` (any initialized target, not
    only the host: used to check AArch64 vector code on an x86-64 machine)."""
    mod = optimize(ir_text, target, opt)
    return target.target_machine(opt).emit_assembly(mod)
