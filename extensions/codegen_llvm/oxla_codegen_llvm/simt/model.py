"""The SIMT kernel model: a GPU kernel written once, lowered to NVPTX and to the host.

A kernel is a list of **regions** separated by block-wide barriers. Each region is one
LLVM function, written for ONE thread, that reads its position through calls of the
model's target-neutral intrinsics:

=============================================  ==========================================
``i32 @oxla.simt.{tid,ctaid,ntid,nctaid}.{x,y,z}()``  thread id, block id, block dims, grid dims
``ptr @oxla.simt.shared()``                     the block's shared memory (dynamic size)
``i1 @oxla.simt.has_shuffle()``                 whether warp shuffles may be used
``i32 @oxla.simt.warp_size()``                  threads per warp
``i32 @oxla.simt.shfl.down(i32 v, i32 delta)``  warp shuffle down (full mask, width 32)
``T @oxla.simt.math.NAME.{f32,f64}(T...)``       math functions (exp, log, sin, pow...)
=============================================  ==========================================

Region ``k`` of kernel ``NAME`` is ``void @NAME.r<k>(params..., ptr %priv)``: the kernel's
parameters (``ptr`` for a buffer, ``i64`` for a scalar, see :class:`Param`), then the
thread's **private** area, where a value that lives across a barrier is kept
(:meth:`KernelBuilder.private`). Pointers are generic (address space 0); atomics are plain
``atomicrmw``. The text starts with a header line the lowerings read::

    ; oxla.simt kernel=NAME regions=N private=P params=buf,buf,i64

Lowerings (the PoCL transform, done on this IR):

* NVPTX (:mod:`oxla_codegen_llvm.simt.nvptx`): one ``ptx_kernel`` entry taking
  ``ptr addrspace(1)`` buffers; it calls the regions in order with ``bar.sync 0``
  between them, the private area an ``alloca`` (registers after SROA), the intrinsics
  ``llvm.nvvm.read.ptx.sreg.*`` and ``shfl.sync``, shared memory the dynamic
  ``.extern .shared`` array (address space 3).
* host twin (:mod:`oxla_codegen_llvm.simt.host`): the grid as loops; per block, each
  region runs for every thread in turn (so a barrier is the end of one thread loop), the
  private area one slot per thread, shared memory one buffer per block.

Control flow inside a region may depend on the thread; a barrier (a region boundary) is
reached by every thread of the block, as CUDA requires.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import llvmlite.ir as ir

from oxla_codegen_llvm.scalar import Scalar
from oxla_codegen_llvm.target import Target
from oxla_codegen_llvm.vmath import vector_math_function

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()
AXES = ("x", "y", "z")
SREGS = ("tid", "ctaid", "ntid", "nctaid")
MATH_PREFIX = "oxla.simt.math."
TWO_ARG_MATH = frozenset({"pow", "maximum", "minimum", "copysign", "atan2", "hypot"})
HEADER = re.compile(r"^; oxla\.simt kernel=(\S+) regions=(\d+) private=(\d+) params=(\S*)$",
                    re.M)


@dataclass(frozen=True)
class Param:
    """One kernel parameter, in order.

    Attributes:
        kind: ``buf`` (a device pointer) or ``i64`` (a scalar passed by value).
        buf: for ``buf``: the :class:`oxla.lowering.Buf` it points at (plan buffer).
        value: for ``i64``: the value to pass.
    """

    kind: str
    buf: object = None
    value: int = 0


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel (what :func:`~oxla_codegen_llvm.simt.kernels_for` returns).

    Attributes:
        name: entry symbol, unique in its module.
        llvm_ir: SIMT IR text (target-neutral, module doc); the targets lower it.
        params: the parameters, in order.
        grid, block: the launch dimensions (x, y, z).
        shared_bytes: dynamic shared memory per block.
    """

    name: str
    llvm_ir: str
    params: tuple[Param, ...]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0


@dataclass(frozen=True)
class KernelInfo:
    """What a lowering reads from a kernel's header line."""

    name: str
    regions: int
    private: int
    params: tuple[str, ...]


def kernel_info(llvm_ir: str) -> KernelInfo:
    """The header of a SIMT IR text.

    Raises:
        ValueError: the text has no ``; oxla.simt`` header.
    """
    m = HEADER.search(llvm_ir)
    if m is None:
        raise ValueError("not SIMT IR: no '; oxla.simt kernel=...' header line")
    kinds = tuple(k for k in m.group(4).split(",") if k)
    return KernelInfo(m.group(1), int(m.group(2)), int(m.group(3)), kinds)


def math_name(name: str, ty: ir.Type) -> str:
    """The neutral intrinsic of math function ``name`` on ``ty`` (f32/f64)."""
    return f"{MATH_PREFIX}{name}.{'f32' if ty == ir.FloatType() else 'f64'}"


class SimtTarget(Target):
    """The target the kernel generators emit for: no vectors, math functions as the
    model's neutral intrinsics (the lowering picks libm, libdevice or an instruction).
    Its ``name`` (``simt``) is the platform key of GPU-specific emitter rules."""

    name = "simt"

    def __init__(self) -> None:
        super().__init__("")

    def has_fma(self) -> bool:
        return True  # every GPU has f32 fma (a host twin gets the host's, or libm's fmaf)

    def math_function(self, module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
        fn = vector_math_function(module, name, ty, self.has_fma())  # exp/tanh f32 IR
        if fn is not None:
            return fn
        fname = math_name(name, ty)
        existing = module.globals.get(fname)
        if existing is not None:
            return existing
        n = 2 if name in TWO_ARG_MATH else 1
        return ir.Function(module, ir.FunctionType(ty, [ty] * n), fname)


class Region:
    """The code of one region for one thread: a builder and the thread's view.

    Attributes:
        b: the builder (inside ``@NAME.r<k>``).
        s: the scalar context for the shared emitters (:class:`SimtTarget`).
        params: the kernel parameters as IR values (``ptr`` / ``i64``).
        priv: the thread's private area.
    """

    def __init__(self, kb: KernelBuilder, fn: ir.Function):
        self.kb = kb
        self.fn = fn
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.s = Scalar(self.b, kb.module, kb.target, False)
        self.params = list(fn.args[:-1])
        self.priv = fn.args[-1]

    def _intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value] = ()) -> ir.Value:
        m = self.kb.module
        fn = m.globals.get(name)
        if fn is None:
            fn = ir.Function(m, ir.FunctionType(ret, [a.type for a in args]), name)
        return self.b.call(fn, list(args))

    def sreg(self, reg: str, axis: str = "x") -> ir.Value:
        """Special register ``reg`` (tid, ctaid, ntid, nctaid) along ``axis`` as i64."""
        assert reg in SREGS and axis in AXES
        return self.b.zext(self._intrinsic(f"oxla.simt.{reg}.{axis}", I32), I64)

    def tid(self, axis: str = "x") -> ir.Value:
        return self.sreg("tid", axis)

    def ctaid(self, axis: str = "x") -> ir.Value:
        return self.sreg("ctaid", axis)

    def ntid(self, axis: str = "x") -> ir.Value:
        return self.sreg("ntid", axis)

    def nctaid(self, axis: str = "x") -> ir.Value:
        return self.sreg("nctaid", axis)

    def global_id(self) -> ir.Value:
        """``ctaid.x * ntid.x + tid.x`` (i64)."""
        return self.b.add(self.b.mul(self.ctaid(), self.ntid()), self.tid())

    def shared(self, offset: int | ir.Value = 0) -> ir.Value:
        """A pointer ``offset`` bytes into the block's shared memory."""
        base = self._intrinsic("oxla.simt.shared", PTR)
        off = ir.Constant(I64, offset) if isinstance(offset, int) else offset
        return self.b.gep(base, [off], source_etype=I8)

    def has_shuffle(self) -> ir.Value:
        """i1: warp shuffles may be used on this target (constant after lowering)."""
        return self._intrinsic("oxla.simt.has_shuffle", I1)

    def warp_size(self) -> ir.Value:
        return self._intrinsic("oxla.simt.warp_size", I32)

    def shfl_down(self, v: ir.Value, delta: int) -> ir.Value:
        """The value ``v`` of the lane ``delta`` above this one (32-bit values; full
        warp). Only valid under :meth:`has_shuffle`."""
        ty = v.type
        x = v if ty == I32 else self.b.bitcast(v, I32)
        r = self._intrinsic("oxla.simt.shfl.down", I32, [x, ir.Constant(I32, delta)])
        return r if ty == I32 else self.b.bitcast(r, ty)

    def private_ptr(self, slot: int) -> ir.Value:
        """The thread's private slot at byte ``slot`` (see :meth:`KernelBuilder.private`)."""
        return self.b.gep(self.priv, [ir.Constant(I64, slot)], source_etype=I8)


class KernelBuilder:
    """Builds one SIMT kernel region by region (module doc).

    Args:
        name: the entry symbol (characters PTX does not allow become ``_``).
        params: the parameters (:class:`Param`), in order.
        grid, block: launch dimensions.
        shared_bytes: dynamic shared memory per block.
    """

    def __init__(self, name: str, params: Sequence[Param], grid: Sequence[int],
                 block: Sequence[int], shared_bytes: int = 0):
        self.name = re.sub(r"[^A-Za-z0-9_]", "_", name)  # a PTX identifier
        self.params = tuple(params)
        self.grid = _dims(grid)
        self.block = _dims(block)
        self.shared_bytes = shared_bytes
        self.module = ir.Module(name)
        self.module.triple = ""
        self.target = SimtTarget()
        self.regions: list[ir.Function] = []
        self.private_bytes = 0

    def private(self, ty: ir.Type, count: int = 1) -> int:
        """Reserves a per-thread slot for ``count`` values of ``ty`` (kept across
        barriers); returns its byte offset in the private area."""
        size = max(1, (ty.width + 7) // 8) if isinstance(ty, ir.IntType) else (
            8 if ty == ir.DoubleType() else 4)
        off = -(-self.private_bytes // 8) * 8
        self.private_bytes = off + size * count
        return off

    @contextmanager
    def region(self) -> Iterator[Region]:
        """A new region (a barrier separates it from the previous one); yields its
        :class:`Region`. The body must leave the builder in a block without terminator."""
        types = [PTR if p.kind == "buf" else I64 for p in self.params] + [PTR]
        fn = ir.Function(self.module, ir.FunctionType(VOID, types),
                         f"{self.name}.r{len(self.regions)}")
        fn.attributes.add("alwaysinline")
        self.regions.append(fn)
        r = Region(self, fn)
        yield r
        r.b.ret_void()

    def build(self) -> Kernel:
        """The finished :class:`Kernel` (its IR text with the header line)."""
        if not self.regions:
            with self.region():
                pass
        kinds = ",".join(p.kind for p in self.params)
        head = (f"; oxla.simt kernel={self.name} regions={len(self.regions)} "
                f"private={self.private_bytes} params={kinds}\n")
        return Kernel(self.name, head + str(self.module), self.params, self.grid,
                      self.block, self.shared_bytes)


def _dims(d: Sequence[int]) -> tuple[int, int, int]:
    d = tuple(int(x) for x in d) + (1, 1, 1)
    return d[0], d[1], d[2]


@contextmanager
def strided_loop(b: ir.IRBuilder, start: ir.Value, n: int | ir.Value, step: int | ir.Value,
                 name: str = "s") -> Iterator[ir.Value]:
    """``for (i = start; i < n; i += step)`` on i64; yields ``i``."""
    stop = ir.Constant(I64, n) if isinstance(n, int) else n
    inc = ir.Constant(I64, step) if isinstance(step, int) else step
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=name)
    i.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", i, stop), body, end)
    b.position_at_end(body)
    yield i
    i.add_incoming(b.add(i, inc), b.block)
    b.branch(head)
    b.position_at_end(end)


@contextmanager
def grid_stride(r: Region, n: int | ir.Value, name: str = "gs") -> Iterator[ir.Value]:
    """``for (i = global id; i < n; i += ntid.x * nctaid.x)``; yields ``i`` (i64)."""
    step = r.b.mul(r.ntid(), r.nctaid())
    with strided_loop(r.b, r.global_id(), n, step, name) as i:
        yield i
