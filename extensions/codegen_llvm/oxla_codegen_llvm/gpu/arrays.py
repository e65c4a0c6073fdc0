"""Device arrays: what a call returns on the device, and how device inputs are read.

A :class:`DeviceArray` owns (or borrows) device memory of one shape and dtype, and is
consumed without a copy through ``__cuda_array_interface__`` (version 3) and DLPack
(``__dlpack__``/``__dlpack_device__``); ``.numpy()`` copies it to the host. Inputs with
``__cuda_array_interface__`` are read in place (:func:`device_pointer`), and so are
DLPack producers' tensors on the executable's device (:func:`dlpack_input`), so an
executable's result can be the next call's input without leaving the device.

On the simulated device memory is host memory, so DLPack names it ``kDLCPU`` and
``numpy.from_dlpack`` reads it; on a GPU it is ``kDLCUDA`` (NVIDIA) or ``kDLROCM`` (AMD).
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any

import numpy as np

from oxla.errors import RuntimeInputError

_DL_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}  # kDLInt, kDLUInt, kDLFloat, ..., kDLBool


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]
LIVE: dict[int, tuple] = {}  # managed tensor address -> what keeps it (and its owner) alive


@_DELETER
def _delete(managed) -> None:
    LIVE.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# a handle of our own: ctypes.pythonapi is shared, and another user's argtypes (or this
# module run twice) would make our destructor's CFUNCTYPE class a mismatch
_pyapi = ctypes.PyDLL(None)
_pyapi.PyCapsule_New.restype = ctypes.py_object
_pyapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_pyapi.PyCapsule_IsValid.restype = ctypes.c_int
_pyapi.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_pyapi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_pyapi.PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DESTRUCTOR
def _capsule_gone(capsule: int) -> None:
    # An unconsumed capsule still holds its name "dltensor": free the tensor then.
    if _pyapi.PyCapsule_IsValid(capsule, b"dltensor"):
        address = _pyapi.PyCapsule_GetPointer(capsule, b"dltensor")
        LIVE.pop(address, None)


def dl_dtype(dtype: np.dtype) -> DLDataType:
    """The DLPack type of a numpy dtype (ml_dtypes' bfloat16 is ``kDLBfloat``).

    Raises:
        RuntimeInputError: a dtype DLPack cannot name.
    """
    if dtype.name == "bfloat16":
        return DLDataType(4, 16, 1)
    code = _DL_CODES.get(dtype.kind)
    if code is None:
        raise RuntimeInputError(f"dtype {dtype} has no DLPack type")
    return DLDataType(code, dtype.itemsize * 8, 1)


class DeviceArray:
    """An array in device memory (module doc).

    Attributes:
        ptr: its device address.
        shape, dtype: as numpy's.
        device: the :class:`~oxla_codegen_llvm.gpu.runtime.Runtime` it lives on.
    """

    def __init__(self, runtime: Any, ptr: int, shape: tuple[int, ...], dtype: Any,
                 owned: bool = True):
        self.device = runtime
        self.ptr = int(ptr)
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        if owned:
            weakref.finalize(self, runtime.release, self.ptr)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def numpy(self) -> np.ndarray:
        """A host copy."""
        return self.device.to_host(self.ptr, self.shape, self.dtype)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "version": 3, "strides": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        return tuple(self.device.device.dlpack_device)

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        """A ``dltensor`` capsule over this array's memory (no copy); the array stays
        alive until the consumer calls the tensor's deleter."""
        if copy:
            raise BufferError("oxla device arrays are exported without copies")
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        managed = DLManagedTensor()
        managed.dl_tensor = DLTensor(self.ptr, DLDevice(*self.__dlpack_device__()), ndim,
                                     dl_dtype(self.dtype), shape, None, 0)
        managed.manager_ctx = None
        managed.deleter = _delete
        address = ctypes.addressof(managed)
        LIVE[address] = (managed, shape, self)
        return _pyapi.PyCapsule_New(address, b"dltensor", _capsule_gone)


def device_pointer(value: Any, shape: tuple[int, ...], dtype: np.dtype, index: int) -> int | None:
    """The device address of an input that has ``__cuda_array_interface__`` (checked
    against the expected shape and dtype, C-contiguous), or None for a host array.

    Raises:
        RuntimeInputError: wrong shape, dtype or a strided layout.
    """
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is None:
        return None
    got_shape = tuple(int(d) for d in cai["shape"])
    got = np.dtype(cai["typestr"])
    if got_shape != tuple(shape) or got.str != dtype.str and got != dtype:
        raise RuntimeInputError(f"argument #{index} has shape {got_shape} and dtype {got}, "
                                f"expected {tuple(shape)} and {dtype}")
    strides = cai.get("strides")
    if strides is not None:
        want, step = [], dtype.itemsize
        for d in reversed(shape):
            want.append(step)
            step *= d
        if tuple(strides) != tuple(reversed(want)) and int(np.prod(shape)) > 1:
            raise RuntimeInputError(f"argument #{index} is not C-contiguous "
                                    f"(strides {tuple(strides)})")
    return int(cai["data"][0])


# -- DLPack inputs (consumer side) ------------------------------------------------------
_consumer = ctypes.PyDLL(None)  # py_object prototypes, apart from the producer's above
_consumer.PyCapsule_IsValid.restype = ctypes.c_int
_consumer.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_consumer.PyCapsule_GetPointer.restype = ctypes.c_void_p
_consumer.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_consumer.PyCapsule_SetName.restype = ctypes.c_int
_consumer.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DLTENSOR, _USED = b"dltensor", b"used_dltensor"  # module constants: names must outlive
KDL_CPU = 1


class DLPackInput:
    """A producer's tensor consumed for one call: ``ptr`` is its data's address; the
    producer's deleter runs at :meth:`close` (the call is over, its stream synchronized).

    Attributes:
        ptr: ``data + byte_offset``.
        nbytes: the tensor's size.
    """

    def __init__(self, managed: Any, ptr: int, nbytes: int):
        self._managed = managed
        self.ptr = ptr
        self.nbytes = nbytes

    def close(self) -> None:
        managed, self._managed = self._managed, None
        if managed is not None and managed.contents.deleter:
            managed.contents.deleter(managed)


def is_dlpack_producer(value: Any) -> bool:
    """Whether ``value`` is a DLPack producer that is not a numpy array (numpy's are host
    inputs, copied) and has no ``__cuda_array_interface__`` (read by :func:`device_pointer`)."""
    return (hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")
            and not isinstance(value, np.ndarray | np.generic)
            and getattr(value, "__cuda_array_interface__", None) is None)


def dlpack_input(value: Any, shape: tuple[int, ...], dtype: np.dtype, index: int,
                 device: tuple[int, int]) -> DLPackInput | None:
    """Consumes a DLPack producer's tensor (no copy) for an argument of ``shape`` and
    ``dtype`` on the executable's DLPack ``device`` (``(kDLCUDA, ordinal)``, ``(kDLROCM,
    ordinal)``; the simulated device's is ``(kDLCPU, 0)``).

    Returns:
        The consumed tensor, or None when the producer's memory is host memory and the
        executable's device is not the host (the argument is then copied like numpy's).

    Raises:
        RuntimeInputError: the tensor is on another device, or has another shape or dtype,
            or is not C-contiguous, or the producer's ``__dlpack__`` failed.
    """
    got_device = tuple(int(d) for d in value.__dlpack_device__())
    if got_device[0] == KDL_CPU and device[0] != KDL_CPU:
        return None
    if got_device != tuple(device):
        raise RuntimeInputError(f"argument #{index} is on DLPack device {got_device}, the "
                                f"executable runs on {tuple(device)}")
    try:
        capsule = value.__dlpack__()
    except Exception as e:  # the producer's own refusal (a copy it would need, a stream)
        raise RuntimeInputError(f"argument #{index}: its __dlpack__ failed: {e}") from None
    if not _consumer.PyCapsule_IsValid(capsule, _DLTENSOR):
        raise RuntimeInputError(f"argument #{index}: __dlpack__ returned no 'dltensor' capsule")
    address = _consumer.PyCapsule_GetPointer(capsule, _DLTENSOR)
    _consumer.PyCapsule_SetName(capsule, _USED)  # ours now: its destructor leaves it be
    managed = ctypes.cast(address, ctypes.POINTER(DLManagedTensor))
    t = managed.contents.dl_tensor
    held = DLPackInput(managed, int(t.data or 0) + int(t.byte_offset),
                       int(np.prod(shape, dtype=np.int64)) * dtype.itemsize)
    try:
        _check_tensor(t, shape, dtype, index)
    except RuntimeInputError:
        held.close()
        raise
    return held


def _check_tensor(t: DLTensor, shape: tuple[int, ...], dtype: np.dtype, index: int) -> None:
    got_shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    want = dl_dtype(dtype)
    got = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    if got_shape != tuple(shape) or got != (want.code, want.bits, want.lanes):
        raise RuntimeInputError(f"argument #{index} has shape {got_shape} and DLPack dtype "
                                f"(code, bits, lanes) {got}, expected {tuple(shape)} and "
                                f"{dtype} {(want.code, want.bits, want.lanes)}")
    if t.strides:
        step = 1
        for i in reversed(range(t.ndim)):
            if shape[i] != 1 and int(t.strides[i]) != step:
                strides = tuple(int(t.strides[j]) for j in range(t.ndim))
                raise RuntimeInputError(f"argument #{index} is not C-contiguous "
                                        f"(strides {strides} in elements)")
            step *= shape[i]
