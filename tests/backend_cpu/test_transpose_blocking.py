"""Loop fusions that read an operand transposed run in cache blocks
(``oxla_backend_cpu.codegen.transposed_blocking`` ->
``oxla_codegen_llvm.loops.tiled_loop_nest``): non-square and odd sizes (partial
blocks), 3-D permutations, i8/f64/f32, parallel chunks. Every case against the
interpreter, and each asserts that the kernel was blocked (or, when small, not)."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from oxla.lowering import LoopKernel, fuse
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(21)


def _blocking(text: str):
    from oxla_backend_cpu.codegen import transposed_blocking
    from oxla_backend_cpu.policy import CPUPolicy

    loops = [k for k in fuse(parse_module(text, "test.mlir"), CPUPolicy()).kernels
             if isinstance(k, LoopKernel)]
    return [transposed_blocking(k) for k in loops]


def _text(shape, perm, et):
    src = [0] * len(shape)
    for i, p in enumerate(perm):
        src[p] = shape[i]
    t = f"tensor<{'x'.join(map(str, shape))}x{et}>"
    ts = f"tensor<{'x'.join(map(str, src))}x{et}>"
    return f"""func.func @main(%x: {ts}, %y: {t}) -> {t} {{
  %xt = stablehlo.transpose %x, dims = {list(perm)} : ({ts}) -> {t}
  %m = stablehlo.multiply %y, %y : {t}
  %r = stablehlo.add %xt, %m : {t}
  return %r : {t}
}}""", tuple(src)


def _data(shape, dtype):
    if np.dtype(dtype).kind == "i":
        return RNG.integers(-100, 100, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("shape,perm,et,dtype,p", [
    ((300, 257), (1, 0), "f32", np.float32, 0),      # odd, non-square: partial blocks
    ((2048, 64), (1, 0), "f32", np.float32, 0),      # tall: parallel chunks of rows
    ((513, 300), (1, 0), "i8", np.int8, 0),
    ((131, 257), (1, 0), "f64", np.float64, 0),
    ((37, 50, 65), (2, 1, 0), "f32", np.float32, 0),  # 3-D: blocks of dims 0 and 2
    ((9, 130, 70), (0, 2, 1), "f32", np.float32, 1),  # batched 2-D transpose
    ((40, 70, 33), (1, 2, 0), "f64", np.float64, 1),
])
def test_transposed_fusions_are_blocked(shape, perm, et, dtype, p):
    text, src = _text(shape, perm, et)
    (got,) = _blocking(text)
    assert got is not None and got[0] == p
    run_both(text, [_data(src, dtype), _data(shape, dtype)], rtol=1e-6)


@pytest.mark.parametrize("shape,perm", [((16, 16), (1, 0)),      # small: fits in cache
                                        ((4096, 4), (1, 0)),     # short rows: no tile
                                        ((64, 40, 50), (1, 0, 2))])  # innermost stays
def test_small_or_row_preserving_transposes_are_not_blocked(shape, perm):
    text, src = _text(shape, perm, "f32")
    assert _blocking(text) == [None]
    run_both(text, [_data(src, np.float32), _data(shape, np.float32)], rtol=1e-6)


def test_tile_loop_rejects_the_last_dimension():
    import llvmlite.ir as ir
    from oxla_codegen_llvm.loops import tiled_loop_nest

    fn = ir.Function(ir.Module("t"), ir.FunctionType(ir.VoidType(), []), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with pytest.raises(ValueError, match="expected 0 <= p < 1"), \
            tiled_loop_nest(b, (4, 4), 1, 8):
        pass
