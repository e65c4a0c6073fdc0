"""Stage 6: the executable (calls, buffers, threads, artifacts).

Calling convention: one ctypes call of ``entry(args, results, arena)``. Each calling
thread owns its arena (``threading.local``), allocated on its first call and reused
afterwards, so concurrent calls never share scratch memory and no lock is taken. The
generated code writes each result straight into a **new** numpy array allocated for
that call (no copy afterwards), so a caller may keep, modify or share what it gets; a
large result reuses the memory of an earlier one that nothing refers to any more
(:mod:`oxla_backend_cpu.outalloc`: no page faults on every call).
Inputs are read in place when they are C-contiguous with the right dtype (no copy);
the code never writes to them.

Threads: parallel loops use ``OXLA_NUM_THREADS`` threads (default: the CPUs this
process may run on), set in the loaded code's ``oxla_num_threads``; their workers are a
pool started by the first parallel loop and parked between calls, stopped (joined) when
the executable is garbage collected. GEMMs run as single-threaded BLAS calls on those
threads (:mod:`oxla_backend_cpu.blas`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import threading
import weakref
from typing import Any

import numpy as np

from oxla.errors import OxlaError
from oxla.interpreter import check_inputs
from oxla.interpreter.registry import TOKEN
from oxla.ir import func_type, parse_module
from oxla.ir.types import TensorType
from oxla.protocols import Signature
from oxla_backend_cpu.blas import BLAS_SYMBOLS
from oxla_backend_cpu.codegen import ABI_FIELDS, ABI_SYMBOL
from oxla_backend_cpu.collectives_runtime import call_as_process, install
from oxla_backend_cpu.custom_call import bind_custom_calls
from oxla_backend_cpu.digests import digests
from oxla_backend_cpu.mpi_native import attach as attach_mpi
from oxla_backend_cpu.objcheck import check_object
from oxla_backend_cpu.outalloc import OutputPool
from oxla_backend_cpu.packed_gemm import rebuild
from oxla_backend_cpu.parallel import num_threads

BACKEND = "cpu"
_ENTRY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_NO_DATA = np.empty(0, np.uint8)  # what a token argument points to


_CHAR_AT = ctypes.c_char.from_buffer


def _address(a: np.ndarray) -> int:
    """The address of C-contiguous array ``a``'s first byte: through ctypes' buffer
    export (~0.2 us), not ``a.ctypes.data`` (~0.8 us, a quarter of a small model's
    Python time per call); read-only and empty arrays, which that export refuses, take
    ``a.ctypes.data``."""
    try:
        return ctypes.addressof(_CHAR_AT(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _shutdown_pool(address: int, jit: Any) -> None:
    """Stops and joins the program's worker pool; ``jit`` (the machine code) is released
    only after this returns."""
    ctypes.CFUNCTYPE(None)(address)()
    del jit


class CPUExecutable:
    """A program compiled to native code for this machine.

    Attributes:
        signature: argument and result types.
        stats: ``compile_seconds`` (s), ``kernel_count``, ``temp_bytes`` (arena bytes).
        stages: one line per compile stage (what ran, what it did).
        llvm_ir: the optimized LLVM IR of the program.
    """

    backend = BACKEND

    def __init__(self, module_text: str, llvm_ir: str, jit: Any, target: Any,
                 stats: dict[str, Any], stages: list[str], signature: Signature | None = None,
                 constants: list[np.ndarray] | None = None,
                 constant_recipes: list[dict | None] | None = None):
        self.module_text = module_text
        # how a constant was computed from a module constant (packed weights), if it was
        self.constant_recipes = list(constant_recipes or [])
        # Large constants (weights) live here, not in the machine code; the entry reads
        # their addresses after the inputs' in its argument table.
        self.constants = [np.ascontiguousarray(c).reshape(-1).view(np.uint8)
                          for c in (constants or [])]
        self.llvm_ir = llvm_ir
        self.stats = stats
        self.stages = stages
        self._jit = jit  # keeps the machine code alive
        self._target = target
        if signature is None:  # a cache hit or a load passes it: no parsing there
            ft = func_type(parse_module(module_text).main)
            signature = Signature(tuple(ft.inputs), tuple(ft.results))
        self.signature = signature
        self._entry = _ENTRY(jit.address("entry"))
        install(self, jit)  # collectives, send/recv, infeed/outfeed: sets self.runtime
        threads = jit.global_address("oxla_num_threads") if hasattr(jit, "global_address") \
            else 0
        if threads:
            ctypes.c_int64.from_address(threads).value = num_threads()
        shutdown = jit.address("oxla_pool_shutdown") if hasattr(jit, "address") else 0
        if shutdown:  # park no threads in code that is about to be freed
            weakref.finalize(self, _shutdown_pool, shutdown, jit)
        self._local = threading.local()
        # a token (None here) is a null pointer and comes back as TOKEN
        self._out_specs = [(tuple(t.shape), np.dtype(t.element_type.dtype))
                           if isinstance(t, TensorType) else None
                           for t in self.signature.outputs]
        self._in_array = ctypes.c_void_p * max(len(self.signature.inputs)
                                               + len(self.constants), 1)
        self._const_ptrs = [c.ctypes.data for c in self.constants]
        self._out_array = ctypes.c_void_p * max(len(self._out_specs), 1)
        # (shape, dtype) of each input when every input is a static tensor: a call whose
        # arguments are C-contiguous numpy arrays of exactly these skips check_inputs
        self._exact_inputs = None
        if all(isinstance(t, TensorType) and t.is_static for t in self.signature.inputs):
            self._exact_inputs = [(tuple(t.shape), np.dtype(t.dtype))
                                  for t in self.signature.inputs]
        self._outputs = OutputPool(self._out_specs)  # large results' memory is reused
        # targets of stablehlo.custom_call, resolved through the oxla_custom_calls hook
        self._custom_calls = bind_custom_calls(jit, llvm_ir)

    @property
    def portable(self) -> bool:
        """False when a custom call is a Python callable (no save, no compile cache)."""
        return self._custom_calls is None or not self._custom_calls.python_targets

    def _arena(self) -> int:
        loc = self._local
        ptr = getattr(loc, "arena_ptr", None)
        if ptr is None:  # one arena per thread, kept with its address
            loc.arena = np.empty(max(int(self.stats["temp_bytes"]), 1), np.uint8)
            ptr = loc.arena_ptr = loc.arena.ctypes.data
        return ptr

    def _tables(self) -> tuple:
        """This thread's argument tables, made at its first call: the input/constant
        pointer table (constants filled in), its address, the result pointer table, its
        address, and the arena's address. A call writes only the input and result slots
        (building both tables per call cost ~1.5 us of a small model's ~40)."""
        loc = self._local
        tables = getattr(loc, "tables", None)
        if tables is None:
            ins = self._in_array()
            for j, p in enumerate(self._const_ptrs):
                ins[len(self.signature.inputs) + j] = p
            outs = self._out_array()
            tables = loc.tables = (ins, ctypes.addressof(ins), outs,
                                   ctypes.addressof(outs), self._arena())
        return tables

    def _inputs(self, args: tuple) -> list:
        """The arguments as C-contiguous numpy arrays (``_NO_DATA`` for tokens), checked
        against the signature (RuntimeInputError: count, shape or dtype)."""
        exact = self._exact_inputs
        if exact is not None and len(args) == len(exact):
            out = []
            for a, (shape, dtype) in zip(args, exact):
                if type(a) is np.ndarray:
                    if not (a.shape == shape and a.dtype == dtype and a.flags.c_contiguous):
                        break
                elif isinstance(a, np.generic) and shape == () and a.dtype == dtype:
                    a = np.asarray(a)  # a numpy scalar (np.int32(3)): its own 0-d array
                else:
                    break
                out.append(a)
            else:
                return out
        return [np.ascontiguousarray(v) if isinstance(t, TensorType) else _NO_DATA
                for t, v in zip(self.signature.inputs,
                                check_inputs(self.signature.inputs, args))]

    def __call__(self, *args: Any) -> list[np.ndarray]:
        """Runs the program on numpy arrays (or objects with ``__array__``/DLPack).

        Returns:
            One new numpy array per result.

        Raises:
            RuntimeInputError: wrong number, shapes or dtypes of arguments.
        """
        vals = self._inputs(args)
        outs = self._outputs.arrays(TOKEN)
        in_ptrs, in_at, out_ptrs, out_at, arena = self._tables()
        for i, v in enumerate(vals):
            in_ptrs[i] = _address(v)
        for i, (o, s) in enumerate(zip(outs, self._out_specs)):
            if s:  # a token's slot stays null
                out_ptrs[i] = _address(o)
        if self._custom_calls is not None:
            self._custom_calls.probes.begin_call()
        self._entry(in_at, out_at, arena)
        if self._custom_calls is not None:
            self._custom_calls.raise_pending()
        return outs

    def call_as_process(self, grid: Any, process: tuple[int, int], *args: Any) -> list:
        """Runs one call as ``process`` of a collective ``grid`` (one rank of an MPI
        job, see ``oxla.sharding.mpi``); otherwise like ``__call__``."""
        return call_as_process(self, grid, process, list(args))

    def attach_mpi(self, comm: Any, family: str, timeout: float) -> Any:
        """Makes this executable's collectives call MPI from native code (one rank per
        device; see :mod:`oxla_backend_cpu.mpi_native`): every rank calls it once, in the
        same order, before its first call.

        Args:
            comm: ``MPI.COMM_WORLD`` (mpi4py).
            family: the loaded MPI's ABI family, ``mpich`` or ``openmpi``.
            timeout: seconds a collective may wait before every rank is aborted.

        Returns:
            A ``NativeCollectives`` (``summary()``: what runs natively), or None when the
            program has no runtime ops or ``family`` is unknown.
        """
        return attach_mpi(self, comm, family, timeout)

    @property
    def probes(self) -> dict[str, list[np.ndarray]]:
        """``interpreter.probe`` records of the last call on this thread: probe id ->
        the values it saw, in order (see :mod:`oxla_backend_cpu.probe`)."""
        return self._custom_calls.probes.records if self._custom_calls is not None else {}

    def save(self, path: str | os.PathLike[str], omit_constants: Any = ()) -> None:
        """Writes a ``.oxla`` artifact: manifest, optimized StableHLO, LLVM IR and object
        code, each member's SHA-256 in the manifest.

        ``omit_constants``: arrays by the SHA-256 of their raw bytes; constants equal to
        one of them are recorded by digest only, without their data: the compile cache
        passes the module's weights, as an entry is only read back with that module at
        hand (see ``load_artifact``). A constant that is one of those arrays' memory is not
        hashed again. A constant computed from one of them (weights packed at compile
        time, see :attr:`oxla.lowering.Buf.recipe`) is recorded as its recipe.
        """
        from oxla.artifact import write_artifact

        if self._custom_calls is not None:
            self._custom_calls.check_portable(path)
        obj = getattr(self._jit, "object_code", b"")
        if not obj:
            from oxla_codegen_llvm.jit import emit_object

            obj = emit_object(self.llvm_ir, self._target)
        files = {
            "module.mlir": self.module_text.encode(),
            "program.ll": self.llvm_ir.encode(),
            "program.o": obj,
        }
        runtime = getattr(self._jit, "runtime_code", b"")
        if runtime:  # the parallel runtime's object, loaded next to program.o
            files["runtime.o"] = runtime
        for i, lib in enumerate(getattr(self._jit, "library_code", ())):
            files[f"lib/{i}.o"] = lib  # the precompiled FFT passes program.o calls
        recipes = _recipes(self.constant_recipes, omit_constants)
        rest = [j for j in range(len(self.constants)) if str(j) not in recipes]
        digests: list[str | None] = [None] * len(self.constants)
        for j, d in zip(rest, _digests([self.constants[j] for j in rest], omit_constants)):
            digests[j] = d
        omitted = [j for j, d in enumerate(digests)
                   if d in omit_constants or str(j) in recipes]
        for j, c in enumerate(self.constants):
            if j not in omitted:
                files[f"constants/{j}.npy"] = _npy_bytes(c)
        meta = {
            "target_triple": self._target.triple,
            "cpu": self._target.cpu,
            "cpu_features": sorted(self._target.feature_set()),
            "signature": {"inputs": [str(t) for t in self.signature.inputs],
                          "outputs": [str(t) for t in self.signature.outputs]},
            "stats": {k: v for k, v in self.stats.items() if k not in ("compile_seconds", "cache")},
            "stages": self.stages,
            "constants": len(self.constants),
            "constant_bytes": [int(c.nbytes) for c in self.constants],
            # raw bytes' SHA-256: a cache hit takes equal constants from the module
            "constant_digests": digests,
            "constants_omitted": omitted,
            "constant_recipes": recipes,
            # re-resolved through the oxla_custom_calls hook by oxla.load
            "custom_calls": self._custom_calls.targets if self._custom_calls else [],
            "sha256": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()},
        }
        write_artifact(path, BACKEND, files, meta)


def _recipes(recipes: list[dict | None], known: Any) -> dict[str, dict]:
    """Constant index (as a string) -> its recipe with ``source`` = the digest of the
    ``known`` array (digest -> array) it was computed from; constants computed from
    anything else are left out (their data is stored)."""
    if not isinstance(known, dict) or not any(recipes):
        return {}
    by_memory = {(a.ctypes.data, a.nbytes): d for d, a in known.items()
                 if isinstance(a, np.ndarray) and a.flags.c_contiguous}
    out = {}
    for j, r in enumerate(recipes):
        d = by_memory.get(tuple(r["source_memory"])) if r else None
        if d is not None:
            out[str(j)] = {**{k: v for k, v in r.items() if k != "source_memory"},
                           "source": d}
    return out


def _digests(arrays: list[np.ndarray], known: Any = ()) -> list[str]:
    """The SHA-256 of each array's bytes; an array that is the memory of one in ``known``
    (a mapping digest -> array) takes that digest without hashing."""
    by_memory = {}
    if isinstance(known, dict):
        by_memory = {(a.ctypes.data, a.nbytes): d for d, a in known.items()
                     if isinstance(a, np.ndarray) and a.flags.c_contiguous}
    out: list[str | None] = [by_memory.get((a.ctypes.data, a.nbytes)) for a in arrays]
    rest = [j for j, d in enumerate(out) if d is None]
    for j, d in zip(rest, digests([arrays[j] for j in rest])):
        out[j] = d
    return out  # type: ignore[return-value]


def load_artifact(path: str | os.PathLike[str],
                  known_constants: dict[str, np.ndarray] | None = None) -> CPUExecutable:
    """Reads a cpu artifact and loads its object code (no recompilation).

    ``known_constants``: arrays by the SHA-256 of their raw bytes (the compile cache
    passes the module's weights); a constant whose recorded digest is there is taken
    from it instead of being read, checked and copied from the file.

    Checks first that this CPU has every feature the code was compiled for. MCJIT's
    runtime linker resolves libm, libc and the BLAS symbols in this process. The LLVM IR
    is kept for inspection and for recompiling elsewhere.

    Raises:
        OxlaError: not a cpu artifact, corrupt or truncated members, a checksum
            mismatch, another target triple, or missing CPU features.
    """
    import time

    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import load_object

    from oxla.artifact import manifest_int, read_manifest, read_members

    p = os.fspath(path)
    manifest = read_manifest(p)
    if manifest["backend"] != BACKEND:
        raise OxlaError(f"'{p}' was written by the '{manifest['backend']}' backend, "
                        f"expected '{BACKEND}'")
    host = CPUTarget.host()
    if manifest.get("target_triple") != host.triple:
        raise OxlaError(f"'{p}' targets {str(manifest.get('target_triple'))[:80]}, "
                        f"but this machine is {host.triple}")
    features = manifest.get("cpu_features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise OxlaError(f"'{p}' is corrupt: 'cpu_features' is not a list of names")
    missing = sorted(set(features) - host.feature_set())
    if missing:
        raise OxlaError(f"'{p}' needs CPU features this machine lacks: {', '.join(missing)}",
                        notes=["recompile the module on this machine"])
    sums = manifest.get("sha256")
    if not isinstance(sums, dict):
        raise OxlaError(f"'{p}' is not a valid cpu artifact: manifest has no checksums")
    n_const = manifest_int(p, manifest, "constants")
    known = known_constants or {}
    recorded = manifest.get("constant_digests") or [None] * n_const
    if not isinstance(recorded, list) or len(recorded) != n_const:
        raise OxlaError(f"'{p}' is corrupt: {n_const} constants but "
                        f"{len(recorded) if isinstance(recorded, list) else 'no'} digests")
    reuse = {j: known[d] for j, d in enumerate(recorded) if isinstance(d, str) and d in known}
    recipes = manifest.get("constant_recipes") or {}
    for j, r in (recipes.items() if isinstance(recipes, dict) else ()):
        src = known.get(r["source"]) if isinstance(r, dict) and isinstance(
            r.get("source"), str) else None
        if src is not None:
            try:
                reuse[int(j)] = rebuild(r, np.asarray(src)).reshape(-1).view(np.uint8)
            except (ValueError, KeyError, TypeError) as exc:
                raise OxlaError(f"'{p}' is corrupt: constant {j}: {exc}") from exc
    omitted = manifest.get("constants_omitted", [])
    if not isinstance(omitted, list) or not all(type(j) is int for j in omitted):
        raise OxlaError(f"'{p}' is corrupt: 'constants_omitted' is not a list of indices")
    missing = [j for j in omitted if j not in reuse]
    if missing:
        raise OxlaError(f"'{p}' records constants {missing[:8]} by digest only (a "
                        "compile-cache entry): it loads only when compiling the module it "
                        "was made from")
    libs = [f"lib/{i}.o" for i in range(len(sums)) if f"lib/{i}.o" in sums]
    data = read_members(p, ["module.mlir", "program.ll", "program.o",
                            *(["runtime.o"] if "runtime.o" in sums else []), *libs,
                            *(f"constants/{j}.npy" for j in range(n_const) if j not in reuse)],
                        manifest)
    try:
        module_text, llvm_text = data["module.mlir"].decode(), data["program.ll"].decode()
    except UnicodeDecodeError as exc:
        raise OxlaError(f"'{p}' is corrupt: a text member is not UTF-8 ({exc.reason} "
                        f"at byte {exc.start})") from None
    signature = _checked_signature(p, manifest, module_text)
    check_object(data["program.o"], host.triple, f"'{p}' member program.o", need=("entry",))
    if "runtime.o" in data:
        check_object(data["runtime.o"], host.triple, f"'{p}' member runtime.o")
    for m in libs:
        check_object(data[m], host.triple, f"'{p}' member {m}")
    t0 = time.perf_counter()
    cpu = manifest.get("cpu", "")
    if not isinstance(cpu, str) or not re.fullmatch(r"[A-Za-z0-9_.+-]{0,64}", cpu):
        raise OxlaError(f"'{p}' is corrupt: 'cpu' in the manifest is not a CPU name")
    if manifest.get("cpu", "") != host.cpu:
        host = CPUTarget(manifest["target_triple"], str(manifest.get("cpu", "")),
                         host.features)
    try:
        jit = load_object(data["program.o"], host, BLAS_SYMBOLS,
                          llvm_text, data.get("runtime.o", b""), tuple(data[m] for m in libs))
    except OxlaError as exc:
        raise OxlaError(f"'{p}' is corrupt: {exc}") from exc
    stats = manifest.get("stats", {})
    if not isinstance(stats, dict):
        raise OxlaError(f"'{p}' is corrupt: 'stats' in the manifest is not a map")
    stats = dict(stats, temp_bytes=manifest_int(p, stats, "temp_bytes", 0, 1 << 40))
    stats["compile_seconds"] = time.perf_counter() - t0
    sizes = manifest.get("constant_bytes")
    if sizes is not None and (not isinstance(sizes, list) or len(sizes) != n_const):
        raise OxlaError(f"'{p}' is corrupt: 'constant_bytes' does not list {n_const} sizes")
    constants = [reuse[j] if j in reuse else
                 _npy_array(p, data.pop(f"constants/{j}.npy"), sizes[j] if sizes else None)
                 for j in range(n_const)]
    for j, c in enumerate(constants):
        if sizes is not None and c.nbytes != sizes[j]:
            raise OxlaError(f"'{p}' is corrupt: constant {j} holds {c.nbytes} bytes, the "
                            f"manifest says {sizes[j]}")
    stages = manifest.get("stages", [])
    if not isinstance(stages, list) or not all(isinstance(x, str) for x in stages):
        raise OxlaError(f"'{p}' is corrupt: 'stages' in the manifest is not a list of lines")
    _check_abi(p, jit, stats["temp_bytes"], signature, len(constants))
    return CPUExecutable(module_text, jit.ir_text, jit, host, stats, stages, signature,
                         constants)


def _check_abi(p: str, jit: Any, temp_bytes: int, signature: Signature,
               n_constants: int) -> None:
    """Checks the manifest against the loaded code's ``oxla_entry_abi`` (written by
    codegen; read, never run): the arena it allocates must hold what ``entry`` uses, and
    the pointer tables must have the lengths ``entry`` reads.

    Raises:
        OxlaError: the symbol is missing (an older oxla wrote the artifact) or disagrees.
    """
    addr = jit.global_address(ABI_SYMBOL)
    if not addr:
        raise OxlaError(f"'{p}' has no {ABI_SYMBOL} in its object code (written by an older "
                        "oxla, or not by oxla): compile it again")
    code = dict(zip(ABI_FIELDS, (ctypes.c_int64 * len(ABI_FIELDS)).from_address(addr)))
    want = {"temp_bytes": temp_bytes, "inputs": len(signature.inputs),
            "constants": n_constants, "results": len(signature.outputs)}
    for name in ABI_FIELDS:
        ok = want[name] >= code[name] if name == "temp_bytes" else want[name] == code[name]
        if not ok:
            raise OxlaError(f"'{p}' is corrupt: the manifest gives {name} {want[name]}, the "
                            f"object code's entry uses {code[name]}")


def _npy_bytes(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def _npy_array(path: str, blob: bytes, want: Any = None) -> np.ndarray:
    """A constant member (``.npy``, never unpickled), its header checked against its
    size before any array is made; ``want``: the byte size the manifest records.

    Raises:
        OxlaError: the member is not a valid .npy array of a plain dtype, or its size
            differs from its header's or from ``want``.
    """
    import io

    fh = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    except (ValueError, OSError, EOFError, SyntaxError, TypeError) as exc:
        raise OxlaError(f"'{path}' is corrupt: bad constant member: {exc}") from None
    if dtype.hasobject or fortran or any(d < 0 for d in shape):
        raise OxlaError(f"'{path}' is corrupt: bad constant member (dtype {dtype})")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes != len(blob) - fh.tell() or (want is not None and want != nbytes):
        raise OxlaError(f"'{path}' is corrupt: a constant of shape {tuple(shape)[:8]} and "
                        f"dtype {dtype} in {len(blob) - fh.tell()} bytes"
                        + (f" (the manifest says {want})" if want is not None else ""))
    return np.frombuffer(blob, dtype, offset=fh.tell()).reshape(shape)


def _manifest_signature(p: str, manifest: dict[str, Any]) -> Signature:
    """The signature recorded in the manifest (types as text).

    Raises:
        OxlaError: the manifest has no signature or a type does not parse.
    """
    from oxla.ir import parse_type

    sig = manifest.get("signature")
    try:
        return Signature(tuple(parse_type(t) for t in sig["inputs"]),
                         tuple(parse_type(t) for t in sig["outputs"]))
    except (TypeError, KeyError, AttributeError, OxlaError) as exc:
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise OxlaError(f"'{p}' is corrupt: bad signature in the manifest ({why})") from None


def _checked_signature(p: str, manifest: dict[str, Any], module: str) -> Signature:
    """The manifest's signature, checked against the module's own entry function, whose
    buffers the object code reads and writes (a smaller output in the manifest would let
    the code write past an array).

    Raises:
        OxlaError: the two differ, the module does not parse, or a type is not a static
            tensor or a token.
    """
    from oxla.ir import parse_main_signature
    from oxla.ir.types import TokenType

    signature = _manifest_signature(p, manifest)
    try:
        ft = parse_main_signature(module, f"{p}:module.mlir")
    except OxlaError as exc:
        raise OxlaError(f"'{p}' is corrupt: its module.mlir has no readable entry "
                        f"function ({str(exc).splitlines()[0][:200]})") from None
    if (tuple(ft.inputs), tuple(ft.results)) != (signature.inputs, signature.outputs):
        raise OxlaError(f"'{p}' is corrupt: the manifest's signature "
                        f"{_fmt(signature.inputs)} -> {_fmt(signature.outputs)} differs from "
                        f"the module's {_fmt(ft.inputs)} -> {_fmt(ft.results)}")
    for t in (*signature.inputs, *signature.outputs):
        if not (isinstance(t, TensorType) and t.is_static or isinstance(t, TokenType)):
            raise OxlaError(f"'{p}' is corrupt: the signature holds {t}, expected static "
                            "tensors and tokens")
    return signature


def _fmt(types: Any) -> str:
    return "(" + ", ".join(str(t) for t in types)[:300] + ")"


def describe_manifest(path: str | os.PathLike[str]) -> str:
    """The manifest of an artifact as indented JSON (for debugging)."""
    from oxla.artifact import read_manifest

    return json.dumps(read_manifest(path), indent=2)
