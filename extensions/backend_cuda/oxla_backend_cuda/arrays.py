"""Device arrays of the cuda backend: :mod:`oxla_codegen_llvm.gpu.arrays` (shared with
the hip backend), re-exported here."""

from __future__ import annotations

from oxla_codegen_llvm.gpu import arrays as _shared
from oxla_codegen_llvm.gpu.arrays import DeviceArray, device_pointer, dl_dtype

_LIVE = _shared.LIVE
__all__ = ["DeviceArray", "device_pointer", "dl_dtype"]
