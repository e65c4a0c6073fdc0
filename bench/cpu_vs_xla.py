"""oxla ``cpu`` vs XLA:CPU (jaxlib) vs IREE (``llvm-cpu``) on the same StableHLO text.

Not a test. Every workload is lowered once with ``jax.jit(f).lower(*args).as_text()``;
that one text is compiled by each engine. Timing is one interleaved run: in each
round every engine gets one untimed call and then a block of timed calls, so drift
(turbo, other processes) hits all engines alike; the reported figure is the median
per-call time over all rounds, shown as a ratio to XLA measured in the same run (bare
times are in the JSON only). Reference points measured in the same run: numpy's
matmul for the GEMM (GFLOP/s) and a STREAM-style triad ``a = b + s*c`` for the
elementwise chain (GB/s).

Compile times: each engine first compiles the smallest workload once, untimed (imports,
LLVM/XLA start-up), and oxla builds its runtime object (parallel-for and GEMM driver,
once per process; its time is reported apart), then each workload once, parse
included; oxla without its persistent cache (a cache hit is timed separately).

What each call includes: oxla ``exe(*numpy_arrays)`` (argument checks, one native call,
fresh output arrays); XLA ``execute(device_buffers)`` + ``block_until_ready`` on
buffers put once (on the CPU a device buffer is host memory); IREE ``fn(*numpy_arrays)``
+ ``to_host()``.

IREE is optional (``pip install iree-base-compiler iree-base-runtime``); when it is not
installed or rejects a text, the table says so.

Usage::

    python bench/cpu_vs_xla.py [--quick] [--json OUT.json] [--rounds N] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from timing import interleaved

F32 = np.float32


@dataclass
class Workload:
    name: str
    fn: Callable
    args: list[np.ndarray]
    flops: float = 0.0  # per call, for GFLOP/s
    bytes_moved: float = 0.0  # per call, for GB/s
    text: str = ""


def _workloads(quick: bool) -> list[Workload]:
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(F32)

    width, batch = (256, 16) if quick else (1024, 64)
    gemm_n = 256 if quick else 1024
    chain_n = (1 << 20) if quick else (1 << 24)
    rows = 512 if quick else 4096
    seq, d_model, heads, tb = (64, 128, 4, 2) if quick else (256, 512, 8, 4)

    def mlp(x, w1, w2, w3):
        return jax.nn.relu(jax.nn.relu(x @ w1) @ w2) @ w3

    def gemm(a, b):
        return a @ b

    def chain(a, b):  # 10 elementwise ops
        x = a * b
        x = x + a
        x = x * 1.5
        x = x - b
        x = jnp.maximum(x, 0.0)
        x = jnp.abs(x)
        x = x + 1.0
        x = jnp.sqrt(x)
        x = x / b
        return -x

    def softmax(x):
        return jax.nn.softmax(x, axis=-1)

    def layer_norm(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def cnn(x, k1, k2, w):
        dn = ("NCHW", "OIHW", "NCHW")
        y = jax.nn.relu(jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME",
                                                     dimension_numbers=dn))
        y = jax.nn.relu(jax.lax.conv_general_dilated(y, k2, (2, 2), "SAME",
                                                     dimension_numbers=dn))
        return y.reshape(y.shape[0], -1) @ w

    def block(x, wq, wk, wv, wo, w1, w2, g1, g2):
        def ln(h, g):
            m = h.mean(-1, keepdims=True)
            v = ((h - m) ** 2).mean(-1, keepdims=True)
            return (h - m) * jax.lax.rsqrt(v + 1e-5) * g

        b_, s_, d_ = x.shape
        dh = d_ // heads
        h = ln(x, g1)
        q, k, v = ((h @ w).reshape(b_, s_, heads, dh) for w in (wq, wk, wv))
        att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
        mask = jnp.tril(jnp.ones((s_, s_), bool))
        att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b_, s_, d_)
        x = x + o @ wo
        return x + jax.nn.gelu(ln(x, g2) @ w1) @ w2

    img, ch = (16, 8) if quick else (32, 16)
    d = d_model
    out = [
        Workload("mlp", mlp, [r(batch, width), r(width, width, scale=0.03),
                              r(width, width, scale=0.03), r(width, width, scale=0.03)],
                 flops=3 * 2 * batch * width * width),
        Workload("gemm", gemm, [r(gemm_n, gemm_n), r(gemm_n, gemm_n)],
                 flops=2 * gemm_n**3),
        Workload("chain", chain, [r(chain_n), r(chain_n) + 3],
                 bytes_moved=3 * 4 * chain_n),
        Workload("softmax", softmax, [r(rows, 1024)]),
        Workload("layer_norm", layer_norm, [r(rows, 1024), r(1024), r(1024)]),
        Workload("cnn", cnn, [r(8, 3, img, img), r(ch, 3, 3, 3, scale=0.2),
                              r(ch, ch, 3, 3, scale=0.1),
                              r(ch * (img // 2) ** 2, 10, scale=0.01)]),
        Workload("transformer", block, [r(tb, seq, d)] + [r(d, d, scale=0.04)] * 4
                 + [r(d, 4 * d, scale=0.04), r(4 * d, d, scale=0.02), r(d), r(d)]),
        Workload("one_op", lambda a, b: a + b, [r(4), r(4)]),
    ]
    for w in out:
        w.text = jax.jit(w.fn).lower(*w.args).as_text()
    return out


# --- engines -------------------------------------------------------------------------

@dataclass
class Compiled:
    call: Callable[[], object] | None
    compile_s: float = 0.0
    temp_bytes: int | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def _oxla(w: Workload, cache_dir: str) -> Compiled:
    from oxla_backend_cpu.backend import CPUBackend

    from oxla.ir import parse_module
    from oxla.protocols import CompileOptions

    backend = CPUBackend()
    opts = CompileOptions()
    try:
        t0 = time.perf_counter()
        exe = backend.compile(parse_module(w.text, f"{w.name}.mlir"), _no_cache(opts))
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Compiled(None, note=f"unsupported: {str(exc).splitlines()[0][:90]}")
    extra = {}
    hit = _cache_hit_time(backend, w, opts, cache_dir)
    if hit is not None:
        extra["cache_hit_s"] = hit
    args = w.args
    return Compiled(lambda: exe(*args), compile_s, int(exe.stats.get("temp_bytes", 0)),
                    extra=extra)


def _oxla_runtime_build() -> float:
    """Seconds to build oxla's runtime object (the parallel-for and the GEMM driver),
    which every process does once, at its first program that needs it."""
    import oxla_backend_cpu.gemm_emit  # noqa: F401 - registers the GEMM driver
    from oxla_backend_cpu.parallel import HOST_RUNTIME
    from oxla_codegen_llvm import CPUTarget
    from oxla_codegen_llvm.jit import runtime_object

    t0 = time.perf_counter()
    runtime_object(CPUTarget.host(), None, HOST_RUNTIME)
    return time.perf_counter() - t0


def _no_cache(opts):
    import dataclasses

    if "cache" in {f.name for f in dataclasses.fields(opts)}:
        return dataclasses.replace(opts, cache=False)
    return opts


def _cache_hit_time(backend, w: Workload, opts, cache_dir: str) -> float | None:
    """Compile twice through the persistent cache (``OXLA_CACHE_DIR`` = a fresh temp
    dir): the second compile is a hit; returns its time (parse included)."""
    import dataclasses

    from oxla.ir import parse_module

    if "cache" not in {f.name for f in dataclasses.fields(opts)}:
        return None
    old = os.environ.get("OXLA_CACHE_DIR")
    os.environ["OXLA_CACHE_DIR"] = cache_dir
    try:
        backend.compile(parse_module(w.text), dataclasses.replace(opts, cache=True))
        t0 = time.perf_counter()
        exe = backend.compile(parse_module(w.text), dataclasses.replace(opts, cache=True))
        took = time.perf_counter() - t0
        return took if exe.stats.get("cache") == "hit" else None
    finally:
        if old is None:
            os.environ.pop("OXLA_CACHE_DIR", None)
        else:
            os.environ["OXLA_CACHE_DIR"] = old


def _xla(w: Workload) -> Compiled:
    import jax
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc

    backend = xb.get_backend("cpu")
    dev = backend.local_devices()[0]
    t0 = time.perf_counter()
    ctx = mlir.make_ir_context()
    with ctx:
        module = mlir.ir.Module.parse(w.text)
        exe = backend.compile_and_load(module, executable_devices=xc.DeviceList((dev,)),
                                       compile_options=xc.CompileOptions())
    compile_s = time.perf_counter() - t0
    temp = None
    try:
        temp = int(exe.get_compiled_memory_stats().temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - older jaxlib
        pass
    bufs = [jax.device_put(a, dev) for a in w.args]

    def call():
        outs = exe.execute(bufs)
        for o in outs:
            o.block_until_ready()
        return outs

    return Compiled(call, compile_s, temp)


def _iree(w: Workload) -> Compiled:
    try:
        import iree.compiler as ic
        import iree.runtime as rt
    except ImportError:
        return Compiled(None, note="not installed")
    try:
        t0 = time.perf_counter()
        vmfb = ic.compile_str(w.text, target_backends=["llvm-cpu"], input_type="stablehlo",
                              extra_args=["--iree-llvmcpu-target-cpu=host"])
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        first = [ln for ln in str(exc).splitlines() if "error" in ln][:1] or [str(exc)[:90]]
        return Compiled(None, note=f"rejected: {first[0].strip()[:90]}")
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
    mod_name = [n for n in ctx.modules if n != "hal"][-1]
    fn = ctx.modules[mod_name]["main"]
    args = w.args

    def call():
        out = fn(*args)
        outs = out if isinstance(out, tuple | list) else [out]
        return [o.to_host() for o in outs]

    return Compiled(call, compile_s)


# --- timing ---------------------------------------------------------------------------

def _interleaved(calls: dict[str, Callable], rounds: int, budget_s: float,
                 settle_s: float) -> dict:
    times = interleaved(calls, rounds, budget_s, settle_s, max_calls=1000)
    return {k: statistics.median(v) for k, v in times.items()}


def _triad(n: int) -> tuple[Callable, float]:
    b = np.random.default_rng(1).standard_normal(n).astype(F32)
    c = np.random.default_rng(2).standard_normal(n).astype(F32)
    a = np.empty_like(b)

    def call():
        np.multiply(c, F32(3.0), out=a)
        np.add(a, b, out=a)

    # numpy does the triad in two passes: 4 streams of n floats (r c, w a, r a+b, w a)
    # would overstate traffic; STREAM counts 3 streams (r b, r c, w a) for one fused pass.
    return call, 3 * 4 * n


def run(quick: bool, rounds: int, only: set[str] | None) -> dict:
    import jax

    out: dict = {"quick": quick, "rounds": rounds, "cpu_count": os.cpu_count(),
                 "jax": jax.__version__, "workloads": {}}
    try:
        import iree.compiler

        out["iree"] = getattr(iree.compiler, "__version__", "installed")
    except ImportError:
        out["iree"] = None
    budget = 0.05 if quick else 0.25
    settle = 0.2
    with tempfile.TemporaryDirectory() as cache_dir:
        workloads = _workloads(quick)
        # One-time process costs (imports, LLVM and XLA start-up) are no program's compile
        # time: both engines compile the smallest workload once, untimed, and oxla builds
        # its runtime object (parallel-for, GEMM driver: once per process; timed apart).
        _oxla(workloads[-1], cache_dir)
        _xla(workloads[-1])
        out["oxla_runtime_build_s"] = _oxla_runtime_build()
        for w in workloads:
            if only and w.name not in only:
                continue
            engines = {"oxla": _oxla(w, cache_dir), "xla": _xla(w), "iree": _iree(w)}
            calls = {k: c.call for k, c in engines.items() if c.call is not None}
            ref_bytes = 0.0
            if w.name == "gemm":
                a, b = w.args
                calls["numpy"] = lambda a=a, b=b: a @ b
            if w.name == "chain":
                calls["triad"], ref_bytes = _triad(w.args[0].size)
            med = _interleaved(calls, rounds, budget, settle)
            row: dict = {"median_s": med, "compile_s": {}, "temp_bytes": {}, "notes": {}}
            for k, c in engines.items():
                row["compile_s"][k] = c.compile_s if c.call else None
                row["temp_bytes"][k] = c.temp_bytes
                if c.note:
                    row["notes"][k] = c.note
                row.update(c.extra)
            x = med.get("xla")
            row["ratio_to_xla"] = {k: v / x for k, v in med.items()} if x else {}
            if w.flops:
                row["gflops"] = {k: w.flops / v / 1e9 for k, v in med.items()}
            if w.bytes_moved:
                row["gbps"] = {k: w.bytes_moved / v / 1e9 for k, v in med.items()
                               if k != "triad"}
                row["gbps"]["triad"] = ref_bytes / med["triad"] / 1e9
            out["workloads"][w.name] = row
            print(_row_line(w.name, row), flush=True)
    ratios = [r["ratio_to_xla"]["oxla"] for r in out["workloads"].values()
              if "oxla" in r.get("ratio_to_xla", {})]
    out["geomean_oxla_over_xla"] = math.exp(statistics.mean(map(math.log, ratios))) \
        if ratios else None
    iree_r = [r["ratio_to_xla"]["iree"] for r in out["workloads"].values()
              if "iree" in r.get("ratio_to_xla", {})]
    out["geomean_iree_over_xla"] = math.exp(statistics.mean(map(math.log, iree_r))) \
        if iree_r else None
    return out


def _fmt_ratio(row: dict, k: str) -> str:
    r = row["ratio_to_xla"].get(k)
    if r is not None:
        return f"{r:6.2f}x"
    return row["notes"].get(k, "-")[:40]


def _row_line(name: str, row: dict) -> str:
    ct = row["compile_s"]
    cr = (f"{ct['oxla'] / ct['xla']:5.2f}x" if ct.get("oxla") and ct.get("xla") else "  -  ")
    tb = row["temp_bytes"]
    extra = ""
    if "gflops" in row and "numpy" in row["gflops"]:
        extra = f" oxla {row['gflops']['oxla'] / row['gflops']['numpy']:.0%} of numpy GFLOP/s"
    if "gbps" in row and "oxla" in row["gbps"]:
        extra = (f" oxla {row['gbps']['oxla']:.1f} GB/s = "
                 f"{row['gbps']['oxla'] / row['gbps']['triad']:.0%} of triad")
    if "cache_hit_s" in row:
        extra += f" cache hit {row['cache_hit_s'] * 1e3:.1f} ms"
    return (f"{name:12s} oxla {_fmt_ratio(row, 'oxla'):>8s}  iree {_fmt_ratio(row, 'iree'):>8s}"
            f"  compile oxla/xla {cr}  temp oxla {tb.get('oxla')} xla {tb.get('xla')}{extra}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--json", default=None, help="write results here")
    p.add_argument("--only", default=None, help="comma-separated workload names")
    a = p.parse_args(argv)
    rounds = a.rounds or (3 if a.quick else 5)
    print("latency ratios to XLA:CPU (median, same interleaved run; <1 = faster than XLA)")
    res = run(a.quick, rounds, set(a.only.split(",")) if a.only else None)
    g, gi = res["geomean_oxla_over_xla"], res["geomean_iree_over_xla"]
    print(f"geomean oxla/xla: {g:.2f}x" if g else "geomean oxla/xla: -")
    print(f"geomean iree/xla: {gi:.2f}x" if gi else "geomean iree/xla: -")
    if res.get("oxla_runtime_build_s") is not None:
        print(f"oxla runtime object, built once per process: "
              f"{res['oxla_runtime_build_s'] * 1e3:.0f} ms (not in the compile ratios)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
