"""DLPack producers as inputs on the simulated device: taken in place when their tensor is
device memory of the executable's device, copied when it is host memory the device did
not allocate, refused with one clear error otherwise; the producer's deleter runs once."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from oxla_codegen_llvm.gpu import arrays

from oxla.errors import RuntimeInputError
from tests.backend_cuda.conftest import compile_cuda
from tests.backend_cuda.test_runtime import MLP, _mlp_args

_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Forward:
    """Only the DLPack half of another producer (no ``__cuda_array_interface__``)."""

    def __init__(self, inner, device=None):
        self.inner, self.device = inner, device

    def __dlpack__(self, stream=None):
        return self.inner.__dlpack__()

    def __dlpack_device__(self):
        return self.device or self.inner.__dlpack_device__()


class HandMade:
    """A producer of its own: a DLManagedTensor over simulated device memory, with
    strides and a deleter that counts its calls."""

    def __init__(self, sim, array, strides=None, dl_dtype=None):
        self.sim, self.ptr = sim, sim.upload(array)
        self.array, self.strides, self.dtype = array, strides, dl_dtype
        self.deleted = 0
        self._keep = []

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, stream=None):
        a = self.array
        shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        strides = (ctypes.c_int64 * a.ndim)(*self.strides) if self.strides else None
        managed = arrays.DLManagedTensor()
        managed.dl_tensor = arrays.DLTensor(
            self.ptr, arrays.DLDevice(1, 0), a.ndim, self.dtype or arrays.dl_dtype(a.dtype),
            shape, strides, 0)

        @arrays._DELETER  # noqa: SLF001 - the struct's own callback type
        def deleter(_):
            self.deleted += 1
        managed.deleter = deleter
        self._keep.append((managed, shape, strides, deleter))
        return _api.PyCapsule_New(ctypes.addressof(managed), b"dltensor", None)


def test_oxla_device_array_through_dlpack_is_read_in_place(sim):
    exe = compile_cuda(MLP)
    x, w, b = _mlp_args()
    want = exe(x, w, b)
    live = len(arrays.LIVE)
    relu, _ = exe.run_on_device(x, w, b)  # 4x16: the wrong shape for x
    with pytest.raises(RuntimeInputError, match=r"argument #0 has shape \(4, 16\)"):
        exe(Forward(relu), w, b)
    xd = Forward(arrays.DeviceArray(sim, sim.upload(x), x.shape, x.dtype))
    copies = sim.device.stats["copies"]
    got = exe(xd, w, b)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert sim.device.stats["copies"] - copies == 4  # w, b in; two results out: x in place
    assert len(arrays.LIVE) == live  # every consumed capsule's deleter ran


def test_hand_made_producer_deleter_runs_once_per_call(sim):
    exe = compile_cuda(MLP)
    x, w, b = _mlp_args()
    want = exe(x, w, b)
    p = HandMade(sim, x)
    copies = sim.device.stats["copies"]
    got = exe(p, w, b)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert sim.device.stats["copies"] - copies == 4 and p.deleted == 1
    exe(p, w, b)
    assert p.deleted == 2
    # contiguous strides given explicitly are accepted; others refused (deleter still runs)
    assert HandMade(sim, x, strides=(8, 1)) and exe(HandMade(sim, x, strides=(8, 1)), w, b)
    bad = HandMade(sim, x, strides=(1, 4))
    with pytest.raises(RuntimeInputError, match="not C-contiguous"):
        exe(bad, w, b)
    assert bad.deleted == 1
    wrong = HandMade(sim, x, dl_dtype=arrays.DLDataType(0, 32, 1))  # int32
    with pytest.raises(RuntimeInputError, match="DLPack dtype") as e:
        exe(wrong, w, b)
    assert "\n" not in str(e.value) and wrong.deleted == 1
    sim.release(p.ptr)


def test_host_producers_are_copied_and_other_devices_refused(sim):
    exe = compile_cuda(MLP)
    x, w, b = _mlp_args()
    want = exe(x, w, b)
    copies = sim.device.stats["copies"]
    got = exe(Forward(x), w, b)  # host memory the device did not allocate: copied
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    assert sim.device.stats["copies"] - copies == 5
    with pytest.raises(RuntimeInputError, match=r"DLPack device \(2, 0\)"):
        exe(Forward(x, device=(2, 0)), w, b)  # kDLCUDA memory on the simulated device
