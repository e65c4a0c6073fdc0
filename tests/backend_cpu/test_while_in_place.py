"""``while`` bodies write loop-carried buffers in place when that is safe
(``oxla.lowering.control._write_in_place``): no per-iteration copy of an elementwise
update, and a scan's stacked output updated by ``dynamic_update_slice`` writes only the
window (``oxla.lowering.window_update``). Unsafe forms (swaps, the old state read after
the new one is computed, an update that reads its own operand) keep the copy. Every case
against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from oxla.lowering import ControlKernel, PackKernel, fuse
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _keep_loops(monkeypatch):
    """These loops have constant trip counts; they stay loops (not unrolled by
    canonicalize's ``while_unroll``) so the while kernel's buffers are what runs."""
    from oxla.passes import canon_control

    monkeypatch.setattr(canon_control, "UNROLL_MAX_TRIPS", 0)


def _copies(text: str) -> list[str]:
    """Names of the body's copy-back kernels (``while.next<j>``) of the first while."""
    from oxla_backend_cpu.policy import CPUPolicy

    (ck,) = [k for k in fuse(parse_module(text, "test.mlir"), CPUPolicy()).kernels
             if isinstance(k, ControlKernel)]
    return [k.name for k in ck.plans[1].kernels if isinstance(k, PackKernel)]


def _loop(n: int, types: str, body: str, ret: str, init: str,
          args: str, result: str, results: str) -> str:
    return f"""func.func @main({args}) -> ({results}) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %w:{len(types.split(','))} = stablehlo.while({init}) : {types}
    cond {{
      %n = stablehlo.constant dense<{n}> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
{body}
      stablehlo.return %i1, {ret}
    }}
  return {result}
}}"""


ELEMENTWISE = _loop(
    37, "tensor<i32>, tensor<33x65xf32>",
    """      %s = stablehlo.constant dense<1.01> : tensor<33x65xf32>
      %m = stablehlo.multiply %v, %s : tensor<33x65xf32>
      %t = stablehlo.tanh %m : tensor<33x65xf32>""",
    "%t : tensor<i32>, tensor<33x65xf32>", "%i = %c0, %v = %x",
    "%x: tensor<33x65xf32>", "%w#1 : tensor<33x65xf32>", "tensor<33x65xf32>")


def test_elementwise_state_is_updated_in_place():
    assert _copies(ELEMENTWISE) == []
    run_both(ELEMENTWISE, [RNG.standard_normal((33, 65)).astype(np.float32)], rtol=1e-5)


SWAP = _loop(
    5, "tensor<i32>, tensor<7xf32>, tensor<7xf32>",
    """      %s = stablehlo.add %a, %b : tensor<7xf32>""",
    "%b, %s : tensor<i32>, tensor<7xf32>, tensor<7xf32>", "%i = %c0, %a = %x, %b = %y",
    "%x: tensor<7xf32>, %y: tensor<7xf32>", "%w#1, %w#2 : tensor<7xf32>, tensor<7xf32>",
    "tensor<7xf32>, tensor<7xf32>")

OLD_READ_AFTER = _loop(
    6, "tensor<i32>, tensor<9xf32>, tensor<9xf32>",
    """      %two = stablehlo.constant dense<2.0> : tensor<9xf32>
      %n0 = stablehlo.multiply %a, %two : tensor<9xf32>
      %r = stablehlo.reverse %a, dims = [0] : tensor<9xf32>
      %n1 = stablehlo.add %r, %b : tensor<9xf32>""",
    "%n0, %n1 : tensor<i32>, tensor<9xf32>, tensor<9xf32>", "%i = %c0, %a = %x, %b = %y",
    "%x: tensor<9xf32>, %y: tensor<9xf32>", "%w#1, %w#2 : tensor<9xf32>, tensor<9xf32>",
    "tensor<9xf32>, tensor<9xf32>")


@pytest.mark.parametrize("text", [SWAP, OLD_READ_AFTER], ids=["swap", "old-read-after"])
def test_unsafe_bodies_keep_their_values(text):
    xs = [RNG.standard_normal(9 if "9xf32" in text else 7).astype(np.float32)
          for _ in range(2)]
    run_both(text, xs, rtol=1e-6)


def _scan(n: int, update: str) -> str:
    """Stacks one 5x3 row block per iteration into a 8x5x3 buffer at row ``i``
    (clamped when ``n > 8``: the spec clamps the start to 8 - 1)."""
    return _loop(
        n, "tensor<i32>, tensor<5x3xf32>, tensor<8x5x3xf32>",
        f"""      %h1 = stablehlo.sine %h : tensor<5x3xf32>
{update}
      %z = stablehlo.constant dense<0> : tensor<i32>
      %ys1 = stablehlo.dynamic_update_slice %ys, %u, %i, %z, %z
        : (tensor<8x5x3xf32>, tensor<1x5x3xf32>, tensor<i32>, tensor<i32>, tensor<i32>)
        -> tensor<8x5x3xf32>""",
        "%h1, %ys1 : tensor<i32>, tensor<5x3xf32>, tensor<8x5x3xf32>",
        "%i = %c0, %h = %x, %ys = %y", "%x: tensor<5x3xf32>, %y: tensor<8x5x3xf32>",
        "%w#1, %w#2 : tensor<5x3xf32>, tensor<8x5x3xf32>",
        "tensor<5x3xf32>, tensor<8x5x3xf32>")


WINDOW = "      %u = stablehlo.reshape %h1 : (tensor<5x3xf32>) -> tensor<1x5x3xf32>"
SELF_READ = """      %s = stablehlo.slice %ys [7:8, 0:5, 0:3] : (tensor<8x5x3xf32>) -> tensor<1x5x3xf32>
      %r = stablehlo.reshape %h1 : (tensor<5x3xf32>) -> tensor<1x5x3xf32>
      %u = stablehlo.add %s, %r : tensor<1x5x3xf32>"""


@pytest.mark.parametrize("n", [8, 11, 3])
@pytest.mark.parametrize("update", [WINDOW, SELF_READ], ids=["window", "reads-itself"])
def test_scan_outputs_written_by_window(n, update):
    text = _scan(n, update)
    if update is WINDOW:
        # neither h nor the 8x5x3 stack is copied back (the counter is: the old one is
        # the window's start, read after the new one is computed)
        assert [c for c in _copies(text) if not c.endswith("next0")] == []
    x = RNG.standard_normal((5, 3)).astype(np.float32)
    y = RNG.standard_normal((8, 5, 3)).astype(np.float32)
    run_both(text, [x, y], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("shape,ushape,starts", [((300, 301), (17, 250), (290, -4)),
                                                 ((9, 7, 5), (2, 7, 3), (3, 0, 4)),
                                                 ((400, 200), (400, 1), (0, 199))])
def test_dynamic_update_slice_copy_then_window(shape, ushape, starts):
    """Outside loops a ``dynamic_update_slice`` is a copy of its (fused) operand and then
    the window of its (fused) update, on threads for the larger shapes (chunks write the
    window rows they own): clamped and negative starts as the spec says."""
    t, u = "x".join(map(str, shape)), "x".join(map(str, ushape))
    idx = ", ".join(f"%s{i}" for i in range(len(shape)))
    consts = "\n".join(f"  %s{i} = stablehlo.constant dense<{v}> : tensor<i32>"
                       for i, v in enumerate(starts))
    text = f"""func.func @main(%x: tensor<{t}xf32>, %u: tensor<{u}xf32>) -> tensor<{t}xf32> {{
{consts}
  %x2 = stablehlo.add %x, %x : tensor<{t}xf32>
  %u2 = stablehlo.negate %u : tensor<{u}xf32>
  %r = stablehlo.dynamic_update_slice %x2, %u2, {idx}
    : (tensor<{t}xf32>, tensor<{u}xf32>, {", ".join(["tensor<i32>"] * len(shape))})
    -> tensor<{t}xf32>
  return %r : tensor<{t}xf32>
}}"""
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.standard_normal(ushape).astype(np.float32)
    run_both(text, [x, y], rtol=0.0)


def test_dynamic_update_slice_returned_twice():
    """The second result is a copy kernel of the materialized slice (its root is the
    ``dynamic_update_slice`` value, but as an input): a plain copy, not a window."""
    text = """func.func @main(%x: tensor<3xf32>, %u: tensor<1xf32>, %i: tensor<i64>)
    -> (tensor<3xf32>, tensor<3xf32>) {
  %r = stablehlo.dynamic_update_slice %x, %u, %i
    : (tensor<3xf32>, tensor<1xf32>, tensor<i64>) -> tensor<3xf32>
  return %r, %r : tensor<3xf32>, tensor<3xf32>
}"""
    run_both(text, [np.array([1.0, 2.0, 3.0], np.float32), np.array([-4.0], np.float32),
                    np.int64(1)], rtol=0.0)


@pytest.mark.parametrize("shape,ushape", [((6, 5), (2, 5)), ((300, 64), (3, 64))])
def test_dynamic_update_slice_operand_reading_the_start_index(shape, ushape):
    """The copied operand reads the run-time start index too (as TF's SVD loop body
    does), so the copy loop computes the index's scalar first: the window must compute
    its starts again outside that loop, not reuse the loop's value (LLVM rejected the IR:
    "Instruction does not dominate all uses")."""
    t, u = "x".join(map(str, shape)), "x".join(map(str, ushape))
    text = f"""func.func @main(%x: tensor<{t}xf32>, %u: tensor<{u}xf32>, %i: tensor<i32>)
    -> tensor<{t}xf32> {{
  %z = stablehlo.constant dense<0> : tensor<i32>
  %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
  %fb = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<{t}xf32>
  %x2 = stablehlo.add %x, %fb : tensor<{t}xf32>
  %r = stablehlo.dynamic_update_slice %x2, %u, %i, %z
    : (tensor<{t}xf32>, tensor<{u}xf32>, tensor<i32>, tensor<i32>) -> tensor<{t}xf32>
  return %r : tensor<{t}xf32>
}}"""
    x = RNG.standard_normal(shape).astype(np.float32)
    y = RNG.standard_normal(ushape).astype(np.float32)
    for i in (0, 3, shape[0]):  # the last one is clamped
        run_both(text, [x, y, np.array(i, np.int32)], rtol=0.0)
