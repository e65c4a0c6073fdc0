"""``stablehlo.custom_call`` on the cpu backend: targets bound through the
``oxla_custom_calls`` plugin hook (``CustomCallInfo(target, "cpu", fn)``).

Calling convention (XLA's CPU custom-call convention with every result in an array)::

    void fn(void** outputs, const void** inputs, const char* opaque, size_t opaque_len);

* ``inputs[i]`` points at operand ``i``, ``outputs[j]`` at result ``j``: dense row-major
  (C-contiguous) buffers of the op's static shapes and element types (``bool``/``i1``
  one byte per element, complex as interleaved real/imaginary pairs). Shapes and types
  are fixed when the program is compiled; the function receives no shape information.
* Token operands and results (``!stablehlo.token``) only order effects: they are not
  in ``inputs``/``outputs`` (nor passed to a Python kernel).
* Inputs are read-only; outputs must be fully written; the function must not keep the
  pointers after it returns (they point into the program's arena). Inputs and outputs
  never overlap. Buffers are at least 8-byte aligned (64 in the arena).
* ``opaque``/``opaque_len``: the op's ``backend_config`` string as UTF-8 bytes (empty
  when absent), NUL-terminated for convenience (the NUL is not counted in ``opaque_len``).
* It runs on the thread that called the executable, in program order; a function
  must be thread-safe when one executable is called from several threads at once.

``fn`` in ``CustomCallInfo(target, "cpu", fn)`` takes one of two forms, told apart by
type (:func:`is_native`):

* **native** (compiled kernels: C/C++, Rust, Triton-CPU...): an ``int`` address, a
  ``ctypes.c_void_p``, or a ctypes function pointer (an attribute of a
  ``ctypes.CDLL``, a ``ctypes.CFUNCTYPE`` object). Called directly by the machine code.
* **Python** (prototyping; every call crosses into Python): any other callable, called
  as ``fn(*inputs, backend_config=str)`` with fresh numpy arrays (copies of the
  operands) and returning one array (one result), a sequence of arrays (one per
  result; ``None`` or ``()`` for none). Each must have the result's shape and a dtype
  castable (``same_kind``) to the result's. An exception raised by ``fn`` (or a wrong
  result) zero-fills its outputs, lets the program finish, and is raised from the
  executable call as an :class:`~oxla.errors.OxlaError` naming the target.

What compiles: ``api_version`` unset or 1-3 (all use the convention above; a
``STATUS_RETURNING`` kernel has no status argument here); ``api_version = 4`` or a
dictionary ``mhlo.backend_config``: XLA's typed FFI, the target being an XLA FFI
handler called with a call frame (:mod:`oxla_backend_cpu.xla_ffi`; the machine code
calls oxla's dispatch with the site's frame parts as ``opaque``, through a second
global ``oxla_ccsite_<hex>``, the hex then also holding the attributes);
``has_side_effect`` (the call
is kept even when its results are unused, in program order among side-effecting calls
and collectives); any number of tensor (and token) operands and results. Rejected with
a ``NotSupportedError``: tuple or dynamic operands/results, ``called_computations``,
``output_operand_aliases`` and non-row-major ``operand_layouts``/``result_layouts``
(the last two are accepted for a typed-FFI call to a Python kernel, see below).

A typed-FFI call whose cpu implementation is a **Python** kernel (as jaxlib's LAPACK
calls are in oxla-lapack) is called as ``fn(*inputs, backend_config="",
attributes=dict, outputs=list)``, ``attributes`` being :func:`oxla.ir.ffi.ffi_attributes`
of the call site and ``outputs`` writable arrays over the result buffers (logical
row-major values); it fills them and returns None (or returns the arrays, as above).
Layouts and ``output_operand_aliases`` only say how XLA places the buffers, so they
are accepted there: the kernel sees values, never XLA's physical layout. The same holds
for a native typed-FFI handler whose ``fn`` has ``oxla_row_major = True`` (oxla-lapack's
compiled kernels): it gets row-major buffers whatever the site's layouts.

Artifacts: the machine code reaches each target through a global function pointer
(``oxla_cc_<hex>``, hex of ``[target, operand types, result types]`` as JSON, tokens
left out) that
the executable fills when it is created or loaded (:class:`CustomCallBindings`), so
object code holds no addresses. ``exe.save`` records the targets in the manifest and
``oxla.load`` resolves them again through the hook; an executable with a Python
callable cannot be saved (nor cached).
"""

from __future__ import annotations

import ctypes
import json
import re
import threading
from typing import Any

import llvmlite.ir as ir
import numpy as np

from oxla.errors import LoweringError, NotSupportedError, OxlaError
from oxla.ir import Operation
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.ffi import decode_attribute
from oxla.lowering import OpKernel
from oxla_backend_cpu.opkernels import op_emitter
from oxla_backend_cpu.probe import PROBE_INFO, PROBE_TARGET, ProbeRecorder
from oxla_backend_cpu.xla_ffi import DTYPES as FFI_DTYPES
from oxla_backend_cpu.xla_ffi import (
    FfiSite,
    dispatch_address,
    ffi_attributes_text,
    is_ffi,
    take_error,
)

BACKEND = "cpu"
OP = "stablehlo.custom_call"
PTR = ir.PointerType()
I8, I64 = ir.IntType(8), ir.IntType(64)
FN_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, I64])
FN_PTR = FN_TYPE.as_pointer()
SYMBOL_PREFIX = "oxla_cc_"
SITE_PREFIX = "oxla_ccsite_"
SIGNATURE = ("void fn(void** outputs, const void** inputs, const char* opaque, "
             "size_t opaque_len)")
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                             ctypes.c_size_t)
_SYMBOL_RE = re.compile(r'@"?' + SYMBOL_PREFIX + r'([0-9a-f]+)"? = ')
_API_NAMES = {"API_VERSION_UNSPECIFIED": 0, "API_VERSION_ORIGINAL": 1,
              "API_VERSION_STATUS_RETURNING": 2, "API_VERSION_STATUS_RETURNING_UNIFIED": 3,
              "API_VERSION_TYPED_FFI": 4}


def is_native(fn: Any) -> bool:
    """True when ``fn`` is a native function (an ``int`` address, a ``ctypes.c_void_p``
    or a ctypes function pointer), False for a Python callable.

    Raises:
        LoweringError: ``fn`` is neither (``None``, a bool, a string...).
    """
    if isinstance(fn, bool):
        raise LoweringError(f"custom call fn {fn!r} is not a function")
    if isinstance(fn, int | ctypes.c_void_p | ctypes._CFuncPtr):
        return True
    if callable(fn):
        return False
    raise LoweringError(f"custom call fn {fn!r} is neither a native function address nor "
                        "a Python callable")


def native_address(fn: Any) -> int:
    """The address of a native ``fn`` (see :func:`is_native`); 0 for NULL."""
    if isinstance(fn, int):
        return fn
    if isinstance(fn, ctypes.c_void_p):
        return fn.value or 0
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


def _how_to(target: str) -> str:
    return (f"supply one with a plugin: an `oxla_custom_calls` hookimpl returning "
            f"CustomCallInfo(target={target!r}, backend='cpu', fn=...), where fn is the "
            f"address of a C function `{SIGNATURE}` or a Python callable on numpy arrays "
            "(see oxla_backend_cpu.custom_call)")


def lookup(target: str, loc: Any = None, what: str = "") -> Any:
    """The ``CustomCallInfo`` registered for ``target`` on the cpu backend.

    Raises:
        LoweringError: no installed plugin provides ``target`` for the cpu backend (the
            message names the target, ``loc`` and how to supply one).
    """
    from oxla.plugins import get_registry

    if target == PROBE_TARGET:  # interpreter.probe, built in (see oxla_backend_cpu.probe)
        return PROBE_INFO
    table = get_registry().custom_calls()
    info = table.get((target, BACKEND))
    if info is not None:
        return info
    others = sorted(b for t, b in table if t == target)
    notes = [_how_to(target)]
    if others:
        notes.insert(0, f"'{target}' is implemented for backend(s) {', '.join(others)} "
                        "only")
    raise LoweringError(f"{what or OP}: no implementation of custom call target "
                        f"'{target}' for the {BACKEND} backend", loc, notes=notes)


def _target(op: Operation) -> str:
    return str(A.to_python(op.attributes["call_target_name"]))


def _opaque(op: Operation) -> bytes:
    cfg = op.attributes.get("backend_config")
    if cfg is None:
        return b""
    v = A.to_python(cfg)
    return v.encode() if isinstance(v, str) else bytes(v)


def _api_version(op: Operation) -> int | None:
    a = op.attributes.get("api_version")
    if a is None:
        return 0
    v = A.to_python(a)
    if isinstance(v, int | np.integer):
        return int(v)
    v = getattr(a, "value", v)  # an enum: #stablehlo<custom_call_api_version NAME>
    return _API_NAMES.get(str(v))


def _reject(op: Operation, why: str, hint: str = "") -> NotSupportedError:
    return NotSupportedError(f"'{OP}' @{_target(op)} is not supported by the {BACKEND} "
                             f"backend: {why}", op.loc, notes=[hint] if hint else None)


def _row_major(layout: Any, rank: int) -> bool:
    return [int(x) for x in np.asarray(layout).reshape(-1)] == list(range(rank - 1, -1, -1))


def _tensor(v: Any) -> bool:
    """True for a static tensor value (tokens are ordering only: never passed)."""
    return isinstance(v.type, T.TensorType) and v.type.is_static


def check_custom_call(op: Operation) -> None:
    """Checks that the cpu backend can compile ``op`` and that its target is
    registered (fusion calls it before any code is generated).

    Raises:
        LoweringError: no implementation of the target for the cpu backend.
        NotSupportedError: a form listed as rejected in the module doc.
    """
    api = _api_version(op)
    typed = is_ffi(op)
    fn = lookup(_target(op), op.loc).fn
    # a Python kernel, or a handler marked as taking logical row-major values
    python = typed and (not is_native(fn) or getattr(fn, "oxla_row_major", False))
    if typed:
        _check_ffi(op, python)
    elif api not in (0, 1, 2, 3):
        raise _reject(op, f"api_version {A.to_python(op.attributes['api_version'])} "
                          "(XLA typed FFI handlers are not supported)",
                      f"register a kernel with the convention `{SIGNATURE}` and use "
                      "api_version 1-3 with a string backend_config")
    cfg = op.attributes.get("backend_config")
    if not typed and cfg is not None and not isinstance(A.to_python(cfg), str | bytes):
        raise _reject(op, "a backend_config that is not a string")
    names = ("called_computations",) if python else ("called_computations",
                                                     "output_operand_aliases")
    for name in names:
        a = op.attributes.get(name)
        if a is not None and len(A.to_python(a)):
            raise _reject(op, f"{name}")
    for vals, kind in ((op.operands, "operand"), (op.results, "result")):
        for v in vals:
            if not _tensor(v) and not isinstance(v.type, T.TokenType):
                raise _reject(op, f"{kind} of type {v.type}",
                              "use statically shaped tensors; return several results "
                              "instead of a tuple")
        lay = op.attributes.get(f"{kind}_layouts")
        if lay is not None and not python:
            for v, layout in zip(vals, A.to_python(lay)):
                if _tensor(v) and not _row_major(layout, v.type.rank):
                    raise _reject(op, f"a non-row-major {kind} layout")
    lookup(_target(op), op.loc)


def _check_ffi(op: Operation, python: bool) -> None:
    """A typed-FFI call: its attributes decodable; for an XLA FFI handler (native), its
    element types ones the FFI passes."""
    if not python:
        for v in [*op.operands, *op.results]:
            if _tensor(v) and str(v.type.element_type) not in FFI_DTYPES:
                raise _reject(op, f"element type {v.type.element_type} in a typed FFI call")
    ffi_attributes_text(op)


def symbol_for(op: Operation) -> str:
    """The name of the global holding the function pointer of ``op``'s target, for its
    operand and result types (and, for a typed FFI call, its attributes; see the module
    doc)."""
    sig: list[Any] = [_target(op), [str(v.type) for v in op.operands if _tensor(v)],
                      [str(v.type) for v in op.results if _tensor(v)]]
    if is_ffi(op):
        sig.append({"ffi": ffi_attributes_text(op)})
    return SYMBOL_PREFIX + json.dumps(sig, separators=(",", ":")).encode().hex()


def decode_symbol(hex_text: str) -> tuple[str, list[str], list[str]]:
    """``(target, operand types, result types)`` of a symbol's hex part."""
    target, ins, outs = json.loads(bytes.fromhex(hex_text).decode())[:3]
    return target, ins, outs


def symbol_ffi(hex_text: str) -> str | None:
    """The typed FFI attributes' text of a symbol's hex part (None: not an FFI call)."""
    sig = json.loads(bytes.fromhex(hex_text).decode())
    return sig[3]["ffi"] if len(sig) > 3 else None


def ffi_text_attributes(text: str, target: str) -> dict[str, Any]:
    """The decoded typed attributes (:func:`oxla.ir.ffi.decode_attribute`) of a site's
    attribute text (a dictionary's text, "" for none)."""
    if not text:
        return {}
    from oxla.ir import parse_attribute

    attrs = decode_attribute(parse_attribute(text), f"@{target} attributes")
    if not isinstance(attrs, dict):  # a string backend_config holding the dictionary
        attrs = decode_attribute(parse_attribute(attrs), f"@{target} attributes")
    return attrs


@op_emitter(OP)
def emit_custom_call(s: Any, k: OpKernel, buffers: dict, outs: list) -> None:
    """Calls the target through its global function pointer with arrays of the
    operands' and results' addresses and the ``backend_config`` bytes."""
    b, op, module = s.b, k.op, s.module
    sym = symbol_for(op)
    g = module.globals.get(sym)
    if g is None:  # default (external) linkage: the executable finds it and writes it
        g = ir.GlobalVariable(module, PTR, sym)
        g.initializer = ir.Constant(PTR, None)
        g.align = 8

    def table(ptrs: list, name: str) -> ir.Value:
        with b.goto_entry_block():
            arr = b.alloca(PTR, max(len(ptrs), 1), name=name)
        for i, p in enumerate(ptrs):
            b.store(p, b.gep(arr, [ir.Constant(I64, i)], source_etype=PTR))
        return arr

    ins = table([buffers[v] for v in op.operands if _tensor(v)], "cc.inputs")
    res = table([o for o, r in zip(outs, op.results) if _tensor(r)], "cc.outputs")
    fn = b.load(g, typ=FN_PTR, name="cc.fn")
    if is_ffi(op):  # the dispatch gets the site's call-frame parts as its opaque
        site_sym = SITE_PREFIX + sym.removeprefix(SYMBOL_PREFIX)
        site = module.globals.get(site_sym)
        if site is None:
            site = ir.GlobalVariable(module, PTR, site_sym)
            site.initializer = ir.Constant(PTR, None)
            site.align = 8
        b.call(fn, [res, ins, b.load(site, typ=PTR, name="cc.site"), ir.Constant(I64, 0)])
        return
    data = _opaque(op) + b"\0"
    cfg = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)),
                            module.get_unique_name("cc.opaque"))
    cfg.initializer = ir.Constant(ir.ArrayType(I8, len(data)), bytearray(data))
    cfg.global_constant = True
    cfg.linkage = "internal"
    b.call(fn, [res, ins, cfg, ir.Constant(I64, len(data) - 1)])


def _spec(type_text: str) -> tuple[tuple[int, ...], np.dtype]:
    from oxla.ir import parse_type

    t = parse_type(type_text)
    return tuple(t.shape), np.dtype(t.element_type.dtype)


class CustomCallBindings:
    """The custom calls of one loaded program, bound to their implementations.

    Attributes:
        targets: the target names, sorted.
        python_targets: those bound to Python callables (not portable).
    """

    def __init__(self, sites: list[tuple[str, str, list[str], list[str]]], jit: Any):
        self._pending = threading.local()
        self.probes = ProbeRecorder()  # this program's interpreter.probe records
        self._keep: list[Any] = []  # ctypes callbacks must outlive the machine code
        self.targets = sorted({t for _, t, _, _ in sites})
        python: set[str] = set()
        self.ffi_targets: list[str] = []
        for sym, target, ins, outs in sites:
            info = lookup(target, what=f"{OP} in this compiled program (a loaded artifact, "
                                       "a cache entry)")
            fn = self.probes if target == PROBE_TARGET else info.fn
            ffi = symbol_ffi(sym.removeprefix(SYMBOL_PREFIX))
            attrs = None
            if ffi is not None and not is_native(fn):  # a Python kernel: decoded attributes
                attrs = ffi_text_attributes(ffi, target)
            elif ffi is not None:
                if not native_address(fn):
                    raise LoweringError(f"custom call target '{target}' is a typed FFI call: "
                                        "its cpu implementation must be the address of an "
                                        "XLA FFI handler")
                site = FfiSite(native_address(fn), ins, outs, ffi)
                self._keep.append(site)
                slot = jit.global_address(SITE_PREFIX + sym.removeprefix(SYMBOL_PREFIX))
                if slot:
                    ctypes.c_void_p.from_address(slot).value = site.address
                fn = dispatch_address()
                self.ffi_targets.append(target)
            if is_native(fn):
                addr = native_address(fn)
                if not addr:
                    raise LoweringError(f"custom call target '{target}' for the {BACKEND} "
                                        "backend is a NULL function pointer")
            else:
                cb = self._python_kernel(target, fn, ins, outs, attrs)
                self._keep.append(cb)
                addr = ctypes.cast(cb, ctypes.c_void_p).value
                python.add(target)
            slot = jit.global_address(sym)
            if slot:
                ctypes.c_void_p.from_address(slot).value = addr
        self.python_targets = sorted(python)

    def _python_kernel(self, target: str, fn: Any, ins: list[str], outs: list[str],
                       attrs: dict | None = None) -> Any:
        in_specs = [_spec(t) for t in ins]
        out_specs = [_spec(t) for t in outs]
        pending = self._pending

        def views(table: int, specs: list) -> list[np.ndarray]:
            ptrs = (ctypes.c_void_p * max(len(specs), 1)).from_address(table)
            out = []
            for p, (shape, dt) in zip(ptrs, specs):
                n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
                raw = (ctypes.c_char * n).from_address(p) if n else bytearray()
                out.append(np.frombuffer(raw, dt).reshape(shape))
            return out

        def call(outputs: int, inputs: int, opaque: int, opaque_len: int) -> None:
            dst = views(outputs, out_specs)
            try:
                config = ctypes.string_at(opaque, opaque_len).decode() if opaque_len else ""
                args = [x.copy() for x in views(inputs, in_specs)]
                if attrs is None:
                    got = fn(*args, backend_config=config)
                else:  # typed FFI: the kernel may fill the outputs in place
                    got = fn(*args, backend_config=config, attributes=dict(attrs),
                             outputs=dst)
                    if got is None:
                        return
                if got is None:
                    got = ()
                elif not isinstance(got, tuple | list):
                    got = (got,)
                if len(got) != len(dst):
                    raise ValueError(f"returned {len(got)} arrays, expected {len(dst)}")
                for j, (d, r) in enumerate(zip(dst, got)):
                    r = np.asarray(r)
                    if r.shape != d.shape or not np.can_cast(r.dtype, d.dtype, "same_kind"):
                        raise ValueError(f"result {j} is {r.dtype}{list(r.shape)}, expected "
                                         f"{d.dtype}{list(d.shape)}")
                    np.copyto(d, r, casting="same_kind")
            except BaseException as exc:  # never unwind through the machine code
                for d in dst:
                    d[...] = 0
                if getattr(pending, "error", None) is None:
                    pending.error = (target, exc)

        return _CALLBACK(call)

    def raise_pending(self) -> None:
        """Raises the first error of a Python kernel during the last call on this thread.

        Raises:
            OxlaError: naming the target, chained to the kernel's exception.
        """
        if self.ffi_targets:
            msg = take_error()
            if msg:
                names = ", ".join(f"'{t}'" for t in sorted(set(self.ffi_targets)))
                raise OxlaError(f"custom call {names} (XLA FFI handler on the {BACKEND} "
                                f"backend) failed: {msg}")
        err = getattr(self._pending, "error", None)
        if err is not None:
            self._pending.error = None
            target, exc = err
            raise OxlaError(f"custom call '{target}' (Python kernel on the {BACKEND} "
                            f"backend) failed: {type(exc).__name__}: {exc}") from exc

    def check_portable(self, path: Any) -> None:
        """Raises unless every target is native (artifacts hold no Python code).

        Raises:
            NotSupportedError: a target is bound to a Python callable.
        """
        if self.python_targets:
            names = ", ".join(f"'{t}'" for t in self.python_targets)
            raise NotSupportedError(
                f"cannot save '{path}': custom call target(s) {names} are Python callables, "
                "which an artifact cannot hold",
                notes=["register native kernels (a C function address) for the cpu backend "
                       "to save the executable; Python kernels are for prototyping"])


def bind_custom_calls(jit: Any, ir_text: str) -> CustomCallBindings | None:
    """Binds the custom calls found in a program's LLVM IR (None when it makes none).

    Raises:
        LoweringError: a target has no cpu implementation in the installed plugins.
    """
    if SYMBOL_PREFIX not in ir_text:
        return None
    sites = []
    for hex_text in dict.fromkeys(_SYMBOL_RE.findall(ir_text)):
        target, ins, outs = decode_symbol(hex_text)
        sites.append((SYMBOL_PREFIX + hex_text, target, ins, outs))
    return CustomCallBindings(sites, jit) if sites else None
