"""``rng_bit_generator`` as an op kernel: XLA's ``THREE_FRY`` and ``PHILOX`` bits, the
same as the interpreter's (``oxla.interpreter.rules.rng``, whose doc describes the
counter layouts), computed as 32-bit integer code.

* ``THREE_FRY`` (state ``[key, counter]``): 64-bit outputs encrypt ``counter + i`` for
  element ``i``; narrower outputs encrypt one counter per element of the half shape
  (the first even dimension halved, else the largest, rounded up) and interleave the
  two words along that dimension.
* ``PHILOX``/``DEFAULT`` (states of 2 or 3 words): block ``j`` encrypts the 128-bit
  ``counter + j``; its four words (two 64-bit ones) fill consecutive outputs.

Outputs narrower than 32 bits truncate 32-bit words; float outputs are the words' bits.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
from oxla_codegen_llvm import FusedEmitter, Scalar, linearize, loop_nest, shape_of
from oxla_codegen_llvm.counter_rng import halves, joined, philox4x32, threefry2x32
from oxla_codegen_llvm.elements import from_raw_bits
from oxla_codegen_llvm.fused import store as store_elem
from oxla_codegen_llvm.loops import for_range

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.lowering import OpKernel
from oxla_backend_cpu.opkernels import op_emitter

I32, I64 = ir.IntType(32), ir.IntType(64)


def _c32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _i64(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def _store_word(s: Scalar, out: ir.Value, et, bits: int, idx: ir.Value, w: ir.Value) -> None:
    """Stores random word ``w`` (i32 or i64) as element ``idx`` of ``et`` (``bits`` wide)."""
    if w.type.width != bits:
        w = s.b.trunc(w, ir.IntType(bits))
    store_elem(s, out, et, idx, from_raw_bits(s, et, w))


@op_emitter("stablehlo.rng_bit_generator")
def emit_rng_bit_generator(s: Scalar, k: OpKernel, buffers: dict, outs: list) -> None:
    """Spec ``rng_bit_generator`` (see the module doc).

    Raises:
        NotSupportedError: an unknown algorithm, a state of the wrong length for it, or
            an output element type that is not 8, 16, 32 or 64 bits wide.
    """
    b, op = s.b, k.op
    state_v = op.operands[0]
    n_state = shape_of(state_v)[0]
    st_et = op.results[0].type.element_type
    et = op.results[1].type.element_type
    shape = shape_of(op.results[1])
    n = math.prod(shape)
    bits = et.bitwidth
    a = op.attr("rng_algorithm")
    alg = A.to_python(a) if a is not None else "DEFAULT"
    if bits not in (8, 16, 32, 64):
        raise NotSupportedError(f"'stablehlo.rng_bit_generator' output type {et} is not "
                                "supported (8, 16, 32 or 64 bits)", op.loc)
    f = FusedEmitter(s, buffers)
    state = [f.value_at(state_v, [_i64(i)]) for i in range(n_state)]
    state = [v if v.type == I64 else b.zext(v, I64) for v in state]
    f.reset()
    k0, k1 = halves(b, state[0])
    out = outs[1]
    if alg == "THREE_FRY":
        if n_state != 2:
            raise NotSupportedError(f"THREE_FRY needs a state of 2 words, got {n_state}",
                                    op.loc)
        counter = state[1]
        if bits == 64:
            with for_range(b, n, "tf") as i:
                o0, o1 = threefry2x32(b, *halves(b, b.add(counter, i)), k0, k1)
                _store_word(s, out, et, bits, i, joined(b, o0, o1))
            blocks = n
        elif not shape:
            o0, _ = threefry2x32(b, *halves(b, counter), k0, k1)
            _store_word(s, out, et, bits, _i64(0), o0)
            blocks = 1
        else:
            even = [i for i, d in enumerate(shape) if d % 2 == 0]
            split = even[0] if even else max(range(len(shape)), key=lambda i: shape[i])
            half = list(shape)
            half[split] = (shape[split] + 1) // 2
            blocks = math.prod(half)
            with loop_nest(b, half, "tf") as hidx:
                j = linearize(b, hidx, half)
                o = threefry2x32(b, *halves(b, b.add(counter, j)), k0, k1)
                for w in range(2):
                    pos = b.add(b.mul(hidx[split], _i64(2)), _i64(w))
                    idx = list(hidx)
                    idx[split] = pos
                    with b.if_then(b.icmp_signed("<", pos, _i64(shape[split]))):
                        _store_word(s, out, et, bits, linearize(b, idx, shape), o[w])
        new_state = [state[0], b.add(counter, _i64(blocks))]
    elif alg in ("PHILOX", "DEFAULT"):
        if n_state not in (2, 3):
            raise NotSupportedError(f"PHILOX needs a state of 2 or 3 words, got {n_state}",
                                    op.loc)
        lo0, hi0 = (state[1], state[0]) if n_state == 2 else (state[1], state[2])
        words = n * 2 if bits == 64 else n
        blocks = (words + 3) // 4
        per = 2 if bits == 64 else 4
        with for_range(b, blocks, "ph") as j:
            lo = b.add(lo0, j)
            hi = b.add(hi0, b.zext(b.icmp_unsigned("<", lo, lo0), I64))
            o = philox4x32(b, [*halves(b, lo), *halves(b, hi)], k0, k1)
            ws = [joined(b, o[0], o[1]), joined(b, o[2], o[3])] if bits == 64 else o
            for t in range(per):
                idx = b.add(b.mul(j, _i64(per)), _i64(t))
                with b.if_then(b.icmp_signed("<", idx, _i64(n))):
                    _store_word(s, out, et, bits, idx, ws[t])
        new_lo = b.add(lo0, _i64(blocks))
        new_state = [state[0], new_lo]
        if n_state == 3:
            new_state.append(b.add(hi0, b.zext(b.icmp_unsigned("<", new_lo, lo0), I64)))
    else:
        raise NotSupportedError(f"'stablehlo.rng_bit_generator' algorithm '{alg}' is not "
                                "supported (THREE_FRY, PHILOX, DEFAULT)", op.loc)
    for i, v in enumerate(new_state):
        store_elem(s, outs[0], st_et, _i64(i), from_raw_bits(s, st_et, v))
