"""f32/f64 ``convolution`` on the cpu backend: im2col + BLAS GEMM, or a direct kernel.

Planning (this module) picks, per op, one of four forms (:func:`conv_kernels`):

* **GEMM**: chunk by chunk of the output, an im2col packing task (parallel loop nest)
  writes a temporary ``col`` buffer (one chunk, :func:`chunk_budget`: what the threads
  work on at once, at most :data:`CHUNK_BYTES`; counted by buffer assignment), then
  one GEMM per feature/batch group through BLAS writes the output in its own layout (:mod:`oxla_backend_cpu.conv_gemm`). A 1x1, stride-1, unpadded
  convolution whose input and output dimension orders agree reads the input directly
  (no packing). The kernel is used in place when its output feature dimension is
  outermost or innermost, else copied once to ``[O, rest]`` (a
  :class:`~oxla.lowering.PackKernel`).
* **implicit**: an NCHW-layout convolution with several input features per group and
  output rows of at least one vector reads shifted windows of one zero-padded input copy
  per image through a table of offsets instead of an im2col buffer
  (:mod:`oxla_backend_cpu.conv_implicit`): no ``K``-fold copy of the input.
* **direct**: depthwise-like convolutions (one input feature per group, more than one
  group) accumulate over the window straight into blocks of the two innermost output
  dimensions, vectorized along the innermost, with the valid ranges computed once per
  block and window element (no per-element bounds test) (:func:`oxla_backend_cpu.conv_emit.emit_direct`).
* anything else (integers, f16, zero-size shapes, tiny f32 convolutions:
  :func:`oxla_backend_cpu.linalg.small_f32_conv`, for the direct kernel's only up to
  :data:`~oxla_backend_cpu.linalg.SMALL_DIRECT_MACS`) keeps the generic loop emitter
  (:func:`oxla_backend_cpu.linalg.emit_convolution`).

Layouts. With ``G = feature_group_count * batch_group_count`` groups, ``K`` = input
features per group times the window size (in the kernel's memory order without its
output feature dimension) and ``og`` output features per group:

* output feature dimension innermost (NHWC): ``col[P][G][K]`` (rows of one chunk) with
  ``P`` the other output dimensions in memory order;
  ``out[P, g*og:(g+1)*og] = col_g[P,K] @ W_g[K,og]``;
* otherwise (NCHW): ``col[outer][G][K][inner]`` (``outer``/``inner``: output dimensions
  before/after the feature dimension; a chunk holds some outer indices, or some rows of
  ``inner`` of one); ``out[outer, g*og:(g+1)*og, inner] =
  W_g^T[og,K] @ col[outer, g][K, inner]``.

Memory: a GEMM-mode convolution whose input dies at it may write its output over the
input's already consumed batches (chunks then run last to first), so the two need about
one input plus one output batch of arena, not both whole (:func:`output_over_input`,
placed by :mod:`oxla.lowering.buffers`).

Epilogue: an elementwise loop kernel that is the only reader of the convolution's
result, reading it at its own index (bias add, relu), is computed by the GEMM or direct
kernel on each block of output it has just written (:func:`fuse_conv_epilogues`).

Semantics: the direct kernel and the epilogues use separate ``fmul``/``fadd`` (no FMA
contraction unless ``fast_math``); the GEMM's summation order (and FMA use) is BLAS's, as
for ``dot_general``. f32 results are accumulated in f32, so they differ from the
interpreter's (f64) by f32 rounding in the summation order only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from oxla.ir import Operation, Value
from oxla.ir import types as T
from oxla.lowering import Buf, Kernel, KernelBase, LoopKernel, PackKernel
from oxla_backend_cpu import conv_implicit
from oxla_backend_cpu.linalg import SMALL_DIRECT_MACS, conv_params, small_f32_conv
from oxla_backend_cpu.parallel import num_threads

CONV_OPS = ("stablehlo.convolution", "stablehlo.dynamic_conv")


def _strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return tuple(out[::-1])


@dataclass(eq=False)
class ConvGeom:
    """The static description of one convolution (shapes, dimension roles, window).

    Roles name index variables: ``b`` (output batch), ``f`` (output feature), ``g``
    (group), ``ci`` (input feature within the group), ``o<i>`` (output spatial i),
    ``k<i>`` (window position i).
    """

    dtype: str  # "f32" | "f64"
    ls: tuple[int, ...]
    ks: tuple[int, ...]
    os: tuple[int, ...]
    ib: int
    if_: int
    isd: tuple[int, ...]
    kif: int
    kof: int
    ksd: tuple[int, ...]
    ob: int
    of: int
    osd: tuple[int, ...]
    strides: tuple[int, ...]
    lo: tuple[int, ...]
    ldil: tuple[int, ...]
    rdil: tuple[int, ...]
    rev: tuple[bool, ...]
    fgc: int
    bgc: int

    @property
    def ns(self) -> int:
        return len(self.isd)

    @property
    def G(self) -> int:  # noqa: N802 - the usual name
        return self.fgc * self.bgc

    @property
    def cg(self) -> int:
        return self.ks[self.kif]

    @property
    def o_tot(self) -> int:
        return self.os[self.of]

    @property
    def og(self) -> int:
        return self.o_tot // self.G

    @property
    def nb(self) -> int:
        return self.os[self.ob]

    @property
    def lst(self) -> tuple[int, ...]:
        return _strides(self.ls)

    @property
    def kst(self) -> tuple[int, ...]:
        return _strides(self.ks)

    @property
    def itemsize(self) -> int:
        return 4 if self.dtype == "f32" else 8

    def out_role(self, d: int) -> str:
        if d == self.ob:
            return "b"
        if d == self.of:
            return "f"
        return f"o{self.osd.index(d)}"

    def kernel_role(self, d: int) -> str:
        return "ci" if d == self.kif else f"k{self.ksd.index(d)}"

    def extent(self, role: str) -> int:
        if role == "g":
            return self.G
        if role == "ci":
            return self.cg
        if role == "b":
            return self.nb
        if role == "f":
            return self.o_tot
        i = int(role[1:])
        return self.os[self.osd[i]] if role[0] == "o" else self.ks[self.ksd[i]]

    @property
    def k_roles(self) -> list[str]:
        """The contraction roles in the kernel's memory order (output feature dropped)."""
        return [self.kernel_role(d) for d in range(len(self.ks)) if d != self.kof]

    @property
    def k_size(self) -> int:
        return math.prod(self.extent(r) for r in self.k_roles)

    @property
    def feature_last(self) -> bool:
        return self.of == len(self.os) - 1

    def no_packing(self) -> bool:
        """True when the im2col buffer would equal the input: a 1x1 window, unit stride
        (or size-1 output), no padding or dilation of the input, and the input's
        dimension roles in the output's order."""
        if self.bgc != 1:
            return False
        for i in range(self.ns):
            if self.ks[self.ksd[i]] != 1 or self.lo[i] != 0 or self.ldil[i] != 1:
                return False
            if self.ls[self.isd[i]] != self.os[self.osd[i]]:
                return False
            if self.strides[i] != 1 and self.os[self.osd[i]] != 1:
                return False
        in_roles = ["b" if d == self.ib else "f" if d == self.if_ else
                    f"o{self.isd.index(d)}" for d in range(len(self.ls))]
        return in_roles == [self.out_role(d) for d in range(len(self.os))]


def geometry(op: Operation) -> ConvGeom:
    """The :class:`ConvGeom` of a ``convolution``/``dynamic_conv`` op.

    Raises:
        NotSupportedError: a ``dynamic_conv`` whose padding is not a constant.
    """
    lhs, rhs = op.operands[:2]
    dn = op.attr("dimension_numbers")
    ns = len(lhs.type.shape) - 2
    strides, lo, ldil, rdil, rev, fgc, bgc = conv_params(op, ns)
    return ConvGeom(
        op.results[0].type.element_type.name, tuple(lhs.type.shape), tuple(rhs.type.shape),
        tuple(op.results[0].type.shape), int(dn.input_batch_dimension),
        int(dn.input_feature_dimension), tuple(int(x) for x in dn.input_spatial_dimensions),
        int(dn.kernel_input_feature_dimension), int(dn.kernel_output_feature_dimension),
        tuple(int(x) for x in dn.kernel_spatial_dimensions), int(dn.output_batch_dimension),
        int(dn.output_feature_dimension), tuple(int(x) for x in dn.output_spatial_dimensions),
        strides, lo, ldil, rdil, rev, fgc, bgc)


@dataclass(eq=False)
class ConvKernel(KernelBase):
    """A convolution as im2col + GEMM (``mode == "gemm"``), an implicit GEMM over a
    padded input copy (``"implicit"``, ``col`` holds the copy) or a direct vectorized
    kernel (``mode == "direct"``), with an optional fused elementwise epilogue.

    Attributes:
        lhs, rhs: the input and kernel buffers (``rhs`` may be a packed copy
            ``[O, rest]`` of the kernel, then ``w_major`` is True).
        out: the output buffer (the epilogue's, when one is fused).
        col: the im2col temporary (None: the GEMM reads ``lhs``, or direct mode).
        w_major: the kernel's output feature dimension is outermost (``[O, K]``);
            False: innermost (``[K, O]``).
        epilogue: the fused loop kernel (reads the convolution's value at its own
            index through ``out``), or None.
        extra: the epilogue's other inputs.
        chunking: GEMM mode: the :class:`Chunks` that sized ``col`` (codegen uses the
            same).
        reverse: run the chunks last to first (set by buffer assignment when ``out``
            overlaps the dead part of ``lhs``, :func:`output_over_input`).
        slot_chunking: the planned :attr:`Chunks.slots` chunking while ``reverse``
            replaced it (:meth:`place_over_input`).
    """

    name: str
    op: Operation
    geom: ConvGeom
    mode: str
    lhs: Buf
    rhs: Buf
    out: Buf
    col: Buf | None = None
    w_major: bool = True
    epilogue: LoopKernel | None = None
    extra: list[Value] = field(default_factory=list)
    chunking: Chunks | None = None
    reverse: bool = False
    slot_chunking: Chunks | None = None

    def reads(self, vbuf: dict[Value, Buf]) -> list[Buf]:
        """The buffers the kernel reads: input, kernel, epilogue inputs."""
        return [self.lhs, self.rhs] + [vbuf[v] for v in self.extra]

    def writes(self) -> list[Buf]:
        """The buffers the kernel writes: the output, and the im2col temporary."""
        return [self.out] + ([self.col] if self.col is not None else [])

    def over_input(self, vbuf: dict[Value, Buf]) -> tuple[Buf, Buf, int] | None:
        """(input, output, distance) when the output may overlap the dead input
        (:func:`output_over_input`)."""
        d = output_over_input(self, vbuf)
        return None if d is None else (self.lhs, self.out, d)

    def place_over_input(self, flag: bool) -> None:
        """Runs the chunks last to first when the output was placed over the input.

        A :attr:`Chunks.slots` chunking with :func:`slot_groups` keeps its slots: they
        run group by group of batches, last group first (the distance of
        :func:`output_over_input` leaves each group's input alone). Otherwise chunks that
        run in order cannot run on slots at once (a slot would write over input another
        still reads), so the chunking becomes the split chunking for as many threads
        (:func:`chunks`), and ``col`` its size (buffer assignment places ``col`` after
        ``out``); ``flag`` False restores it."""
        self.reverse = flag
        if self.col is None or self.chunking is None:
            return
        if flag and self.chunking.slots > 1 and slot_groups(self.geom, self.chunking):
            return  # the slots run in groups of batches, last group first
        if flag and self.chunking.slots > 1:
            self.slot_chunking = self.chunking
            self.chunking = chunks(self.geom, self.chunking.slots)
        elif not flag and self.slot_chunking is not None:
            self.chunking, self.slot_chunking = self.slot_chunking, None
        self.col.nbytes = self.chunking.col_elems * self.geom.itemsize

    def label(self) -> str:
        """One line for profiles: mode, shapes, groups, window, fused ops."""
        g = self.geom
        win = "x".join(str(g.ks[d]) for d in g.ksd)
        ep = ""
        if self.epilogue is not None:
            ops = dict.fromkeys(o.name.split(".")[-1] for o in self.epilogue.fused_ops
                                if o.name != "stablehlo.constant")
            ep = " +" + ",".join(ops)
        return (f"{self.name} conv-{self.mode} {'x'.join(map(str, g.ls))} -> "
                f"{'x'.join(map(str, g.os))} win {win} s{max(g.strides, default=1)} "
                f"G{g.G} K{g.k_size}{ep}")


def _float_conv(op: Operation) -> bool:
    ets = [op.operands[0].type.element_type, op.operands[1].type.element_type,
           op.results[0].type.element_type]
    return all(isinstance(e, T.FloatType) and e.name == ets[0].name for e in ets) and \
        ets[0].name in ("f32", "f64")


CHUNK_BYTES = 1 << 21
"""Most bytes of the im2col buffer: the GEMM mode packs and multiplies one chunk of the
output at a time (2 MiB: an L2/L3-sized block, still tens of MFLOP per chunk)."""

MIN_GEMM_COLS = 128
"""Output columns (rows of ``P`` when the feature dimension is innermost) per chunk, the
least that keeps each BLAS call wide: every call re-packs the weights, and on the
benchmark CNN's 3x3 stride-2 conv (K = 144) chunks of 16 columns ran 1.7x slower than
one chunk, 128 as fast."""

ITEM_FLOPS = 1 << 22
"""Least GEMM work per parallel item (~0.1 ms of one core)."""

BLOCKS_PER_THREAD = 3


@dataclass(frozen=True)
class Chunks:
    """How a GEMM-mode convolution is split (see :mod:`oxla_backend_cpu.conv_gemm`).

    Attributes:
        n: chunks, run one after the other.
        rows: feature-innermost output: rows of ``P`` per chunk; otherwise rows of the
            innermost output dimension per chunk (``CR``).
        outer: otherwise-layout only: outer indices per chunk (1 unless a chunk holds
            every row of several outer indices).
        col_elems: elements of the im2col buffer (0 when the GEMM reads the input), all
            ``slots`` slices.
        slots: 1: each chunk is packed by one parallel loop and multiplied by another;
            more: one parallel loop over ``slots`` items, each packing and multiplying
            its own run of chunks in its own slice of ``col`` (:func:`plan_chunks`).
    """

    n: int
    rows: int
    outer: int
    col_elems: int
    slots: int = 1


def chunk_budget(g: ConvGeom, threads: int | None = None) -> int:
    """Elements of im2col buffer to aim for: only what the threads can work on at once.

    With ``threads`` (default: :func:`oxla_backend_cpu.parallel.num_threads`, at
    compile time; the code stays right for any count, only the split changes) > 1 and
    at least 2 items of :data:`ITEM_FLOPS` per thread, a chunk holds
    :data:`BLOCKS_PER_THREAD` such items per thread (each at least
    :data:`MIN_GEMM_COLS` columns wide); otherwise the GEMMs are not worth splitting and
    a chunk holds :data:`MIN_GEMM_COLS` columns. Never more than :data:`CHUNK_BYTES`.
    The chunking rounds this to whole rows (:func:`chunks`).
    """
    t = num_threads() if threads is None else threads
    per_col = g.G * g.k_size  # im2col elements per output column
    cols_all = math.prod(g.os) // g.o_tot
    flops = 2 * g.o_tot * g.k_size * cols_all
    cols = MIN_GEMM_COLS
    if t > 1 and flops >= 2 * t * ITEM_FLOPS:
        item = max(MIN_GEMM_COLS, -(-ITEM_FLOPS // (2 * g.o_tot * g.k_size)))
        cols = t * BLOCKS_PER_THREAD * item
    return max(1, min(CHUNK_BYTES // g.itemsize, cols * per_col))


def chunks(g: ConvGeom, threads: int | None = None) -> Chunks:
    """The chunking of ``g``'s output (one chunk when the input is read in place) for
    about :func:`chunk_budget` elements of im2col buffer."""
    gk = g.G * g.k_size
    budget = chunk_budget(g, threads)
    if g.feature_last:
        p = math.prod(g.os[:-1])
        if g.no_packing():
            return Chunks(1, p, 1, 0)
        cp = max(1, min(p, budget // gk))
        return Chunks(-(-p // cp), cp, 1, cp * gk)
    outer_n, n_last = math.prod(g.os[:g.of]), g.os[-1]
    r_all = math.prod(g.os[g.of + 1:-1])
    per_outer = gk * r_all * n_last
    if g.no_packing():
        return Chunks(1, r_all, outer_n, 0)
    if per_outer <= budget:
        co = max(1, min(outer_n, budget // per_outer))
        return Chunks(-(-outer_n // co), r_all, co, co * per_outer)
    cr = max(1, min(r_all, budget // (gk * n_last)))
    return Chunks(outer_n * -(-r_all // cr), cr, 1, gk * cr * n_last)


def plan_chunks(g: ConvGeom, threads: int | None = None) -> Chunks:
    """The chunking a GEMM-mode convolution is compiled with.

    With ``threads`` > 1 (default: :func:`oxla_backend_cpu.parallel.num_threads`) and at
    least 2 one-thread chunks (:func:`chunks` for 1 thread: :data:`MIN_GEMM_COLS`
    columns, cache-sized) per thread, each of ``threads`` slots packs and multiplies
    its own contiguous run of those chunks in its own slice of ``col``: one parallel
    loop per convolution, no join between im2col and GEMM, and each packed block is
    still in its core's cache when the GEMM reads it (the split of each big chunk over
    the threads, two joins per chunk, cost about 1.5x the CPU time on a small CNN's
    convolutions). Otherwise the :func:`chunks` for ``threads``, whose GEMMs are split
    over the threads. ``col`` then holds ``threads`` one-thread chunks.
    """
    t = num_threads() if threads is None else threads
    one = chunks(g, 1)
    if t < 2 or not one.col_elems or one.n < 2 * t:
        return chunks(g, t)
    return Chunks(one.n, one.rows, one.outer, t * one.col_elems, t)


def slot_groups(g: ConvGeom, ch: Chunks) -> list[tuple[int, int, int, int]] | None:
    """For a :attr:`Chunks.slots` chunking of an output whose batch is the only
    dimension before the feature (NCHW-like, batch outermost in input and output, one
    batch group), the groups of chunks its slots run at once when the output overlaps
    the dead input: ``(chunk_lo, chunk_hi, batch_lo, batch_hi)``, last group first,
    each ``slots`` blocks of whole batches (:attr:`Chunks.outer` batches per block), so
    the slots of one group share no chunk and stop at the group's end (one parallel
    loop per group). None for other layouts and chunkings."""
    if ch.slots < 2 or not ch.col_elems or g.feature_last or g.of != 1 or g.ob != 0 \
            or g.ib != 0 or g.bgc != 1:
        return None
    n_batch = g.nb
    r_all = math.prod(g.os[g.of + 1:-1])
    per_outer = -(-r_all // ch.rows)
    blocks = -(-n_batch // ch.outer)
    if blocks * per_outer != ch.n or (ch.outer > 1 and per_outer != 1):
        return None
    out = []
    hi = blocks
    while hi > 0:
        lo = max(0, hi - ch.slots)
        out.append((lo * per_outer, hi * per_outer, lo * ch.outer,
                    min(n_batch, hi * ch.outer)))
        hi = lo
    return out


def direct_ok(g: ConvGeom) -> bool:
    """True when the direct kernel handles ``g``: one batch group, and the output's
    innermost dimension is the batch, a spatial dimension without input dilation, or
    the feature with one output feature per group."""
    if g.bgc != 1:
        return False
    last = g.out_role(len(g.os) - 1)
    if last == "f":
        return g.og == 1
    if last == "b":
        return True
    return g.ldil[int(last[1:])] == 1


def choose(g: ConvGeom) -> str:
    """``direct`` for depthwise-like convolutions (one input feature per group, several
    groups: GEMMs with ``K`` = the window size are too thin for BLAS) when
    :func:`direct_ok`, else ``gemm``. One group of one input feature (a grayscale
    image's or an audio waveform's first conv) is one GEMM with ``K`` = the window over
    all output features, which the direct kernel, one output feature at a time with
    strided reads, ran 3-6x slower (one thread, kernel time: 8x1x28x28 -> 32, 3x3: 287
    against 101 us; 2x1x128x128 -> 64, 7x7/2: 4.06 against 0.69 ms; wav2vec's
    2x1x16000 -> 64, 10/5: 1.75 against 0.78 ms)."""
    return "direct" if g.cg == 1 and g.G > 1 and direct_ok(g) else "gemm"


def conv_kernels(op: Operation, vbuf: dict[Value, Buf], n: int, counter) -> list[Kernel] | None:
    """The kernels of an f32/f64 convolution (a weight packing copy when needed, then a
    :class:`ConvKernel`), or None for the generic loop emitter (other element types,
    zero-size shapes)."""
    from oxla.lowering import nbytes

    if not _float_conv(op):
        return None
    try:
        g = geometry(op)
    except Exception:  # noqa: BLE001 - the generic emitter reports it with context
        return None
    if 0 in g.ls or 0 in g.ks or 0 in g.os or g.og * g.G != g.o_tot:
        return None
    mode = choose(g)
    macs = math.prod(g.os) * g.k_size
    if small_f32_conv(op, math.prod(g.os), g.k_size) and (
            mode != "direct" or macs <= SMALL_DIRECT_MACS):  # f64 loop, as the interpreter
        return None
    lhs, rhs = op.operands[:2]
    out = vbuf[op.results[0]]
    name = f"conv{n}"
    if mode == "direct":
        return [ConvKernel(name, op, g, "direct", vbuf[lhs], vbuf[rhs], out)]
    kernels: list[Kernel] = []
    wbuf, w_major = vbuf[rhs], True
    if g.kof == len(g.ks) - 1 and len(g.ks) > 1:
        w_major = False
    elif g.kof != 0:
        perm = (g.kof,) + tuple(d for d in range(len(g.ks)) if d != g.kof)
        wbuf = Buf(f"pack{next(counter)}", nbytes(rhs), "temp")
        kernels.append(PackKernel(f"pack{n}", rhs, vbuf[rhs], perm, wbuf))
    if conv_implicit.geometry(g) is not None and not g.no_packing():
        pad = Buf(f"pad{next(counter)}", conv_implicit.pad_elements(g) * g.itemsize, "temp")
        kernels.append(ConvKernel(f"{name}_{len(kernels)}", op, g, "implicit", vbuf[lhs],
                                  wbuf, out, pad, w_major))
        return kernels
    col = None
    ch = plan_chunks(g)
    if ch.col_elems:
        col = Buf(f"col{next(counter)}", ch.col_elems * g.itemsize, "temp")
    kernels.append(ConvKernel(f"{name}_{len(kernels)}", op, g, "gemm", vbuf[lhs], wbuf, out,
                              col, w_major, chunking=ch))
    return kernels


def output_over_input(k: Kernel, vbuf: dict[Value, Buf]) -> int | None:
    """Where the output of GEMM-mode :class:`ConvKernel` ``k`` may start, in bytes from
    the start of its input ``lhs``, when ``lhs`` dies at ``k``; None when it may not
    (implicit mode: :func:`_implicit_over_input`).

    With ``N`` batches outermost in both (input slabs of ``IB`` bytes, output slabs of
    ``OB <= IB``), one batch group, im2col packing (the GEMM reads only ``col``) and the
    chunks run last to first (``k.reverse``), the output may end ``OB`` bytes past the
    input's end: output slab ``b`` then starts at ``N*IB - (N-1-b)*OB >= (b+1)*IB``,
    past every input slab a later chunk reads (chunks of output batch ``b`` read input
    slab ``b`` only, and pack it before their GEMM writes). The output then takes
    ``N*OB - OB`` bytes of the input instead of new arena bytes (any later start is
    safe too). When the slots of a :attr:`Chunks.slots` chunking run in
    :func:`slot_groups` (batches ``[b0, b1)`` at once, groups last to first), output
    batch ``b >= b0`` must start past input slab ``b1 - 1``: the distance is the largest
    ``b1 * IB - b0 * OB`` over the groups (``N*IB - (N-S)*OB`` for ``S`` one-batch
    blocks per group), ``(S-1)*OB`` bytes more than one batch at a time. None when the
    kernel reads ``lhs`` otherwise (as its weights or in its epilogue).
    """
    if isinstance(k, ConvKernel) and k.mode == "implicit":
        return _implicit_over_input(k, vbuf)
    if not isinstance(k, ConvKernel) or k.mode != "gemm" or k.col is None:
        return None
    g = k.geom
    slabs = _image_slabs(k, vbuf)
    if g.bgc != 1 or slabs is None or slabs[0] < 2:
        return None
    n, ib, ob = slabs
    groups = slot_groups(g, k.chunking) if k.chunking is not None else None
    if groups:  # a group's slots write output batches [b0, b1) while reading input [b0, b1)
        return max(b1 * ib - b0 * ob for _, _, b0, b1 in groups)
    return k.lhs.nbytes - (n - 1) * ob


def _implicit_over_input(k: ConvKernel, vbuf: dict[Value, Buf]) -> int | None:
    """:func:`output_over_input` of an implicit-GEMM convolution: 0 (the output may
    start where the input does) when batches are outermost in both, output images are
    no larger than input images and nothing else the kernel reads is the input. Each
    image's input is copied into the padded buffer before any of its output is written
    (:mod:`oxla_backend_cpu.conv_implicit`), images run first to last, and output image
    ``b`` ends at ``(b+1)*OB <= (b+1)*IB``, before every input image still to be read."""
    return None if _image_slabs(k, vbuf) is None else 0


def _image_slabs(k: ConvKernel, vbuf: dict[Value, Buf]) -> tuple[int, int, int] | None:
    """``(N, IB, OB)``: batches and bytes per input and output image, when batches are
    outermost in both, output images are no larger than input images, and the kernel
    reads its input only as its input (not as weights or in its epilogue); else None."""
    g = k.geom
    n = g.nb
    if g.ib != 0 or g.ob != 0 or g.ls[g.ib] != n:
        return None
    if any(b is k.lhs for b in [k.rhs] + [vbuf[x] for x in k.extra]):
        return None
    ib, ob = k.lhs.nbytes // n, k.out.nbytes // n
    if ob > ib or ib * n != k.lhs.nbytes or ob * n != k.out.nbytes:
        return None
    return n, ib, ob


def fuse_conv_epilogues(kernels: list[Kernel], vbuf: dict[Value, Buf]) -> list[Kernel]:
    """Moves into each :class:`ConvKernel` the loop kernel that is the only reader of
    its (temporary) output when that kernel reads it only at its own index, has its
    shape and element type, and reads nothing computed after the convolution. The
    convolution then writes the loop kernel's output; its own buffer disappears."""
    from oxla.lowering import kernel_reads, kernel_writes, same_index_inputs

    readers: dict[int, list[int]] = {}
    writer: dict[int, int] = {}
    for t, k in enumerate(kernels):
        for b in {id(x): x for x in kernel_reads(k, vbuf)}.values():
            readers.setdefault(id(b), []).append(t)
        for b in kernel_writes(k):
            writer.setdefault(id(b), t)
    drop: set[int] = set()
    for t, c in enumerate(kernels):
        if not isinstance(c, ConvKernel) or c.epilogue is not None or c.out.kind != "temp":
            continue
        users = readers.get(id(c.out), [])
        if len(users) != 1 or users[0] in drop:
            continue
        lk = kernels[users[0]]
        v = c.op.results[0]
        if not isinstance(lk, LoopKernel) or v not in lk.inputs or lk.root.type != v.type:
            continue
        if vbuf.get(v) is not c.out or v not in same_index_inputs(lk.root, lk.inputs):
            continue
        extra = [x for x in dict.fromkeys(lk.inputs) if x is not v]
        if any(writer.get(id(vbuf[x]), -1) > t for x in extra):
            continue
        if any(vbuf[x] is lk.out for x in extra):
            continue
        c.epilogue, c.extra, c.out = lk, extra, lk.out
        drop.add(users[0])
    return [k for t, k in enumerate(kernels) if t not in drop]
