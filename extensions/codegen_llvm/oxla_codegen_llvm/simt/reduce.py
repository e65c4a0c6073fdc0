"""GPU kernels of ``reduce`` (any number of operands, any scalar body: sums, max,
variadic argmax), three shapes of work:

* **row** (the reduced dims are the innermost ones, at least 32 elements): one block per
  output element; thread ``t`` folds elements ``t, t + B, ...`` in order, the B partial
  results meet in a shared-memory tree (B a power of two, at most the row length, so
  every thread has an element); the last 32 with warp shuffles where the target has
  them (single 32-bit result), the same tree otherwise (host twin, sm_35). The shuffle
  step needs the 32 lanes in one warp: a target query, ``warp_size() >= 32`` (true on
  NVIDIA's 32 and AMD's 64-lane CDNA and 32-lane RDNA wavefronts; ``shfl.down`` keeps the
  model's width-32 segments on 64-lane wavefronts too);
* **column** (the reduced dims are the outermost ones, at least 64 rows, few columns): a
  32 x 8 block per 32 columns, 8 partial results per column meeting in a tree;
* **serial** (anything else: small reductions, dims in the middle): one thread per
  output element, elements in index order.

The init value is applied once, last: ``out = body(init, total)`` (the spec leaves the
grouping of a reduction unspecified). Element values come from the shared fused emitter,
so elementwise producers fused into the reduce are computed on the fly.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from oxla.ir import Operation
from oxla.lowering import OpKernel, Plan
from oxla_codegen_llvm.fused import FusedEmitter, emit_region, shape_of, store
from oxla_codegen_llvm.loops import delinearize, loop_nest
from oxla_codegen_llvm.scalar import llvm_type
from oxla_codegen_llvm.simt.loop import launch_1d
from oxla_codegen_llvm.simt.model import (
    I64,
    Kernel,
    KernelBuilder,
    Param,
    Region,
    grid_stride,
    strided_loop,
)

MAX_ROW_BLOCK = 256
ROW_MIN = 32
COL_ROWS, COL_MIN, COL_MAX_OUT = 8, 64, 1 << 14


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


def _bytes(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return max(1, ty.width // 8)
    return 8 if ty == ir.DoubleType() else 4


class _Reduce:
    """What the three kernels share: dims, types, params, the body."""

    def __init__(self, k: OpKernel, plan: Plan):
        op: Operation = k.op
        self.k, self.op = k, op
        self.n = len(op.results)
        self.operands, self.inits = op.operands[:self.n], op.operands[self.n:]
        self.in_shape = shape_of(self.operands[0])
        self.out_shape = shape_of(op.results[0])
        dims = set(op.attr("dimensions").values)
        self.red = sorted(dims)
        self.kept = [d for d in range(len(self.in_shape)) if d not in dims]
        self.red_shape = [self.in_shape[d] for d in self.red]
        self.R = math.prod(self.red_shape)
        self.O = math.prod(self.out_shape)
        self.ets = [r.type.element_type for r in op.results]
        self.tys = [llvm_type(et) for et in self.ets]
        self.params = [Param("buf", plan.vbuf[v]) for v in k.inputs] + \
            [Param("buf", b) for b in k.outs]

    def emitter(self, r: Region) -> FusedEmitter:
        return FusedEmitter(r.s, dict(zip(self.k.inputs, r.params[:len(self.k.inputs)])))

    def outs(self, r: Region) -> list[ir.Value]:
        return r.params[len(self.k.inputs):len(self.k.inputs) + self.n]

    def elements(self, f: FusedEmitter, out_idx: list, red_flat: ir.Value) -> list[ir.Value]:
        idx: list = [None] * len(self.in_shape)
        for d, i in zip(self.kept, out_idx):
            idx[d] = i
        for d, i in zip(self.red, delinearize(f.s.b, red_flat, self.red_shape)):
            idx[d] = i
        f.reset()
        return [f.value_at(x, idx) for x in self.operands]

    def body(self, r: Region, acc: list[ir.Value], xs: list[ir.Value]) -> list[ir.Value]:
        return emit_region(r.s, self.op.regions[0], list(acc) + list(xs))

    def finish(self, r: Region, f: FusedEmitter, total: list[ir.Value], flat: ir.Value) -> None:
        f.reset()
        init = [f.value_at(v, []) for v in self.inits]
        res = self.body(r, init, total)
        for out, et, v in zip(self.outs(r), self.ets, res):
            store(r.s, out, et, flat, v)

    def shared_layout(self, count: int) -> tuple[list[int], int]:
        offs, at = [], 0
        for ty in self.tys:
            at = -(-at // 8) * 8
            offs.append(at)
            at += _bytes(ty) * count
        return offs, max(at, 8)


def reduce_kernel(k: OpKernel, plan: Plan) -> list[Kernel]:
    """The GPU kernel of a ``reduce`` (module doc for the three shapes)."""
    red = _Reduce(k, plan)
    nr, rank = len(red.red), len(red.in_shape)
    if red.O == 0:
        kb = KernelBuilder(k.name, red.params, (1, 1, 1), (1, 1, 1))
        return [kb.build()]
    if red.R >= ROW_MIN and red.red == list(range(rank - nr, rank)):
        return [_row(red)]
    if red.R >= COL_MIN and red.red == list(range(nr)) and red.O <= COL_MAX_OUT:
        return [_column(red)]
    return [_serial(red)]


def _serial(red: _Reduce) -> Kernel:
    grid, block = launch_1d(red.O)
    kb = KernelBuilder(red.k.name, red.params, grid, block)
    with kb.region() as r:
        b = r.b
        f = red.emitter(r)
        with grid_stride(r, red.O) as o:
            oidx = delinearize(b, o, red.out_shape)
            f.reset()
            slots = _slots(b, red.tys)
            for s, v in zip(slots, [f.value_at(v, []) for v in red.inits]):
                b.store(v, s)
            with loop_nest(b, [red.R], "r") as (i,):
                xs = red.elements(f, oidx, i)
                cur = [b.load(s, typ=ty) for s, ty in zip(slots, red.tys)]
                for s, v in zip(slots, red.body(r, cur, xs)):
                    b.store(v, s)
            f.reset()
            res = [b.load(s, typ=ty) for s, ty in zip(slots, red.tys)]
            for out, et, v in zip(red.outs(r), red.ets, res):
                store(r.s, out, et, o, v)
    return kb.build()


def _slots(b: ir.IRBuilder, tys: list[ir.Type]) -> list[ir.Value]:
    with b.goto_entry_block():
        return [b.alloca(ty) for ty in tys]


def _fold(r: Region, red: _Reduce, f: FusedEmitter, oidx: list, first: ir.Value,
          stop: int, step: int) -> list[ir.Value]:
    """Thread's partial result: elements ``first, first + step, ... < stop`` in order
    (``first < stop``)."""
    b = r.b
    slots = _slots(b, red.tys)
    for s, v in zip(slots, red.elements(f, oidx, first)):
        b.store(v, s)
    with strided_loop(b, b.add(first, _c(step)), stop, step, "fold") as i:
        xs = red.elements(f, oidx, i)
        cur = [b.load(s, typ=ty) for s, ty in zip(slots, red.tys)]
        for s, v in zip(slots, red.body(r, cur, xs)):
            b.store(v, s)
    return [b.load(s, typ=ty) for s, ty in zip(slots, red.tys)]


def _sh(r: Region, off: int, ty: ir.Type, i: ir.Value) -> ir.Value:
    return r.b.gep(r.shared(off), [i], source_etype=ty)


def _tree_step(r: Region, red: _Reduce, offs: list[int], lane: ir.Value, s: int,
               stride: int = 1, base: ir.Value | None = None, guard: ir.Value | None = None
               ) -> None:
    """``sh[lane] = body(sh[lane], sh[lane + s])`` for ``lane < s`` (slots ``stride``
    apart from ``base``)."""
    b = r.b
    cond = b.icmp_unsigned("<", lane, _c(s))
    if guard is not None:
        cond = b.and_(cond, guard)
    with b.if_then(cond):
        at = lane if stride == 1 else b.mul(lane, _c(stride))
        nb = b.add(lane, _c(s))
        nb = nb if stride == 1 else b.mul(nb, _c(stride))
        if base is not None:
            at, nb = b.add(at, base), b.add(nb, base)
        mine = [b.load(_sh(r, o, ty, at), typ=ty) for o, ty in zip(offs, red.tys)]
        other = [b.load(_sh(r, o, ty, nb), typ=ty) for o, ty in zip(offs, red.tys)]
        for o, ty, v in zip(offs, red.tys, red.body(r, mine, other)):
            b.store(v, _sh(r, o, ty, at))


def _shuffles(r: Region) -> ir.Value:
    """i1: the last 32 partial results may meet by warp shuffles (the target has them
    and a warp holds 32 lanes); both target constants, folded by each lowering."""
    wide = r.b.icmp_unsigned(">=", r.warp_size(), ir.Constant(ir.IntType(32), 32))
    return r.b.and_(r.has_shuffle(), wide)


def _row(red: _Reduce) -> Kernel:
    B = min(MAX_ROW_BLOCK, 1 << (red.R.bit_length() - 1))
    offs, nbytes = red.shared_layout(B)
    kb = KernelBuilder(red.k.name, red.params, (red.O, 1, 1), (B, 1, 1), nbytes)
    shuffle = red.n == 1 and _bytes(red.tys[0]) == 4 and B >= 32
    with kb.region() as r:  # each thread's fold into shared memory
        f = red.emitter(r)
        oidx = delinearize(r.b, r.ctaid(), red.out_shape)
        part = _fold(r, red, f, oidx, r.tid(), red.R, B)
        for o, ty, v in zip(offs, red.tys, part):
            r.b.store(v, _sh(r, o, ty, r.tid()))
    s = B // 2
    while s >= 1:
        if shuffle and s == 16:
            with kb.region() as r:  # the last 32 values in warp 0, by shuffles
                b = r.b
                with b.if_then(b.and_(_shuffles(r), b.icmp_unsigned("<", r.tid(), _c(32)))):
                    ty = red.tys[0]
                    v = b.load(_sh(r, offs[0], ty, r.tid()), typ=ty)
                    for d in (16, 8, 4, 2, 1):
                        v = red.body(r, [v], [r.shfl_down(v, d)])[0]
                    with b.if_then(b.icmp_unsigned("==", r.tid(), _c(0))):
                        b.store(v, _sh(r, offs[0], ty, _c(0)))
        with kb.region() as r:
            guard = r.b.not_(_shuffles(r)) if shuffle and s <= 16 else None
            _tree_step(r, red, offs, r.tid(), s, guard=guard)
        s //= 2
    with kb.region() as r:
        b = r.b
        with b.if_then(b.icmp_unsigned("==", r.tid(), _c(0))):
            total = [b.load(_sh(r, o, ty, _c(0)), typ=ty) for o, ty in zip(offs, red.tys)]
            red.finish(r, red.emitter(r), total, r.ctaid())
    return kb.build()


def _column(red: _Reduce) -> Kernel:
    W, H = 32, COL_ROWS
    offs, nbytes = red.shared_layout(W * H)
    grid = (-(-red.O // W), 1, 1)
    kb = KernelBuilder(red.k.name, red.params, grid, (W, H, 1), nbytes)

    def col(r: Region) -> tuple[ir.Value, ir.Value]:
        c = r.b.add(r.b.mul(r.ctaid(), _c(W)), r.tid("x"))
        return c, r.b.icmp_unsigned("<", c, _c(red.O))

    with kb.region() as r:
        c, ok = col(r)
        with r.b.if_then(ok):
            f = red.emitter(r)
            oidx = delinearize(r.b, c, red.out_shape)
            # row-major [R, O]: element (row i, column c) is flat reduced index i
            part = _fold(r, red, f, oidx, r.tid("y"), red.R, H)
            slot = r.b.add(r.b.mul(r.tid("y"), _c(W)), r.tid("x"))
            for o, ty, v in zip(offs, red.tys, part):
                r.b.store(v, _sh(r, o, ty, slot))
    s = H // 2
    while s >= 1:
        with kb.region() as r:
            _, ok = col(r)
            _tree_step(r, red, offs, r.tid("y"), s, stride=W, base=r.tid("x"), guard=ok)
        s //= 2
    with kb.region() as r:
        b = r.b
        c, ok = col(r)
        with b.if_then(b.and_(ok, b.icmp_unsigned("==", r.tid("y"), _c(0)))):
            total = [b.load(_sh(r, o, ty, r.tid("x")), typ=ty) for o, ty in zip(offs, red.tys)]
            red.finish(r, red.emitter(r), total, c)
    return kb.build()
