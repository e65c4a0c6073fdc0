"""The NVPTX lowering itself, run: sm_35 PTX of the GPU kernels through gpuocelot's PTX
emulator (address spaces, parameter passing, special registers, shared memory and
barriers), compared with the interpreter. Skips where ``../shared`` is absent."""

from __future__ import annotations

import numpy as np

from tests.simt.conftest import on_ocelot
from tests.simt.test_model import ELEMENTWISE, _xy


def test_elementwise_on_gpuocelot():
    got, want, _ = on_ocelot(ELEMENTWISE, _xy())
    np.testing.assert_array_equal(got[0], want[0])
