"""A persistent worker pool for :func:`oxla_backend_cpu.parallel.runtime`, in LLVM IR.

Starting threads per parallel loop costs tens of microseconds each, and threads that
live for one call also make libraries with per-thread state start cold on every call
(OpenBLAS allocates and faults in its packing buffers per new thread). The pool starts
``oxla_num_threads - 1`` workers on the first parallel loop of a program and parks them
on a condition variable between loops, after polling for the next loop for about 0.1 ms
(:data:`SPINS` polls, each followed by ``sched_yield``, so that a busy machine gets the
core back; a yield that was taken ends the poll). The caller polls the same way before it
waits for the workers. Waking a parked thread, whose idle virtual CPU may be halted,
measured 10-20 us more per loop than this: 128x768x768 GEMMs went from 220 to 231
GFLOP/s on 2 threads, BERT b1 from 124 to 115-120 ms per call (with a CPU hog on the
other core it costs 1-4%, see :data:`SPINS`).

Protocol (one mutex, two condition variables, all in module globals):

* a call takes the pool with an atomic compare-and-swap on ``busy``; a second thread
  calling the same executable meanwhile falls back to starting threads for its loop
  (still correct, as before);
* the caller publishes ``task, ctx, n, t``, the chunk size and ``next = 0``, bumps
  ``gen`` and broadcasts; then it and every worker ``w`` with ``w + 1 < t`` that wakes
  take chunks ``[i, i + chunk)`` with an atomic fetch-add on ``next`` until ``i >= n``
  (dynamic scheduling: a worker that is late, e.g. because another process holds its
  core, gets fewer chunks, or none, instead of holding up the loop). A worker joins a
  loop by incrementing ``running`` under the mutex when it reads the loop's fields, and
  leaves by decrementing it and signalling ``done``; the caller, once ``next >= n``,
  waits for ``running == 0`` only (not for workers that never woke). A worker that
  wakes after its loop ended finds ``next >= n`` and runs nothing; since the next loop
  waits for ``running == 0`` before it publishes, such a late worker never takes a
  chunk of a newer loop with an older task;
* ``oxla_pool_shutdown()`` (external symbol) sets ``quit``, wakes and joins the
  workers; the executable calls it before its machine code is freed.

Sizes of ``pthread_mutex_t``/``pthread_cond_t`` are at most 48 bytes on glibc x86-64 and
AArch64; each gets 128.
"""

from __future__ import annotations

import llvmlite.ir as ir
from oxla_codegen_llvm import for_range

PTR = ir.PointerType()
I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()
SHUTDOWN = "oxla_pool_shutdown"
# words of the state array
INIT, BUSY, GEN, RUNNING, TASK, CTX, N, T, NWORKERS, QUIT, CHUNK = range(11)
NEXT = 16  # the chunk counter, on a cache line of its own


def _c(n: int) -> ir.Constant:
    return ir.Constant(I64, n)


class _Pool:
    """The globals and libc declarations of one module's pool."""

    def __init__(self, module: ir.Module, max_threads: int):
        self.module = module
        self.max_threads = max_threads

        def glob(name: str, ty: ir.Type) -> ir.GlobalVariable:
            g = ir.GlobalVariable(module, ty, name)
            g.initializer = ir.Constant(ty, None)
            g.linkage = "internal"
            g.align = 64
            return g

        self.state = glob("oxla_pool.state", ir.ArrayType(I64, 24))
        self.mutex = glob("oxla_pool.mutex", ir.ArrayType(I8, 128))
        self.work = glob("oxla_pool.work", ir.ArrayType(I8, 128))
        self.done = glob("oxla_pool.done", ir.ArrayType(I8, 128))
        self.tids = glob("oxla_pool.tids", ir.ArrayType(I64, max_threads))

        def decl(name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
            f = module.globals.get(name)
            return f if f is not None else ir.Function(module, ir.FunctionType(ret, args), name)

        self.lock = decl("pthread_mutex_lock", I32, [PTR])
        self.unlock = decl("pthread_mutex_unlock", I32, [PTR])
        self.wait = decl("pthread_cond_wait", I32, [PTR, PTR])
        self.broadcast = decl("pthread_cond_broadcast", I32, [PTR])
        self.signal = decl("pthread_cond_signal", I32, [PTR])
        self.mutex_init = decl("pthread_mutex_init", I32, [PTR, PTR])
        self.cond_init = decl("pthread_cond_init", I32, [PTR, PTR])

    def word(self, b: ir.IRBuilder, i: int) -> ir.Value:
        return self.state.gep([ir.Constant(I32, 0), ir.Constant(I32, i)])  # constant GEP

    def load(self, b: ir.IRBuilder, i: int) -> ir.Value:
        return b.load(self.word(b, i), typ=I64)

    def store(self, b: ir.IRBuilder, i: int, v: ir.Value) -> None:
        b.store(v, self.word(b, i))


def define_pool(module: ir.Module, task_type: ir.FunctionType, create: ir.Function,
                join: ir.Function, max_threads: int) -> tuple[_Pool, ir.Function]:
    """Defines the worker function and ``oxla_pool_shutdown``; returns the pool and the
    worker (``ptr worker(ptr index)``)."""
    p = _Pool(module, max_threads)
    worker = ir.Function(module, ir.FunctionType(PTR, [PTR]), "oxla_pool.worker")
    worker.linkage = "internal"
    entry, loop, head, got, run, after, quit_ = (worker.append_basic_block(n) for n in (
        "entry", "loop", "head", "got", "run", "after", "quit"))
    b = ir.IRBuilder(entry)
    idx = b.ptrtoint(worker.args[0], I64)
    b.branch(loop)
    b.position_at_end(loop)
    mygen = b.phi(I64, name="mygen")
    mygen.add_incoming(_c(0), entry)
    # awake for a while before parking: the next loop of a program usually follows
    # within microseconds, and waking a parked thread (an idle vCPU) costs far more
    _spin_until(b, p, lambda b: b.icmp_signed(
        "!=", b.load_atomic(p.word(b, GEN), "acquire", 8, typ=I64), mygen), "worker.spin")
    b.call(p.lock, [p.mutex])
    b.branch(head)
    b.position_at_end(head)
    stop = b.icmp_signed("!=", p.load(b, QUIT), _c(0))
    gen = p.load(b, GEN)
    wait_blk = worker.append_basic_block("wait")
    check = worker.append_basic_block("check")
    b.cbranch(stop, quit_, check)
    b.position_at_end(check)
    b.cbranch(b.icmp_signed("!=", gen, mygen), got, wait_blk)
    b.position_at_end(wait_blk)
    b.call(p.wait, [p.work, p.mutex])
    b.branch(head)
    b.position_at_end(got)
    task = b.inttoptr(p.load(b, TASK), task_type.as_pointer())
    ctx = b.inttoptr(p.load(b, CTX), PTR)
    n, t, chunk = p.load(b, N), p.load(b, T), p.load(b, CHUNK)
    joins = b.icmp_signed("<", b.add(idx, _c(1)), t)
    b.store_atomic(b.add(p.load(b, RUNNING), b.zext(joins, I64)), p.word(b, RUNNING),
                   "monotonic", 8)
    b.call(p.unlock, [p.mutex])
    b.cbranch(joins, run, after)
    b.position_at_end(run)
    emit_take_chunks(b, p, task, ctx, n, chunk)
    b.call(p.lock, [p.mutex])
    b.store_atomic(b.sub(p.load(b, RUNNING), _c(1)), p.word(b, RUNNING), "release", 8)
    b.call(p.broadcast, [p.done])
    b.call(p.unlock, [p.mutex])
    b.branch(after)
    b.position_at_end(after)
    mygen.add_incoming(gen, after)
    b.branch(loop)
    b.position_at_end(quit_)
    b.call(p.unlock, [p.mutex])
    b.ret(ir.Constant(PTR, None))

    shut = ir.Function(module, ir.FunctionType(VOID, []), SHUTDOWN)
    b = ir.IRBuilder(shut.append_basic_block("entry"))
    live = shut.append_basic_block("live")
    end = shut.append_basic_block("end")
    b.cbranch(b.icmp_signed("!=", p.load(b, INIT), _c(0)), live, end)
    b.position_at_end(live)
    b.call(p.lock, [p.mutex])
    p.store(b, QUIT, _c(1))
    b.call(p.broadcast, [p.work])
    b.call(p.unlock, [p.mutex])
    with for_range(b, p.load(b, NWORKERS), "w") as w:
        tid = b.load(b.gep(p.tids, [_c(0), w]), typ=I64)
        b.call(join, [tid, ir.Constant(PTR, None)])
    p.store(b, INIT, _c(0))
    p.store(b, QUIT, _c(0))
    p.store(b, NWORKERS, _c(0))
    b.branch(end)
    b.position_at_end(end)
    b.ret_void()
    return p, worker


def emit_take_chunks(b: ir.IRBuilder, p: _Pool, task: ir.Value, ctx: ir.Value,
                     n: ir.Value, chunk: ir.Value) -> None:
    """At ``b``: ``while (i = fetch_add(next, chunk)) < n: task(ctx, i, min(i + chunk,
    n))``; leaves ``b`` after the loop."""
    fn = b.function
    head = fn.append_basic_block("chunks.head")
    body = fn.append_basic_block("chunks.body")
    out = fn.append_basic_block("chunks.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.atomic_rmw("add", p.word(b, NEXT), chunk, "monotonic")
    b.cbranch(b.icmp_signed("<", i, n), body, out)
    b.position_at_end(body)
    end = b.add(i, chunk)
    b.call(task, [ctx, i, b.select(b.icmp_signed("<", end, n), end, n)])
    b.branch(head)
    b.position_at_end(out)


def emit_pool_run(b: ir.IRBuilder, p: _Pool, worker: ir.Function, create: ir.Function,
                  task: ir.Value, ctx: ir.Value, n: ir.Value, t: ir.Value,
                  nthreads: ir.Value, fallback: ir.Block, grain: ir.Value) -> None:
    """At ``b``: runs ``task`` over ``[0, n)`` on the pool, up to ``t`` threads taking
    chunks of about ``grain`` iterations or more (1 to 4 per thread), or branches to
    ``fallback`` when another call holds the pool or no worker could start. Ends the
    current function (``ret void``) on the pool path."""
    fn = b.function
    word = p.word(b, BUSY)
    res = b.cmpxchg(word, _c(0), _c(1), "acquire", "monotonic")
    have = b.extract_value(res, 1)
    take = fn.append_basic_block("pool.take")
    b.cbranch(have, take, fallback)
    b.position_at_end(take)
    init = fn.append_basic_block("pool.init")
    ready = fn.append_basic_block("pool.ready")
    b.cbranch(b.icmp_signed("==", p.load(b, INIT), _c(0)), init, ready)

    b.position_at_end(init)
    b.call(p.mutex_init, [p.mutex, ir.Constant(PTR, None)])
    b.call(p.cond_init, [p.work, ir.Constant(PTR, None)])
    b.call(p.cond_init, [p.done, ir.Constant(PTR, None)])
    p.store(b, GEN, _c(0))
    p.store(b, QUIT, _c(0))
    want = b.sub(nthreads, _c(1))
    want = b.select(b.icmp_signed(">", want, _c(p.max_threads)), _c(p.max_threads), want)
    head = fn.append_basic_block("pool.spawn")
    body = fn.append_basic_block("pool.spawn.body")
    ok_blk = fn.append_basic_block("pool.spawn.ok")
    done = fn.append_basic_block("pool.spawned")
    pre = b.block
    b.branch(head)
    b.position_at_end(head)
    w = b.phi(I64, name="w")
    w.add_incoming(_c(0), pre)
    b.cbranch(b.icmp_signed("<", w, want), body, done)
    b.position_at_end(body)
    slot = b.gep(p.tids, [_c(0), w])
    rc = b.call(create, [slot, ir.Constant(PTR, None), worker, b.inttoptr(w, PTR)])
    b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), ok_blk, done)
    b.position_at_end(ok_blk)
    w.add_incoming(b.add(w, _c(1)), ok_blk)
    b.branch(head)
    b.position_at_end(done)
    started = b.phi(I64, name="started")
    started.add_incoming(w, head)
    started.add_incoming(w, body)
    p.store(b, NWORKERS, started)
    p.store(b, INIT, _c(1))
    b.branch(ready)

    b.position_at_end(ready)
    workers = p.load(b, NWORKERS)
    t = b.select(b.icmp_signed(">", t, b.add(workers, _c(1))), b.add(workers, _c(1)), t)
    go = fn.append_basic_block("pool.go")
    release_fb = fn.append_basic_block("pool.release")
    b.cbranch(b.icmp_signed("<=", t, _c(1)), release_fb, go)
    b.position_at_end(release_fb)  # no worker: give the pool back, run the old way
    b.store_atomic(_c(0), word, "release", 8)
    b.branch(fallback)

    b.position_at_end(go)
    b.call(p.lock, [p.mutex])
    _wait_idle(b, p, "pool.settle")  # a late worker of the previous loop leaves first
    p.store(b, TASK, b.ptrtoint(task, I64))
    p.store(b, CTX, b.ptrtoint(ctx, I64))
    p.store(b, N, n)
    p.store(b, T, t)
    # chunks: a multiple of t (1 to 4 per thread, each at least ``grain``), so that on
    # idle cores every thread gets the same share
    per = b.sdiv(n, b.mul(grain, t))
    per = b.select(b.icmp_signed(">", per, _c(4)), _c(4), per)
    per = b.select(b.icmp_signed("<", per, _c(1)), _c(1), per)
    count = b.mul(per, t)
    p.store(b, CHUNK, b.sdiv(b.add(n, b.sub(count, _c(1))), count))
    b.store_atomic(_c(0), p.word(b, NEXT), "monotonic", 8)
    b.store_atomic(b.add(p.load(b, GEN), _c(1)), p.word(b, GEN), "release", 8)
    b.call(p.broadcast, [p.work])
    chunk = p.load(b, CHUNK)
    b.call(p.unlock, [p.mutex])
    emit_take_chunks(b, p, task, ctx, n, chunk)
    _spin_until(b, p, lambda b: b.icmp_signed(
        "==", b.load_atomic(p.word(b, RUNNING), "acquire", 8, typ=I64), _c(0)), "pool.spin")
    b.call(p.lock, [p.mutex])
    _wait_idle(b, p, "pool.wait")
    b.call(p.unlock, [p.mutex])
    b.store_atomic(_c(0), word, "release", 8)
    b.ret_void()


SPINS = 200
"""Polls of a condition (each followed by ``sched_yield``, which on a busy machine hands
the core to whoever waits for it) before a thread parks on a condition variable: about
0.1 ms. Measured, BERT b1 per call on 2 cores, one process comparing the three: 115-120
ms (2,000 polls: 117; none: 124-125); in separate runs with a CPU hog on one core
215-222 ms (2,000 polls: 222-255; none: 206-214)."""


YIELD_BUSY_TICKS = 40_000
"""A ``sched_yield`` that took longer than this many cycle-counter ticks (about 10-20
us) gave the core to another thread: the machine is busy, so the poll stops and the
thread parks at once."""


def _spin_until(b: ir.IRBuilder, p: _Pool, cond, name: str) -> None:
    """At ``b``: polls ``cond(b)`` (an i1) up to :data:`SPINS` times, yielding the core
    between polls; continues after the first true poll, the last one, or a yield that
    took longer than :data:`YIELD_BUSY_TICKS`."""
    fn = b.function
    yield_ = p.module.globals.get("sched_yield") or ir.Function(
        p.module, ir.FunctionType(I32, []), "sched_yield")
    ticks = p.module.globals.get("llvm.readcyclecounter") or ir.Function(
        p.module, ir.FunctionType(I64, []), "llvm.readcyclecounter")
    pre = b.block
    head = fn.append_basic_block(name)
    body = fn.append_basic_block(f"{name}.yield")
    out = fn.append_basic_block(f"{name}.out")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name=f"{name}.i")
    i.add_incoming(_c(0), pre)
    stop = b.or_(cond(b), b.icmp_signed(">=", i, _c(SPINS)))
    b.cbranch(stop, out, body)
    b.position_at_end(body)
    t0 = b.call(ticks, [])
    b.call(yield_, [])
    busy = b.icmp_unsigned(">", b.sub(b.call(ticks, []), t0), _c(YIELD_BUSY_TICKS))
    # a busy machine: jump past the limit, so the next test ends the poll
    i.add_incoming(b.select(busy, _c(SPINS), b.add(i, _c(1))), body)
    b.branch(head)
    b.position_at_end(out)


def _wait_idle(b: ir.IRBuilder, p: _Pool, name: str) -> None:
    """At ``b``, holding the mutex: waits on ``done`` until ``running == 0``."""
    fn = b.function
    head = fn.append_basic_block(name)
    body = fn.append_basic_block(f"{name}.body")
    out = fn.append_basic_block(f"{name}.out")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(b.icmp_signed("!=", p.load(b, RUNNING), _c(0)), body, out)
    b.position_at_end(body)
    b.call(p.wait, [p.done, p.mutex])
    b.branch(head)
    b.position_at_end(out)
