"""Loop kernels that only move data, as calls of one precompiled strided copy.

A :class:`~oxla.lowering.LoopKernel` whose fused ops are all ``slice``, ``transpose``,
``broadcast_in_dim``, ``concatenate`` and ``reshape`` writes every output element from
one element of one input, at an address that is, piece by piece, an affine function of
the output index (:func:`pieces`). Such a kernel is emitted as one call per piece of the
runtime's ``oxla_copy_strided(desc, src, dst, start, end)`` with a constant descriptor
(:data:`DESC_WORDS`): no loop of its own for LLVM's ``-O3`` and code generation. The
interleave of a transposed convolution's phases (:mod:`oxla_backend_cpu.conv_phases`,
a nest of concatenates and reshapes: ~20 ms of -O3 and code generation) and its four
kernel slices (~3 ms each) were most of that program's compile, and their loops also
kept the convolution's control code from the fast code generator
(:func:`oxla_codegen_llvm.jit.control_only`).

A piece is a nest of up to :data:`LOOPS` loops (byte strides on both sides, the first
loop's range given by the call) around one contiguous run of ``run`` bytes, copied in
32-byte vectors, then 4-byte words, then bytes. Only kernels whose every piece has runs
of at least :data:`MIN_RUN` bytes take this path: a transpose moving single elements
keeps its vectorized, tiled loop nest.

The walk (:func:`pieces`) goes from the root to the inputs, keeping each output piece's
coordinates in the current value as affine forms of the piece's loop counters:
``slice``, ``transpose`` and ``broadcast_in_dim`` map them (spec sections of the same
names); ``concatenate`` splits the loop that runs along its dimension at the operands'
boundaries; ``reshape`` re-reads the row-major linear index in the operand's digits,
splitting a loop that crosses digits (``H`` rows as ``Hq`` blocks of ``d``), and gives
up where a digit would carry.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range

from oxla.ir import Value
from oxla.ir import types as T
from oxla_backend_cpu.conv_emit import smax, smin
from oxla_backend_cpu.parallel import register_runtime_extension

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

NAME = "oxla_copy_strided"
TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64])
LOOPS = 4
"""Loops around the contiguous run (the first one's range is the call's)."""
DESC_WORDS = 2 + 3 * LOOPS + 2
"""``[depth, run, count[LOOPS], src_stride[LOOPS], dst_stride[LOOPS], src_base,
dst_base]``: loops used (outermost first), then bytes but the counts."""
FIXED_RUNS = (16, 32, 64, 128, 256)
"""Run lengths (bytes) copied as one vector each."""
MIN_RUN = 32
"""Fewest bytes per contiguous run for a kernel to be copied this way."""
MAX_PIECES = 64
OPS = frozenset({"stablehlo.slice", "stablehlo.transpose", "stablehlo.broadcast_in_dim",
                 "stablehlo.concatenate", "stablehlo.reshape"})


@dataclass
class _Lane:
    """One output piece on its way to an input: loop extents, the output's byte stride
    and base, and the current value's coordinates as ``(const, {loop: coef})``."""

    value: Value
    ext: list[int]
    dst: list[int]
    base: int
    coords: list[tuple[int, dict[int, int]]] = field(default_factory=list)


@dataclass(frozen=True)
class Piece:
    """One ``oxla_copy_strided`` call: ``counts``/strides outermost first, in bytes."""

    src: int  # index in the kernel's inputs
    run: int
    counts: tuple[int, ...]
    src_strides: tuple[int, ...]
    dst_strides: tuple[int, ...]
    src_base: int
    dst_base: int

    def words(self) -> list[int]:
        pad = LOOPS - len(self.counts)  # outer loops of one iteration
        return ([len(self.counts), self.run] + [1] * pad + list(self.counts) + [0] * pad
                + list(self.src_strides) + [0] * pad + list(self.dst_strides)
                + [self.src_base, self.dst_base])


def _itemsize(et) -> int | None:
    if isinstance(et, T.FloatType) and et.name in ("f16", "bf16", "f32", "f64"):
        return {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}[et.name]
    if isinstance(et, T.IntegerType) and et.width in (8, 16, 32, 64):
        return et.width // 8
    return None


def _rowstrides(shape) -> list[int]:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def _split(lane: _Lane, loop: int, inner: int) -> int:
    """Splits ``loop`` into ``(hi, lo)`` with ``lo`` of extent ``inner`` (kept at index
    ``loop``); returns the new ``hi`` loop's index."""
    e = lane.ext[loop]
    hi = len(lane.ext)
    lane.ext[loop] = inner
    lane.ext.append(e // inner)
    lane.dst.append(lane.dst[loop] * inner)
    lane.coords = [(c, {**m, hi: m[loop] * inner} if loop in m else m)
                   for c, m in lane.coords]
    return hi


def _peel(lane: _Lane, loop: int, t0: int) -> _Lane:
    """Cuts ``lane``'s ``loop`` to ``[0, t0)``; returns a lane of the rest."""
    ext = list(lane.ext)
    ext[loop] -= t0
    lane.ext[loop] = t0
    coords = [(c + m.get(loop, 0) * t0, dict(m)) for c, m in lane.coords]
    return _Lane(lane.value, ext, list(lane.dst), lane.base + lane.dst[loop] * t0, coords)


def _reshape(lane: _Lane, shape, peeled: list) -> list | None:
    """The coordinates in an operand of ``shape`` of the current (reshaped) value, or
    None where a digit would carry. May split loops of ``lane`` and cut off their last
    iterations into ``peeled`` lanes (still at the reshaped value)."""
    vs = _rowstrides(lane.value.type.shape)
    c = sum(ci * s for (ci, _), s in zip(lane.coords, vs))
    lin: dict[int, int] = {}
    for (_, m), s in zip(lane.coords, vs):
        for loop, a in m.items():
            lin[loop] = lin.get(loop, 0) + a * s
    xs = _rowstrides(shape)
    digit: dict[int, tuple[int, int]] = {}  # loop -> (x dim, multiple of its stride)
    work = [lp for lp, a in lin.items() if a != 0 and lane.ext[lp] > 1]
    while work:
        lp = work.pop()
        a, e = lin[lp], lane.ext[lp]
        if a < 0:
            return None
        # the digit a step of the loop lands in: the largest stride not above it
        j = min((i for i, s in enumerate(xs) if s <= a and shape[i] > 1), default=None)
        if j is None or a % xs[j]:
            return None
        m, n = a // xs[j], shape[j]
        if m * (e - 1) < n:
            digit[lp] = (j, m)
            continue
        q = n // m
        if n % m or q < 2 or j == 0:
            return None
        if e % q:  # the last e % q iterations as a lane of their own
            peeled.append(_peel(lane, lp, e - e % q))
        hi = _split(lane, lp, q)
        lin[hi] = a * (n // m)
        work += [lp, hi]
    coords = []
    for j, n in enumerate(shape):
        cj = (c // xs[j]) % n
        terms = {lp: m for lp, (jj, m) in digit.items() if jj == j}
        if cj + sum(m * (lane.ext[lp] - 1) for lp, m in terms.items()) >= n:
            return None
        coords.append((cj, terms))
    if sum(cj * s for (cj, _), s in zip(coords, xs)) != c:
        return None  # the constant's digits carry
    return coords


def _step(lane: _Lane) -> list[_Lane] | None:
    """The lanes of ``lane`` one op nearer the inputs, or None."""
    op = lane.value.owner_op
    name = op.name
    x = op.operands[0]
    if name == "stablehlo.slice":
        start = op.attr("start_indices").values
        step = op.attr("strides").values
        lane.coords = [(int(s0) + int(st) * c, {lp: int(st) * a for lp, a in m.items()})
                       for (c, m), s0, st in zip(lane.coords, start, step)]
    elif name == "stablehlo.transpose":
        perm = [int(p) for p in op.attr("permutation").values]
        coords = [None] * len(perm)
        for i, p in enumerate(perm):
            coords[p] = lane.coords[i]
        lane.coords = coords
    elif name == "stablehlo.broadcast_in_dim":
        dims = [int(d) for d in op.attr("broadcast_dimensions").values]
        lane.coords = [lane.coords[d] if n == lane.value.type.shape[d] else (0, {})
                       for n, d in zip(x.type.shape, dims)]
    elif name == "stablehlo.reshape":
        peeled: list[_Lane] = []
        coords = _reshape(lane, x.type.shape, peeled)
        if coords is None:
            return None
        lane.coords = coords
        lane.value = x
        return [lane] + peeled
    elif name == "stablehlo.concatenate":
        axis = int(op.attr("dimension").value)
        c, m = lane.coords[axis]
        terms = [(lp, a) for lp, a in m.items() if a != 0 and lane.ext[lp] > 1]
        out, lo = [], 0
        for part in op.operands:
            n = part.type.shape[axis]
            if not terms:  # one operand holds the whole lane
                if lo <= c < lo + n:
                    coords = [(ci, dict(mi)) for ci, mi in lane.coords]
                    coords[axis] = (c - lo, coords[axis][1])
                    out.append(_Lane(part, list(lane.ext), list(lane.dst), lane.base,
                                     coords))
            elif len(terms) == 1 and terms[0][1] == 1:
                lp = terms[0][0]
                t0, t1 = max(0, lo - c), min(lane.ext[lp], lo + n - c)
                if t0 < t1:
                    ext = list(lane.ext)
                    ext[lp] = t1 - t0
                    coords = [(ci + mi.get(lp, 0) * t0, dict(mi)) for ci, mi in lane.coords]
                    coords[axis] = (coords[axis][0] - lo, coords[axis][1])
                    out.append(_Lane(part, ext, list(lane.dst),
                                     lane.base + lane.dst[lp] * t0, coords))
            else:
                return None
            lo += n
        return out
    else:
        return None
    lane.value = x
    return [lane]


def pieces(root: Value, inputs: list[Value], fused_ops) -> list[Piece] | None:
    """The copies that compute a loop kernel ``out = root`` (module doc), or None when
    it is not a pure data movement with long enough contiguous runs."""
    if not fused_ops or any(op.name not in OPS for op in fused_ops) or root in inputs:
        return None
    et = root.type.element_type
    size = _itemsize(et)
    if size is None or not root.type.is_static or \
            any(v.type.element_type != et for v in inputs):
        return None
    shape = root.type.shape
    if math.prod(shape) == 0:
        return None
    lanes = [_Lane(root, list(shape), [s * size for s in _rowstrides(shape)], 0,
                   [(0, {d: 1}) for d in range(len(shape))])]
    done: list[Piece] = []
    fused = {id(op) for op in fused_ops}
    while lanes:
        lane = lanes.pop()
        if lane.value in inputs:
            p = _piece(lane, inputs.index(lane.value), size)
            if p is None:
                return None
            done.append(p)
            if len(done) > MAX_PIECES:
                return None
            continue
        if lane.value.owner_op is None or id(lane.value.owner_op) not in fused:
            return None
        nxt = _step(lane)
        if nxt is None:
            return None
        lanes += nxt
    return done[::-1]


def _piece(lane: _Lane, src: int, size: int) -> Piece | None:
    xs = _rowstrides(lane.value.type.shape)
    base = sum(c * s for (c, _), s in zip(lane.coords, xs)) * size
    sstr = [0] * len(lane.ext)
    for (_, m), s in zip(lane.coords, xs):
        for lp, a in m.items():
            sstr[lp] += a * s * size
    loops = sorted(((e, s, d) for e, s, d in zip(lane.ext, sstr, lane.dst) if e > 1),
                   key=lambda t: -t[2])
    merged: list[list[int]] = []
    for e, s, d in loops:  # outer first: merge a loop into the one outside it
        if merged and merged[-1][1] == s * e and merged[-1][2] == d * e:
            merged[-1] = [merged[-1][0] * e, s, d]
        else:
            merged.append([e, s, d])
    run = size
    if merged and merged[-1][1] == size and merged[-1][2] == size:
        run = merged.pop()[0] * size
    if run < MIN_RUN or len(merged) > LOOPS:
        return None
    if not merged:
        merged = [[1, 0, 0]]
    return Piece(src, run, *(tuple(t[i] for t in merged) for i in range(3)), base,
                 lane.base)


def define_copy_runtime(module: ir.Module) -> None:
    """Defines ``oxla_copy_strided(desc, src, dst, start, end)``: the copies of
    :data:`DESC_WORDS` descriptor ``desc`` for the first loop's indices ``[start,
    end)``. Unused loops are the outer ones (one iteration each); a run of one of
    :data:`FIXED_RUNS` bytes is one vector copy, any other 32-byte vectors, then 4-byte
    words, then bytes (a generic copy loop per run, inside empty inner loop levels, ran
    the interleave of a transposed convolution's phases at half the speed of its
    emitted loop nest)."""
    fn = ir.Function(module, TYPE, NAME)
    desc, src, dst, start, end = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def c(v):
        return ir.Constant(I64, v)

    def word(i):
        return b.load(b.gep(desc, [c(i)], source_etype=I64), typ=I64)

    depth, run = word(0), word(1)
    cnt = [word(2 + i) for i in range(LOOPS)]
    ss = [word(2 + LOOPS + i) for i in range(LOOPS)]
    ds = [word(2 + 2 * LOOPS + i) for i in range(LOOPS)]
    s0 = b.gep(src, [word(2 + 3 * LOOPS)], source_etype=I8)
    d0 = b.gep(dst, [word(3 + 3 * LOOPS)], source_etype=I8)
    nv = b.udiv(run, c(32))
    nw = b.udiv(b.urem(run, c(32)), c(4))
    tail0 = b.add(b.mul(nv, c(32)), b.mul(nw, c(4)))

    def copy_run(si, di, width):
        if width is not None:  # one vector of ``width`` bytes
            vt = ir.VectorType(I32, width // 4)
            b.store(b.load(si, typ=vt, align=1), di, align=1)
            return
        for n, o0, step, ty in ((nv, c(0), 32, ir.VectorType(I32, 8)),
                                (nw, b.mul(nv, c(32)), 4, I32)):
            with for_range(b, n, f"r{step}") as v:
                o = b.add(o0, b.mul(v, c(step)))
                x = b.load(b.gep(si, [o], source_etype=I8), typ=ty, align=1)
                b.store(x, b.gep(di, [o], source_etype=I8), align=1)
        with for_range(b, run, "r1", tail0) as t:
            b.store(b.load(b.gep(si, [t], source_etype=I8), typ=I8),
                    b.gep(di, [t], source_etype=I8))

    def nest(level, s, d):
        first = b.icmp_signed("==", depth, c(LOOPS - level))  # the call's range
        lo = b.select(first, start, c(0))
        hi = b.select(first, end, cnt[level])
        if level + 1 < LOOPS:
            with for_range(b, hi, f"l{level}", lo) as i:
                nest(level + 1, b.gep(s, [b.mul(i, ss[level])], source_etype=I8),
                     b.gep(d, [b.mul(i, ds[level])], source_etype=I8))
            return
        # the innermost loop once per run length: no branch per run
        done = b.append_basic_block("run.done")
        other = b.append_basic_block("run.other")
        sw = b.switch(run, other)
        for width in (*FIXED_RUNS, None):
            if width is None:
                b.position_at_end(other)
            else:
                blk = b.append_basic_block(f"run.{width}")
                sw.add_case(c(width), blk)
                b.position_at_end(blk)
            with for_range(b, hi, f"l{level}.{width}", lo) as i:
                copy_run(b.gep(s, [b.mul(i, ss[level])], source_etype=I8),
                         b.gep(d, [b.mul(i, ds[level])], source_etype=I8), width)
            b.branch(done)
        b.position_at_end(done)

    nest(0, s0, d0)
    b.ret_void()


def emit_copies(module: ir.Module, b: ir.IRBuilder, name: str, ps: list[Piece],
                ins: list[ir.Value], out: ir.Value, rng: tuple | None) -> None:
    """The body of a copy kernel: one ``oxla_copy_strided`` call per piece with a
    constant descriptor; with ``rng`` (``start, end`` over the pieces' first loops laid
    end to end, :func:`items`), each call gets its part of the range."""
    fn = module.globals.get(NAME) or ir.Function(module, TYPE, NAME)
    c = ir.Constant
    off = 0
    for i, p in enumerate(ps):
        words = p.words()
        ty = ir.ArrayType(I64, len(words))
        g = ir.GlobalVariable(module, ty, f"{name}.copy{i}")
        g.linkage, g.global_constant = "internal", True
        g.initializer = ir.Constant(ty, [c(I64, w) for w in words])
        n = p.counts[0]
        lo, hi = c(I64, 0), c(I64, n)
        if rng is not None:  # [start, end) - off, clipped to [0, n]
            lo, hi = (smin(b, c(I64, n), smax(b, c(I64, 0), b.sub(v, c(I64, off))))
                      for v in rng)
        b.call(fn, [g, ins[p.src], out, lo, hi])
        off += n


def items(ps: list[Piece]) -> tuple[int, int]:
    """(parallel items: the pieces' first loops end to end, bytes per item, about)."""
    n = sum(p.counts[0] for p in ps)
    total = sum(p.run * math.prod(p.counts) for p in ps)
    return n, max(1, total // max(1, n))


register_runtime_extension("cpu-copy", define_copy_runtime, [NAME])
