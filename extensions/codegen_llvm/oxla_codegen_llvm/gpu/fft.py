"""``stablehlo.fft`` as one batched vendor-FFT call (cuFFT, hipFFT/rocFFT share the
convention), and that call's semantics in numpy (what a simulated device runs).

StableHLO's ``fft`` (spec section ``fft``) transforms the trailing ``len(fft_length)``
dimensions of a row-major operand; the leading ones are a batch. That is cuFFT's
default data layout (``cufftPlanMany`` with ``inembed = onembed = NULL``: each batch
contiguous, ``idist``/``odist`` the product of its dimensions), so one plan of rank
``len(fft_length)`` with ``n = fft_length`` reads the operand in place:

* ``FFT``: ``C2C``/``Z2Z`` forward;
* ``IFFT``: ``C2C``/``Z2Z`` inverse, then a scale by ``1/prod(fft_length)`` (the
  libraries' inverse is unnormalized; the scale is a BLAS ``scal`` over the result's
  real and imaginary parts);
* ``RFFT``: ``R2C``/``D2Z`` (the result's last dimension is ``n[-1] // 2 + 1``);
* ``IRFFT``: ``C2R``/``Z2D`` then the scale. Complex-to-real transforms overwrite their
  input, so the input is first copied into a scratch buffer (:attr:`FftCall.work`) and
  transformed from there.

Both a real library call (:class:`VendorFft` over ``oxla_backend_cuda.cufft``'s cuFFT or
``oxla_backend_hip.hipfft``'s hipFFT) and :func:`fft_reference` read only the
:class:`FftCall`, so a simulated run checks the arguments the GPU would get (the
reference also overwrites a C2R input, as cuFFT may).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from oxla.errors import NotSupportedError, OxlaError

FORWARD, INVERSE = -1, 1
KINDS = {"FFT": ("c2c", FORWARD), "IFFT": ("c2c", INVERSE), "RFFT": ("r2c", FORWARD),
         "IRFFT": ("c2r", INVERSE)}
INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class FftCall:
    """One batched FFT library transform (pointers are device addresses).

    ``batch`` transforms of rank ``len(n)`` and sizes ``n``, each input and output
    contiguous (cuFFT's default layout), the input at ``src`` and the output at ``dst``;
    for ``c2r`` the input is first copied to ``work`` (``in_bytes`` bytes) and
    transformed from there. After it, every element of the output is
    multiplied by ``scale`` when it is not 1.

    Attributes:
        kind: ``c2c``, ``r2c`` or ``c2r``. dtype: ``f32`` or ``f64`` (the real type).
        direction: ``FORWARD`` (-1) or ``INVERSE`` (1) (``c2c`` only).
    """

    kind: str
    dtype: str
    direction: int
    n: tuple[int, ...]
    batch: int
    src: int
    dst: int
    work: int
    in_bytes: int
    out_bytes: int
    scale: float = 1.0

    @property
    def in_place_input(self) -> int:
        """The address cuFFT reads: ``work`` for ``c2r``, else ``src``."""
        return self.work if self.kind == "c2r" else self.src


def fft_call(fft_type: str, dtype: str, length: tuple[int, ...], batch: int,
             src: int, dst: int, work: int) -> FftCall:
    """The FFT call of ``stablehlo.fft`` of type ``fft_type`` (``FFT``...) over
    ``batch`` leading elements and trailing sizes ``length`` (``fft_length``), with the
    operand at ``src``, the result at ``dst`` and a scratch buffer of the operand's size
    at ``work``. ``dtype`` is the real type (``f32`` for ``complex<f32>``).

    Raises:
        NotSupportedError: a rank above 3 or a size above ``2**31 - 1`` (cuFFT's
            ``cufftPlanMany`` takes ``int`` sizes; rocFFT's are wider).
    """
    kind, direction = KINDS[fft_type]
    if not 1 <= len(length) <= 3:
        raise NotSupportedError(f"the GPU FFT transforms ranks 1 to 3, not {len(length)}")
    if max(*length, batch) > INT_MAX:
        raise NotSupportedError(f"an FFT of {batch} x {length} exceeds the FFT libraries' "
                                "int sizes")
    item = 8 if dtype == "f64" else 4
    real = math.prod(length)
    half = math.prod(length[:-1]) * (length[-1] // 2 + 1)
    in_elems, out_bytes = {"c2c": (real * 2, real * 2 * item), "r2c": (real, half * 2 * item),
                           "c2r": (half * 2, real * item)}[kind]
    return FftCall(kind=kind, dtype=dtype, direction=direction, n=tuple(length), batch=batch,
                   src=src, dst=dst, work=work, in_bytes=batch * in_elems * item,
                   out_bytes=batch * out_bytes,
                   scale=1.0 / real if direction == INVERSE else 1.0)


def fft_reference(call: FftCall, view: Callable[[int, int], np.ndarray]) -> None:
    """What the FFT library computes for ``call`` (and the scale after it), on memory that
    ``view(ptr, nbytes)`` maps to a writable ``uint8`` array (the simulated device's):
    pocketfft in the call's precision (``scipy.fft`` when installed, as the interpreter
    uses, else ``numpy.fft``), inverse transforms unnormalized as cuFFT's are. The
    libraries' own rounding is not documented: a real GPU's f32 results may differ from
    these in the last bits. A ``c2r`` input is overwritten with NaNs afterwards (cuFFT documents
    that it may overwrite it), so a program that read it again would fail."""
    real = np.dtype(np.float64 if call.dtype == "f64" else np.float32)
    cplx = np.dtype(np.complex128 if call.dtype == "f64" else np.complex64)
    if call.batch == 0:
        return
    if call.kind == "c2r":
        view(call.work, call.in_bytes)[...] = view(call.src, call.in_bytes)
    src = view(call.in_place_input, call.in_bytes)
    dst = view(call.dst, call.out_bytes)
    axes = tuple(range(1, len(call.n) + 1))
    n = call.n
    fft = _fft_module()
    if call.kind == "c2c":
        x = src.view(cplx).reshape((call.batch, *n))
        y = fft.fftn(x, axes=axes) if call.direction == FORWARD else \
            fft.ifftn(x, axes=axes, norm="forward")
        out = y.astype(cplx)
    elif call.kind == "r2c":
        out = fft.rfftn(src.view(real).reshape((call.batch, *n)), axes=axes).astype(cplx)
    else:
        x = src.view(cplx).reshape((call.batch, *n[:-1], n[-1] // 2 + 1))
        out = fft.irfftn(x, s=n, axes=axes, norm="forward").astype(real)
        src.view(cplx)[...] = np.nan
    if call.scale != 1.0:
        out = out * out.real.dtype.type(call.scale)
    dst[...] = np.ascontiguousarray(out).reshape(-1).view(np.uint8)


def _fft_module():
    try:
        import scipy.fft as sfft
    except ImportError:
        return np.fft
    return sfft


# cufftType_t and hipfftType_t share these values; EXEC_SUFFIX names each transform's
# entry point after the library's prefix (cufftExecC2C, hipfftExecZ2D, ...)
TYPES = {("c2c", "f32"): 0x29, ("r2c", "f32"): 0x2A, ("c2r", "f32"): 0x2C,
         ("c2c", "f64"): 0x69, ("r2c", "f64"): 0x6A, ("c2r", "f64"): 0x6C}
EXEC_SUFFIX = {("c2c", "f32"): "ExecC2C", ("c2c", "f64"): "ExecZ2Z",
               ("r2c", "f32"): "ExecR2C", ("r2c", "f64"): "ExecD2Z",
               ("c2r", "f32"): "ExecC2R", ("c2r", "f64"): "ExecZ2D"}


@dataclass(frozen=True)
class FftAbi:
    """How one vendor FFT library spells the cuFFT-style plan API.

    Attributes:
        prefix: the functions' prefix (``cufft``: ``cufftPlanMany``...; ``hipfft``).
        handle: the ctypes type of a plan handle (cuFFT: ``int``; hipFFT: a pointer).
        result: the status type's name, for errors (``cufftResult``).
    """

    prefix: str
    handle: type
    result: str


def bind_fft(lib: ctypes.CDLL, abi: FftAbi) -> ctypes.CDLL:
    """Declares the argument types of ``lib``'s plan, stream, exec and destroy entry
    points (``<prefix>PlanMany``, ``SetStream``, ``Exec*``, ``Destroy``); returns ``lib``.

    Raises:
        AttributeError: ``lib`` lacks one of them.
    """
    c_int, ptr, h = ctypes.c_int, ctypes.c_void_p, abi.handle
    fn = _entries(lib, abi.prefix)
    fn("PlanMany").argtypes = [ctypes.POINTER(h), c_int, ctypes.POINTER(c_int), ptr, c_int,
                               c_int, ptr, c_int, c_int, c_int, c_int]
    fn("SetStream").argtypes = [h, ptr]
    fn("Destroy").argtypes = [h]
    for (kind, _), suffix in EXEC_SUFFIX.items():
        fn(suffix).argtypes = [h, ptr, ptr] + ([c_int] if kind == "c2c" else [])
    for name in ("PlanMany", "SetStream", "Destroy", *EXEC_SUFFIX.values()):
        fn(name).restype = c_int
    return lib


def _entries(lib: ctypes.CDLL, prefix: str) -> Callable[[str], Any]:
    return lambda name: getattr(lib, prefix + name)


class VendorFft:
    """:class:`FftCall` s on a real GPU through a cuFFT-style library: one plan per
    distinct transform (kind, precision, sizes, batch), kept until :meth:`close`.

    ``lib`` is bound by :func:`bind_fft`. ``copy(dst, src, nbytes, stream)`` is the
    device's device-to-device copy on ``stream``; ``scale(ptr, count, factor, dtype,
    handle)`` multiplies ``count`` reals (``f32``/``f64``) in place, on the stream given
    as an integer handle (a BLAS ``scal``: the inverse transforms' normalization).
    A plan is made before a stream capture would need it (making one allocates).
    """

    def __init__(self, lib: ctypes.CDLL, abi: FftAbi, copy: Callable[[int, int, int, Any], None],
                 scale: Callable[[int, int, float, str, int], None]):
        self._lib, self._abi = lib, abi
        self._fn = _entries(lib, abi.prefix)
        self._plans: dict[tuple, Any] = {}
        self._copy, self._scale = copy, scale

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            raise OxlaError(f"{self._abi.prefix}{what} failed with {self._abi.result} {status}")

    def plan(self, call: FftCall) -> Any:
        """The plan for ``call``'s transform (made on first use).

        Raises:
            OxlaError: the library refused the plan (its status code named).
        """
        key = (call.kind, call.dtype, call.n, call.batch)
        plan = self._plans.get(key)
        if plan is None:
            handle = self._abi.handle()
            n = (ctypes.c_int * len(call.n))(*call.n)
            self._check(self._fn("PlanMany")(ctypes.byref(handle), len(call.n), n, None, 1, 0,
                                             None, 1, 0, TYPES[(call.kind, call.dtype)],
                                             call.batch), "PlanMany")
            plan = self._plans[key] = handle
        return plan

    def run(self, call: FftCall, stream: Any) -> None:
        """Runs ``call`` on ``stream`` (a ``CUstream``/``hipStream_t``, or its integer
        value): the copy of a ``c2r`` input to ``work``, the transform, the scale.

        Raises:
            OxlaError: a library call failed (its status code named).
        """
        if call.batch == 0:
            return
        plan = self.plan(call)
        handle = (stream.value or 0) if isinstance(stream, ctypes.c_void_p) else int(stream)
        self._check(self._fn("SetStream")(plan, ctypes.c_void_p(handle)), "SetStream")
        if call.kind == "c2r":
            self._copy(call.work, call.src, call.in_bytes, stream)
        suffix = EXEC_SUFFIX[(call.kind, call.dtype)]
        args = [plan, ctypes.c_void_p(call.in_place_input), ctypes.c_void_p(call.dst)]
        if call.kind == "c2c":
            args.append(call.direction)
        self._check(self._fn(suffix)(*args), suffix)
        if call.scale != 1.0:
            item = 8 if call.dtype == "f64" else 4
            self._scale(call.dst, call.out_bytes // item, call.scale, call.dtype, handle)

    def close(self) -> None:
        """Destroys every plan."""
        for plan in self._plans.values():
            self._fn("Destroy")(plan)
        self._plans.clear()
