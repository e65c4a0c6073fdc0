"""The counter-based generators of XLA's ``rng_bit_generator`` (spec section
``rng_bit_generator``: ``THREE_FRY`` = Threefry-2x32, ``PHILOX`` = Philox-4x32, the
Random123 definitions) as LLVM IR on 32-bit registers, shared by the cpu backend's op
emitter and the SIMT kernel; wrapping integer arithmetic, so both are bit-exact on any
target.
"""

from __future__ import annotations

import llvmlite.ir as ir

I32, I64 = ir.IntType(32), ir.IntType(64)
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def _u32(v: int) -> ir.Constant:
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _c(v: int) -> ir.Constant:
    return ir.Constant(I64, v)


def halves(b: ir.IRBuilder, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(low, high) 32-bit words of an i64."""
    return b.trunc(v, I32), b.trunc(b.lshr(v, _c(32)), I32)


def joined(b: ir.IRBuilder, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """The i64 whose low and high words are ``lo`` and ``hi``."""
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), _c(32)))


def threefry2x32(b: ir.IRBuilder, x0: ir.Value, x1: ir.Value, k0: ir.Value, k1: ir.Value
                 ) -> tuple[ir.Value, ir.Value]:
    """Threefry-2x32 with 20 rounds (5 blocks of 4, a key injection after each)."""
    keys = (k0, k1, b.xor(b.xor(_u32(0x1BD11BDA), k0), k1))
    x0, x1 = b.add(x0, keys[0]), b.add(x1, keys[1])
    for blk in range(5):
        for rot in ROTATIONS[blk % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(x0, b.or_(b.shl(x1, _u32(rot)), b.lshr(x1, _u32(32 - rot))))
        x0 = b.add(x0, keys[(blk + 1) % 3])
        x1 = b.add(b.add(x1, keys[(blk + 2) % 3]), _u32(blk + 1))
    return x0, x1


def philox4x32(b: ir.IRBuilder, x: list[ir.Value], k0: ir.Value, k1: ir.Value
               ) -> list[ir.Value]:
    """Philox-4x32 with 10 rounds (64-bit products for the hi/lo words)."""
    key = [k0, k1]
    for _ in range(10):
        p0 = b.mul(b.zext(x[0], I64), _c(PHILOX_M[0]))
        p1 = b.mul(b.zext(x[2], I64), _c(PHILOX_M[1]))
        (lo0, hi0), (lo1, hi1) = halves(b, p0), halves(b, p1)
        x = [b.xor(b.xor(hi1, x[1]), key[0]), lo1, b.xor(b.xor(hi0, x[3]), key[1]), lo0]
        key = [b.add(key[0], _u32(PHILOX_W[0])), b.add(key[1], _u32(PHILOX_W[1]))]
    return x
