"""XLA's typed FFI on the cpu backend: handlers built against ``xla/ffi/api/ffi.h`` run
unchanged.

A ``stablehlo.custom_call`` with ``api_version = 4`` (or, as jaxlib also emits, a
dictionary ``mhlo.backend_config``) calls its target with XLA's FFI convention,
``XLA_FFI_Error* handler(XLA_FFI_CallFrame*)``: the target's ``CustomCallInfo(target,
"cpu", fn)`` gives the handler's address (``jax.ffi.pycapsule``'s symbol, a ctypes
function). oxla implements the C API the handler calls back into (``xla_ffi.c``,
compiled on first use with the system C compiler against the ``c_api.h`` that jaxlib
ships, ``$OXLA_XLA_FFI_INCLUDE`` or ``<jaxlib>/include``): errors (a returned error is
raised from the executable call as an :class:`~oxla.errors.OxlaError` naming the target
and the handler's message), the device ordinal (0), the run id (0) and the thread count;
streams, user data, state, device memory, thread pools and futures return an
``UNIMPLEMENTED`` error.

The call frame: each operand and result as an ``XLA_FFI_Buffer`` (dtype, data, rank,
dims; tokens left out), the execute stage, and the typed attributes decoded by
:func:`oxla.ir.ffi.ffi_attributes`, sorted by name: bools as ``PRED`` scalars, numbers
as scalars of their type (untyped ints ``S64``, floats ``F64``), strings as byte spans,
arrays and dense elements as arrays of their element type, dictionaries nested.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from oxla.errors import LoweringError, NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import parse_attribute, parse_type
from oxla.ir.ffi import TYPED_FFI, api_version, decode_attribute, ffi_attributes

SOURCE = Path(__file__).with_name("xla_ffi.c")
DTYPES = {"i1": 1, "i8": 2, "si8": 2, "i16": 3, "si16": 3, "i32": 4, "si32": 4,
          "i64": 5, "si64": 5, "ui8": 6, "ui16": 7, "ui32": 8, "ui64": 9, "f16": 10,
          "f32": 11, "f64": 12, "bf16": 16, "complex<f32>": 15, "complex<f64>": 18,
          "f8E5M2": 19, "f8E4M3FN": 20, "i4": 21, "si4": 21, "ui4": 22,
          "f8E4M3B11FNUZ": 23, "f8E5M2FNUZ": 24, "f8E4M3FNUZ": 25, "i2": 26, "ui2": 27,
          "f8E4M3": 28, "f8E3M4": 29, "f4E2M1FN": 32, "f8E8M0FNU": 33}
"""oxla element type -> ``XLA_FFI_DataType``."""
_NP_DTYPES = {np.dtype(np.bool_): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3,
              np.dtype(np.int32): 4, np.dtype(np.int64): 5, np.dtype(np.uint8): 6,
              np.dtype(np.uint16): 7, np.dtype(np.uint32): 8, np.dtype(np.uint64): 9,
              np.dtype(np.float16): 10, np.dtype(np.float32): 11, np.dtype(np.float64): 12,
              np.dtype(np.complex64): 15, np.dtype(np.complex128): 18}
ARRAY, DICTIONARY, SCALAR, STRING = 1, 2, 3, 4
_LOCK = threading.Lock()
_RUNTIME: list[ctypes.CDLL] = []


def is_ffi(op: Any) -> bool:
    """True when ``op`` uses the typed FFI convention (module doc)."""
    return api_version(op) == TYPED_FFI or isinstance(
        op.attributes.get("mhlo.backend_config"), A.DictionaryAttr)


def include_dir() -> Path:
    """Where ``xla/ffi/api/c_api.h`` is (jaxlib's copy unless ``$OXLA_XLA_FFI_INCLUDE``).

    Raises:
        LoweringError: neither is there.
    """
    env = os.environ.get("OXLA_XLA_FFI_INCLUDE")
    spec = importlib.util.find_spec("jaxlib")
    d = Path(env) if env else (Path(spec.origin).parent / "include"
                               if spec and spec.origin else None)
    if d is None or not (d / "xla" / "ffi" / "api" / "c_api.h").exists():
        raise LoweringError("XLA FFI custom calls need the XLA FFI headers: pip install "
                            "jaxlib, or set $OXLA_XLA_FFI_INCLUDE to a directory holding "
                            "xla/ffi/api/c_api.h")
    return d


def runtime() -> ctypes.CDLL:
    """oxla's XLA FFI runtime library, compiled on first use (cached by content hash)."""
    with _LOCK:
        if _RUNTIME:
            return _RUNTIME[0]
        inc = include_dir()
        header = (inc / "xla" / "ffi" / "api" / "c_api.h").read_bytes()
        cc = os.environ.get("CC") or shutil.which("cc") or "cc"
        key = hashlib.sha256(SOURCE.read_bytes() + b"\0" + header + cc.encode()).hexdigest()
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        out = base / "oxla" / "xla_ffi" / f"{key[:32]}.so"
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
                lib = Path(tmp) / "xla_ffi.so"
                res = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-std=c11", "-Wall", "-Werror=implicit-function-declaration",
                                      f"-I{inc}", str(SOURCE), "-o", str(lib)],
                                     capture_output=True, text=True, check=False)
                if res.returncode:
                    raise LoweringError("building oxla's XLA FFI runtime failed",
                                        notes=[res.stderr.strip()[-2000:]])
                os.replace(lib, out)
        so = ctypes.CDLL(str(out))
        so.oxla_ffi_take_error.restype = ctypes.c_char_p
        _RUNTIME.append(so)
        return so


class _ByteSpan(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Scalar(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("value", ctypes.c_void_p)]


class _Array(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("size", ctypes.c_size_t),
                ("data", ctypes.c_void_p)]


class _Attrs(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("size", ctypes.c_int64), ("types", ctypes.c_void_p),
                ("names", ctypes.c_void_p), ("attrs", ctypes.c_void_p)]


class _Site(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("nargs", ctypes.c_int64),
                ("nrets", ctypes.c_int64), ("dtypes", ctypes.c_void_p),
                ("ranks", ctypes.c_void_p), ("dims", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p)]


def _np_code(dtype: np.dtype, where: str) -> int:
    code = _NP_DTYPES.get(np.dtype(dtype))
    if code is None:
        raise NotSupportedError(f"typed FFI {where}: element type {dtype} has no "
                                "XLA_FFI_DataType here")
    return code


class FfiSite:
    """The call frame parts of one FFI custom call (kept alive with the executable).

    Args:
        handler: the handler's address.
        ins, outs: the operand and result types' text (tokens left out).
        attrs_text: the typed attributes as a dictionary attribute's text.
    """

    def __init__(self, handler: int, ins: list[str], outs: list[str], attrs_text: str):
        self._keep: list[Any] = []
        sizes = (ctypes.c_size_t * 2)()
        runtime().oxla_ffi_struct_sizes(sizes)
        self._attrs_size = sizes[0]
        types = [parse_type(t) for t in ins + outs]
        codes = []
        for t in types:
            code = DTYPES.get(str(t.element_type))
            if code is None:
                raise NotSupportedError(f"typed FFI: element type {t.element_type} has no "
                                        "XLA_FFI_DataType")
            codes.append(code)
        dims = [int(d) for t in types for d in t.shape]
        dt = self._own((ctypes.c_int32 * max(len(codes), 1))(*codes))
        rk = self._own((ctypes.c_int64 * max(len(types), 1))(*[t.rank for t in types]))
        dm = self._own((ctypes.c_int64 * max(len(dims), 1))(*dims))
        attrs = decode_attribute(parse_attribute(attrs_text), "typed FFI attributes") \
            if attrs_text else {}
        self.site = _Site(handler, len(ins), len(outs), ctypes.addressof(dt),
                          ctypes.addressof(rk), ctypes.addressof(dm),
                          ctypes.addressof(self._dict(attrs, "attributes")))

    @property
    def address(self) -> int:
        return ctypes.addressof(self.site)

    def _own(self, obj: Any) -> Any:
        self._keep.append(obj)
        return obj

    def _dict(self, attrs: dict, where: str) -> _Attrs:
        names = sorted(attrs)
        n = max(len(names), 1)
        types = self._own((ctypes.c_int * n)())
        spans = self._own((ctypes.POINTER(_ByteSpan) * n)())
        values = self._own((ctypes.c_void_p * n)())
        for i, k in enumerate(names):
            raw = self._own(ctypes.create_string_buffer(k.encode()))
            span = self._own(_ByteSpan(ctypes.addressof(raw), len(k.encode())))
            spans[i] = ctypes.pointer(span)
            types[i], obj = self._value(attrs[k], f"{where}.{k}")
            values[i] = ctypes.addressof(obj)
        return self._own(_Attrs(self._attrs_size, None, len(names), ctypes.addressof(types),
                                ctypes.addressof(spans), ctypes.addressof(values)))

    def _value(self, v: Any, where: str) -> tuple[int, Any]:
        if isinstance(v, dict):
            return DICTIONARY, self._dict(v, where)
        if isinstance(v, str):
            raw = self._own(ctypes.create_string_buffer(v.encode()))
            return STRING, self._own(_ByteSpan(ctypes.addressof(raw), len(v.encode())))
        if isinstance(v, tuple | list | np.ndarray):
            arr = np.asarray(v)
            if arr.dtype == object or (arr.size == 0 and isinstance(v, tuple | list)):
                arr = arr.astype(np.int64)
            arr = self._own(np.ascontiguousarray(arr.reshape(-1)))
            return ARRAY, self._own(_Array(_np_code(arr.dtype, where), arr.size,
                                           arr.ctypes.data))
        if isinstance(v, bool | np.bool_):
            arr = np.array([v], np.bool_)
        elif isinstance(v, np.generic):
            arr = np.array([v])
        elif isinstance(v, int):
            arr = np.array([v], np.int64)
        elif isinstance(v, float):
            arr = np.array([v], np.float64)
        else:
            raise NotSupportedError(f"typed FFI {where}: {v!r} has no XLA FFI value")
        arr = self._own(arr)
        return SCALAR, self._own(_Scalar(_np_code(arr.dtype, where), arr.ctypes.data))


def ffi_attributes_text(op: Any) -> str:
    """The op's typed attributes as a dictionary's text ("" when none), checked to be
    decodable (what the artifact's symbol records).

    Raises:
        NotSupportedError: an attribute the FFI has no value for.
    """
    name = "backend_config" if api_version(op) == TYPED_FFI else "mhlo.backend_config"
    ffi_attributes(op)  # raises on an undecodable attribute
    a = op.attributes.get(name)
    if a is None or (isinstance(a, A.StringAttr) and not a.value.strip()):
        return ""
    return a.value if isinstance(a, A.StringAttr) else str(a)


def dispatch_address() -> int:
    """The address of ``oxla_ffi_dispatch`` (the cpu-convention entry of every site)."""
    return ctypes.cast(runtime().oxla_ffi_dispatch, ctypes.c_void_p).value or 0


def take_error() -> str:
    """The last handler error on this thread ("" when none), forgotten after."""
    return runtime().oxla_ffi_take_error().decode(errors="replace")
