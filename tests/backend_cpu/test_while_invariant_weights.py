"""Loop-invariant kernels of ``while`` bodies run once, before the loop
(``oxla.lowering.control.invariant_kernels``), and loop-invariant GEMM weights are packed
into the microkernel's panels there (``oxla_backend_cpu.packed_gemm``): an RNN written
with ``lax.scan`` packs its weights once per call, not once per step. Weights that the
body changes (updated in place, swapped between carried values) are not hoisted. Every
case against the interpreter; the plan's ``pre`` kernels show what was hoisted."""

from __future__ import annotations

import numpy as np
import pytest

from oxla.ir import parse_module
from oxla.lowering import ControlKernel, DotKernel, LoopKernel, fuse
from tests.backend_cpu.conftest import run_both

RNG = np.random.default_rng(21)
B, K, H = 16, 32, 64  # rows of the step GEMMs, input width, hidden width


@pytest.fixture(autouse=True)
def _keep_loops(monkeypatch):
    """Constant trip counts stay loops (not unrolled by canonicalize's
    ``while_unroll``), so the while kernel is what runs."""
    from oxla.passes import canon_control

    monkeypatch.setattr(canon_control, "UNROLL_MAX_TRIPS", 0)


def _whiles(text: str) -> list[ControlKernel]:
    """The top-level while kernels of ``text``'s plan on the cpu policy."""
    from oxla_backend_cpu.policy import CPUPolicy

    return [k for k in fuse(parse_module(text, "test.mlir"), CPUPolicy()).kernels
            if isinstance(k, ControlKernel) and k.kind == "while"]


def _packs(ck: ControlKernel) -> list:
    from oxla_backend_cpu.packed_gemm import PanelPackKernel

    return [k for k in (ck.pre.kernels if ck.pre else []) if isinstance(k, PanelPackKernel)]


def _body_dots(ck: ControlKernel) -> list[DotKernel]:
    return [k for k in ck.plans[1].kernels if isinstance(k, DotKernel)]


def _microkernel() -> bool:
    from oxla_backend_cpu.packed_gemm import host_lanes

    return host_lanes() > 0


def _rnn(n: int, trans_u: bool) -> str:
    """``h = tanh(x[i] @ W + h @ U + b)`` for ``n`` steps, stacking every ``h``:
    ``x`` and ``W`` are carried through unchanged (as ``lax.scan`` passes them), ``U``
    (stored ``[H, H]`` transposed when ``trans_u``) and ``b`` are captured from outside;
    ``W2 = 2 W`` is computed in the body from invariants only."""
    uc = 1 if trans_u else 0
    return f"""func.func @main(%x: tensor<{max(n, 1)}x{B}x{K}xf32>, %w: tensor<{K}x{H}xf32>,
    %u: tensor<{H}x{H}xf32>, %b: tensor<{H}xf32>, %h0: tensor<{B}x{H}xf32>)
    -> (tensor<{B}x{H}xf32>, tensor<{max(n, 1)}x{B}x{H}xf32>) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %z = stablehlo.constant dense<0.0> : tensor<{max(n, 1)}x{B}x{H}xf32>
  %r:5 = stablehlo.while(%i = %c0, %h = %h0, %xs = %x, %wt = %w, %ys = %z)
    : tensor<i32>, tensor<{B}x{H}xf32>, tensor<{max(n, 1)}x{B}x{K}xf32>, tensor<{K}x{H}xf32>,
      tensor<{max(n, 1)}x{B}x{H}xf32>
    cond {{
      %n = stablehlo.constant dense<{n}> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %zi = stablehlo.constant dense<0> : tensor<i32>
      %two = stablehlo.constant dense<2.0> : tensor<{K}x{H}xf32>
      %w2 = stablehlo.multiply %wt, %two : tensor<{K}x{H}xf32>
      %s = stablehlo.dynamic_slice %xs, %i, %zi, %zi, sizes = [1, {B}, {K}]
        : (tensor<{max(n, 1)}x{B}x{K}xf32>, tensor<i32>, tensor<i32>, tensor<i32>)
        -> tensor<1x{B}x{K}xf32>
      %xt = stablehlo.reshape %s : (tensor<1x{B}x{K}xf32>) -> tensor<{B}x{K}xf32>
      %a = stablehlo.dot_general %xt, %w2, contracting_dims = [1] x [0]
        : (tensor<{B}x{K}xf32>, tensor<{K}x{H}xf32>) -> tensor<{B}x{H}xf32>
      %c = stablehlo.dot_general %h, %u, contracting_dims = [1] x [{uc}]
        : (tensor<{B}x{H}xf32>, tensor<{H}x{H}xf32>) -> tensor<{B}x{H}xf32>
      %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<{H}xf32>) -> tensor<{B}x{H}xf32>
      %g0 = stablehlo.add %a, %c : tensor<{B}x{H}xf32>
      %g = stablehlo.add %g0, %bb : tensor<{B}x{H}xf32>
      %hn = stablehlo.tanh %g : tensor<{B}x{H}xf32>
      %hr = stablehlo.reshape %hn : (tensor<{B}x{H}xf32>) -> tensor<1x{B}x{H}xf32>
      %ys1 = stablehlo.dynamic_update_slice %ys, %hr, %i, %zi, %zi
        : (tensor<{max(n, 1)}x{B}x{H}xf32>, tensor<1x{B}x{H}xf32>, tensor<i32>, tensor<i32>,
           tensor<i32>) -> tensor<{max(n, 1)}x{B}x{H}xf32>
      stablehlo.return %i1, %hn, %xs, %wt, %ys1 : tensor<i32>, tensor<{B}x{H}xf32>,
        tensor<{max(n, 1)}x{B}x{K}xf32>, tensor<{K}x{H}xf32>, tensor<{max(n, 1)}x{B}x{H}xf32>
    }}
  return %r#1, %r#4 : tensor<{B}x{H}xf32>, tensor<{max(n, 1)}x{B}x{H}xf32>
}}"""


def _rnn_args(n: int) -> list[np.ndarray]:
    return [RNG.standard_normal((max(n, 1), B, K)).astype(np.float32),
            (0.2 * RNG.standard_normal((K, H))).astype(np.float32),
            (0.2 * RNG.standard_normal((H, H))).astype(np.float32),
            RNG.standard_normal(H).astype(np.float32),
            RNG.standard_normal((B, H)).astype(np.float32)]


@pytest.mark.parametrize("trans_u", [False, True], ids=["u", "u-transposed"])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_rnn_weights_packed_once(n, trans_u):
    text = _rnn(n, trans_u)
    (ck,) = _whiles(text)
    # the invariant W2 = 2 W is computed before the loop, whatever the host
    assert any(isinstance(k, LoopKernel) for k in ck.pre.kernels)
    assert not any(isinstance(k, LoopKernel) and k.fused_ops and
                   k.fused_ops[-1].name == "stablehlo.multiply" for k in ck.plans[1].kernels)
    if _microkernel():
        packs = _packs(ck)
        assert len(packs) == 2 and sorted(p.trans for p in packs) == sorted([False, trans_u])
        assert [d.strategy for d in _body_dots(ck)] == ["packed", "packed"]
    run_both(text, _rnn_args(n), rtol=1e-5, atol=1e-5)


def _carried_weight(update: str) -> str:
    """``h = tanh(h @ W)`` for 6 steps where the body also changes the weights: ``W``
    and ``V`` are loop-carried, ``update`` gives their next values ``%wn, %vn``."""
    t = f"tensor<{H}x{H}xf32>"
    return f"""func.func @main(%h0: tensor<{B}x{H}xf32>, %w0: {t}, %v0: {t})
    -> (tensor<{B}x{H}xf32>, {t}) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:4 = stablehlo.while(%i = %c0, %h = %h0, %w = %w0, %v = %v0)
    : tensor<i32>, tensor<{B}x{H}xf32>, {t}, {t}
    cond {{
      %n = stablehlo.constant dense<6> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %d = stablehlo.dot_general %h, %w, contracting_dims = [1] x [0]
        : (tensor<{B}x{H}xf32>, {t}) -> tensor<{B}x{H}xf32>
      %hn = stablehlo.tanh %d : tensor<{B}x{H}xf32>
{update}
      stablehlo.return %i1, %hn, %wn, %vn : tensor<i32>, tensor<{B}x{H}xf32>, {t}, {t}
    }}
  return %r#1, %r#2 : tensor<{B}x{H}xf32>, {t}
}}"""


IN_PLACE = f"""      %k = stablehlo.constant dense<0.9> : tensor<{H}x{H}xf32>
      %wm = stablehlo.multiply %w, %k : tensor<{H}x{H}xf32>
      %wn = stablehlo.add %wm, %v : tensor<{H}x{H}xf32>
      %vn = stablehlo.add %v, %v : tensor<{H}x{H}xf32>"""
SWAPPED = "      %wn = stablehlo.add %v, %v : tensor<64x64xf32>\n" \
    "      %vn = stablehlo.negate %w : tensor<64x64xf32>"
ROTATED = "      %wn = stablehlo.abs %v : tensor<64x64xf32>\n" \
    "      %vn = stablehlo.abs %w : tensor<64x64xf32>"


@pytest.mark.parametrize("update", [IN_PLACE, SWAPPED, ROTATED],
                         ids=["updated-in-place", "swapped", "rotated"])
def test_changing_weight_is_not_hoisted(update):
    (ck,) = _whiles(_carried_weight(update))
    assert ck.pre is None or not ck.pre.kernels
    assert all(d.strategy != "packed" for d in _body_dots(ck))
    args = [RNG.standard_normal((B, H)).astype(np.float32),
            (0.2 * RNG.standard_normal((H, H))).astype(np.float32),
            (0.01 * RNG.standard_normal((H, H))).astype(np.float32)]
    run_both(_carried_weight(update), args, rtol=1e-5, atol=1e-5)


def _nested(outer: int, inner: int, varying: bool) -> str:
    """An outer loop over ``outer`` steps whose body runs an inner loop of ``inner``
    steps, ``h = tanh(h @ W + c)``: ``W`` is captured by the inner loop and carried by
    the outer one, unchanged (invariant in both) or, when ``varying``, halved after
    each inner loop; the inner lhs ``h`` changes every inner step and ``c`` (the
    outer's counter as a float) every outer step."""
    hb, t = f"tensor<{B}x{H}xf32>", f"tensor<{H}x{H}xf32>"
    nxt = "%wh" if varying else "%w"
    return f"""func.func @main(%h0: {hb}, %w0: {t}) -> {hb} {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %h = %h0, %w = %w0) : tensor<i32>, {hb}, {t}
    cond {{
      %n = stablehlo.constant dense<{outer}> : tensor<i32>
      %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    }} do {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %i1 = stablehlo.add %i, %one : tensor<i32>
      %f = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
      %c = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> {hb}
      %z = stablehlo.constant dense<0> : tensor<i32>
      %q:2 = stablehlo.while(%j = %z, %g = %h) : tensor<i32>, {hb}
        cond {{
          %m = stablehlo.constant dense<{inner}> : tensor<i32>
          %pp = stablehlo.compare LT, %j, %m, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
          stablehlo.return %pp : tensor<i1>
        }} do {{
          %o = stablehlo.constant dense<1> : tensor<i32>
          %j1 = stablehlo.add %j, %o : tensor<i32>
          %d = stablehlo.dot_general %g, %w, contracting_dims = [1] x [0]
            : ({hb}, {t}) -> {hb}
          %e = stablehlo.add %d, %c : {hb}
          %gn = stablehlo.tanh %e : {hb}
          stablehlo.return %j1, %gn : tensor<i32>, {hb}
        }}
      %half = stablehlo.constant dense<0.5> : {t}
      %wh = stablehlo.multiply %w, %half : {t}
      stablehlo.return %i1, %q#1, {nxt} : tensor<i32>, {hb}, {t}
    }}
  return %r#1 : {hb}
}}"""


@pytest.mark.parametrize("outer,inner", [(3, 4), (2, 0), (0, 3), (1, 1)])
def test_nested_loops_pack_the_outer_invariant_weight(outer, inner):
    text = _nested(outer, inner, varying=False)
    (ck,) = _whiles(text)
    (inner_ck,) = [k for k in ck.plans[1].kernels if isinstance(k, ControlKernel)]
    if _microkernel():
        # packed once per call, before the outer loop, not once per outer iteration
        assert len(_packs(ck)) == 1 and _packs(inner_ck) == []
        assert [d.strategy for d in _body_dots(inner_ck)] == ["packed"]
        assert _body_dots(inner_ck)[0].rhs is _packs(ck)[0].out
    args = [RNG.standard_normal((B, H)).astype(np.float32),
            (0.2 * RNG.standard_normal((H, H))).astype(np.float32)]
    run_both(text, args, rtol=1e-5, atol=1e-5)


def test_nested_weight_changed_by_the_outer_loop_is_packed_per_inner_loop():
    text = _nested(3, 4, varying=True)
    (ck,) = _whiles(text)
    (inner_ck,) = [k for k in ck.plans[1].kernels if isinstance(k, ControlKernel)]
    assert _packs(ck) == []
    if _microkernel():
        assert len(_packs(inner_ck)) == 1
    args = [RNG.standard_normal((B, H)).astype(np.float32),
            (0.5 * RNG.standard_normal((H, H))).astype(np.float32)]
    run_both(text, args, rtol=1e-5, atol=1e-5)


def test_captured_splat_weight():
    """A splat constant weight captured from outside the loop: what is packed at run
    time is a whole materialized matrix (never a constant's buffer, which for a splat
    holds one element), and the result is right."""
    text = _carried_weight(IN_PLACE).replace(
        "%h = %h0, %w = %w0, %v = %v0)", "%h = %h0, %w = %w0, %v = %v0)").replace(
        "%d = stablehlo.dot_general %h, %w,", "%d = stablehlo.dot_general %h, %cw,").replace(
        "  %c0 = stablehlo.constant dense<0> : tensor<i32>\n",
        "  %c0 = stablehlo.constant dense<0> : tensor<i32>\n"
        f"  %cw = stablehlo.constant dense<0.03> : tensor<{H}x{H}xf32>\n")
    (ck,) = _whiles(text)
    assert all(p.src.kind != "const" and p.src.nbytes == H * H * 4 for p in _packs(ck))
    args = [RNG.standard_normal((B, H)).astype(np.float32),
            (0.2 * RNG.standard_normal((H, H))).astype(np.float32),
            (0.01 * RNG.standard_normal((H, H))).astype(np.float32)]
    run_both(text, args, rtol=1e-5, atol=1e-5)
