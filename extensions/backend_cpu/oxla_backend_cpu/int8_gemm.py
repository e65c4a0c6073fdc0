"""Integer GEMM: ``dot_general`` of 8-bit integers (``i8``/``ui8``, any mix) with an
``i32`` result as oxla's own microkernel, exact (bit for bit the spec's integer dot,
section "dot_general": products and sums in ``i32`` with wrap-around).

``C[M,N] = A[M,K] B[K,N]``, ``A`` row-major (else copied so by a ``PackKernel``), ``B``
in any layout. ``B`` is packed (at compile time when it is a constant, else per
``KB``-group block of a panel into a stack buffer of the task) as ``ceil(N / NR)``
panels of ``[ceil(K / G), NR, G]`` elements: ``G`` consecutive ``k`` of one column
side by side, so one vector instruction takes ``G`` products per ``i32`` lane.
Instruction kinds (:data:`ISAS`), the first the host has picked at compile time:

* ``amx`` (AMX-INT8 ``tdpb{s,u}{s,u}d``, every signedness): a ``16 x 48`` tile of ``C``
  in three tile registers, 64 values of ``k`` per step; Linux must grant the process
  the tile state first (:func:`amx_permitted`; the driver asks again at run time);
* ``vnni512`` (AVX-512 VNNI ``vpdpbusd``: ``u8 x s8`` sums of 4 products into ``i32``),
  ``G = 4`` bytes; for a signed ``B`` only. A signed ``A`` is read as ``A + 128`` (its
  bytes xor ``0x80``, an unsigned byte) and ``128 * colsum(B)`` is subtracted again,
  a per-column correction packed after the panels (or computed per block);
* ``pmaddwd512`` / ``pmaddwd256`` (AVX-512BW / AVX2 ``vpmaddwd``: ``i16 x i16`` sums
  of 2 products into ``i32``), ``G = 2``: both operands widened to ``i16`` exactly
  (sign- or zero-extended), so every signedness mix; no saturation anywhere
  (``vpmaddubsw``'s ``i16`` sums would saturate).

The ``i32`` sums wrap around as the spec's ``i32`` arithmetic does, so the order of
the additions (and the correction) does not change a bit of the result. Tiles: ``MR x
NR`` = 8 x 48 with 16 lanes (24 accumulators), 6 x 16 with 8 lanes, as the f32 kernel
(:mod:`oxla_backend_cpu.packed_gemm`). Threads split rows and panels as there.
"""

from __future__ import annotations

import functools
import os
import weakref
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from oxla.ir import types as T
from oxla.lowering import Buf, DotKernel, PackKernel, blas_operand, gemm_dims, nbytes
from oxla_backend_cpu.blas import FLOPS_PER_THREAD
from oxla_backend_cpu.packed_gemm import Loop, cdiv, i64c, imin, read_fields, run_tasks

I1, I8, I16, I32, I64 = (ir.IntType(w) for w in (1, 8, 16, 32, 64))
PTR, VOID = ir.PointerType(), ir.VoidType()
DRIVER_TYPE = ir.FunctionType(VOID, [PTR] * 4)  # desc, A, B (packed or raw), C
DESC_FIELDS = ("m", "n", "k", "lda", "a_signed", "packed", "sb_k", "sb_n", "b_signed",
               "parallel")
"""The descriptor's i64 words: the GEMM's shape, ``A``'s row stride (elements), 1 for a
signed ``A``, 1 when ``B`` is packed at compile time (else ``B`` is raw with element
strides ``sb_k``, ``sb_n`` and signedness ``b_signed``), 1 for oxla's parallel-for."""
SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 158, 0x1023, 18  # x86-64 Linux
KB = 256  # k groups per block of a panel (vnni512: 48 KiB of packed B)
MIN_PANELS_PER_THREAD = 2
ISA_ENV = "OXLA_CPU_INT8_GEMM"
"""Environment variable naming the instruction kind to use where the host has several
(``vnni512``, ``pmaddwd512``, ``pmaddwd256``; tests run each path), read at compile
time."""


@dataclass(frozen=True)
class Isa:
    """One instruction kind of the microkernel (module doc)."""

    name: str
    lanes: int  # i32 lanes per vector
    group: int  # k values per i32 lane (G)
    ebytes: int  # bytes per packed element: 1 (bytes) or 2 (i16)
    mr: int
    nr: int
    intrinsic: str
    features: tuple[str, ...]
    signed_rhs_only: bool
    kpad: int = 1  # k groups of a panel padded to a multiple of this (AMX: 16 rows)

    @property
    def driver(self) -> str:
        return f"oxla_igemm_{self.name}"


ISAS = (
    Isa("amx", 16, 4, 1, 16, 48, "llvm.x86.tdp", ("amx-int8", "amx-tile", "avx512f"),
        False, 16),
    Isa("vnni512", 16, 4, 1, 8, 48, "llvm.x86.avx512.vpdpbusd.512",
        ("avx512f", "avx512bw", "avx512vnni"), True),
    Isa("pmaddwd512", 16, 2, 2, 8, 48, "llvm.x86.avx512.pmaddw.d.512",
        ("avx512f", "avx512bw"), False),
    Isa("pmaddwd256", 8, 2, 2, 6, 16, "llvm.x86.avx2.pmadd.wd", ("avx2",), False),
)
BY_NAME = {i.name: i for i in ISAS}


def host_isas() -> list[Isa]:
    """The instruction kinds the host has, fastest first."""
    from oxla_codegen_llvm.target import CPUTarget

    feats = CPUTarget.host().feature_set()
    return [i for i in ISAS if all(f in feats for f in i.features)
            and (i.name != "amx" or amx_permitted())]


@functools.cache
def amx_permitted() -> bool:
    """Asks Linux for this process's AMX tile state (``arch_prctl(ARCH_REQ_XCOMP_PERM,
    XFEATURE_XTILEDATA)``, which a process needs before its first tile instruction);
    True when granted. The driver asks again at run time (a loaded artifact runs in a
    process that never compiled)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


def choose_isa(lhs_signed: bool, rhs_signed: bool) -> Isa | None:
    """The kind for ``A`` and ``B`` of these signednesses on this host (``ISA_ENV``
    restricts the choice), or None where there is none (the dot stays an f32 GEMM)."""
    del lhs_signed
    want = os.environ.get(ISA_ENV, "")
    for isa in host_isas():
        if want and isa.name != want:
            continue
        if isa.signed_rhs_only and not rhs_signed:
            continue
        return isa
    return None


def _int8(et) -> bool:
    return isinstance(et, T.IntegerType) and et.width == 8


def int8_gemm_isa(op) -> Isa | None:
    """The kind that computes dot ``op`` (a ``dot_general``/``dot`` of 8-bit integer
    operands, ``i32`` result, static shapes, no batching dimensions), else None."""
    if op.name not in ("stablehlo.dot_general", "stablehlo.dot"):
        return None
    lhs, rhs = op.operands
    out = op.results[0].type
    lt, rt = lhs.type.element_type, rhs.type.element_type
    if not (_int8(lt) and _int8(rt) and isinstance(out.element_type, T.IntegerType)
            and out.element_type.width == 32 and not out.element_type.unsigned):
        return None
    if not all(v.type.is_static for v in (lhs, rhs, op.results[0])):
        return None
    if op.name == "stablehlo.dot_general":
        d = op.attr("dot_dimension_numbers")
        if tuple(d.get("lhs_batching_dimensions", ())):
            return None
    return choose_isa(lt.is_signed, rt.is_signed)


# --- compile-time packing ------------------------------------------------------------

_PACKED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pack_int8_weights(w: np.ndarray, isa: Isa, a_signed: bool) -> np.ndarray:
    """``w`` ``[K, N]`` (int8 or uint8) in ``isa``'s layout (module doc): panels
    ``[panels, kg, NR, G]`` (``kg``: ``ceil(K/G)`` padded to ``isa.kpad``) of bytes (``vnni512``) or int16, zero-padded, then
    ``panels * NR`` int32 column corrections (``-128 * colsum(w)`` for ``vnni512`` with
    a signed ``A``, else zeros). Returns a new uint8 array of those bytes."""
    k, n = w.shape
    g, nr = isa.group, isa.nr
    kg, panels = -(-k // (g * isa.kpad)) * isa.kpad, -(-n // nr)
    full = np.zeros((kg * g, panels * nr), np.int8 if isa.ebytes == 1 else np.int16)
    full[:k, :n] = w.view(np.int8) if isa.ebytes == 1 else w  # bytes as they are
    packed = np.ascontiguousarray(full.reshape(kg, g, panels, nr).transpose(2, 0, 3, 1))
    corr = np.zeros(panels * nr, np.int64)
    if isa.signed_rhs_only and a_signed:
        corr[:n] = -128 * w.astype(np.int64).sum(axis=0)
    corr = corr.astype(np.uint64).astype(np.uint32).view(np.int32)  # wrap as i32
    return np.concatenate([packed.reshape(-1).view(np.uint8), corr.view(np.uint8)])


def pack_constant_int8_rhs(rbuf, shape, contracting, free, k: int, n: int, isa: Isa,
                           a_signed: bool):
    """The packed copy (:func:`pack_int8_weights`) of a dot's constant 8-bit ``rhs``
    seen as ``[k, n]`` as a new ``const`` :class:`~oxla.lowering.Buf` (one per buffer,
    dimension order and layout), or None when ``rbuf`` is not a constant array."""
    if rbuf.kind != "const" or rbuf.data is None or rbuf.data.size != k * n:
        return None
    key = (tuple(contracting), tuple(free), isa.name, a_signed)
    hits = _PACKED.setdefault(rbuf, {})
    if key not in hits:
        w = np.asarray(rbuf.data).reshape(shape).transpose(tuple(contracting) + tuple(free))
        data = pack_int8_weights(w.reshape(k, n), isa, a_signed)
        hits[key] = Buf(f"{rbuf.name}.i8packed", data.nbytes, "const", data=data)
    return hits[key]


# --- the runtime driver ---------------------------------------------------------------


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, ir.FunctionType(ret, args), name)


def define_driver(module: ir.Module, isa: Isa) -> ir.Function:
    """Defines ``void oxla_igemm_<isa>(ptr desc, ptr A, ptr B, ptr C)`` in ``module``."""
    micro = _define_micro(module, isa)
    pack = _define_pack(module, isa)
    task = _define_task(module, isa, micro, pack)
    fn = ir.Function(module, DRIVER_TYPE, isa.driver)
    for f in (fn, task, pack):
        f.attributes.add("optsize")
    desc, a, bp, c = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    f = read_fields(b, desc, DESC_FIELDS)
    if isa.name == "amx":
        _request_amx(module, b)
    run_tasks(b, module, f, isa.mr, isa.nr, task, [desc, a, bp, c], MIN_PANELS_PER_THREAD)
    b.ret_void()
    return fn


def _request_amx(module: ir.Module, b: ir.IRBuilder) -> None:
    """Once per process: ``syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM,
    XFEATURE_XTILEDATA)`` (see :func:`amx_permitted`)."""
    flag = ir.GlobalVariable(module, I32, "oxla_amx_requested")
    flag.linkage, flag.initializer = "internal", ir.Constant(I32, 0)
    syscall = _declare_var(module, "syscall", I64, [I64])
    with b.if_then(b.icmp_signed("==", b.load(flag, typ=I32), ir.Constant(I32, 0))):
        b.call(syscall, [i64c(SYS_ARCH_PRCTL), i64c(ARCH_REQ_XCOMP_PERM),
                         i64c(XFEATURE_XTILEDATA)])
        b.store(ir.Constant(I32, 1), flag)


def _declare_var(module: ir.Module, name: str, ret, args) -> ir.Function:
    return module.globals.get(name) or ir.Function(
        module, ir.FunctionType(ret, args, var_arg=True), name)


def _define_task(module: ir.Module, isa: Isa, micro: ir.Function,
                 pack: ir.Function) -> ir.Function:
    """``task(desc, A, B, C, geom, start, end)``: item ``t`` is row-tile part ``t / gn``
    times panel part ``t % gn``; per panel and ``KB``-group block of ``k``, the block
    of ``B`` (packed, or packed here into a stack buffer) times every row tile."""
    g, nr, mr, eb = isa.group, isa.nr, isa.mr, isa.ebytes
    task = ir.Function(module, ir.FunctionType(VOID, [PTR] * 5 + [I64] * 2),
                       f"{isa.driver}.task")
    task.linkage = "internal"
    desc, a, bp, c, geom, start, end = task.args
    b = ir.IRBuilder(task.append_basic_block("entry"))
    buf = b.alloca(I8, KB * nr * g * eb + nr * 4, name="bblock")
    buf.align = 64
    bcorr = b.gep(buf, [i64c(KB * nr * g * eb)], source_etype=I8)
    f = read_fields(b, desc, DESC_FIELDS)
    m, n, k = f["m"], f["n"], f["k"]
    packed = b.icmp_signed("!=", f["packed"], i64c(0))
    if isa.name == "amx":  # the tile configuration is per thread
        _load_tile_config(module, b)
    gm = b.load(geom, typ=I64)
    gn = b.load(b.gep(geom, [i64c(1)], source_etype=I64), typ=I64)
    tiles = cdiv(b, m, i64c(mr))
    panels = cdiv(b, n, i64c(nr))
    kg = b.mul(cdiv(b, k, i64c(g * isa.kpad)), i64c(isa.kpad))
    panel_bytes = b.mul(kg, i64c(nr * g * eb))
    with Loop(b, start, end, name="item") as t:
        im, jn = b.sdiv(t, gn), b.srem(t, gn)
        t0 = b.sdiv(b.mul(im, tiles), gm)
        t1 = b.sdiv(b.mul(b.add(im, i64c(1)), tiles), gm)
        p0 = b.sdiv(b.mul(jn, panels), gn)
        p1 = b.sdiv(b.mul(b.add(jn, i64c(1)), panels), gn)
        with Loop(b, p0, p1, name="j") as j:
            cols = imin(b, i64c(nr), b.sub(n, b.mul(j, i64c(nr))))
            pre_corr = b.gep(bp, [b.add(b.mul(panels, panel_bytes), b.mul(j, i64c(nr * 4)))],
                             source_etype=I8)
            with Loop(b, i64c(0), k, KB * g, name="kb") as kb:
                klen = imin(b, i64c(KB * g), b.sub(k, kb))
                pre = b.gep(bp, [b.add(b.mul(j, panel_bytes),
                                       b.mul(b.sdiv(kb, i64c(g)), i64c(nr * g * eb)))],
                            source_etype=I8)
                with b.if_then(b.not_(packed)):
                    b.call(pack, [desc, bp, j, kb, klen, buf, bcorr])
                panel = b.select(packed, pre, buf)
                first = b.icmp_signed("==", kb, i64c(0))
                # the correction: once (the whole K) when packed, per block otherwise
                corr = b.select(packed, pre_corr, bcorr)
                use_corr = b.or_(b.not_(packed), first)
                with Loop(b, t0, t1, name="t") as tt:
                    r0 = b.mul(tt, i64c(mr))
                    ap = b.gep(a, [b.add(b.mul(r0, f["lda"]), kb)], source_etype=I8)
                    cp = b.gep(c, [b.add(b.mul(r0, n), b.mul(j, i64c(nr)))], source_etype=I32)
                    b.call(micro, [ap, f["lda"], f["a_signed"], panel, klen, cp, n,
                                   imin(b, i64c(mr), b.sub(m, r0)), cols,
                                   b.not_(first), corr, use_corr, f["b_signed"]])
    if isa.name == "amx":
        b.call(_declare(module, "llvm.x86.tilerelease", VOID, []), [])
    b.ret_void()
    return task


def _define_pack(module: ir.Module, isa: Isa) -> ir.Function:
    """``pack(desc, B, j, k0, klen, out, corr)``: panel ``j``'s rows ``[k0, k0 + klen)``
    of the raw ``B`` into ``out`` ``[ceil(klen / G), NR, G]`` (zeros past ``K`` and
    ``N``) and its correction into ``corr`` (``NR`` i32, module doc)."""
    g, nr, eb = isa.group, isa.nr, isa.ebytes
    et = I8 if eb == 1 else I16
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64, I64, I64, PTR, PTR]),
                     f"{isa.driver}.pack")
    fn.linkage = "internal"
    desc, src, j, k0, klen, out, corr = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    f = read_fields(b, desc, DESC_FIELDS)
    bsigned = b.icmp_signed("!=", f["b_signed"], i64c(0))
    with Loop(b, i64c(0), i64c(nr), name="z") as z:
        b.store(ir.Constant(I32, 0), b.gep(corr, [z], source_etype=I32))
    ngroups = b.mul(cdiv(b, klen, i64c(g * isa.kpad)), i64c(isa.kpad))
    col0 = b.mul(j, i64c(nr))
    contiguous = b.and_(b.icmp_signed("==", f["sb_n"], i64c(1)),
                        b.icmp_signed("<=", b.add(col0, i64c(nr)), f["n"]))
    with Loop(b, i64c(0), ngroups, name="pg") as gi:
        fast = b.and_(contiguous, b.icmp_signed("<=", b.mul(b.add(gi, i64c(1)), i64c(g)), klen))
        with b.if_else(fast) as (vector, scalar):
            with vector:  # a whole group of rows of a full panel: vector loads, a shuffle
                _pack_group_vector(b, isa, src, f, bsigned, b.add(k0, b.mul(gi, i64c(g))),
                                   col0, b.gep(out, [b.mul(gi, i64c(nr * g))], source_etype=et),
                                   corr)
            with scalar:
                with Loop(b, i64c(0), i64c(nr), name="pc") as cc:
                    col = b.add(col0, cc)
                    live_c = b.icmp_signed("<", col, f["n"])
                    s = ir.Constant(I32, 0)
                    for e in range(g):
                        kk = b.add(b.mul(gi, i64c(g)), i64c(e))
                        live = b.and_(live_c, b.icmp_signed("<", kk, klen))
                        idx = b.select(live, b.add(b.mul(b.add(k0, kk), f["sb_k"]),
                                                   b.mul(col, f["sb_n"])), i64c(0))
                        v = b.select(live, b.load(b.gep(src, [idx], source_etype=I8), typ=I8),
                                     ir.Constant(I8, 0))
                        w = b.select(bsigned, b.sext(v, I32), b.zext(v, I32))
                        s = b.add(s, w)
                        dst = b.gep(out, [b.add(b.mul(b.add(b.mul(gi, i64c(nr)), cc), i64c(g)),
                                                i64c(e))], source_etype=et)
                        b.store(v if eb == 1 else b.trunc(w, I16), dst)
                    p = b.gep(corr, [cc], source_etype=I32)
                    b.store(b.add(b.load(p, typ=I32), s), p)
    if isa.signed_rhs_only:  # vnni: A read as A + 128 when signed
        asigned = b.icmp_signed("!=", f["a_signed"], i64c(0))
        with Loop(b, i64c(0), i64c(nr), name="cs") as cc:
            p = b.gep(corr, [cc], source_etype=I32)
            b.store(b.select(asigned, b.mul(b.load(p, typ=I32), ir.Constant(I32, -128)),
                             ir.Constant(I32, 0)), p)
    else:
        with Loop(b, i64c(0), i64c(nr), name="cs") as cc:
            b.store(ir.Constant(I32, 0), b.gep(corr, [cc], source_etype=I32))
    b.ret_void()
    return fn


MICRO_TYPE = ir.FunctionType(VOID, [PTR, I64, I64, PTR, I64, PTR, I64, I64, I64, I1, PTR, I1,
                                     I64])


def _pack_group_vector(b: ir.IRBuilder, isa: Isa, src: ir.Value, f: dict, bsigned: ir.Value,
                       k: ir.Value, col0: ir.Value, dst: ir.Value, corr: ir.Value) -> None:
    """Rows ``[k, k + G)``, columns ``[col0, col0 + NR)`` of a raw ``B`` with unit column
    stride as one group ``[NR, G]`` at ``dst``, its column sums added to ``corr``."""
    g, nr = isa.group, isa.nr
    bty, wty, sty = (ir.VectorType(t, nr) for t in (I8, I32, I16))
    rows = []
    for e in range(g):
        p = b.gep(src, [b.add(b.mul(b.add(k, i64c(e)), f["sb_k"]), col0)], source_etype=I8)
        rows.append(b.load(p, typ=bty, align=1))
    if isa.signed_rhs_only:
        sums = b.load(corr, typ=wty, align=4)
        for r in rows:
            sums = b.add(sums, b.select(bsigned, b.sext(r, wty), b.zext(r, wty)))
        b.store(sums, corr, align=4)
    if isa.ebytes == 2:
        rows = [b.select(bsigned, b.sext(r, sty), b.zext(r, sty)) for r in rows]
    while len(rows) > 1:  # concatenate, then interleave: element (c, e) = row e, column c
        rows = [b.shuffle_vector(rows[i], rows[i + 1], ir.Constant(
            ir.VectorType(I32, 2 * rows[i].type.count), list(range(2 * rows[i].type.count))))
            for i in range(0, len(rows), 2)]
    mask = [e * nr + c for c in range(nr) for e in range(g)]
    flat = rows[0]
    out = b.shuffle_vector(flat, ir.Constant(flat.type, ir.Undefined),
                           ir.Constant(ir.VectorType(I32, nr * g), mask))
    b.store(out, dst, align=1)


def _define_micro(module: ir.Module, isa: Isa) -> ir.Function:
    """``micro(A, lda, a_signed, Bp, klen, C, ldc, rows, cols, acc, corr, use_corr,
    b_signed)``:
    the ``MR x NR`` tile ``C[:rows, :cols] = (acc ? C : 0) + A[:, :klen] Bp +
    (use_corr ? corr : 0)``; rows past ``rows`` read row 0 and are not stored."""
    from oxla_codegen_llvm.loops import loop_hint

    lanes, g, mr, nr, eb = isa.lanes, isa.group, isa.mr, isa.nr, isa.ebytes
    nv = nr // lanes
    vty = ir.VectorType(I32, lanes)
    wide = isa.signed_rhs_only
    hty = vty if wide else ir.VectorType(I16, 2 * lanes)
    dot = _declare(module, isa.intrinsic, vty, [vty, vty, vty] if wide else [hty, hty])
    mty = ir.VectorType(I1, lanes)
    sfx = f"v{lanes}i32.p0"
    mload = _declare(module, f"llvm.masked.load.{sfx}", vty, [PTR, I32, mty, vty])
    mstore = _declare(module, f"llvm.masked.store.{sfx}", VOID, [vty, PTR, I32, mty])
    if isa.name == "amx":
        return _define_amx_micro(module, isa)
    fn = ir.Function(module, MICRO_TYPE, f"{isa.driver}.micro")
    fn.linkage = "internal"
    ap, lda, a_signed, bp, klen, c, ldc, rows, cols, acc, corr, use_corr, _ = fn.args
    for p in (ap, bp, c):
        p.add_attribute("noalias")
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    asigned = b.icmp_signed("!=", a_signed, i64c(0))
    arow = [b.gep(ap, [b.mul(b.select(b.icmp_signed("<", i64c(r), rows), i64c(r), i64c(0)),
                             lda)], source_etype=I8) for r in range(mr)]
    xor = b.select(asigned, ir.Constant(I32, 0x80808080 - (1 << 32)), ir.Constant(I32, 0))
    splat = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    undef = ir.Constant(vty, ir.Undefined)
    zero = ir.Constant(vty, [0] * lanes)

    def a_word(r: int, kk: ir.Value, tail: ir.Value | None) -> ir.Value:
        """Row ``r``'s ``G`` values at ``k = kk`` as one i32 lane word; ``tail``: how
        many of them exist (None: all), the others zero and never read."""
        if tail is None and wide:  # one unaligned i32 load, xor 0x80 for a signed A
            return b.xor(b.load(b.gep(arow[r], [kk], source_etype=I8), typ=I32, align=1), xor)
        bytes_ = []
        for e in range(g):
            if tail is None:
                p = b.gep(arow[r], [b.add(kk, i64c(e))], source_etype=I8)
                bytes_.append(b.load(p, typ=I8))
            else:
                live = b.icmp_signed("<", i64c(e), tail)
                p = b.gep(arow[r], [b.select(live, b.add(kk, i64c(e)), i64c(0))],
                          source_etype=I8)
                bytes_.append(b.select(live, b.load(p, typ=I8), ir.Constant(I8, 0)))
        if wide:
            word = ir.Constant(I32, 0)
            for e, v in enumerate(bytes_):
                word = b.or_(word, b.shl(b.zext(v, I32), ir.Constant(I32, 8 * e)))
            return b.xor(word, xor)
        lo, hi = ((b.select(asigned, b.sext(v, I16), b.zext(v, I16))) for v in bytes_)
        return b.or_(b.zext(lo, I32), b.shl(b.zext(hi, I32), ir.Constant(I32, 16)))

    def step(kk: ir.Value, gi: ir.Value, accs: list[list[ir.Value]],
             tail: ir.Value | None) -> list[list[ir.Value]]:
        bvec = [b.load(b.gep(bp, [b.add(b.mul(gi, i64c(nr * g * eb)),
                                        i64c(v * lanes * 4))], source_etype=I8),
                       typ=vty, align=1) for v in range(nv)]
        if not wide:
            bvec = [b.bitcast(x, hty) for x in bvec]
        new = []
        for r in range(mr):
            w = a_word(r, kk, tail)
            sv = b.shuffle_vector(b.insert_element(undef, w, i64c(0, I32)), undef, splat)
            if wide:
                new.append([b.call(dot, [accs[r][v], sv, bvec[v]]) for v in range(nv)])
            else:
                sh = b.bitcast(sv, hty)
                new.append([b.add(accs[r][v], b.call(dot, [sh, bvec[v]])) for v in range(nv)])
        return new

    full = b.sdiv(klen, i64c(g))
    tail = b.srem(klen, i64c(g))
    loop = fn.append_basic_block("k")
    after = fn.append_basic_block("k.done")
    b.cbranch(b.icmp_signed(">", full, i64c(0)), loop, after)
    b.position_at_end(loop)
    gi = b.phi(I64, name="g")
    gi.add_incoming(i64c(0), entry)
    accs = [[b.phi(vty) for _ in range(nv)] for _ in range(mr)]
    for row in accs:
        for p in row:
            p.add_incoming(zero, entry)
    new = step(b.mul(gi, i64c(g)), gi, accs, None)
    for r in range(mr):
        for v in range(nv):
            accs[r][v].add_incoming(new[r][v], loop)
    g1 = b.add(gi, i64c(1))
    gi.add_incoming(g1, loop)
    loop_end = b.block
    latch = b.cbranch(b.icmp_signed("<", g1, full), loop, after)
    loop_hint(b, latch, "llvm.loop.unroll.disable", None)
    b.position_at_end(after)
    res = [[b.phi(vty) for _ in range(nv)] for _ in range(mr)]
    for r in range(mr):
        for v in range(nv):
            res[r][v].add_incoming(zero, entry)
            res[r][v].add_incoming(new[r][v], loop_end)
    # the last, partial group of k (klen % G values), its missing A values zero
    has_tail = b.icmp_signed(">", tail, i64c(0))
    tailed = step(b.mul(full, i64c(g)), full, res, tail)
    res = [[b.select(has_tail, tailed[r][v], res[r][v]) for v in range(nv)]
           for r in range(mr)]
    lane = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    undef64 = ir.Constant(ir.VectorType(I64, lanes), ir.Undefined)
    masks, cvec = [], []
    for v in range(nv):
        left = b.insert_element(undef64, b.sub(cols, i64c(v * lanes)), i64c(0, I32))
        masks.append(b.icmp_signed("<", lane, b.shuffle_vector(left, undef64, splat)))
        cv = b.load(b.gep(corr, [i64c(v * lanes)], source_etype=I32), typ=vty, align=4)
        cvec.append(b.select(use_corr, cv, zero))
    tile = b.alloca(vty, mr * nv, name="tile")
    for r in range(mr):
        for v in range(nv):
            b.store(b.add(res[r][v], cvec[v]), b.gep(tile, [i64c(r * nv + v)],
                                                      source_etype=vty))
    with Loop(b, i64c(0), rows, name="r") as r:
        for v in range(nv):
            p = b.gep(c, [b.add(b.mul(r, ldc), i64c(v * lanes))], source_etype=I32)
            val = b.load(b.gep(tile, [b.add(b.mul(r, i64c(nv)), i64c(v))], source_etype=vty),
                         typ=vty)
            old = b.call(mload, [p, i64c(4, I32), masks[v], zero])
            b.call(mstore, [b.select(acc, b.add(val, old), val), p, i64c(4, I32), masks[v]])
    b.ret_void()
    return fn


AMX_C, AMX_A, AMX_B = (0, 1, 2), 4, (5, 6, 7)  # tile registers: C row of 3, A, B
TDP = {(True, True): "tdpbssd", (True, False): "tdpbsud", (False, True): "tdpbusd",
       (False, False): "tdpbuud"}  # (A signed, B signed) -> the tile dot product


def _load_tile_config(module: ir.Module, b: ir.IRBuilder) -> None:
    """``ldtilecfg`` of palette 1 with every tile used 16 rows x 64 bytes."""
    cfg = b.alloca(ir.ArrayType(I8, 64), name="tilecfg")
    cfg.align = 64
    raw = [0] * 64
    raw[0] = 1
    for t in (*AMX_C, AMX_A, *AMX_B):
        raw[16 + 2 * t] = 64  # colsb (u16, little-endian)
        raw[48 + t] = 16  # rows
    b.store(ir.Constant(ir.ArrayType(I8, 64), raw), cfg)
    b.call(_declare(module, "llvm.x86.ldtilecfg", VOID, [PTR]), [cfg])


def _define_amx_micro(module: ir.Module, isa: Isa) -> ir.Function:
    """The AMX micro (same signature as :func:`_define_micro`, ``corr`` unused: the tile
    dot products take each signedness): a ``16 x 48`` tile of ``C`` in three tile
    registers; per 64 values of ``k``, 16 rows of ``A`` (in place, or a zero-padded
    stack copy at the edges) times three ``16 x 64``-byte tiles of the panel."""
    nr, g = isa.nr, isa.group
    fn = ir.Function(module, MICRO_TYPE, f"{isa.driver}.micro")
    fn.linkage = "internal"
    ap, lda, a_signed, bp, klen, c, ldc, rows, cols, acc, _, _, b_signed = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tz = _declare(module, "llvm.x86.tilezero", VOID, [I8])
    tload = _declare(module, "llvm.x86.tileloadd64", VOID, [I8, PTR, I64])
    tstore = _declare(module, "llvm.x86.tilestored64", VOID, [I8, PTR, I64])
    for t in AMX_C:
        b.call(tz, [ir.Constant(I8, t)])
    abuf = b.alloca(I8, 16 * 64, name="aedge")
    abuf.align = 64
    sa = b.icmp_signed("!=", a_signed, i64c(0))
    sb = b.icmp_signed("!=", b_signed, i64c(0))
    steps = cdiv(b, klen, i64c(64))
    with Loop(b, i64c(0), steps, name="ks") as st:
        k0 = b.mul(st, i64c(64))
        inplace = b.and_(b.icmp_signed("==", rows, i64c(16)),
                         b.icmp_signed("<=", b.add(k0, i64c(64)), klen))
        with b.if_then(b.not_(inplace)):
            with Loop(b, i64c(0), i64c(16 * 64), name="ae") as e:
                r, kk = b.sdiv(e, i64c(64)), b.add(k0, b.srem(e, i64c(64)))
                live = b.and_(b.icmp_signed("<", r, rows), b.icmp_signed("<", kk, klen))
                idx = b.select(live, b.add(b.mul(r, lda), kk), i64c(0))
                v = b.load(b.gep(ap, [idx], source_etype=I8), typ=I8)
                b.store(b.select(live, v, ir.Constant(I8, 0)),
                        b.gep(abuf, [e], source_etype=I8))
        src = b.select(inplace, b.gep(ap, [k0], source_etype=I8), abuf)
        b.call(tload, [ir.Constant(I8, AMX_A), src, b.select(inplace, lda, i64c(64))])
        panel = b.gep(bp, [b.mul(st, i64c(16 * nr * g))], source_etype=I8)
        for j, t in enumerate(AMX_B):
            b.call(tload, [ir.Constant(I8, t), b.gep(panel, [i64c(j * 64)], source_etype=I8),
                           i64c(nr * g)])
        # the signedness pair picks the instruction (immediate tile operands: a branch)
        blocks = {}
        done = fn.append_basic_block("tdp.done")
        for key, name in TDP.items():
            blk = fn.append_basic_block(name)
            blocks[key] = blk
        sel_a = fn.append_basic_block("tdp.a")
        b.cbranch(sa, sel_a, fn.append_basic_block("tdp.ua"))
        ua = fn.basic_blocks[-1]
        for blk_sel, asg in ((sel_a, True), (ua, False)):
            b.position_at_end(blk_sel)
            b.cbranch(sb, blocks[(asg, True)], blocks[(asg, False)])
        for (asg, bsg), blk in blocks.items():
            b.position_at_end(blk)
            tdp = _declare(module, f"llvm.x86.{TDP[(asg, bsg)]}", VOID, [I8] * 3)
            for tc, tb in zip(AMX_C, AMX_B):
                b.call(tdp, [ir.Constant(I8, tc), ir.Constant(I8, AMX_A), ir.Constant(I8, tb)])
            b.branch(done)
        b.position_at_end(done)
    tile = b.alloca(I32, 16 * nr, name="ctile")
    tile.align = 64
    for j, t in enumerate(AMX_C):
        b.call(tstore, [ir.Constant(I8, t), b.gep(tile, [i64c(j * 16)], source_etype=I32),
                        i64c(nr * 4)])
    _store_tile(module, b, isa, tile, c, ldc, rows, cols, acc)
    b.ret_void()
    return fn


def _store_tile(module: ir.Module, b: ir.IRBuilder, isa: Isa, tile: ir.Value, c: ir.Value,
                ldc: ir.Value, rows: ir.Value, cols: ir.Value, acc: ir.Value) -> None:
    """``C[:rows, :cols] (+)= tile`` (``tile``: ``MR x NR`` i32, row-major) with lane
    masks at the column edge."""
    lanes, nv = isa.lanes, isa.nr // isa.lanes
    vty = ir.VectorType(I32, lanes)
    mty = ir.VectorType(I1, lanes)
    sfx = f"v{lanes}i32.p0"
    mload = _declare(module, f"llvm.masked.load.{sfx}", vty, [PTR, I32, mty, vty])
    mstore = _declare(module, f"llvm.masked.store.{sfx}", VOID, [vty, PTR, I32, mty])
    splat = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    zero = ir.Constant(vty, [0] * lanes)
    lane = ir.Constant(ir.VectorType(I64, lanes), list(range(lanes)))
    undef64 = ir.Constant(ir.VectorType(I64, lanes), ir.Undefined)
    masks = []
    for v in range(nv):
        left = b.insert_element(undef64, b.sub(cols, i64c(v * lanes)), i64c(0, I32))
        masks.append(b.icmp_signed("<", lane, b.shuffle_vector(left, undef64, splat)))
    with Loop(b, i64c(0), rows, name="r") as r:
        for v in range(nv):
            p = b.gep(c, [b.add(b.mul(r, ldc), i64c(v * lanes))], source_etype=I32)
            val = b.load(b.gep(tile, [b.add(b.mul(r, i64c(isa.nr)), i64c(v * lanes))],
                               source_etype=I32), typ=vty, align=4)
            old = b.call(mload, [p, i64c(4, I32), masks[v], zero])
            b.call(mstore, [b.select(acc, b.add(val, old), val), p, i64c(4, I32), masks[v]])


def define_int8_gemm_runtime(module: ir.Module) -> None:
    """Defines the driver of each instruction kind the host has in the runtime
    ``module`` (a runtime extension, :func:`oxla_backend_cpu.parallel.register_runtime_extension`)."""
    for isa in host_isas():
        define_driver(module, isa)


def int8_dot_kernels(op, isa: Isa, vbuf, n: int, counter) -> list:
    """The kernels of 8-bit dot ``op`` (:func:`int8_gemm_isa` gave ``isa``): a copy of
    the lhs when it is not row-major ``[M, K]``, then one :class:`~oxla.lowering.DotKernel`
    of strategy ``int8-<isa>`` whose rhs is the packed constant or the raw rhs."""
    lhs, rhs = op.operands
    g = gemm_dims(op)
    kernels: list = []
    lbuf, trans_l = blas_operand(lhs, vbuf, g.lb, g.lf, g.lc, True, kernels, n, counter)
    if trans_l:  # the microkernel reads rows of A in place
        lbuf = Buf(f"pack{next(counter)}", nbytes(lhs), "temp")
        kernels.append(PackKernel(f"pack{n + len(kernels)}", lhs, vbuf[lhs],
                                  g.lf + g.lc, lbuf))
    a_signed = lhs.type.element_type.is_signed
    packed = pack_constant_int8_rhs(vbuf[rhs], rhs.type.shape, g.rc, g.rf, g.k, g.n, isa,
                                    a_signed)
    trans_r = False
    if packed is None:
        rbuf, trans_r = blas_operand(rhs, vbuf, g.rb, g.rf, g.rc, False, kernels, n, counter)
    else:
        rbuf = packed
    kernels.append(DotKernel(f"dot{n + len(kernels)}", op, lbuf, rbuf, vbuf[op.results[0]],
                             1, g.m, g.n, g.k, False, trans_r, "i32",
                             strategy=f"int8-{isa.name}", tile=int(packed is not None)))
    return kernels


def descriptor(k) -> tuple[str, dict[str, int]]:
    """The driver and descriptor values of an ``int8-<isa>`` DotKernel ``k``."""
    isa = BY_NAME[k.strategy.removeprefix("int8-")]
    lhs_t, rhs_t = (v.type.element_type for v in k.op.operands)
    sb_k, sb_n = (1, k.k) if k.trans_rhs else (k.n, 1)
    flops = 2.0 * k.m * k.n * k.k
    return isa.driver, dict(m=k.m, n=k.n, k=k.k, lda=k.k, a_signed=int(lhs_t.is_signed),
                            packed=k.tile, sb_k=sb_k, sb_n=sb_n,
                            b_signed=int(rhs_t.is_signed),
                            parallel=int(flops >= FLOPS_PER_THREAD))
