"""f32 ``tanh`` (``q / (q + 2)``, ``q = expm1(2|x|)``) and ``exp`` of
:mod:`oxla_codegen_llvm.vmath`: accuracy on dense sweeps of f32 against float64 numpy,
with and without ``llvm.fma``, and special values; the backend's loop kernels use them
(spec: tanh, exponential)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from tests.backend_cpu.conftest import compile_cpu, ulps

llvm_ir = pytest.importorskip("llvmlite.ir")

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-38,
                    -3e-39, 1e-30, 1e-8, 0.0603, 0.34657, 0.625, 9.0, 9.01, 9.02, 10.0,
                    3e38, -3e38], np.float32)


def _sweep(stride: int) -> np.ndarray:
    """Every ``stride``-th f32 of ``[0, 12]`` (bit patterns), both signs, and SPECIAL."""
    bits = np.arange(0, np.float32(12).view(np.int32), stride, dtype=np.int32)
    x = bits.view(np.float32)
    return np.concatenate([x, -x, SPECIAL])


def _kernel(name: str, fma: bool):
    """``out[i] = name(in[i])`` compiled from vmath's IR alone (``fma`` chosen here, not
    by the host), as a ctypes function ``(in, out, n)``."""
    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import compile_ir
    from oxla_codegen_llvm.vmath import vector_math_function

    ir = llvm_ir
    f32, i64, ptr = ir.FloatType(), ir.IntType(64), ir.PointerType()
    m = ir.Module(f"{name}_sweep")
    m.triple = CPUTarget.host().triple
    math = vector_math_function(m, name, f32, fma)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ptr, ptr, i64]), "sweep")
    src, dst, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    head, body, done = (fn.append_basic_block(s) for s in ("head", "body", "done"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(i64)
    i.add_incoming(ir.Constant(i64, 0), entry)
    b.cbranch(b.icmp_signed("<", i, n), body, done)
    b.position_at_end(body)
    v = b.load(b.gep(src, [i], source_etype=f32), typ=f32)
    b.store(b.call(math, [v]), b.gep(dst, [i], source_etype=f32))
    nxt = b.add(i, ir.Constant(i64, 1))
    i.add_incoming(nxt, body)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    jit = compile_ir(str(m), CPUTarget.host())
    cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)(
        jit.address("sweep"))
    return jit, cfn


def _skip_without_fma(fma: bool) -> None:
    from oxla_codegen_llvm import CPUTarget

    if fma and not CPUTarget.host().has_fma():
        pytest.skip("the host has no fma: llvm.fma would be a libm call per element")


@pytest.mark.parametrize("fma", [True, False])
def test_exp_within_two_ulp_on_a_dense_sweep(fma):
    """``exp`` with and without ``llvm.fma`` (the bits differ, the bound does not): at most
    2 ulp over every 499th f32 of ``[-104, 89]``, subnormal results within 1 ulp,
    overflow to inf, -inf to +0, NaN kept."""
    _skip_without_fma(fma)
    pos = np.arange(0, np.float32(89).view(np.int32), 499, dtype=np.int32).view(np.float32)
    neg = -np.arange(0, np.float32(104).view(np.int32), 499,
                     dtype=np.int32).view(np.float32)
    x = np.concatenate([pos, neg, np.array([88.72283, 88.7229, 89.5, -103.97, -103.98,
                                            -1e-45, np.inf, -np.inf, np.nan], np.float32)])
    got = np.empty_like(x)
    jit, cfn = _kernel("exp", fma)
    cfn(x.ctypes.data, got.ctypes.data, x.size)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
    u = ulps(got, want)
    assert u.max() <= 2, (x[u.argmax()], got[u.argmax()], want[u.argmax()])
    sub = (want < 1.1754944e-38) & (want > 0)
    assert sub.any() and u[sub].max() <= 1
    assert np.isinf(got[-3]) and got[-2] == 0 and not np.signbit(got[-2])  # +-inf
    assert np.isnan(got[-1]) and got[-4] == 1 and np.isinf(got[-7])  # NaN, -1e-45, 89.5


@pytest.mark.parametrize("fma", [True, False])
def test_tanh_within_three_ulp_on_a_dense_sweep(fma):
    """At most 3 ulp over ~1.1 million f32 (every 997th of [0, 12] and the negatives);
    99.9% within 1 ulp; the sign is always the input's and ``|tanh| <= 1``."""
    _skip_without_fma(fma)
    x = _sweep(997)
    got = np.empty_like(x)
    jit, cfn = _kernel("tanh", fma)
    cfn(x.ctypes.data, got.ctypes.data, x.size)
    want = np.tanh(x.astype(np.float64))
    u = ulps(got, want)
    assert u.max() <= 3, (x[u.argmax()], got[u.argmax()], want[u.argmax()])
    assert (u <= 1).mean() > 0.999
    finite = ~np.isnan(x)
    assert np.all(np.signbit(got[finite]) == np.signbit(x[finite]))  # -0 and -1e-45 too
    assert np.all(np.abs(got[finite]) <= 1)
    assert np.isnan(got[~finite]).all()
    np.testing.assert_array_equal(got[np.isinf(x)], np.sign(x[np.isinf(x)]))


@pytest.mark.parametrize("shape", [(1,), (17,), (3, 33), (128, 256)])
def test_tanh_loop_kernel_matches_float64(shape):
    """The backend's loop kernels (vector body, scalar remainder, threads) give the same
    accuracy as the sweep above, on every element of arrays of several shapes."""
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    x.flat[0] = -0.0
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    text = f"""func.func @main(%a: {t}) -> {t} {{
  %0 = stablehlo.tanh %a : {t}
  return %0 : {t}
}}"""
    got = compile_cpu(text, cache=False)(x)[0]
    assert ulps(got, np.tanh(x.astype(np.float64))).max() <= 3
    assert np.signbit(got.flat[0])
