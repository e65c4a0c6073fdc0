"""Batches of small f32 GEMMs (attention's ``Q K^T`` and ``P V``) on oxla's microkernel.

OpenBLAS runs a 128x128x64 GEMM at about 40 GFLOP/s per core: at that size its call,
packing and edge handling cost as much as the arithmetic. Here each GEMM of a batch
packs its ``B`` (at most :data:`MAX_PANEL_BYTES` once packed) into ``NR``-column panels
(on the thread's stack when small), then runs the loop nest of :mod:`oxla_backend_cpu.packed_gemm`
(its ``block`` function and microkernel, shared in the runtime object) over it. The
batch is split among threads; ``A`` is read in place when row-major, else copied per
small block.

Driver: ``oxla_bgemm_f32(desc, A, B, C)`` with ``desc`` the i64 words
:data:`DESC_FIELDS`; operands contiguous per batch item, ``A[b]`` ``[M, K]`` or ``[K,
M]``, ``B[b]`` ``[K, N]`` or ``[N, K]``, ``C[b]`` ``[M, N]``.

Measured in GPT-2 at batch 1 on a 2-core Zen 4 (``bench/profile_kernels.py``): the 12
GEMMs 128x128x64 of ``Q K^T`` 84 -> 157 GFLOP/s, the 12 of ``P V`` (128x64x128) 89 ->
189; attention's GEMMs 7.0 -> 3.5 ms per call.
"""

from __future__ import annotations

import llvmlite.ir as ir

from oxla_backend_cpu import packed_gemm as pg
from oxla_backend_cpu.packed_gemm import F32, I64, PTR, VOID, Loop, cdiv, i64c
from oxla_backend_cpu.parallel import NUM_THREADS, call_parallel_if, runtime

DRIVER = "oxla_bgemm_f32"
DRIVER_TYPE = ir.FunctionType(VOID, [PTR] * 4)  # desc, A, B, C
DESC_FIELDS = ("batch", "m", "n", "k", "sa_m", "sa_k", "sb_k", "sb_n", "parallel",
               "row_blocks")
"""The descriptor's i64 words: batch and GEMM shape, ``A``'s strides along ``M`` and
``K``, ``B``'s along ``K`` and ``N`` (within one batch item), 1 to use oxla's threads,
and the row blocks each item is split into (work items: ``batch * row_blocks``)."""
BATCHED_FLOPS_PER_THREAD = 1 << 22
"""Work (flops) from which a batch is split among threads: the pool's workers poll for
the next loop, so a split costs microseconds (GPT-2's 12 GEMMs 128x128x64 are 25 MFLOP,
about 0.25 ms on one core)."""
BATCHED_PARALLEL_FLOPS = 1 << 19
"""Work (flops) from which a batched GEMM runs on the pool at all (its items are then
split as :func:`row_blocks` says). A ViT's 37-token attention GEMMs (4 heads of
37x37x64, 0.7 MFLOP) ran on one thread at :data:`BATCHED_FLOPS_PER_THREAD`: 17 us
against 10 us on two threads of a 2-core Zen 4 (kernel time, same process)."""
MAX_PANEL_BYTES = 256 << 10
"""The most bytes one item's packed ``B`` may take: up to :data:`STACK_PANEL_BYTES` on
the thread's stack, more from ``malloc`` once per task. 256 KiB holds a 3x3
convolution's weights with 64 features at 64 input channels (576x64: 163 GFLOP/s here
against 130 in OpenBLAS, 4096 rows, one run)."""
STACK_PANEL_BYTES = 64 << 10


def tile_shape(lanes: int) -> tuple[int, int]:
    """``(MR, NR)`` of the batched microkernel: 12x32 with 16 f32 lanes (AVX-512), 6x16
    with 8 (AVX2). Attention's N (64, 128) fills 32-column panels exactly; the packed
    driver's 48 columns left a third of a 64-column product empty (65 against 88
    GFLOP/s on one core at 128x128x64).

    Raises:
        ValueError: other vector lengths.
    """
    if lanes == 16:
        return 12, 32
    return pg.tile_shape(lanes)


def fits(m: int, n: int, k: int, nr: int) -> bool:
    """True when a batch item's GEMM suits this path: ``B`` packs into
    :data:`MAX_PANEL_BYTES` and ``A`` has enough rows for ``MR``-row tiles."""
    return m >= pg.MIN_ROWS and n >= 2 and k >= 1 and \
        _cdiv_int(n, nr) * nr * k * 4 <= MAX_PANEL_BYTES


NARROW_N = 64
"""Columns up to which an unbatched GEMM with a run-time ``B`` may run here rather than
in BLAS (:func:`narrow`): OpenBLAS's f32 kernels are tuned for wide ``C``. Measured on a
2-core AVX-512 machine, one run interleaved: 16384x288x32 (a 3x3 convolution's im2col
GEMM with 32 output features) 160 GFLOP/s here against 122 in OpenBLAS; 64x256x16, half
a panel wide, 42 against 53."""
MIN_BLOCK_TILES = 4
"""Fewest ``MR``-row tiles per row block (:func:`row_blocks`): each block re-packs ``B``
when it starts another batch item."""
MAX_ROW_BLOCKS = 64


def batched_tile(dtype: str, batch: int, m: int, n: int, k: int) -> int:
    """The panel width when a batch of ``batch`` GEMMs ``[m, k] x [k, n]`` in ``dtype``
    (both operands computed at run time) runs on the batched microkernel, else 0: a
    batch of at least 2, or one :func:`narrow` GEMM."""
    lanes = pg.host_lanes()
    if dtype != "f32" or not lanes:
        return 0
    nr = tile_shape(lanes)[1]
    if batch < 2 and not narrow(n, nr):
        return 0
    return nr if fits(m, n, k, nr) else 0


def narrow(n: int, nr: int) -> bool:
    """True when ``n`` columns are few enough for this path to beat BLAS on one GEMM
    (at most :data:`NARROW_N`) and fill whole ``nr``-column panels to at least 4/5."""
    return n <= NARROW_N and 4 * _cdiv_int(n, nr) * nr <= 5 * n


def row_blocks(batch: int, m: int, n: int, k: int) -> int:
    """Row blocks per batch item for oxla's threads: about one block per
    :data:`BATCHED_FLOPS_PER_THREAD` of work, when the batch alone has fewer items,
    each at least :data:`MIN_BLOCK_TILES` row tiles, at most :data:`MAX_ROW_BLOCKS`."""
    lanes = pg.host_lanes()
    mr = tile_shape(lanes)[0] if lanes else 8
    want = int(2.0 * batch * m * n * k // BATCHED_FLOPS_PER_THREAD)
    if batch >= want:
        return 1
    return max(1, min(-(-want // batch), m // (MIN_BLOCK_TILES * mr), MAX_ROW_BLOCKS))


def _cdiv_int(x: int, y: int) -> int:
    return -(-x // y)


def define_batched_driver(module: ir.Module, lanes: int, mr: int, nr: int,
                          name: str = DRIVER) -> ir.Function:
    """Defines ``void name(ptr desc, ptr A, ptr B, ptr C)`` (see the module doc) in
    ``module``, with its own ``mr x nr`` microkernel (see :func:`tile_shape`)."""
    micro = pg.define_micro(module, name, lanes, mr, nr)
    block = pg.define_block(module, name, micro, mr, nr)
    block.attributes.add("optsize")
    task = _define_task(module, name, block, mr, nr)
    fn = ir.Function(module, DRIVER_TYPE, name)
    fn.attributes.add("optsize")
    desc, a, bm, c = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    f = pg.read_fields(b, desc, DESC_FIELDS)
    runtime(module)
    nt = b.load(module.globals[NUM_THREADS], typ=I64)
    items = b.mul(f["batch"], f["row_blocks"])
    many = b.and_(b.icmp_signed("!=", f["parallel"], i64c(0)),
                  b.and_(b.icmp_signed(">", nt, i64c(1)), b.icmp_signed(">", items, i64c(1))))
    call_parallel_if(b, module, many, task, [desc, a, bm, c], items)
    b.ret_void()
    return fn


def _pack_b(b: ir.IRBuilder, dst: ir.Value, src: ir.Value, n: ir.Value, k: ir.Value,
            sb_k: ir.Value, sb_n: ir.Value, panels: ir.Value, nr: int) -> None:
    """``dst[j, kk, l] = B[kk, j * nr + l]`` for every panel ``j`` (zeros past ``n``):
    row by row when ``B`` is ``[K, N]`` (contiguous runs of ``nr``), column by column
    when it is ``[N, K]`` (a contiguous read per column)."""
    fn = b.function
    rows_blk = fn.append_basic_block("pack.rows")
    cols_blk = fn.append_basic_block("pack.cols")
    out = fn.append_basic_block("pack.done")
    b.cbranch(b.icmp_signed("==", sb_n, i64c(1)), rows_blk, cols_blk)
    zero = ir.Constant(F32, 0.0)
    b.position_at_end(rows_blk)
    with Loop(b, i64c(0), panels, name="pj") as j:
        width = pg.imin(b, i64c(nr), b.sub(n, b.mul(j, i64c(nr))))
        with Loop(b, i64c(0), k, name="pk") as kk:
            row = b.gep(dst, [b.mul(b.add(b.mul(j, k), kk), i64c(nr))], source_etype=F32)
            from_ = b.gep(src, [b.add(b.mul(kk, sb_k), b.mul(j, i64c(nr)))], source_etype=F32)
            with Loop(b, i64c(0), width, name="pl") as lane:
                b.store(b.load(b.gep(from_, [lane], source_etype=F32), typ=F32),
                        b.gep(row, [lane], source_etype=F32))
            with Loop(b, width, i64c(nr), name="pz") as lane:
                b.store(zero, b.gep(row, [lane], source_etype=F32))
    b.branch(out)
    b.position_at_end(cols_blk)
    with Loop(b, i64c(0), b.mul(panels, i64c(nr)), name="qc") as col:
        base = b.gep(dst, [b.add(b.mul(b.sdiv(col, i64c(nr)), b.mul(k, i64c(nr))),
                                 b.srem(col, i64c(nr)))], source_etype=F32)
        live = b.icmp_signed("<", col, n)
        from_ = b.gep(src, [b.mul(b.select(live, col, i64c(0)), sb_n)], source_etype=F32)
        with Loop(b, i64c(0), k, name="qk") as kk:
            v = b.load(b.gep(from_, [b.mul(kk, sb_k)], source_etype=F32), typ=F32)
            b.store(b.select(live, v, zero), b.gep(base, [b.mul(kk, i64c(nr))],
                                                   source_etype=F32))
    b.branch(out)
    b.position_at_end(out)


def _define_task(module: ir.Module, name: str, block: ir.Function, mr: int,
                 nr: int) -> ir.Function:
    """``task(desc, A, B, C, start, end)``: work items ``[start, end)``; item ``t`` is
    row block ``t % row_blocks`` (whole ``mr``-row tiles) of batch item ``t /
    row_blocks``. ``B`` of a batch item is packed into panels on the stack once per
    task, before its first row block (a thread's items are contiguous)."""
    task = ir.Function(module, ir.FunctionType(VOID, [PTR] * 4 + [I64] * 2), f"{name}.task")
    task.linkage = "internal"
    desc, a, bm, c, start, end = task.args
    b = ir.IRBuilder(task.append_basic_block("entry"))
    stack_panels = b.alloca(F32, STACK_PANEL_BYTES // 4, name="bpack")
    stack_panels.align = 64
    a_buf = b.alloca(F32, mr * pg.SMALL_KC, name="apack")  # A not row-major: small blocks
    a_buf.align = 64
    packed = b.alloca(I64, name="packed")  # the batch item whose B is in panel_buf
    b.store(i64c(-1), packed)
    f = pg.read_fields(b, desc, DESC_FIELDS)
    m, n, k, rb = f["m"], f["n"], f["k"], f["row_blocks"]
    inner = b.alloca(I64, len(pg.DESC_FIELDS), name="desc1")  # one item, packed driver's
    for i, v in enumerate((m, n, k, f["sa_m"], f["sa_k"], i64c(0))):
        b.store(v, b.gep(inner, [i64c(i)], source_etype=I64))
    panels = cdiv(b, n, i64c(nr))
    tiles = cdiv(b, m, i64c(mr))
    panel_buf, heap = _panel_buffer(b, module, stack_panels, b.mul(b.mul(panels, k),
                                                                   i64c(nr * 4)))
    # a row-major A is read in place (big blocks); otherwise copied in mr x SMALL_KC ones
    direct = b.icmp_signed("==", f["sa_k"], i64c(1))
    mc = b.select(direct, i64c(pg.MC_TILES * mr), i64c(mr))
    kc = b.select(direct, i64c(pg.KC), i64c(pg.SMALL_KC))
    with Loop(b, start, end, name="item") as t:
        item, part = b.sdiv(t, rb), b.srem(t, rb)
        m0 = b.mul(b.sdiv(b.mul(part, tiles), rb), i64c(mr))
        m1 = pg.imin(b, b.mul(b.sdiv(b.mul(b.add(part, i64c(1)), tiles), rb), i64c(mr)), m)
        a_i = b.gep(a, [b.mul(item, b.mul(m, k))], source_etype=F32)
        b_i = b.gep(bm, [b.mul(item, b.mul(k, n))], source_etype=F32)
        c_i = b.gep(c, [b.mul(item, b.mul(m, n))], source_etype=F32)
        with b.if_then(b.icmp_signed("!=", b.load(packed, typ=I64), item)):
            _pack_b(b, panel_buf, b_i, n, k, f["sb_k"], f["sb_n"], panels, nr)
            b.store(item, packed)
        with b.if_then(b.icmp_signed("<", m0, m1)):
            b.call(block, [inner, a_i, panel_buf, c_i, m0, m1, i64c(0), panels, a_buf, mc,
                           kc])
    b.call(module.globals["free"], [heap])  # free(NULL) is a no-op
    b.ret_void()
    return task


def _panel_buffer(b: ir.IRBuilder, module: ir.Module, stack: ir.Value,
                  nbytes: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(buffer, heap)``: ``stack`` when ``nbytes`` fit in it (``heap`` null), else a
    ``malloc`` block (``heap``, to free); a failed ``malloc`` traps (no wrong answer)."""
    malloc = module.globals.get("malloc") or ir.Function(
        module, ir.FunctionType(PTR, [I64]), "malloc")
    if "free" not in module.globals:
        ir.Function(module, ir.FunctionType(VOID, [PTR]), "free")
    trap = module.globals.get("llvm.trap") or ir.Function(
        module, ir.FunctionType(VOID, []), "llvm.trap")
    slot = b.alloca(PTR, name="bpack.heap")
    b.store(ir.Constant(PTR, None), slot)
    with b.if_then(b.icmp_signed(">", nbytes, i64c(STACK_PANEL_BYTES))):
        got = b.call(malloc, [nbytes])
        with b.if_then(b.icmp_unsigned("==", got, ir.Constant(PTR, None))):
            b.call(trap, [])
        b.store(got, slot)
    heap = b.load(slot, typ=PTR)
    return b.select(b.icmp_unsigned("==", heap, ir.Constant(PTR, None)), stack, heap), heap
