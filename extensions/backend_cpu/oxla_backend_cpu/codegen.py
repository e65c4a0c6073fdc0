"""Stage 5, codegen: the plan as one LLVM module.

Each kernel becomes one function taking one pointer per buffer it touches (inputs
first, output last); the schedule becomes ONE entry function

    void entry(ptr args, ptr results, ptr arena)

(``args``/``results``: arrays of data pointers) that computes every buffer's address and
calls the kernels and BLAS in order, so one ctypes call runs the whole program.
Loop kernels with enough work take ``(start, end)`` of their outermost loop and are run
in chunks on several threads by ``oxla_parallel_for`` (:mod:`oxla_backend_cpu.parallel`);
other kernels are single-threaded loop nests (LLVM vectorizes the inner loop); BLAS uses
OpenBLAS's own threads.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np
from oxla_codegen_llvm import (
    FusedEmitter,
    Scalar,
    Target,
    linearize,
    load,
    loop_nest,
    shape_of,
    store,
)
from oxla_codegen_llvm.fused import clamp, to_index
from oxla_codegen_llvm.loops import tiled_loop_nest

from oxla.errors import LoweringError
from oxla.lowering import (
    Buf,
    ControlKernel,
    DotKernel,
    Kernel,
    LoopKernel,
    OpKernel,
    PackKernel,
    Plan,
    distinct_locations,
    kernel_reads,
    kernel_writes,
    location,
    window_update,
)
from oxla_backend_cpu import strided_copy
from oxla_backend_cpu.conv import ConvKernel
from oxla_backend_cpu.conv_emit import smax, smin
from oxla_backend_cpu.conv_gemm import control_only, emit_conv_kernel
from oxla_backend_cpu.gemm_emit import emit_gemm
from oxla_backend_cpu.gemv import gemv_parallel
from oxla_backend_cpu.opkernels import OP_EMITTERS
from oxla_backend_cpu.packed_gemm import PanelPackKernel, emit_panel_pack
from oxla_backend_cpu.parallel import call_parallel, grain_for, loop_work, worth_parallel
from oxla_backend_cpu.profile import Profiler, kernel_label
from oxla_backend_cpu.reduction import reduce_parallel
from oxla_backend_cpu.rowemit import emit_rows
from oxla_backend_cpu.rowfusion import RowKernel
from oxla_backend_cpu.scan import prefix_scan, scan_parallel
from oxla_backend_cpu.topk import topk_parallel, topk_rows

PTR = ir.PointerType()
VOID = ir.VoidType()
I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)


def constant_bytes(buf: Buf) -> bytes:
    """The bytes of constant buffer ``buf`` (row-major)."""
    assert buf.data is not None
    return np.ascontiguousarray(buf.data).tobytes()


INLINE_CONSTANT_BYTES = 4096
"""Constants up to this size are globals in the LLVM module; larger ones (weights) are
passed at run time after the arguments, so LLVM never sees (or optimizes) their bytes."""


def emit_module(plan: Plan, target: Target, fast_math: bool = False) -> str:
    """Returns the LLVM IR text of the whole program (see :func:`emit_program`)."""
    return emit_program(plan, target, fast_math)[0]


def emit_program(plan: Plan, target: Target, fast_math: bool = False,
                 profile: list[str] | None = None,
                 recipes: list[dict | None] | None = None) -> tuple[str, list[np.ndarray]]:
    """Returns the LLVM IR text of the whole program and its run-time constants
    (``recipes``, when given, receives each one's :attr:`Buf.recipe`).

    The entry reads run-time constant ``j`` from its argument table at index
    ``len(plan.args) + j``: the executable appends their addresses after the inputs.
    With a ``profile`` list, every kernel call is timed (:mod:`oxla_backend_cpu.profile`)
    and the list receives one label per timed call site.
    """
    module = ir.Module("oxla_cpu")
    module.triple = target.triple
    if profile is not None:
        module.oxla_profiler = Profiler(module)  # type: ignore[attr-defined]
    fns = {id(k): _emit_kernel(module, target, k, p, fast_math) for k, p in _leaf_kernels(plan)}
    constants: list[np.ndarray] = []
    _emit_entry(module, plan, fns, constants, recipes)
    if profile is not None:
        profile.extend(module.oxla_profiler.labels)  # type: ignore[attr-defined]
    return str(module), constants


def _leaf_kernels(plan: Plan):
    """(kernel, its plan) for every kernel that is a function: control kernels' sub-plans
    and initial copies included, control kernels themselves excluded."""
    for k in plan.kernels:
        if isinstance(k, ControlKernel):
            yield from ((i, plan) for i in k.init)
            for p in k.plans + ([k.pre] if k.pre is not None else []):
                yield from _leaf_kernels(p)
        else:
            yield k, plan


def _new_function(module: ir.Module, name: str, n_ptrs: int, noalias: bool,
                  parallel: bool = False) -> tuple[ir.Function, ir.IRBuilder]:
    """A kernel function; a ``parallel`` one takes ``i64 start, i64 end`` after its
    pointers: the range of its outermost loop (see :mod:`oxla_backend_cpu.parallel`)."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR] * n_ptrs + [I64] * (2 * parallel)),
                     name)
    fn.linkage = "internal"
    if noalias:
        for a in fn.args[:n_ptrs]:
            a.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _outer_inner(shape: tuple[int, ...]) -> tuple[int, int]:
    """(outermost extent, elements per outer iteration) of a loop nest over ``shape``."""
    if not shape:
        return 1, 1
    return shape[0], math.prod(shape[1:])


def _loop_split(k: LoopKernel) -> tuple[int, int]:
    """(outer extent, work per outer iteration) of loop kernel ``k``: its elements
    weighted by the cost of its fused ops (:func:`oxla_backend_cpu.parallel.loop_work`)."""
    n, inner = _outer_inner(shape_of(k.root))
    return n, loop_work(inner, k.fused_ops)


def _parallel_range(fn: ir.Function, k: LoopKernel) -> tuple | None:
    """The (start, end) parameters of a parallel kernel, else None; records the
    parallel-for arguments on ``fn`` for the entry."""
    if len(fn.args) < 2 or fn.args[-1].type != I64:
        return None
    n, work = _loop_split(k)
    fn.oxla_parallel = (n, grain_for(n, work))  # type: ignore[attr-defined]
    return fn.args[-2], fn.args[-1]


def _emit_kernel(module: ir.Module, target: Target, k: Kernel, plan: Plan,
                 fast_math: bool) -> ir.Function:
    reads = kernel_reads(k, plan.vbuf)
    writes = kernel_writes(k)
    # Two parameters alias when a kernel reads the same buffer twice.
    par = isinstance(k, LoopKernel) and worth_parallel(*_loop_split(k))
    if isinstance(k, OpKernel) and k.op.name == "stablehlo.reduce":
        par = reduce_parallel(k.op) is not None
    if isinstance(k, OpKernel) and k.op.name == "stablehlo.reduce_window":
        scan = prefix_scan(k.op)
        par = scan is not None and scan_parallel(k.op, scan) is not None
    if isinstance(k, DotKernel) and k.strategy == "gemv":
        par = gemv_parallel(k) is not None
    if isinstance(k, OpKernel) and k.op.name == "stablehlo.sort":
        par = topk_rows(k.op) is not None and topk_parallel(k.op) is not None
    # An in-place loop kernel reads the input it overwrites through its output pointer
    # (one pointer, distance-0 accesses: vectorized without runtime alias checks, and
    # ``noalias`` still holds for every parameter).
    in_place = set()
    if isinstance(k, LoopKernel):
        in_place = {i for i, r in enumerate(reads) if location(r) == location(k.out)}
    alias_free = distinct_locations([r for i, r in enumerate(reads) if i not in in_place]
                                    + writes)
    window = window_update(k.root, k.inputs) if in_place else None
    if window is not None and in_place != {k.inputs.index(window.operands[0])}:
        window = None
    if window is not None:
        par = False  # one small window: serial
    copies = None
    if isinstance(k, LoopKernel) and not in_place and alias_free:
        copies = strided_copy.pieces(k.root, k.inputs, k.fused_ops)
    if copies is not None:
        n_items, item_bytes = strided_copy.items(copies)
        par = worth_parallel(n_items, item_bytes // 4)
    fn, b = _new_function(module, k.name, len(reads) + len(writes), alias_free, par)
    if copies is not None:  # a pure data movement: runtime copies, no loop of its own
        control_only(fn)
        rng = None
        if par:
            fn.oxla_parallel = (n_items, grain_for(n_items, item_bytes // 4))  # type: ignore[attr-defined]
            rng = (fn.args[-2], fn.args[-1])
        strided_copy.emit_copies(module, b, k.name, copies, list(fn.args[:len(reads)]),
                                 fn.args[len(reads)], rng)
        b.ret_void()
        return fn
    s = Scalar(b, module, target, fast_math)
    out = fn.args[len(reads)] if len(fn.args) > len(reads) else None  # none: custom_call
    if isinstance(k, LoopKernel):
        params = [out if i in in_place else a for i, a in enumerate(fn.args[:len(reads)])]
        f = FusedEmitter(s, dict(zip(k.inputs, params)))
        et = k.root.type.element_type
        shape = shape_of(k.root)
        dus = k.root.owner_op
        if window is not None:
            _emit_window(s, f, window, out, et)  # the rest of out already holds its value
        elif dus is not None and dus.name == "stablehlo.dynamic_update_slice" and \
                k.root not in k.inputs:  # (a copy of a materialized value is not one)
            # a copy of the operand (a plain vector loop), then the window over it
            outer = _parallel_range(fn, k)
            with loop_nest(b, shape, outer=outer) as idx:
                f.reset()
                store(s, out, et, linearize(b, idx, shape), f.value_at(dus.operands[0], idx))
            f.reset()  # the copy loop's values do not dominate the window's start indices
            _emit_window(s, f, dus, out, et, outer)
        else:
            outer = _parallel_range(fn, k)
            blocked = transposed_blocking(k)
            cat = _root_concatenate(k) if blocked is None else None
            if cat is not None:
                if outer is not None:  # split the concatenation's dimension 0
                    cs = shape_of(cat.results[0])
                    n, inner = _outer_inner(cs)
                    fn.oxla_parallel = (n, grain_for(n, loop_work(inner, k.fused_ops)))
                _emit_concat_parts(s, f, cat, out, et, outer)
            else:
                nest = loop_nest(b, shape, outer=outer) if blocked is None else \
                    tiled_loop_nest(b, shape, *blocked, outer=outer)
                with nest as idx:
                    f.reset()
                    store(s, out, et, linearize(b, idx, shape), f.value_at(k.root, idx))
    elif isinstance(k, RowKernel):  # reductions fused with their consumer
        emit_rows(s, k, dict(zip(k.inputs, fn.args)), list(fn.args[len(reads):]))
    elif isinstance(k, OpKernel):
        OP_EMITTERS[k.op.name](s, k, dict(zip(k.inputs, fn.args)), list(fn.args[len(reads):]))
    elif isinstance(k, PackKernel):
        _emit_pack(s, k, fn.args[0], out)
    elif isinstance(k, DotKernel):
        _emit_dot(s, k, fn.args[0], fn.args[1], out)
    elif isinstance(k, ConvKernel):
        emit_conv_kernel(s, k, list(fn.args[:len(reads)]), list(fn.args[len(reads):]))
    elif isinstance(k, PanelPackKernel):
        emit_panel_pack(b, k, fn.args[0], out)
    else:
        raise LoweringError(f"kernel {k.name}: no cpu emitter for {type(k).__name__}")
    b.ret_void()
    return fn




def _root_concatenate(k: LoopKernel):
    """The ``concatenate`` a loop kernel's root is, under fused reshapes (a reshape keeps
    the row-major order of the elements, so the concatenation's parts can be written
    at their own linear offsets), or None."""
    v = k.root
    while v not in k.inputs and v.owner_op is not None and \
            v.owner_op.name == "stablehlo.reshape":
        v = v.owner_op.operands[0]
    op = v.owner_op
    if v in k.inputs or op is None or op.name != "stablehlo.concatenate":
        return None
    return op


def _emit_concat_parts(s: Scalar, f: FusedEmitter, op, out: ir.Value, et,
                       outer: tuple | None) -> None:
    """A loop kernel whose root is a ``concatenate`` (spec section "concatenate"): one
    loop nest per operand over its own part of the output, each evaluating only that
    operand's fused expression. The index rule's select chain evaluated every operand's
    expression at every element: an LSTM's stacked hidden states (32 steps of
    ``o * tanh(c)``) cost 32 times their work. ``outer``: the parallel chunk of
    dimension 0, intersected with each part's range there."""
    b = s.b
    dim = op.attr("dimension").value
    shape = shape_of(op.results[0])
    start = 0
    for x in op.operands:
        n = shape_of(x)[dim]
        st, start = start, start + n
        if not n:
            continue
        part = list(shape)
        part[dim] = n
        rng = outer
        if outer is not None and dim == 0:  # the part's rows of this chunk, local
            lo = b.sub(smax(b, outer[0], ir.Constant(I64, st)), ir.Constant(I64, st))
            hi = b.sub(smin(b, outer[1], ir.Constant(I64, st + n)), ir.Constant(I64, st))
            rng = (lo, smax(b, hi, lo))
        with loop_nest(b, part, outer=rng) as idx:
            f.reset()
            gidx = list(idx)
            gidx[dim] = b.add(idx[dim], ir.Constant(I64, st))
            store(s, out, et, linearize(b, gidx, shape), f.value_at(x, idx))
        f.reset()


BLOCKED_MIN_BYTES = 64 * 1024
"""A transposed operand smaller than this stays in L1/L2 anyway: no blocking."""


def _block_for(shape: tuple[int, ...], perm: list[int], itemsize: int,
               nbytes: int) -> tuple[int, int] | None:
    """(``p``, tile) for :func:`~oxla_codegen_llvm.loops.tiled_loop_nest` when a loop over
    ``shape`` reads an operand transposed by ``perm`` (result dim ``i`` = operand dim
    ``perm[i]``): ``p`` is where the operand's innermost (contiguous) dimension lands;
    a tile row spans one 128-byte span of it. None when the innermost dimension stays
    innermost, the operand is small or a dimension is shorter than a tile."""
    r = len(shape)
    if r < 2 or perm[-1] == r - 1 or nbytes < BLOCKED_MIN_BYTES:
        return None
    p = perm.index(r - 1)
    tile = max(8, min(64, 128 // itemsize))
    if shape[p] < tile or shape[-1] < tile:
        return None
    return p, tile


def transposed_blocking(k: LoopKernel) -> tuple[int, int] | None:
    """Cache blocking for loop kernel ``k`` (see :func:`_block_for`) from the first
    ``transpose`` among its fused ops whose result has the kernel's shape and moves the
    operand's innermost dimension (``x.T + y``: each output row reads a column of
    ``x``, one cache line per element, unless the loop goes in blocks)."""
    shape = shape_of(k.root)
    for op in k.fused_ops:
        if op.name != "stablehlo.transpose" or shape_of(op.results[0]) != shape:
            continue
        src = op.operands[0]
        et = src.type.element_type
        item = max(1, et.bitwidth // 8)
        got = _block_for(shape, list(op.attr("permutation")), item,
                         math.prod(shape) * item)
        if got is not None:
            return got
    return None


def _emit_window(s: Scalar, f: FusedEmitter, op, out: ir.Value, et,
                 outer: tuple | None = None) -> None:
    """The update of ``dynamic_update_slice`` ``op`` stored into ``out``, which already
    holds the operand (in place, see :func:`oxla.lowering.window_update`, or copied just
    before), at the spec's clamped start indices (``clamp(start, 0, operand_dim -
    update_dim)``); with ``outer = (start, end)`` (a chunk of a parallel loop) only the
    window's elements whose outermost index lies in the chunk."""
    b = s.b
    shape, ushape = shape_of(op.operands[0]), shape_of(op.operands[1])
    if 0 in ushape:
        return
    starts = [clamp(b, to_index(f, v, []), 0, max(a - c, 0))
              for v, a, c in zip(op.operands[2:], shape, ushape)]
    with loop_nest(b, ushape, "w") as idx:
        f.reset()
        pos = [b.add(st, i) for st, i in zip(starts, idx)]
        at = linearize(b, pos, shape)
        if outer is None:
            store(s, out, et, at, f.value_at(op.operands[1], idx))
        else:
            mine = b.and_(b.icmp_signed(">=", pos[0], outer[0]),
                          b.icmp_signed("<", pos[0], outer[1]))
            with b.if_then(mine):
                store(s, out, et, at, f.value_at(op.operands[1], idx))


def _emit_pack(s: Scalar, k: PackKernel, src: ir.Value, out: ir.Value) -> None:
    b = s.b
    src_shape = shape_of(k.src)
    shape = [src_shape[p] for p in k.perm]
    et = k.src.type.element_type
    item = max(1, et.bitwidth // 8)
    blocked = _block_for(tuple(shape), list(k.perm), item, math.prod(shape) * item)
    with (loop_nest(b, shape, "p") if blocked is None else
          tiled_loop_nest(b, shape, *blocked, "p")) as idx:
        sidx: list = [None] * len(shape)
        for i, p in enumerate(k.perm):
            sidx[p] = idx[i]
        x = load(s, src, et, linearize(b, sidx, src_shape))
        store(s, out, et, linearize(b, idx, shape), x)


def _emit_dot(s: Scalar, k: DotKernel, lhs: ir.Value, rhs: ir.Value, out: ir.Value) -> None:
    """BLAS GEMMs on oxla's threads (see :func:`oxla_backend_cpu.gemm_emit.emit_gemm`)."""
    emit_gemm(s, k, lhs, rhs, out)


def _emit_entry(module: ir.Module, plan: Plan, fns: dict[int, ir.Function],
                constants: list[np.ndarray] | None = None,
                recipes: list[dict | None] | None = None) -> None:
    """The entry function: buffer addresses computed once in its first block, then the
    schedule (kernel calls, parallel loops, BLAS, loops and branches)."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, PTR]), "entry")
    args, results, arena = fn.args
    pro = ir.IRBuilder(fn.append_basic_block("entry"))
    b = ir.IRBuilder(fn.append_basic_block("run"))
    addr: dict[int, ir.Value] = {}

    def address(buf: Buf) -> ir.Value:
        if id(buf) in addr:
            return addr[id(buf)]
        pro.position_at_end(fn.blocks[0])  # other builders insert there too (allocas)
        if buf.base is not None:
            p = pro.gep(address(buf.base), [ir.Constant(I64, buf.offset)], source_etype=I8,
                        name=buf.name)
        elif buf.kind in ("arg", "result"):
            table = args if buf.kind == "arg" else results
            p = pro.load(pro.gep(table, [ir.Constant(I64, buf.index)], source_etype=PTR),
                         typ=PTR, name=buf.name)
        elif buf.kind == "temp":
            p = pro.gep(arena, [ir.Constant(I64, buf.offset)], source_etype=I8, name=buf.name)
        elif constants is not None and buf.nbytes > INLINE_CONSTANT_BYTES:
            data = np.ascontiguousarray(buf.data).reshape(-1).view(np.uint8)
            index = len(plan.args) + len(constants)
            constants.append(data)
            if recipes is not None:
                recipes.append(buf.recipe)
            p = pro.load(pro.gep(args, [ir.Constant(I64, index)], source_etype=PTR),
                         typ=PTR, name=buf.name)
        else:
            data = constant_bytes(buf)
            g = ir.GlobalVariable(module, ir.ArrayType(I8, len(data)),
                                  f"const.{len(module.globals)}")
            g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), bytearray(data))
            g.global_constant = True
            g.linkage = "internal"
            g.align = 64
            p = g
        addr[id(buf)] = p
        return p

    _emit_schedule(b, module, plan, fns, address)
    b.ret_void()
    pro.position_at_end(fn.blocks[0])
    pro.branch(fn.blocks[1])
    # what the entry reads and writes, for a loader to check a manifest against the code
    abi = ir.ArrayType(I64, len(ABI_FIELDS))
    g = ir.GlobalVariable(module, abi, ABI_SYMBOL)
    g.initializer = ir.Constant(abi, [plan.temp_bytes, len(plan.args),
                                      len(constants or []), len(plan.results)])
    g.global_constant = True


ABI_SYMBOL = "oxla_entry_abi"
ABI_FIELDS = ("temp_bytes", "inputs", "constants", "results")
"""``oxla_entry_abi``: an i64 array in the object code with the arena bytes ``entry``
uses and how many input, constant and result pointers it reads from its tables."""


def _emit_schedule(b: ir.IRBuilder, module: ir.Module, plan: Plan, fns: dict[int, ir.Function],
                   address) -> None:
    for k in plan.kernels:
        if isinstance(k, ControlKernel):
            _emit_control(b, module, k, fns, address)
            continue
        _emit_call(b, module, k, plan, fns, address)


def _emit_call(b, module, k: Kernel, plan: Plan | None, fns, address) -> None:
    kfn = fns[id(k)]
    ptrs = [address(x) for x in kernel_reads(k, plan.vbuf if plan else {}) + kernel_writes(k)]
    par = getattr(kfn, "oxla_parallel", None)
    prof = getattr(module, "oxla_profiler", None)
    t0 = prof.now(b) if prof is not None else None
    if par is not None:
        call_parallel(b, module, kfn, ptrs, *par)
    else:
        b.call(kfn, ptrs)
    if prof is not None:
        prof.record(b, kernel_label(k), t0)


def _load_scalar(b: ir.IRBuilder, buf: ir.Value, bits: int) -> ir.Value:
    ty = ir.IntType(max(bits, 8))
    return b.load(b.bitcast(buf, PTR), typ=ty)


def _emit_control(b: ir.IRBuilder, module: ir.Module, k: ControlKernel, fns, address) -> None:
    """``while``: init copies; head: cond plan, branch on its predicate; body: body plan,
    back to head; the loop-invariant kernels (``k.pre``) run between the first true
    condition and the first body (a flag in the head, a phi: 1 on entry, 0 from the
    body). ``if``/``case``: a branch (a switch) to one block per sub-plan."""
    done = b.append_basic_block(f"{k.name}.end")
    if k.kind == "while":
        for i in k.init:
            _emit_call(b, module, i, None, fns, address)
        head = b.append_basic_block(f"{k.name}.head")
        body = b.append_basic_block(f"{k.name}.body")
        entry = b.block
        b.branch(head)
        b.position_at_end(head)
        first = b.phi(ir.IntType(1), name=f"{k.name}.first") if k.pre is not None else None
        _emit_schedule(b, module, k.plans[0], fns, address)
        pred = _load_scalar(b, address(k.pred), 1)
        go = body
        if first is not None:
            go = b.append_basic_block(f"{k.name}.go")
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(pred.type, 0)), go, done)
        if first is not None:
            pre = b.append_basic_block(f"{k.name}.pre")
            b.position_at_end(go)
            b.cbranch(first, pre, body)
            b.position_at_end(pre)
            _emit_schedule(b, module, k.pre, fns, address)
            b.branch(body)
        b.position_at_end(body)
        _emit_schedule(b, module, k.plans[1], fns, address)
        latch = b.block
        b.branch(head)
        if first is not None:
            first.add_incoming(ir.Constant(ir.IntType(1), 1), entry)
            first.add_incoming(ir.Constant(ir.IntType(1), 0), latch)
        b.position_at_end(done)
        return
    blocks = [b.append_basic_block(f"{k.name}.branch{i}") for i in range(len(k.plans))]
    if k.kind == "if":
        pred = _load_scalar(b, address(k.pred), 1)
        b.cbranch(b.icmp_unsigned("!=", pred, ir.Constant(pred.type, 0)), blocks[0], blocks[1])
    else:  # case: an index out of [0, n) runs the last branch
        idx = _load_scalar(b, address(k.pred), k.op.operands[0].type.element_type.width)
        sw = b.switch(idx, blocks[-1])
        for i, blk in enumerate(blocks[:-1]):
            sw.add_case(ir.Constant(idx.type, i), blk)
    for blk, p in zip(blocks, k.plans):
        b.position_at_end(blk)
        _emit_schedule(b, module, p, fns, address)
        b.branch(done)
    b.position_at_end(done)
