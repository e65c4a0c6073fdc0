"""The host twin: SIMT kernels compiled for this CPU (the PoCL transform on oxla's IR).

Each kernel becomes ``void NAME(i64 *args, i64 *dims, ptr shared, ptr priv)``:
``args`` its parameters in :class:`~oxla_codegen_llvm.simt.model.Param` order (pointers
as addresses), ``dims`` the grid and block dimensions (x, y, z each). The grid runs as
loops over blocks; inside a block, each region runs for every thread in turn, so the
barrier between two regions is the end of a thread loop. The thread's position is kept
in module globals the model's intrinsics read; a value that lives across a barrier is
in the thread's slot of ``priv`` (``threads x private`` bytes); ``shared`` is one buffer
reused by each block in turn. Warp shuffles are off (``has_shuffle`` is false), so
kernels take their shared-memory path; ``warp_size`` is the device's (32 for CUDA and
RDNA3, 64 for CDNA: the simulated device of each arch). One launch at a time per process (a lock).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence

import llvmlite.ir as ir
import numpy as np

from oxla.errors import LoweringError
from oxla_codegen_llvm.jit import compile_ir
from oxla_codegen_llvm.loops import for_range
from oxla_codegen_llvm.simt.link import infos, link, math_used
from oxla_codegen_llvm.simt.model import (
    AXES,
    I1,
    I32,
    I64,
    PTR,
    SREGS,
    TWO_ARG_MATH,
    VOID,
    Kernel,
    KernelInfo,
    math_name,
)
from oxla_codegen_llvm.target import CPUTarget

_LOCK = threading.Lock()


def _state(module: ir.Module) -> tuple[ir.GlobalVariable, ir.GlobalVariable]:
    st = ir.GlobalVariable(module, ir.ArrayType(I32, 12), "oxla.simt.state")
    st.initializer = ir.Constant(ir.ArrayType(I32, 12), [0] * 12)
    sh = ir.GlobalVariable(module, PTR, "oxla.simt.shared_base")
    sh.initializer = ir.Constant(PTR, None)
    return st, sh


def _define(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type] = ()
            ) -> tuple[ir.Function, ir.IRBuilder]:
    fn = ir.Function(module, ir.FunctionType(ret, list(args)), name)
    fn.attributes.add("alwaysinline")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _slot(b: ir.IRBuilder, st: ir.GlobalVariable, k: int) -> ir.Value:
    return b.gep(st, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True)


def _intrinsics(module: ir.Module, st, sh, kernels: Sequence[Kernel], warp_size: int) -> None:
    for r, reg in enumerate(SREGS):
        for a, axis in enumerate(AXES):
            _, b = _define(module, f"oxla.simt.{reg}.{axis}", I32)
            b.ret(b.load(_slot(b, st, 3 * r + a), typ=I32))
    _, b = _define(module, "oxla.simt.shared", PTR)
    b.ret(b.load(sh, typ=PTR))
    _, b = _define(module, "oxla.simt.has_shuffle", I1)
    b.ret(ir.Constant(I1, 0))
    _, b = _define(module, "oxla.simt.warp_size", I32)
    b.ret(ir.Constant(I32, warp_size))
    fn, b = _define(module, "oxla.simt.shfl.down", I32, [I32, I32])
    b.ret(fn.args[0])  # never reached: has_shuffle is false on the host
    cpu = CPUTarget.host()
    for name, t in sorted(math_used(kernels)):
        ty = ir.FloatType() if t == "f32" else ir.DoubleType()
        n = 2 if name in TWO_ARG_MATH else 1
        fn, b = _define(module, math_name(name, ty), ty, [ty] * n)
        b.ret(b.call(cpu.math_function(module, name, ty), list(fn.args)))


def _entry(module: ir.Module, st, sh, info: KernelInfo) -> None:
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, PTR, PTR]), info.name)
    args, dims, shared, priv = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    params = []
    for i, kind in enumerate(info.params):
        v = b.load(b.gep(args, [ir.Constant(I64, i)], source_etype=I64), typ=I64)
        params.append(b.inttoptr(v, PTR) if kind == "buf" else v)
    d = [b.load(b.gep(dims, [ir.Constant(I64, i)], source_etype=I64), typ=I64)
         for i in range(6)]
    grid, block = d[:3], d[3:]
    for a in range(3):
        b.store(b.trunc(block[a], I32), _slot(b, st, 6 + a))
        b.store(b.trunc(grid[a], I32), _slot(b, st, 9 + a))
    b.store(shared, sh)
    stride = ir.Constant(I64, -(-max(info.private, 1) // 8) * 8)
    regions = [module.globals.get(f"{info.name}.r{r}") or ir.Function(
        module, ir.FunctionType(VOID, [PTR if k == "buf" else I64 for k in info.params]
                                + [PTR]), f"{info.name}.r{r}")
        for r in range(info.regions)]
    with for_range(b, grid[2], "bz") as gz, for_range(b, grid[1], "by") as gy, \
            for_range(b, grid[0], "bx") as gx:
        for a, g in enumerate((gx, gy, gz)):
            b.store(b.trunc(g, I32), _slot(b, st, 3 + a))
        for region in regions:
            with for_range(b, block[2], "tz") as tz, for_range(b, block[1], "ty") as ty, \
                    for_range(b, block[0], "tx") as tx:
                for a, t in enumerate((tx, ty, tz)):
                    b.store(b.trunc(t, I32), _slot(b, st, a))
                lin = b.add(b.mul(b.add(b.mul(tz, block[1]), ty), block[0]), tx)
                p = b.gep(priv, [b.mul(lin, stride)], source_etype=ir.IntType(8))
                b.call(region, params + [p])
    b.ret_void()


def host_text(kernels: Sequence[Kernel], warp_size: int = 32) -> str:
    """The host runtime of ``kernels`` (entries, intrinsics, math) as IR text, for a
    device whose warps have ``warp_size`` lanes."""
    module = ir.Module("oxla_simt_host")
    module.triple = ""
    st, sh = _state(module)
    _intrinsics(module, st, sh, kernels, warp_size)
    for info in infos(kernels):
        _entry(module, st, sh, info)
    return str(module)


class HostTwin:
    """The same kernels compiled for this CPU (module doc).

    Args:
        kernels: the kernels (:class:`~oxla_codegen_llvm.simt.model.Kernel`).
        warp_size: the lanes of a warp (wavefront) of the device simulated.

    Raises:
        LoweringError: their IR is invalid (a bug in the generators).
    """

    def __init__(self, kernels: Sequence[Kernel], warp_size: int = 32):
        self.kernels = {k.name: k for k in kernels}
        self.warp_size = warp_size
        self._info = {i.name: i for i in infos(kernels)}
        mod = link(host_text(kernels, warp_size), kernels)
        target = CPUTarget.host()
        mod.triple = target.triple
        self._jit = compile_ir(str(mod), target, opt=2)
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p)
        self._fns = {}
        for name in self.kernels:
            addr = self._jit.address(name)
            if not addr:
                raise LoweringError(f"host twin: kernel {name} has no code")
            self._fns[name] = proto(addr)

    def launch(self, name: str, grid: Sequence[int], block: Sequence[int],
               shared_bytes: int, args: list[int]) -> None:
        """Runs kernel ``name`` over ``grid`` x ``block``.

        Args:
            args: device pointers (host addresses on the simulated device) and i64
                scalars, in Param order.

        Raises:
            LoweringError: an unknown kernel or a wrong argument count.
        """
        info = self._info.get(name)
        if info is None:
            raise LoweringError(f"host twin: no kernel named {name!r}")
        if len(args) != len(info.params):
            raise LoweringError(f"host twin: kernel {name} takes {len(info.params)} "
                                f"arguments, got {len(args)}")
        g = (tuple(grid) + (1, 1, 1))[:3]
        bl = (tuple(block) + (1, 1, 1))[:3]
        threads = bl[0] * bl[1] * bl[2]
        if min(g) <= 0 or threads <= 0:
            return
        a = np.array([int(x) & 0xFFFFFFFFFFFFFFFF for x in args] or [0], dtype=np.uint64)
        dims = np.array(list(g) + list(bl), dtype=np.int64)
        shared = np.zeros(max(int(shared_bytes), 16) // 8 + 1, dtype=np.float64)
        priv = np.zeros(threads * (-(-max(info.private, 1) // 8)), dtype=np.float64)
        with _LOCK:
            self._fns[name](a.ctypes.data, dims.ctypes.data, shared.ctypes.data,
                            priv.ctypes.data)
