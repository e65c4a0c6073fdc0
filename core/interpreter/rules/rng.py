"""Rules for the random-number ops: ``rng`` and ``rng_bit_generator``.

Spec sections: ``rng``, ``rng_bit_generator``.

``rng_bit_generator`` reproduces XLA's bits exactly (``xla/hlo/builder/lib/prng.cc``
and the ``RngBitGeneratorExpander``), which is what the conformance files expect:

* ``THREE_FRY``: ``state = [key, counter]``; element ``i`` (row-major) of a 64-bit
  output is Threefry-2x32 (20 rounds) of ``counter + i`` split into (low, high)
  32-bit words under ``key`` split the same way; the output state is
  ``[key, counter + n]``. 32-bit outputs compute ``ceil(n/2)`` blocks and
  concatenate the first words then the second words; 8/16-bit outputs truncate
  32-bit ones.
* ``PHILOX`` (and ``DEFAULT``, which XLA's CPU and GPU backends map to Philox):
  Philox-4x32 (10 rounds) with a 128-bit counter: ``state[1:3]`` for 3-word states,
  ``(state[1], state[0])`` for 2-word ones. Block ``j`` encrypts ``counter + j``; the
  words of consecutive blocks interleave. The output state keeps the key and the
  counter advanced by the number of blocks (low word only for 2-word states).

``rng`` is implementation-defined: numpy's ``Generator`` with a fixed seed, so runs
are deterministic.
"""

from __future__ import annotations

import numpy as np

from oxla.errors import InterpreterError
from oxla.interpreter.registry import interpreter_rule
from oxla.interpreter.rules.util import attr, result_dtype

_U32 = np.uint32
_U64 = np.uint64
_ROTATIONS = (13, 15, 26, 6, 17, 29, 16, 24)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def threefry2x32(x0: np.ndarray, x1: np.ndarray, k0: int, k1: int,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds (Salmon et al. 2011), as XLA and JAX compute it."""
    ks = (_U32(k0), _U32(k1), _U32(0x1BD11BDA) ^ _U32(k0) ^ _U32(k1))
    x0 = x0.astype(_U32) + ks[0]
    x1 = x1.astype(_U32) + ks[1]
    for block in range(5):
        rots = _ROTATIONS[:4] if block % 2 == 0 else _ROTATIONS[4:]
        for r in rots:
            x0 = x0 + x1
            x1 = _rotl(x1, r)
            x1 = x0 ^ x1
        x0 = x0 + ks[(block + 1) % 3]
        x1 = x1 + ks[(block + 2) % 3] + _U32(block + 1)
    return x0, x1


_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)


def philox4x32(x: list[np.ndarray], k0: int, k1: int) -> list[np.ndarray]:
    """Philox-4x32 with 10 rounds, as XLA computes it."""
    key = [_U32(k0), _U32(k1)]
    x = [v.astype(_U32) for v in x]
    for _ in range(10):
        p0 = x[0].astype(_U64) * _U64(_PHILOX_M[0])
        p1 = x[2].astype(_U64) * _U64(_PHILOX_M[1])
        hi0, lo0 = (p0 >> _U64(32)).astype(_U32), p0.astype(_U32)
        hi1, lo1 = (p1 >> _U64(32)).astype(_U32), p1.astype(_U32)
        x = [hi1 ^ x[1] ^ key[0], lo1, hi0 ^ x[3] ^ key[1], lo0]
        with np.errstate(over="ignore"):  # uint32 wraps modulo 2^32, as intended
            key = [key[0] + _U32(_PHILOX_W[0]), key[1] + _U32(_PHILOX_W[1])]
    return x


def _split64(v) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=_U64)
    return v.astype(_U32), (v >> _U64(32)).astype(_U32)


def _join64(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


def threefry_bits(key: int, counter: int, shape: tuple[int, ...], bits: int,
                  ) -> tuple[np.ndarray, int]:
    """Random words of ``shape`` (uint64 for ``bits == 64``, else uint32) and the new
    counter, per XLA's ``ThreeFryBitGenerator``.

    32-bit words come in pairs: XLA halves the first even dimension (else the
    largest one, rounded up), encrypts one counter per element of the half shape and
    interleaves the two output words along that dimension.
    """
    k0, k1 = (int(w) for w in _split64(key))
    n = int(np.prod(shape, dtype=np.int64))
    if bits == 64:
        c = np.arange(n, dtype=_U64) + _U64(counter)
        o0, o1 = threefry2x32(*_split64(c), k0, k1)
        return _join64(o0, o1).reshape(shape), (counter + n) % (1 << 64)
    if not shape:
        c = np.array([counter], dtype=_U64)
        o0, _ = threefry2x32(*_split64(c), k0, k1)
        return o0.reshape(()), (counter + 1) % (1 << 64)
    even = [i for i, d in enumerate(shape) if d % 2 == 0]
    split = even[0] if even else int(np.argmax(shape))
    half = list(shape)
    half[split] = (shape[split] + 1) // 2
    blocks = int(np.prod(half, dtype=np.int64))
    c = np.arange(blocks, dtype=_U64) + _U64(counter)
    o0, o1 = threefry2x32(*_split64(c), k0, k1)
    both = np.stack([o0.reshape(half), o1.reshape(half)], axis=split + 1)
    full = list(shape)
    full[split] = half[split] * 2
    out = both.reshape(full)
    out = out[tuple(slice(0, d) for d in shape)]
    return out, (counter + blocks) % (1 << 64)


def philox_bits(key: int, counter: tuple[int, int], n: int, bits: int,
                ) -> tuple[np.ndarray, tuple[int, int]]:
    """``n`` random words and the new 128-bit counter (low, high), per XLA's
    ``PhiloxBitGenerator``."""
    k0, k1 = (int(w) for w in _split64(key))
    words = n * 2 if bits == 64 else n
    blocks = (words + 3) // 4
    lo0, hi0 = counter
    j = np.arange(blocks, dtype=_U64)
    lo = j + _U64(lo0)
    hi = np.where(lo < _U64(lo0), _U64((hi0 + 1) % (1 << 64)), _U64(hi0))
    x = [*_split64(lo), *_split64(hi)]
    o = philox4x32(x, k0, k1)
    if bits == 64:
        w = np.stack([_join64(o[0], o[1]), _join64(o[2], o[3])], axis=1).reshape(-1)[:n]
    else:
        w = np.stack(o, axis=1).reshape(-1)[:n]
    new_lo = (lo0 + blocks) % (1 << 64)
    new_hi = (hi0 + (1 if new_lo < lo0 else 0)) % (1 << 64)
    return w, (new_lo, new_hi)


def _out_bits(dt: np.dtype) -> int:
    return np.dtype(dt).itemsize * 8


def _to_dtype(words: np.ndarray, dt: np.dtype, bits: int, shape) -> np.ndarray:
    """Random words as ``dt`` bit patterns (narrow types truncate 32-bit words)."""
    unsigned = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[bits]
    w = words.astype(unsigned)
    return w.view(dt).reshape(shape) if np.dtype(dt) != w.dtype else w.reshape(shape)


@interpreter_rule("stablehlo.rng_bit_generator")
def rng_bit_generator(ctx, op, args):
    """Spec ``rng_bit_generator`` with XLA's ``THREE_FRY`` and ``PHILOX`` bits."""
    state = [int(v) for v in np.asarray(args[0]).astype(_U64).reshape(-1)]
    alg = attr(op, "rng_algorithm", "DEFAULT")
    shape = tuple(op.results[1].type.shape)
    dt = result_dtype(op, 1)
    bits = _out_bits(dt)
    if bits not in (8, 16, 32, 64):
        raise InterpreterError(f"rng_bit_generator: unsupported output type {dt}", op.loc)
    n = int(np.prod(shape, dtype=np.int64))
    gen_bits = 64 if bits == 64 else 32
    if alg == "THREE_FRY":
        if len(state) != 2:
            raise InterpreterError(
                f"THREE_FRY needs a state of 2 words, got {len(state)}", op.loc)
        words, counter = threefry_bits(state[0], state[1], shape, gen_bits)
        new_state = [state[0], counter]
    elif alg in ("PHILOX", "DEFAULT"):
        if len(state) == 2:
            words, (lo, _) = philox_bits(state[0], (state[1], state[0]), n, gen_bits)
            new_state = [state[0], lo]
        elif len(state) == 3:
            words, (lo, hi) = philox_bits(state[0], (state[1], state[2]), n, gen_bits)
            new_state = [state[0], lo, hi]
        else:
            raise InterpreterError(
                f"PHILOX needs a state of 2 or 3 words, got {len(state)}", op.loc)
    else:
        raise InterpreterError(f"unknown rng_algorithm '{alg}'", op.loc)
    out = _to_dtype(words, dt, bits, shape)
    return [np.array(new_state, dtype=_U64), out]


_SEED = 0x0A1B2C3D


@interpreter_rule("stablehlo.rng")
def rng(ctx, op, args):
    """Spec ``rng``: UNIFORM over ``[a, b)`` or NORMAL(``a``, ``b``), from numpy's
    ``Generator`` seeded with a constant (deterministic; the values are
    implementation-defined)."""
    a, b = np.asarray(args[0]), np.asarray(args[1])
    shape = tuple(int(s) for s in np.asarray(args[2]).reshape(-1))
    dt = result_dtype(op)
    dist = attr(op, "rng_distribution", "UNIFORM")
    g = np.random.default_rng(_SEED)
    if dist == "NORMAL":
        out = g.normal(0.0, 1.0, size=shape) * b.astype(np.float64) + a.astype(np.float64)
        return [out.astype(dt)]
    if dt == np.bool_:
        lo, hi = int(a), int(b)
        return [g.integers(lo, max(hi, lo + 1), size=shape).astype(bool)]
    if np.dtype(dt).kind in "iu" or "int" in np.dtype(dt).name:
        lo, hi = int(a), int(b)
        if hi <= lo:
            return [np.full(shape, lo).astype(dt)]
        return [g.integers(lo, hi, size=shape, dtype=np.int64).astype(dt)]
    lo, hi = float(a), float(b)
    out = (lo + (hi - lo) * g.random(size=shape)).astype(dt)
    # Rounding to a narrow type may land on ``b``; keep the interval half-open.
    with np.errstate(all="ignore"):
        out = np.where(out.astype(np.float64) >= hi, np.asarray(lo).astype(dt), out)
    return [out.astype(dt)]
