"""The cpu backend's runtime: a pthread-based parallel-for written in LLVM IR.

llvmlite cannot create threads, but generated code can: the runtime module
(:func:`runtime_module`, compiled to an object once per process and loaded into every
program's engine next to the program's object) declares libc's
``pthread_create``/``pthread_join`` and defines

    void oxla_parallel_for(ptr task, ptr ctx, i64 n, i64 grain)

which splits ``[0, n)`` into at most ``oxla_num_threads`` contiguous chunks of at least
``grain`` iterations, runs ``task(ctx, start, end)`` for chunk 0 on the calling thread
and the others on new threads, and joins them. A *task* is a kernel whose outermost loop
runs over ``[start, end)``; ``ctx`` is the array of its buffer pointers. Chunks write
disjoint parts of the output, so there is no synchronization besides the join.

``oxla_num_threads`` is a global (``i64``, 1 until set) that the executable writes after
loading the code (``OXLA_NUM_THREADS``, else the CPUs this process may run on), so the
machine code itself does not depend on the core count. Chunks run on a persistent pool
of parked workers (:mod:`oxla_backend_cpu.pool`), started on the first parallel loop;
when another thread holds the pool (concurrent calls of one executable), threads are
created for the call and joined (tens of microseconds each), which is why a kernel is
only split into chunks of at least ``grain`` iterations.

If ``pthread_create`` fails (resource limits), the chunk runs on the calling thread: a
slower call, never a wrong one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import llvmlite.ir as ir

from oxla.errors import int_setting
from oxla_backend_cpu.pool import define_pool, emit_pool_run

PTR = ir.PointerType()
I32, I64 = ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
TASK_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
TASK_PTR = TASK_TYPE.as_pointer()  # printed as a plain ``ptr`` by LLVM; typed for calls
WORKER_TYPE = ir.FunctionType(PTR, [PTR])
NUM_THREADS = "oxla_num_threads"
PARALLEL_FOR = "oxla_parallel_for"
MAX_THREADS = 256
# Work item = one iteration of a task's outer loop; chunks aim at >= this many scalar
# elements (inner iterations) so thread start-up (~20 us) stays small next to the work.
MIN_ELEMENTS_PER_CHUNK = 1 << 15


def num_threads() -> int:
    """Threads for parallel loops: ``OXLA_NUM_THREADS``, else this process's CPUs.

    Raises:
        OxlaError: ``OXLA_NUM_THREADS`` is not a positive integer.
    """
    env = os.environ.get("OXLA_NUM_THREADS")
    if env:
        return int_setting("OXLA_NUM_THREADS", env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def grain_for(outer: int, inner_elements: int) -> int:
    """Outer iterations per chunk so that a chunk touches at least
    :data:`MIN_ELEMENTS_PER_CHUNK` elements (``inner_elements`` per outer iteration)."""
    per = max(1, inner_elements)
    return max(1, -(-MIN_ELEMENTS_PER_CHUNK // per))


def worth_parallel(outer: int, inner_elements: int) -> bool:
    """True when the loop has at least two chunks' worth of work."""
    return outer >= 2 and outer >= 2 * grain_for(outer, inner_elements)


ELEMENT_COST = {
    **dict.fromkeys(("stablehlo.exponential", "stablehlo.tanh", "stablehlo.logistic"), 6),
    **dict.fromkeys(("stablehlo.exponential_minus_one", "stablehlo.log",
                     "stablehlo.log_plus_one", "stablehlo.sine", "stablehlo.cosine",
                     "stablehlo.tan", "stablehlo.atan2", "stablehlo.power",
                     "stablehlo.cbrt"), 48),
    **dict.fromkeys(("stablehlo.divide", "stablehlo.sqrt", "stablehlo.rsqrt",
                     "stablehlo.remainder"), 2),
}
"""Work per element of a fused op beyond the element's own 1, in units of one plain
elementwise element (a load, an add and a store: 0.06 ns on one AVX-512 core). Measured
on 128x256 f32, one thread: the vectorized f32 ``tanh``/``exp``/``logistic`` of
:mod:`oxla_codegen_llvm.vmath` cost 6-8 adds, ``divide`` and ``sqrt`` 2-4, a libm call
(``log``, ``sine``) about 50. A loop fusing them reaches :data:`MIN_ELEMENTS_PER_CHUNK`
units with fewer elements, so a 128x256 ``tanh`` (a ``fori_loop`` body) runs on every
thread instead of one, while a plain ``add`` of that size stays serial. Ops not listed
add 0."""


def loop_work(elements: int, ops: Sequence) -> int:
    """The work of a loop over ``elements`` output elements computing ``ops`` (the fused
    operations) per element, in :data:`ELEMENT_COST` units; what :func:`grain_for` and
    :func:`worth_parallel` take as ``inner_elements`` per outer iteration."""
    return elements * (1 + sum(ELEMENT_COST.get(op.name, 0) for op in ops))


def _declare(module: ir.Module, name: str, fty: ir.FunctionType) -> ir.Function:
    existing = module.globals.get(name)
    return existing if existing is not None else ir.Function(module, fty, name)


PARALLEL_FOR_TYPE = ir.FunctionType(VOID, [TASK_PTR, PTR, I64, I64])


def runtime(module: ir.Module) -> ir.Function:
    """Declares (once per module) ``oxla_num_threads`` and ``oxla_parallel_for``; they
    are defined by :func:`runtime_module`, compiled once per process and loaded next to
    every program that declares them (:func:`oxla_codegen_llvm.jit.runtime_object`)."""
    existing = module.globals.get(PARALLEL_FOR)
    if existing is not None:
        return existing
    ir.GlobalVariable(module, I64, NUM_THREADS)  # no initializer: an external declaration
    return ir.Function(module, PARALLEL_FOR_TYPE, PARALLEL_FOR)


_EXTENSIONS: dict[str, tuple[Callable[[ir.Module], None], frozenset[str]]] = {}


def register_runtime_extension(name: str, define: Callable[[ir.Module], None],
                               symbols: Sequence[str]) -> None:
    """Registers ``define(module)``: a backend's routines compiled once per process with
    the parallel runtime instead of into every program (the cpu backend's GEMM driver).
    ``symbols``: the functions it defines; a program that declares one of them is loaded
    with a runtime object that contains it (:meth:`HostRuntime.subset`), and only then
    is its code generated. ``define`` may use the parallel-for, the pool and libc, and
    no other extension's functions."""
    _EXTENSIONS[name] = (define, frozenset(symbols))


def runtime_symbols() -> frozenset[str]:
    """The functions and globals the runtime defines that programs may declare."""
    return frozenset({NUM_THREADS, PARALLEL_FOR}.union(*(s for _, s in _EXTENSIONS.values())))


def runtime_extension_module(name: str) -> str:
    """The module that defines registered runtime extension ``name`` (its ``define``'s
    ``__module__``; "" when unknown).

    Raises:
        KeyError: ``name`` is not registered.
    """
    return getattr(_EXTENSIONS[name][0], "__module__", "") or ""


def runtime_extensions() -> tuple[str, ...]:
    """Names of the registered runtime extensions, sorted."""
    return tuple(sorted(_EXTENSIONS))


def runtime_module(triple: str = "", extensions: Sequence[str] | None = None) -> str:
    """The LLVM IR of the parallel runtime: ``oxla_num_threads`` (i64, 1 until the
    executable sets it), ``oxla_parallel_for``, the worker pool and
    ``oxla_pool_shutdown``, all external symbols (see the module doc), and what the
    registered ``extensions`` define (None: all of them).

    Raises:
        KeyError: a name in ``extensions`` is not registered.
    """
    module = ir.Module("oxla_runtime")
    module.triple = triple
    _define_runtime(module)
    for name in runtime_extensions() if extensions is None else sorted(extensions):
        _EXTENSIONS[name][0](module)
    return str(module)


def _define_runtime(module: ir.Module) -> ir.Function:
    nthreads = ir.GlobalVariable(module, I64, NUM_THREADS)
    nthreads.initializer = ir.Constant(I64, 1)
    # default (external) linkage: the executable finds it by name and writes it
    create = _declare(module, "pthread_create",
                      ir.FunctionType(I32, [PTR, PTR, WORKER_TYPE.as_pointer(), PTR]))
    join = _declare(module, "pthread_join", ir.FunctionType(I32, [I64, PTR]))
    # job = 4 words { task, ctx, start, end } (pointers are 64-bit on supported CPUs)

    worker = ir.Function(module, WORKER_TYPE, "oxla_worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    job = worker.args[0]
    words = [b.load(_word(b, job, i), typ=I64) for i in range(4)]
    fields = [b.inttoptr(words[0], TASK_PTR), b.inttoptr(words[1], PTR), words[2], words[3]]
    b.call(fields[0], fields[1:])  # indirect call through the task pointer
    b.ret(ir.Constant(PTR, None))

    fn = ir.Function(module, PARALLEL_FOR_TYPE, PARALLEL_FOR)  # external: programs call it
    task, ctx, n, grain = fn.args
    entry = fn.append_basic_block("entry")
    serial = fn.append_basic_block("serial")
    par = fn.append_basic_block("parallel")
    b = ir.IRBuilder(entry)
    jobs = b.alloca(I64, 4 * MAX_THREADS, name="jobs")
    tids = b.alloca(I64, MAX_THREADS, name="tids")
    started = b.alloca(ir.IntType(8), MAX_THREADS, name="started")
    t = b.load(nthreads, typ=I64)
    t = _smin(b, t, ir.Constant(I64, MAX_THREADS))
    chunks = b.sdiv(n, _smax(b, grain, ir.Constant(I64, 1)))
    t = _smin(b, t, chunks)
    b.cbranch(b.icmp_signed("<=", t, ir.Constant(I64, 1)), serial, par)

    b.position_at_end(serial)
    b.call(task, [ctx, ir.Constant(I64, 0), n])
    b.ret_void()

    b.position_at_end(par)
    pool, pool_worker = define_pool(module, TASK_TYPE, create, join, MAX_THREADS)
    fallback = fn.append_basic_block("spawn")
    emit_pool_run(b, pool, pool_worker, create, task, ctx, n, t, b.load(nthreads, typ=I64),
                  fallback, _smax(b, grain, ir.Constant(I64, 1)))
    b.position_at_end(fallback)
    # chunk c covers [c*n/t, (c+1)*n/t)
    def bound(c: ir.Value) -> ir.Value:
        return b.sdiv(b.mul(c, n), t)

    spawn_head = fn.append_basic_block("spawn.head")
    spawn_body = fn.append_basic_block("spawn.body")
    run0 = fn.append_basic_block("run0")
    b.branch(spawn_head)
    b.position_at_end(spawn_head)
    c = b.phi(I64, name="c")
    c.add_incoming(ir.Constant(I64, 1), fallback)
    b.cbranch(b.icmp_signed("<", c, t), spawn_body, run0)

    b.position_at_end(spawn_body)
    slot = b.gep(jobs, [b.mul(c, ir.Constant(I64, 4))], source_etype=I64)
    words = [b.ptrtoint(task, I64), b.ptrtoint(ctx, I64), bound(c),
             bound(b.add(c, ir.Constant(I64, 1)))]
    for i, v in enumerate(words):
        b.store(v, _word(b, slot, i))
    rc = b.call(create, [b.gep(tids, [c], source_etype=I64), ir.Constant(PTR, None), worker,
                         slot])
    ok = b.icmp_signed("==", rc, ir.Constant(I32, 0))
    b.store(b.zext(ok, ir.IntType(8)), b.gep(started, [c], source_etype=ir.IntType(8)))
    inline = fn.append_basic_block("spawn.inline")
    nxt = fn.append_basic_block("spawn.next")
    b.cbranch(ok, nxt, inline)
    b.position_at_end(inline)  # could not start a thread: run this chunk here
    b.call(worker, [slot])
    b.branch(nxt)
    b.position_at_end(nxt)
    c.add_incoming(b.add(c, ir.Constant(I64, 1)), nxt)
    b.branch(spawn_head)

    b.position_at_end(run0)
    b.call(task, [ctx, ir.Constant(I64, 0), bound(ir.Constant(I64, 1))])
    join_head = fn.append_basic_block("join.head")
    join_body = fn.append_basic_block("join.body")
    join_do = fn.append_basic_block("join.do")
    join_next = fn.append_basic_block("join.next")
    done = fn.append_basic_block("done")
    b.branch(join_head)
    b.position_at_end(join_head)
    j = b.phi(I64, name="j")
    j.add_incoming(ir.Constant(I64, 1), run0)
    b.cbranch(b.icmp_signed("<", j, t), join_body, done)
    b.position_at_end(join_body)
    was = b.load(b.gep(started, [j], source_etype=ir.IntType(8)), typ=ir.IntType(8))
    b.cbranch(b.icmp_unsigned("!=", was, ir.Constant(ir.IntType(8), 0)), join_do, join_next)
    b.position_at_end(join_do)
    b.call(join, [b.load(b.gep(tids, [j], source_etype=I64), typ=I64), ir.Constant(PTR, None)])
    b.branch(join_next)
    b.position_at_end(join_next)
    j.add_incoming(b.add(j, ir.Constant(I64, 1)), join_next)
    b.branch(join_head)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _word(b: ir.IRBuilder, base: ir.Value, i: int) -> ir.Value:
    return b.gep(base, [ir.Constant(I64, i)], source_etype=I64)


def _smin(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _smax(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)


def task_wrapper(module: ir.Module, kernel: ir.Function, n_ptrs: int) -> ir.Function:
    """``void <kernel>.task(ptr ctx, i64 start, i64 end)``: calls ``kernel(ctx[0], ...,
    ctx[n_ptrs-1], start, end)`` (a kernel whose last two parameters are its outer range)."""
    fn = ir.Function(module, TASK_TYPE, f"{kernel.name}.task")
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx, start, end = fn.args
    ptrs = [b.load(b.gep(ctx, [ir.Constant(I64, i)], source_etype=PTR), typ=PTR)
            for i in range(n_ptrs)]
    b.call(kernel, ptrs + [start, end])
    b.ret_void()
    return fn


def call_parallel(b: ir.IRBuilder, module: ir.Module, kernel: ir.Function,
                  ptrs: Sequence[ir.Value], n: int | ir.Value, grain: int) -> None:
    """Emits, at ``b``, a parallel run of ``kernel(ptrs..., start, end)`` over ``[0, n)``
    (``n``: a constant or an i64 computed at run time).

    ``kernel`` must take ``len(ptrs)`` pointers and then ``i64 start, i64 end`` and run
    its outermost loop over that range only.
    """
    pfor = runtime(module)
    task = task_wrapper(module, kernel, len(ptrs))
    with b.goto_entry_block():
        ctx = b.alloca(PTR, max(1, len(ptrs)), name=f"{kernel.name}.ctx")
    for i, p in enumerate(ptrs):
        b.store(p, b.gep(ctx, [ir.Constant(I64, i)], source_etype=PTR))
    count = n if isinstance(n, ir.Value) else ir.Constant(I64, n)
    b.call(pfor, [task, ctx, count, ir.Constant(I64, grain)])


def call_parallel_if(b: ir.IRBuilder, module: ir.Module, parallel: ir.Value,
                     kernel: ir.Function, ptrs: Sequence[ir.Value], n: ir.Value) -> None:
    """Emits, at ``b``: when the i1 ``parallel`` holds, :func:`call_parallel` of
    ``kernel`` over ``[0, n)`` (grain 1), else ``kernel(ptrs..., 0, n)`` on this thread;
    leaves ``b`` after both."""
    fn = b.function
    par = fn.append_basic_block("parallel")
    seq = fn.append_basic_block("sequential")
    done = fn.append_basic_block("done")
    b.cbranch(parallel, par, seq)
    b.position_at_end(par)
    call_parallel(b, module, kernel, ptrs, n, 1)
    b.branch(done)
    b.position_at_end(seq)
    b.call(kernel, [*ptrs, ir.Constant(I64, 0), n])
    b.branch(done)
    b.position_at_end(done)


class HostRuntime:
    """This runtime as :func:`oxla_codegen_llvm.jit.compile_ir` takes it: the symbols it
    defines, a key naming what is in it, and its LLVM IR.

    ``extensions``: the runtime extensions it contains (None: every registered one, the
    default instance :data:`HOST_RUNTIME`). A program is loaded with
    ``HOST_RUNTIME.subset(declared)``, so a program without an int8 dot does not wait
    for the int8 GEMM driver's code generation (0.2-0.4 s per process with the compile
    cache off or cold).
    """

    def __init__(self, extensions: tuple[str, ...] | None = None) -> None:
        self.extensions = extensions

    def _names(self) -> tuple[str, ...]:
        return runtime_extensions() if self.extensions is None else self.extensions

    def symbols(self) -> frozenset[str]:
        return frozenset({NUM_THREADS, PARALLEL_FOR}.union(
            *(_EXTENSIONS[n][1] for n in self._names())))

    def key(self) -> tuple[str, ...]:
        return self._names()

    def module_text(self, triple: str) -> str:
        return runtime_module(triple, self._names())

    def subset(self, declared: frozenset[str]) -> HostRuntime:
        """The runtime a program that declares ``declared`` needs: the parallel-for and
        pool, and the extensions (of this one's) that define one of those symbols."""
        return HostRuntime(tuple(n for n in self._names() if _EXTENSIONS[n][1] & declared))


HOST_RUNTIME = HostRuntime()
"""The one instance the backend passes to the JIT."""
