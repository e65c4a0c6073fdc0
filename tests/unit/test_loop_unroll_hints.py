"""Loop metadata from ``for_range``: long vector loops and outer loops are not unrolled
(code size and compile time), and interleaving stays LLVM's choice."""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import CPUTarget
from oxla_codegen_llvm.jit import optimize
from oxla_codegen_llvm.loops import NO_UNROLL_TRIP_COUNT, for_range

F32 = ir.FloatType()


def _module(rows, cols: int) -> str:
    """``y[r, c] = x[r, c] + 1`` over ``rows`` (an int or the function's i64 argument)
    and ``cols`` (a constant)."""
    m = ir.Module("t")
    p = ir.PointerType()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [p, p, ir.IntType(64)]), "k")
    x, y, n = fn.args
    x.add_attribute("noalias")
    y.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with for_range(b, n if rows is None else rows, "r") as r, for_range(b, cols, "c") as c:
        i = b.add(b.mul(r, ir.Constant(ir.IntType(64), cols)), c)
        v = b.load(b.gep(x, [i], source_etype=F32), typ=F32)
        b.store(b.fadd(v, ir.Constant(F32, 1.0)), b.gep(y, [i], source_etype=F32))
    b.ret_void()
    return str(m)


def test_long_inner_loop_gets_followup_and_outer_loop_no_unroll():
    text = _module(None, 1024)
    assert "llvm.loop.vectorize.followup_vectorized" in text
    assert '!"llvm.loop.unroll.disable"' in text  # one node: the outer loop's and followup
    opt = str(optimize(text, CPUTarget.host()))
    # One vector loop: neither unrolled (vector.body.1, ...) nor copied by unrolling the
    # dynamic outer loop (a remainder "prol" loop).
    assert opt.count("vector.body:") == 1
    assert "vector.body.1" not in opt and ".prol" not in opt


def test_short_loop_left_to_llvm():
    text = _module(None, NO_UNROLL_TRIP_COUNT // 2)
    assert "followup_vectorized" not in text  # the short inner loop keeps LLVM's choice
