"""Loop kernels that only move data, as calls of the runtime's strided copy
(:mod:`oxla_backend_cpu.strided_copy`), against the interpreter: strided slices, the
interleave of a transposed convolution's phases (reshapes and concatenates, sliced to an
odd size), transposes and broadcasts keeping contiguous runs, runs with word and byte
tails, and a transpose of single elements, which keeps its loop nest."""

from __future__ import annotations

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, run_both

RNG = np.random.default_rng(11)


def _ty(shape, et="f32") -> str:
    return "tensor<" + "x".join(map(str, shape)) + f"x{et}>"


def _uses_copy(text: str) -> bool:
    return "oxla_copy_strided" in compile_cpu(text).llvm_ir


def _check(text: str, args: list, copied: bool = True) -> None:
    assert _uses_copy(text) == copied
    run_both(text, args)


def test_strided_slice_of_weights():
    """A transposed convolution's phase kernel: taps ``k0::2`` of a 3x3 HWIO kernel."""
    src, out = (3, 3, 32, 32), (1, 2, 32, 32)
    text = f"""
func.func @main(%w: {_ty(src)}) -> {_ty(out)} {{
  %s = stablehlo.slice %w [1:3:2, 0:3:2, 0:32, 0:32] : ({_ty(src)}) -> {_ty(out)}
  return %s : {_ty(out)}
}}"""
    _check(text, [RNG.standard_normal(src).astype(np.float32)])


@pytest.mark.parametrize("n,hq,wq,c,h,w", [
    (4, 8, 8, 16, 16, 16),
    (2, 5, 6, 8, 9, 11),   # the output sliced to an odd size (H not a multiple of 2)
])
def test_phase_interleave(n, hq, wq, c, h, w):
    """Four phases ``[n, hq, wq, c]`` interleaved into ``[n, 2hq, 2wq, c]`` as
    :mod:`oxla_backend_cpu.conv_phases` writes it, then sliced to ``[n, h, w, c]``."""
    ph, g1 = (n, hq, wq, c), (n, hq, 1, wq, 1, c)
    g2, g3 = (n, hq, 1, wq, 2, c), (n, hq, 2, wq, 2, c)
    full = (n, 2 * hq, 2 * wq, c)
    ops = [f"%r{i} = stablehlo.reshape %p{i} : ({_ty(ph)}) -> {_ty(g1)}" for i in range(4)]
    ops += [f"%a = stablehlo.concatenate %r0, %r1, dim = 4 : ({_ty(g1)}, {_ty(g1)}) -> {_ty(g2)}",
            f"%b = stablehlo.concatenate %r2, %r3, dim = 4 : ({_ty(g1)}, {_ty(g1)}) -> {_ty(g2)}",
            f"%c = stablehlo.concatenate %a, %b, dim = 2 : ({_ty(g2)}, {_ty(g2)}) -> {_ty(g3)}",
            f"%f = stablehlo.reshape %c : ({_ty(g3)}) -> {_ty(full)}"]
    res = "%f"
    if (h, w) != full[1:3]:
        ops.append(f"%s = stablehlo.slice %f [0:{n}, 0:{h}, 0:{w}, 0:{c}] : "
                   f"({_ty(full)}) -> {_ty((n, h, w, c))}")
        res = "%s"
    body = "\n  ".join(ops)
    text = f"""
func.func @main({", ".join(f"%p{i}: {_ty(ph)}" for i in range(4))}) -> {_ty((n, h, w, c))} {{
  {body}
  return {res} : {_ty((n, h, w, c))}
}}"""
    _check(text, [RNG.standard_normal(ph).astype(np.float32) for _ in range(4)])


def test_transpose_keeping_rows():
    """``[a, b, c] -> [b, a, c]``: runs of ``c`` elements."""
    src, out = (6, 10, 16), (10, 6, 16)
    text = f"""
func.func @main(%x: {_ty(src)}) -> {_ty(out)} {{
  %t = stablehlo.transpose %x, dims = [1, 0, 2] : ({_ty(src)}) -> {_ty(out)}
  return %t : {_ty(out)}
}}"""
    _check(text, [RNG.standard_normal(src).astype(np.float32)])


def test_broadcast_rows():
    src, out = (8, 32), (3, 8, 32)
    text = f"""
func.func @main(%x: {_ty(src)}) -> {_ty(out)} {{
  %b = stablehlo.broadcast_in_dim %x, dims = [1, 2] : ({_ty(src)}) -> {_ty(out)}
  return %b : {_ty(out)}
}}"""
    _check(text, [RNG.standard_normal(src).astype(np.float32)])


@pytest.mark.parametrize("et,n", [("i8", 40), ("i16", 17), ("f64", 37)])
def test_concatenate_with_tails(et, n):
    """Runs of 40 bytes (a vector and two words), 34 (a vector and two bytes), 296."""
    dt = {"i8": np.int8, "i16": np.int16, "f64": np.float64}[et]
    a, b, out = (5, n), (5, 2 * n), (5, 3 * n)
    text = f"""
func.func @main(%x: {_ty(a, et)}, %y: {_ty(b, et)}) -> {_ty(out, et)} {{
  %c = stablehlo.concatenate %y, %x, dim = 1 : ({_ty(b, et)}, {_ty(a, et)}) -> {_ty(out, et)}
  return %c : {_ty(out, et)}
}}"""
    args = [RNG.integers(-100, 100, a).astype(dt), RNG.integers(-100, 100, b).astype(dt)]
    _check(text, args)


def test_element_transpose_keeps_loops():
    src, out = (64, 48), (48, 64)
    text = f"""
func.func @main(%x: {_ty(src)}) -> {_ty(out)} {{
  %t = stablehlo.transpose %x, dims = [1, 0] : ({_ty(src)}) -> {_ty(out)}
  return %t : {_ty(out)}
}}"""
    _check(text, [RNG.standard_normal(src).astype(np.float32)], copied=False)


def test_large_parallel_interleave():
    """Big enough to be split among threads: each piece gets its part of the range."""
    ph, g1, g2 = (64, 32, 64), (64, 1, 32, 64), (64, 2, 32, 64)
    text = f"""
func.func @main(%x: {_ty(ph)}, %y: {_ty(ph)}) -> {_ty((128, 32, 64))} {{
  %a = stablehlo.reshape %x : ({_ty(ph)}) -> {_ty(g1)}
  %b = stablehlo.reshape %y : ({_ty(ph)}) -> {_ty(g1)}
  %c = stablehlo.concatenate %a, %b, dim = 1 : ({_ty(g1)}, {_ty(g1)}) -> {_ty(g2)}
  %f = stablehlo.reshape %c : ({_ty(g2)}) -> {_ty((128, 32, 64))}
  return %f : {_ty((128, 32, 64))}
}}"""
    _check(text, [RNG.standard_normal(ph).astype(np.float32) for _ in range(2)])
