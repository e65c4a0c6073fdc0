"""GPU kernel of ``rng_bit_generator``: XLA's ``THREE_FRY`` and ``PHILOX`` bits, the same
as the interpreter's (``oxla.interpreter.rules.rng`` describes the counter layouts), one
thread per counter block in a grid-stride loop; global thread 0 also writes the new
state.

* ``THREE_FRY`` (state ``[key, counter]``): a 64-bit output encrypts ``counter + i`` for
  element ``i``; narrower outputs encrypt one counter per element of the half shape (the
  first even dimension halved, else the largest, rounded up) and interleave the two
  words along that dimension.
* ``PHILOX``/``DEFAULT`` (2 or 3 words): block ``j`` encrypts the 128-bit ``counter + j``;
  its four words (two 64-bit ones) fill consecutive outputs.

Outputs narrower than 32 bits truncate the words; float outputs are the words' bits.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.counter_rng import halves, joined, philox4x32, threefry2x32
from oxla_codegen_llvm.elements import from_raw_bits
from oxla_codegen_llvm.fused import FusedEmitter, shape_of, store
from oxla_codegen_llvm.loops import delinearize, linearize
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import I32, I64, Kernel, KernelBuilder, Region, grid_stride
from oxla_codegen_llvm.simt.ops import params_of


def _u32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def rng_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """The ``rng_bit_generator`` kernel (module doc).

    Raises:
        NotSupportedError: an unknown algorithm, a state of the wrong length for it, or
            an output element type that is not 8, 16, 32 or 64 bits wide.
    """
    op = k.op
    state_v = op.operands[0]
    n_state = shape_of(state_v)[0]
    st_et, et = op.results[0].type.element_type, op.results[1].type.element_type
    shape = shape_of(op.results[1])
    n = math.prod(shape)
    bits = et.bitwidth
    a = op.attr("rng_algorithm")
    alg = A.to_python(a) if a is not None else "DEFAULT"
    name = "'stablehlo.rng_bit_generator'"
    if bits not in (8, 16, 32, 64):
        raise NotSupportedError(f"{name} output type {et} has no GPU kernel (8, 16, 32 or "
                                "64 bits)", op.loc)
    if alg == "THREE_FRY" and n_state != 2 or alg in ("PHILOX", "DEFAULT") and \
            n_state not in (2, 3):
        raise NotSupportedError(f"{name}: {alg} with a state of {n_state} words", op.loc)
    if alg not in ("THREE_FRY", "PHILOX", "DEFAULT"):
        raise NotSupportedError(f"{name} algorithm '{alg}' has no GPU kernel (THREE_FRY, "
                                "PHILOX, DEFAULT)", op.loc)
    split, half = 0, list(shape)
    if alg == "THREE_FRY":
        if bits == 64 or not shape:
            blocks = max(n, 1) if bits == 64 else 1
        else:
            even = [i for i, d in enumerate(shape) if d % 2 == 0]
            split = even[0] if even else max(range(len(shape)), key=lambda i: shape[i])
            half[split] = (shape[split] + 1) // 2
            blocks = math.prod(half)
    else:
        words = n * 2 if bits == 64 else n
        blocks = (words + 3) // 4
    grid, block = launch_1d(max(blocks, 1))
    kb = KernelBuilder(k.name, params_of(k, plan), grid, block)

    def word(r: Region, idx: ir.Value, w: ir.Value) -> None:
        if w.type.width != bits:
            w = r.b.trunc(w, ir.IntType(bits))
        store(r.s, r.params[-1], et, idx, from_raw_bits(r.s, et, w))

    with kb.region() as r:
        b = r.b
        f = FusedEmitter(r.s, dict(zip(k.inputs, r.params[:len(k.inputs)])))
        state = [f.value_at(state_v, [_c(i)]) for i in range(n_state)]
        state = [v if v.type == I64 else b.zext(v, I64) for v in state]
        k0, k1 = halves(b, state[0])
        if alg == "THREE_FRY":
            counter = state[1]
            new_state = [state[0], b.add(counter, _c(blocks))]
        else:
            lo0, hi0 = (state[1], state[0]) if n_state == 2 else (state[1], state[2])
            new_lo = b.add(lo0, _c(blocks))
            new_state = [state[0], new_lo]
            if n_state == 3:
                new_state.append(b.add(hi0, b.zext(b.icmp_unsigned("<", new_lo, lo0), I64)))
        with b.if_then(b.icmp_unsigned("==", r.global_id(), _c(0))):
            for i, v in enumerate(new_state):
                store(r.s, r.params[-2], st_et, _c(i), from_raw_bits(r.s, st_et, v))
        if n:
            with grid_stride(r, blocks) as j:
                if alg == "THREE_FRY" and (bits == 64 or not shape):
                    o0, o1 = threefry2x32(b, *halves(b, b.add(counter, j)), k0, k1)
                    word(r, j, joined(b, o0, o1) if bits == 64 else o0)
                elif alg == "THREE_FRY":
                    hidx = delinearize(b, j, half)
                    o = threefry2x32(b, *halves(b, b.add(counter, j)), k0, k1)
                    for w in range(2):
                        pos = b.add(b.mul(hidx[split], _c(2)), _c(w))
                        idx = list(hidx)
                        idx[split] = pos
                        with b.if_then(b.icmp_signed("<", pos, _c(shape[split]))):
                            word(r, linearize(b, idx, shape), o[w])
                else:
                    lo = b.add(lo0, j)
                    hi = b.add(hi0, b.zext(b.icmp_unsigned("<", lo, lo0), I64))
                    o = philox4x32(b, [*halves(b, lo), *halves(b, hi)], k0, k1)
                    ws = [joined(b, o[0], o[1]), joined(b, o[2], o[3])] if bits == 64 else o
                    per = len(ws)
                    for t in range(per):
                        idx = b.add(b.mul(j, _c(per)), _c(t))
                        with b.if_then(b.icmp_signed("<", idx, _c(n))):
                            word(r, idx, ws[t])
    return [kb.build()]
