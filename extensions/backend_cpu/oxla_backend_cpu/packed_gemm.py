"""GEMM with pre-packed constant weights: oxla's own register-blocked f32 microkernel.

A model's weights are constants of the program, so the part of a GEMM that BLAS redoes
at every call, copying ``B`` into cache-sized panels, can be done once, at compile time.
``C[M,N] = A[M,K] B[K,N]`` with a constant ``B`` (any layout: the dot's dimension
numbers are applied while packing) stores ``B`` as :func:`pack_weights` lays it out:
``ceil(N / NR)`` panels of ``[K, NR]`` floats, zero-padded to whole panels. At run time
the runtime's ``oxla_pgemm_f32(desc, A, Bp, C)`` (compiled once per process, like the
BLAS driver of :mod:`oxla_backend_cpu.gemm_runtime`) runs the Goto/van de Geijn loop
nest (Goto and van de Geijn, "Anatomy of High-Performance Matrix Multiplication", ACM
TOMS 34(3), 2008) over it:

* ``A`` is read in blocks of ``MC`` rows by ``KC`` columns: where it is row-major, in
  place (the microkernel keeps ``MR`` row pointers; measured 3-6% faster than copying,
  as no thread copies it); otherwise copied per thread (a 512 KiB buffer from
  ``malloc``; a small block on the stack if that fails) into row tiles of ``MR`` rows,
  ``k``-major; rows past ``M`` are zeros;
* for each of the thread's panels and each row tile, the microkernel keeps an
  ``MR x NR`` tile of ``C`` in vector registers (``MR * NR / VL`` accumulators, with
  ``VL`` the vector length in f32 lanes), and per ``k`` loads ``NR / VL`` vectors of the
  panel and broadcasts ``MR`` values of ``A`` into fused multiply-adds; the tile is added
  to ``C`` (from the second ``KC`` block on) with lane masks at the edges.

Tile shapes by vector length: 16 lanes (AVX-512, 32 registers): ``MR = 8``, ``NR = 48``
(24 accumulators, 3 panel vectors, 1 broadcast); 8 lanes (AVX2, 16 registers): ``MR =
6``, ``NR = 16`` (12 accumulators). 8 rows divide the usual ``batch x sequence`` row
counts; 14x32 (28 accumulators) lost 9% at 128 rows to its half-empty last tile.

Threads split the panels into contiguous ranges (each thread packs ``A`` once per
range, so ``A`` is copied ``threads`` times in all), and also the rows when there are
fewer than four panels per thread. Measured on a 2-core Zen 4 (AVX-512), best of 20
calls, one thread: GPT-2's 128x768x3072 112 GFLOP/s, 128x3072x768 112, 128x768x2304
113, against OpenBLAS 0.3.x (numpy) 89, 93, 98; at 1024 rows 111 against 101-104. Two
threads: 231 on all of these (numpy 180-207, timed apart: OpenBLAS's spinning threads
slow whatever runs right after it).

Weights computed at run time but loop-invariant (an RNN's weights passed into a
``while``, e.g. ``lax.scan``'s) are packed the same way once per loop, before its first
iteration, by a :class:`PanelPackKernel` (:func:`hoist_invariant_packing`): the body's
GEMMs then read the panels like a constant's.

Rounding: each output element is a sum of ``K`` products accumulated with fused
multiply-adds in ``k`` order per ``KC`` block, as BLAS does (``dot_general``'s
accumulation order is implementation-defined, spec section "dot_general").
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from oxla.ir import Value
from oxla.lowering import Buf, DotKernel, KernelBase, Plan, invariant_kernels
from oxla_backend_cpu.parallel import NUM_THREADS, call_parallel_if, runtime

F32, I1, I32, I64 = ir.FloatType(), ir.IntType(1), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
DRIVER = "oxla_pgemm_f32"
DRIVER_TYPE = ir.FunctionType(VOID, [PTR] * 4)  # desc, A, Bp, C
DESC_FIELDS = ("m", "n", "k", "sa_m", "sa_k", "parallel")
"""The descriptor's i64 words: the GEMM's shape, ``A``'s element strides along ``M``
and ``K`` (``(K, 1)`` row-major, ``(1, M)`` stored ``[K, M]``), and 1 when the work is
worth oxla's parallel-for."""
PACKED_FLOPS_PER_THREAD = 1 << 20
"""Work (flops) per thread from which a packed GEMM is split among threads (it is when
it has at least two threads' worth): the pool's workers poll for the next loop and take
items dynamically, so a split costs microseconds. With BLAS's larger threshold
(:data:`oxla_backend_cpu.blas.FLOPS_PER_THREAD`) every GEMM of a 64-token transformer
(at most 64x1024x256, 34 MFLOP) ran on one thread of two (bench/onnx_vs_ort.py at 2
threads, against that threshold: llama 0.74-0.92x, bert 0.72x, gpt2 0.90x the time).
At ``1 << 22`` the 37-token GEMMs of a ViT (37x256x256, 4.8 MFLOP) still ran on one
thread; on a 2-core Zen 4, kernel time (median of 15 interleaved blocks) at ``1 << 22``
against ``1 << 20``: 37x256x256 53.5 against 28.2 us, 16x256x256 21.1 against 12.2 us,
8x256x1024 40.7 against 22.1 us; ``1 << 18`` gained nothing more."""
KC = 1024  # columns of A (rows of a panel) per block
MC_TILES = 16  # row tiles per block of A: MC = MC_TILES * MR rows
SMALL_KC = 256  # the stack fallback's block (MR x SMALL_KC) when malloc fails
MIN_PANELS_PER_THREAD = 4


def tile_shape(lanes: int) -> tuple[int, int]:
    """``(MR, NR)`` for a target with ``lanes`` f32 lanes per vector register (16 or 8).

    Raises:
        ValueError: other vector lengths (the caller uses BLAS there).
    """
    if lanes == 16:
        return 8, 48
    if lanes == 8:
        return 6, 16
    raise ValueError(f"no packed GEMM tile for {lanes} f32 lanes")


def host_lanes() -> int:
    """f32 lanes of the host's widest vector registers with FMA (16, 8), else 0."""
    from oxla_codegen_llvm.target import CPUTarget

    feats = CPUTarget.host().feature_set()
    if "avx512f" in feats:
        return 16
    if "avx2" in feats and "fma" in feats:
        return 8
    return 0


MIN_ROWS = 16
"""Fewest rows of A from which a GEMM whose B is packed per call (run-time B: batched
GEMMs) takes the microkernel: fewer rows are mostly padding in MR-row tiles."""
MIN_CONST_ROWS = 2
"""Fewest rows of A from which a GEMM with a large constant B (at least
:data:`LARGE_WEIGHT` elements, packed once at compile time) takes the microkernel:
OpenBLAS packs B on every call. One Zen 5 thread, kernel time, BLAS (its AVX-512
kernels) against packed, [m, k] x [k, n]: 2x1024x1024 302 against 68 us, 4x1024x256 78
against 19, 4x128x1024 27 against 8.5 (2x512x512: 9.0 against 16.8, the exception).
A smaller constant B takes it from one full row tile (:func:`const_min_rows`): 4x256x256
2.1 against 4.6, 8x256x256 5.3 against 4.8, 8x64x64 0.35 against 0.47 us. (With
``OPENBLAS_CORETYPE=Haswell``, OpenBLAS's AVX2 kernels, the packed kernel wins at every
size from 2 rows: 8x256x256 17.0 against 4.5 us.) One row stays on BLAS's GEMV."""


def blas_rows() -> int:
    """Rows of A below which a GEMM with a small constant weight stays on BLAS on this
    host: one row tile (:data:`MIN_ROWS` without FMA vectors, where nothing is packed)."""
    lanes = host_lanes()
    return tile_shape(lanes)[0] if lanes else MIN_ROWS


def const_min_rows(k: int, n: int, mr: int) -> int:
    """Fewest rows of A from which ``[m, k] x [k, n]`` with a constant ``B`` is packed:
    :data:`MIN_CONST_ROWS` for a weight of at least :data:`LARGE_WEIGHT` elements, else
    one row tile (``mr``)."""
    return MIN_CONST_ROWS if k * n >= LARGE_WEIGHT else mr


LARGE_WEIGHT = 1 << 17
"""Elements of a constant weight from which it is packed from :data:`MIN_CONST_ROWS`
rows of A; smaller ones below a row tile stay on BLAS, and are transposed at compile
time when read transposed (:func:`~oxla_backend_cpu.widen_dots.fold_transposed_weights`)."""
_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pack_constant_rhs(rbuf, shape: tuple[int, ...], contracting: tuple[int, ...],
                      free: tuple[int, ...], m: int, n: int, k: int):
    """The packed copy of a ``dot_general``'s constant f32 ``rhs`` and its panel width,
    or None when the GEMM ``[m, k] x [k, n]`` should go to BLAS.

    Args:
        rbuf: the rhs's :class:`~oxla.lowering.Buf` (packed only when ``const``).
        shape: the rhs's shape; ``contracting`` and ``free``: its contracting and free
            dimensions (no batching dimensions), in the dot's order.
        m, n, k: the GEMM's sizes.

    Returns:
        ``(Buf, nr)``: a new ``const`` buffer holding :func:`pack_weights` of the rhs
        seen as ``[k, n]``, one per rhs buffer, dimension order and panel width (reused
        by other dots reading it the same way).
    """
    lanes = host_lanes()
    if not lanes or rbuf.kind != "const" or rbuf.data is None:
        return None
    min_rows = const_min_rows(k, n, tile_shape(lanes)[0])
    if rbuf.data.dtype != np.float32 or rbuf.data.size != k * n or m < min_rows or n < 2 \
            or k < 1:  # (a splat's data would be one element: never packed)
        return None
    nr = tile_shape(lanes)[1]
    # one packing per buffer and dimension order: a square weight may be read both ways
    key = (tuple(contracting), tuple(free), nr)
    hits = _PACKED.setdefault(rbuf, {})
    if key not in hits:
        src = np.asarray(rbuf.data)
        w = src.reshape(shape).transpose(contracting + free).reshape(k, n)
        data = pack_weights(w, nr)
        # the source by its memory, not a reference: the executable must not keep it alive
        recipe = {"source_memory": (src.ctypes.data, src.nbytes), "kind": "pack_weights",
                  "shape": list(shape), "contracting": list(contracting),
                  "free": list(free), "k": k, "n": n, "nr": nr}
        hits[key] = (Buf(f"{rbuf.name}.packed", data.nbytes, "const", data=data,
                         recipe=recipe), nr)
    return hits[key]


def _packs(m: int, n: int, k: int, mr: int) -> bool:
    """Whether a ``[m, k] x [k, n]`` f32 GEMM goes to the packed microkernel when its
    weight is packed already (the thresholds :func:`pack_constant_rhs` applies)."""
    return m >= const_min_rows(k, n, mr) and n >= 2 and k >= 1


@dataclass(eq=False)
class PanelPackKernel(KernelBase):
    """Packs a run-time f32 matrix ``src`` (``B`` ``[k, n]``, or stored ``[n, k]`` when
    ``trans``) into :func:`pack_weights`' panels of width ``nr`` in ``out`` (``ceil(n /
    nr) * k * nr`` floats, zero-padded)."""

    name: str
    src: Buf
    out: Buf
    k: int
    n: int
    nr: int
    trans: bool

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        return [self.src]

    def writes(self) -> list[Buf]:
        return [self.out]

    def label(self) -> str:
        return f"{self.name} panel-pack k{self.k} n{self.n} nr{self.nr}" + \
            (" T" if self.trans else "")


def hoist_invariant_packing(body: Plan, invariant: set[int], counter) -> list:
    """The cpu backend's loop-invariant kernels of a ``while`` body (see
    :mod:`oxla.lowering.control`): the generic ones
    (:func:`~oxla.lowering.invariant_kernels`), then one :class:`PanelPackKernel` per
    loop-invariant rhs (and layout) computed at run time of the body's f32 GEMMs that
    the packed microkernel runs (batch 1, :func:`_packs`); those GEMMs become strategy ``packed`` over the
    panels. Nothing on a host without the microkernel."""
    pre = invariant_kernels(body, invariant)
    lanes = host_lanes()
    if not lanes:
        return pre
    mr, nr = tile_shape(lanes)
    ok = set(invariant) | {id(b) for k in pre for b in k.writes()}
    packed: dict[tuple[int, bool], Buf] = {}
    for k in body.kernels:
        # (a constant rhs is packed at compile time where that pays, and a splat's
        # buffer holds one element: neither is packed here)
        if not isinstance(k, DotKernel) or k.strategy not in ("library", "batched") or \
                k.dtype != "f32" or k.batch != 1 or k.rhs.kind == "const" or \
                id(k.rhs) not in ok or not _packs(k.m, k.n, k.k, mr):
            continue
        key = (id(k.rhs), k.trans_rhs)
        if key not in packed:
            size = -(-k.n // nr) * k.k * nr * 4
            buf = Buf(f"%{next(counter)}", size, "temp")
            pre.append(PanelPackKernel(f"{k.name}.pack", k.rhs, buf, k.k, k.n, nr,
                                       k.trans_rhs))
            packed[key] = buf
        k.rhs, k.trans_rhs, k.strategy, k.tile = packed[key], False, "packed", nr
    return pre


def emit_panel_pack(b: ir.IRBuilder, k: PanelPackKernel, src: ir.Value, out: ir.Value) -> None:
    """The loops of :class:`PanelPackKernel` ``k``: ``out[p, kk, c] = B[kk, p * nr + c]``
    where that column exists, else 0 (the column index is clamped for the load)."""
    panels = -(-k.n // k.nr)
    with Loop(b, i64c(0), i64c(panels), name="pp") as p:
        with Loop(b, i64c(0), i64c(k.k), name="pk") as kk:
            row = b.add(b.mul(p, i64c(k.k)), kk)
            with Loop(b, i64c(0), i64c(k.nr), name="pc") as c:
                col = b.add(b.mul(p, i64c(k.nr)), c)
                live = b.icmp_signed("<", col, i64c(k.n))
                at = imin(b, col, i64c(k.n - 1))
                idx = b.add(b.mul(at, i64c(k.k)), kk) if k.trans else \
                    b.add(b.mul(kk, i64c(k.n)), at)
                v = b.load(b.gep(src, [idx], source_etype=F32), typ=F32)
                b.store(b.select(live, v, ir.Constant(F32, 0.0)),
                        b.gep(out, [b.add(b.mul(row, i64c(k.nr)), c)], source_etype=F32))


def rebuild(recipe: dict, source: np.ndarray) -> np.ndarray:
    """The packed constant that ``recipe`` (a :attr:`~oxla.lowering.Buf.recipe`
    without its ``source``, as an artifact manifest records it) makes of ``source``.

    Raises:
        ValueError: an unknown recipe, or a source of another size or dtype.
    """
    if recipe.get("kind") != "pack_weights":
        raise ValueError(f"unknown constant recipe {recipe.get('kind')!r}")
    shape = tuple(int(d) for d in recipe["shape"])
    if source.dtype != np.float32 or source.size != int(np.prod(shape, dtype=np.int64)):
        raise ValueError("the recipe's source has another size or dtype")
    order = tuple(int(d) for d in recipe["contracting"]) + tuple(int(d) for d in recipe["free"])
    w = source.reshape(shape).transpose(order).reshape(int(recipe["k"]), int(recipe["n"]))
    return pack_weights(w, int(recipe["nr"]))


def pack_weights(w: np.ndarray, nr: int) -> np.ndarray:
    """``w`` ``[K, N]`` (f32) as ``ceil(N / nr)`` panels ``[K, nr]``, the last one
    zero-padded: element ``(k, n)`` at ``[n // nr, k, n % nr]``. Returns a new C-contiguous
    f32 array of shape ``[panels, K, nr]``."""
    k, n = w.shape
    panels = -(-n // nr)
    out = np.zeros((panels, k, nr), np.float32)
    full = n // nr
    if full:
        out[:full] = w[:, :full * nr].reshape(k, full, nr).transpose(1, 0, 2)
    if n % nr:
        out[full, :, :n % nr] = w[:, full * nr:]
    return out


def i64c(n: int, ty: ir.IntType = I64) -> ir.Constant:
    return ir.Constant(ty, n)


def imin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def imax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def cdiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.sdiv(b.add(x, b.sub(y, i64c(1))), y)


class Loop:
    """``for i in range(start, stop, step)`` in IR: ``with Loop(...) as i:`` leaves the
    builder after the loop (the body runs at least once only when ``start < stop``)."""

    def __init__(self, b: ir.IRBuilder, start: ir.Value, stop: ir.Value,
                 step: int | ir.Value = 1, name: str = "i") -> None:
        self.b, self.start, self.stop, self.step, self.name = b, start, stop, step, name

    def __enter__(self) -> ir.Value:
        b = self.b
        fn = b.function
        self.pre = b.block
        self.head = fn.append_basic_block(f"{self.name}.head")
        self.body = fn.append_basic_block(f"{self.name}.body")
        self.exit = fn.append_basic_block(f"{self.name}.exit")
        b.branch(self.head)
        b.position_at_end(self.head)
        self.i = b.phi(I64, name=self.name)
        self.i.add_incoming(self.start, self.pre)
        b.cbranch(b.icmp_signed("<", self.i, self.stop), self.body, self.exit)
        b.position_at_end(self.body)
        return self.i

    def __exit__(self, *exc) -> None:
        b = self.b
        from oxla_codegen_llvm.loops import loop_hint

        step = self.step if isinstance(self.step, ir.Value) else i64c(self.step)
        self.i.add_incoming(b.add(self.i, step), b.block)
        # none of these loops is hot enough for unrolled copies to pay for their code
        loop_hint(b, b.branch(self.head), "llvm.loop.unroll.disable", None)
        b.position_at_end(self.exit)


def define_driver(module: ir.Module, lanes: int, mr: int, nr: int,
                  name: str = DRIVER) -> ir.Function:
    """Defines ``void name(ptr desc, ptr A, ptr Bp, ptr C)`` (see the module doc) for
    vectors of ``lanes`` f32 and ``mr x nr`` tiles in ``module`` and returns it."""
    micro = define_micro(module, name, lanes, mr, nr)
    block = define_block(module, name, micro, mr, nr)
    task = _define_task(module, name, block, mr, nr)
    fn = ir.Function(module, DRIVER_TYPE, name)
    for f in (fn, task, block):  # their loops are not the hot path: -Os halves their IR
        f.attributes.add("optsize")
    desc, a, bp, c = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    run_tasks(b, module, read_fields(b, desc), mr, nr, task, [desc, a, bp, c])
    b.ret_void()
    return fn


def run_tasks(b: ir.IRBuilder, module: ir.Module, f: dict[str, ir.Value], mr: int, nr: int,
              task: ir.Function, args: list[ir.Value],
              min_panels: int = MIN_PANELS_PER_THREAD) -> None:
    """Splits a GEMM's ``m x n`` output over the threads and runs ``task(*args, geom,
    start, end)`` over the items, in parallel when there are several: ``gn`` parts of the
    ``ceil(n / nr)`` panels (at least ``min_panels`` each) times ``gm`` parts
    of the ``ceil(m / mr)`` row tiles, ``geom = [gm, gn]`` (or ``gn`` up to one panel
    per thread where that makes the largest item smaller). ``f``: the descriptor's
    fields (``m``, ``n``, ``parallel``). Shared by the f32 and the integer GEMM drivers."""
    runtime(module)  # declares oxla_num_threads and the parallel-for where not defined
    nthreads = module.globals[NUM_THREADS]
    nt = b.select(b.icmp_signed("!=", f["parallel"], i64c(0)), b.load(nthreads, typ=I64), i64c(1))
    nt = imax(b, nt, i64c(1))
    panels = cdiv(b, f["n"], i64c(nr))
    tiles = cdiv(b, f["m"], i64c(mr))
    gn = imax(b, imin(b, nt, b.sdiv(panels, i64c(min_panels))), i64c(1))
    gm = imax(b, imin(b, tiles, b.sdiv(nt, gn)), i64c(1))
    # with few panels, every thread on its own panels may still balance better than
    # uneven row parts (6 panels, 5 row tiles, 2 threads: 3 x 5 tiles each, not 2 x 6
    # and 3 x 6): the split whose largest item has fewer tile-panel products wins
    gn2 = imax(b, imin(b, nt, panels), i64c(1))
    gm2 = imax(b, imin(b, tiles, b.sdiv(nt, gn2)), i64c(1))
    better = b.icmp_signed("<", b.mul(cdiv(b, tiles, gm2), cdiv(b, panels, gn2)),
                          b.mul(cdiv(b, tiles, gm), cdiv(b, panels, gn)))
    gm, gn = b.select(better, gm2, gm), b.select(better, gn2, gn)
    geom = b.alloca(I64, 2, name="geom")
    b.store(gm, geom)
    b.store(gn, b.gep(geom, [i64c(1)], source_etype=I64))
    items = b.mul(gm, gn)
    call_parallel_if(b, module, b.icmp_signed(">", items, i64c(1)), task, args + [geom], items)


def read_fields(b: ir.IRBuilder, desc: ir.Value,
            names: tuple[str, ...] = DESC_FIELDS) -> dict[str, ir.Value]:
    """The descriptor's i64 words at ``b``, by name (``names``: their order)."""
    return {n: b.load(b.gep(desc, [i64c(i)], source_etype=I64), typ=I64)
            for i, n in enumerate(names)}


def _define_task(module: ir.Module, name: str, block: ir.Function, mr: int,
                 nr: int) -> ir.Function:
    """``task(desc, A, Bp, C, geom, start, end)``: work item ``t`` is the rectangle of
    row-tile part ``t / gn`` (of ``gm``) and panel part ``t % gn`` (of ``gn``)."""
    task = ir.Function(module, ir.FunctionType(VOID, [PTR] * 5 + [I64] * 2), f"{name}.task")
    task.linkage = "internal"
    desc, a, bp, c, geom, start, end = task.args
    b = ir.IRBuilder(task.append_basic_block("entry"))
    malloc = module.globals.get("malloc") or ir.Function(
        module, ir.FunctionType(PTR, [I64]), "malloc")
    free = module.globals.get("free") or ir.Function(
        module, ir.FunctionType(VOID, [PTR]), "free")
    small = b.alloca(F32, mr * SMALL_KC, name="apack.small")  # if malloc fails
    small.align = 64
    slot = b.alloca(PTR, name="apack.slot")
    b.store(ir.Constant(PTR, None), slot)
    f = read_fields(b, desc)
    direct = b.icmp_signed("==", f["sa_k"], i64c(1))  # A read in place: no copy buffer
    with b.if_then(b.not_(direct)):
        b.store(b.call(malloc, [i64c(MC_TILES * mr * KC * 4)], name="apack"), slot)
    heap = b.load(slot, typ=PTR)
    failed = b.and_(b.not_(direct), b.icmp_unsigned("==", heap, ir.Constant(PTR, None)))
    buf = b.select(failed, small, heap)
    mc = b.select(failed, i64c(mr), i64c(MC_TILES * mr))
    kcap = b.select(failed, i64c(SMALL_KC), i64c(KC))
    gm = b.load(geom, typ=I64)
    gn = b.load(b.gep(geom, [i64c(1)], source_etype=I64), typ=I64)
    tiles = cdiv(b, f["m"], i64c(mr))
    panels = cdiv(b, f["n"], i64c(nr))
    with Loop(b, start, end, name="item") as t:
        im, jn = b.sdiv(t, gn), b.srem(t, gn)
        t0 = b.sdiv(b.mul(im, tiles), gm)
        t1 = b.sdiv(b.mul(b.add(im, i64c(1)), tiles), gm)
        p0 = b.sdiv(b.mul(jn, panels), gn)
        p1 = b.sdiv(b.mul(b.add(jn, i64c(1)), panels), gn)
        m1 = imin(b, b.mul(t1, i64c(mr)), f["m"])
        b.call(block, [desc, a, bp, c, b.mul(t0, i64c(mr)), m1, p0, p1, buf, mc, kcap])
    b.call(free, [heap])  # free(NULL) is a no-op
    b.ret_void()
    return task


def define_block(module: ir.Module, name: str, micro: ir.Function, mr: int,
                  nr: int) -> ir.Function:
    """``block(desc, A, Bp, C, m0, m1, p0, p1, buf, mc, kc)``: rows ``[m0, m1)`` of
    ``C`` times panels ``[p0, p1)``, ``A`` packed per ``mc x kc`` block into ``buf``
    (``mc`` a multiple of ``mr``)."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * 4 + [I64] * 4 + [PTR, I64, I64]),
                     f"{name}.block")
    fn.linkage = "internal"
    desc, a, bp, c, m0, m1, p0, p1, buf, mc, kcap = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    f = read_fields(b, desc)
    m, n, k, sa_m, sa_k = f["m"], f["n"], f["k"], f["sa_m"], f["sa_k"]
    del m
    direct = b.icmp_signed("==", sa_k, i64c(1))
    rs = b.select(direct, sa_m, i64c(1))  # A's strides as the microkernel reads it
    ks = b.select(direct, i64c(1), i64c(mr))
    with Loop(b, m0, m1, mc, name="ic") as ic:
        rows = imin(b, mc, b.sub(m1, ic))
        ntiles = cdiv(b, rows, i64c(mr))
        with Loop(b, i64c(0), k, kcap, name="kb") as kb:
            kc = imin(b, kcap, b.sub(k, kb))
            # pack A[ic : ic + rows, kb : kb + kc] into tiles [kc, mr] (zeros past rows),
            # unless A is row-major: the microkernel then reads its rows where they are
            stop = b.select(direct, i64c(0), b.mul(ntiles, i64c(mr)))
            with Loop(b, i64c(0), stop, name="pr") as r:
                dst = b.gep(buf, [b.add(b.mul(b.sdiv(r, i64c(mr)), b.mul(kc, i64c(mr))),
                                        b.srem(r, i64c(mr)))], source_etype=F32)
                live = b.icmp_signed("<", r, rows)
                row = b.add(ic, r)
                src = b.gep(a, [b.add(b.mul(row, sa_m), b.mul(kb, sa_k))], source_etype=F32)
                with Loop(b, i64c(0), kc, name="pk") as kk:
                    v = b.select(live, b.load(b.gep(src, [b.mul(kk, sa_k)], source_etype=F32),
                                              typ=F32), ir.Constant(F32, 0.0))
                    b.store(v, b.gep(dst, [b.mul(kk, i64c(mr))], source_etype=F32))
            acc = b.icmp_signed("!=", kb, i64c(0))
            with Loop(b, p0, p1, name="j") as j:
                cols = imin(b, i64c(nr), b.sub(n, b.mul(j, i64c(nr))))
                panel = b.gep(bp, [b.add(b.mul(b.mul(j, k), i64c(nr)), b.mul(kb, i64c(nr)))],
                              source_etype=F32)
                with Loop(b, i64c(0), ntiles, name="t") as t:
                    r0 = b.mul(t, i64c(mr))
                    ap = b.select(direct, b.gep(a, [b.add(b.mul(b.add(ic, r0), sa_m), kb)],
                                                source_etype=F32),
                                  b.gep(buf, [b.mul(r0, kc)], source_etype=F32))
                    cp = b.gep(c, [b.add(b.mul(b.add(ic, r0), n), b.mul(j, i64c(nr)))],
                               source_etype=F32)
                    b.call(micro, [ap, rs, ks, panel, kc, cp, n,
                                   imin(b, i64c(mr), b.sub(rows, r0)), cols, acc])
    b.ret_void()
    return fn


def define_micro(module: ir.Module, name: str, lanes: int, mr: int,
                  nr: int) -> ir.Function:
    """``micro(Ap, rs, ks, Bp, kc, C, ldc, rows, cols, acc)``: the ``mr x nr`` tile
    ``C[:rows, :cols] (+)= A Bp[kc, nr]``, ``A[r, k]`` at ``Ap[r * rs + k * ks]`` (a
    packed tile: ``rs = 1, ks = mr``; rows of a row-major ``A``: ``rs = lda, ks = 1``;
    rows ``>= rows`` read row 0 instead, and are not stored); ``kc >= 1``; ``acc``: add
    to ``C``."""
    from oxla_codegen_llvm.loops import loop_hint

    nv = nr // lanes
    vty = ir.VectorType(F32, lanes)
    mty = ir.VectorType(I1, lanes)
    fma = module.globals.get(f"llvm.fma.v{lanes}f32") or ir.Function(
        module, ir.FunctionType(vty, [vty] * 3), f"llvm.fma.v{lanes}f32")
    mload = module.globals.get(f"llvm.masked.load.v{lanes}f32.p0") or ir.Function(
        module, ir.FunctionType(vty, [PTR, I32, mty, vty]), f"llvm.masked.load.v{lanes}f32.p0")
    mstore = module.globals.get(f"llvm.masked.store.v{lanes}f32.p0") or ir.Function(
        module, ir.FunctionType(VOID, [vty, PTR, I32, mty]),
        f"llvm.masked.store.v{lanes}f32.p0")
    fn = ir.Function(module, ir.FunctionType(
        VOID, [PTR, I64, I64, PTR, I64, PTR, I64, I64, I64, I1]), f"{name}.micro")
    fn.linkage = "internal"
    ap, rs, ks, bp, kc, c, ldc, rows, cols, acc = fn.args
    for p in (ap, bp, c):
        p.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("k")
    b = ir.IRBuilder(entry)
    arow = [b.gep(ap, [b.mul(b.select(b.icmp_signed("<", i64c(r), rows), i64c(r), i64c(0)), rs)],
                  source_etype=F32) for r in range(mr)]
    b.branch(loop)
    b.position_at_end(loop)
    kk = b.phi(I64, name="k")
    kk.add_incoming(i64c(0), entry)
    zero = ir.Constant(vty, [0.0] * lanes)
    accs = [[b.phi(vty) for _ in range(nv)] for _ in range(mr)]
    for row in accs:
        for p in row:
            p.add_incoming(zero, entry)
    bvec = [b.load(b.gep(bp, [b.add(b.mul(kk, i64c(nr)), i64c(v * lanes))], source_etype=F32),
                   typ=vty, align=4) for v in range(nv)]
    splat = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    undef = ir.Constant(vty, ir.Undefined)
    new = []
    for r in range(mr):
        s = b.load(b.gep(arow[r], [b.mul(kk, ks)], source_etype=F32), typ=F32)
        sv = b.shuffle_vector(b.insert_element(undef, s, i64c(0, I32)), undef, splat)
        new.append([b.call(fma, [sv, bvec[v], accs[r][v]]) for v in range(nv)])
    for r in range(mr):
        for v in range(nv):
            accs[r][v].add_incoming(new[r][v], loop)
    k1 = b.add(kk, i64c(1))
    kk.add_incoming(k1, loop)
    store = fn.append_basic_block("store")
    latch = b.cbranch(b.icmp_signed("<", k1, kc), loop, store)
    # unrolling the 24-FMA body gained nothing measurable and tripled the code
    loop_hint(b, latch, "llvm.loop.unroll.disable", None)
    b.position_at_end(store)
    # the tile through a stack copy and a loop over its rows: one masked row store in
    # the code instead of mr (compile time), the copy is noise next to the k loop
    tile = b.alloca(vty, mr * nv, name="tile")
    for r in range(mr):
        for v in range(nv):
            b.store(new[r][v], b.gep(tile, [i64c(r * nv + v)], source_etype=vty))
    lane = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    undef64 = ir.Constant(ir.VectorType(I64, lanes), ir.Undefined)
    masks = []
    for v in range(nv):
        left = b.insert_element(undef64, b.sub(cols, i64c(v * lanes)), i64c(0, I32))
        masks.append(b.icmp_signed("<", lane, b.shuffle_vector(left, undef64, splat)))
    zero_v = ir.Constant(vty, [0.0] * lanes)
    with Loop(b, i64c(0), rows, name="r") as r:
        for v in range(nv):
            p = b.gep(c, [b.add(b.mul(r, ldc), i64c(v * lanes))], source_etype=F32)
            val = b.load(b.gep(tile, [b.add(b.mul(r, i64c(nv)), i64c(v))], source_etype=vty),
                         typ=vty)
            old = b.call(mload, [p, i64c(4, I32), masks[v], zero_v])
            val = b.select(acc, b.fadd(val, old), val)
            b.call(mstore, [val, p, i64c(4, I32), masks[v]])
    b.ret_void()
    return fn
