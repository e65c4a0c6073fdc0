"""oxla ``cpu`` through its JAX and TensorFlow frontends vs the frameworks' own XLA.

Not a test. Two workloads, each run through the frontend a user would call:

* ``transformer``: a JAX transformer block (layer norm, causal attention with softmax,
  MLP with gelu; random weights), ``oxla_frontend_jax.jit(f, backend="cpu")`` vs
  ``jax.jit(f)`` (XLA:CPU, the anchor).
* ``mobilenet_v2``: Keras MobileNetV2 (``weights=None``, batch norms given random
  statistics so the logits are not ~0), ``oxla_frontend_tf.compile(model, specs,
  backend="cpu")`` vs TensorFlow ``tf.function(jit_compile=True)`` (XLA, the anchor),
  plain ``tf.function`` (TF graph executor) and eager ``model(x, training=False)``.

Outputs are checked first (max relative error = max |oxla - anchor| / max |anchor|).
Timing is one interleaved run: in each round every engine gets a short pause (thread
pools go back to sleep), one untimed call, then a block of timed calls; the figure is
the median per-call time over all rounds, reported as a ratio to the anchor measured in
the same run (bare times are in the JSON only).

Compile times, end to end as a user sees them (tracing and lowering by the framework
included): oxla's first call on an empty persistent cache (``OXLA_CACHE_DIR`` = a fresh
temp dir), oxla's cache hit (a new frontend object for the same function: trace, lower,
import, cache lookup), and each framework's first call (trace + XLA/graph compile + one
run; the first call's run time is small next to compiling). The line "oxla backend
share" says whether the second compile really hit the cache: the cache key is the module
text, and TensorFlow names each lowered module with a per-trace counter
(``@a_inference_call_3033__``), so today a re-lowered TF function misses.

What each timed call includes: oxla jax ``jf(*numpy_arrays)`` returning jax arrays (the
drop-in path); ``jax.jit`` on device arrays put once + ``block_until_ready``; oxla tf
``fn(numpy)`` returning numpy (oxla tf's first call counts ``compile`` + one run); TF engines on a ``tf.constant`` made once, ``.numpy()``
of the result.

Usage::

    python bench/frontends_vs_xla.py [--quick] [--json OUT.json] [--rounds N] [--only NAME,...]
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
class Engine:
    call: Callable[[], object] | None
    first_s: float | None = None  # first call / first compile, seconds
    hit_s: float | None = None  # oxla: compile through a warm persistent cache
    out: np.ndarray | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


def _rel_err(actual: np.ndarray, expected: np.ndarray) -> float:
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    scale = float(np.max(np.abs(e))) or 1.0
    return float(np.max(np.abs(a - e))) / scale


def _first(fn: Callable[[], object]) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _backend_stats(miss: dict, hit: dict) -> dict:
    """The cpu backend's own share of the first compile and of the cache hit (the rest
    of the end-to-end figure is the framework tracing/lowering and oxla's import)."""
    return {"backend_first_s": miss.get("compile_seconds"), "first_cache": miss.get("cache"),
            "backend_hit_s": hit.get("compile_seconds"), "hit_cache": hit.get("cache")}


# --- workload 1: JAX transformer block -------------------------------------------------

def _transformer(quick: bool) -> tuple[dict, dict]:
    import jax
    import jax.numpy as jnp
    import oxla_frontend_jax

    batch, seq, d, heads = (4, 64, 512, 8) if quick else (4, 256, 512, 8)
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(F32)

    def block(x, p):
        def ln(h, g, b):
            m = h.mean(-1, keepdims=True)
            v = ((h - m) ** 2).mean(-1, keepdims=True)
            return (h - m) * jax.lax.rsqrt(v + 1e-5) * g + b

        b_, s_, d_ = x.shape
        dh = d_ // heads
        h = ln(x, p["g1"], p["b1"])
        q, k, v = ((h @ p[w]).reshape(b_, s_, heads, dh) for w in ("wq", "wk", "wv"))
        att = jnp.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
        mask = jnp.tril(jnp.ones((s_, s_), bool))
        att = jax.nn.softmax(jnp.where(mask, att, -1e9), axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", att, v).reshape(b_, s_, d_)
        x = x + o @ p["wo"]
        h = jax.nn.gelu(ln(x, p["g2"], p["b2"]) @ p["w1"] + p["c1"])
        return x + h @ p["w2"] + p["c2"]

    params = {"wq": r(d, d, scale=0.04), "wk": r(d, d, scale=0.04),
              "wv": r(d, d, scale=0.04), "wo": r(d, d, scale=0.04),
              "w1": r(d, 4 * d, scale=0.04), "c1": r(4 * d, scale=0.1),
              "w2": r(4 * d, d, scale=0.02), "c2": r(d, scale=0.1),
              "g1": 1 + r(d, scale=0.1), "b1": r(d, scale=0.1),
              "g2": 1 + r(d, scale=0.1), "b2": r(d, scale=0.1)}
    x = r(batch, seq, d)
    info = {"shape": f"batch {batch} seq {seq} d_model {d} heads {heads} mlp {4 * d}",
            "anchor": "jax_xla"}
    engines: dict[str, Engine] = {}

    # oxla: first compile (cold persistent cache), then a new jit object = cache hit
    jf = oxla_frontend_jax.jit(block, backend="cpu")
    out, first = _first(lambda: jf(x, params))
    miss = dict(jf.entries()[0].executable.stats)
    hit_jf = oxla_frontend_jax.jit(block, backend="cpu")
    _, hit = _first(lambda: hit_jf(x, params))
    engines["oxla"] = Engine(lambda: jf(x, params), first, hit, np.asarray(out),
                             extra=_backend_stats(miss, hit_jf.entries()[0].executable.stats))

    xj = jax.jit(block)
    dx, dp = jax.device_put(x), jax.device_put(params)
    out, first = _first(lambda: xj(dx, dp).block_until_ready())
    engines["jax_xla"] = Engine(lambda: xj(dx, dp).block_until_ready(), first,
                                out=np.asarray(out))
    return info, engines


# --- workload 2: Keras MobileNetV2 -----------------------------------------------------

def _randomize_batch_norm(model, seed: int = 0) -> None:
    """As tests/frontend_tf does: non-trivial batch norm statistics, or ``weights=None``
    applications shrink activations to ~1e-10 and any result would look right."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        if type(layer).__name__ != "BatchNormalization":
            continue
        for var in layer.weights:
            n = var.name.split("/")[-1]
            shape = tuple(var.shape)
            if "gamma" in n or "variance" in n:
                var.assign(rng.uniform(0.5, 1.5, shape).astype(F32))
            else:
                var.assign(rng.normal(0.0, 0.1, shape).astype(F32))


def _mobilenet(quick: bool) -> tuple[dict, dict]:
    import keras
    import oxla_frontend_tf
    import tensorflow as tf

    size, alpha, batch = (96, 0.35, 1) if quick else (224, 1.0, 8)
    keras.utils.set_random_seed(0)
    model = keras.applications.MobileNetV2(input_shape=(size, size, 3), alpha=alpha,
                                           weights=None, classifier_activation=None)
    _randomize_batch_norm(model)
    x = np.random.default_rng(1).uniform(-1, 1, (batch, size, size, 3)).astype(F32)
    tx = tf.constant(x)
    spec = [tf.TensorSpec(x.shape, tf.float32)]
    info = {"shape": f"{batch}x{size}x{size}x3 alpha {alpha}",
            "params": int(model.count_params()), "anchor": "tf_xla"}
    engines: dict[str, Engine] = {}

    fn, first = _first(lambda: oxla_frontend_tf.compile(model, spec, backend="cpu"))
    miss = dict(fn.executable.stats)
    ref, run_s = _first(lambda: fn(x))
    again, hit = _first(lambda: oxla_frontend_tf.compile(model, spec, backend="cpu"))
    engines["oxla"] = Engine(lambda: fn(x), first + run_s, hit, np.asarray(ref),
                             extra=_backend_stats(miss, again.executable.stats))

    def infer(t):
        return model(t, training=False)

    xla = tf.function(infer, jit_compile=True)
    out, first = _first(lambda: xla(tx).numpy())
    engines["tf_xla"] = Engine(lambda: xla(tx).numpy(), first, out=out)

    graph = tf.function(infer, jit_compile=False)
    out, first = _first(lambda: graph(tx).numpy())
    engines["tf_graph"] = Engine(lambda: graph(tx).numpy(), first, out=out)

    out, first = _first(lambda: infer(tx).numpy())
    engines["tf_eager"] = Engine(lambda: infer(tx).numpy(), first, out=out)
    info["logit_std"] = float(np.std(engines["tf_xla"].out))
    return info, engines


# --- timing ----------------------------------------------------------------------------

def _interleaved(calls: dict[str, Callable], rounds: int, budget_s: float,
                 settle_s: float) -> tuple[dict, dict]:
    times = interleaved(calls, rounds, budget_s, settle_s, max_calls=200)
    med = {k: statistics.median(v) for k, v in times.items()}
    spread = {k: (min(v), max(v), len(v)) for k, v in times.items()}
    return med, spread


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "?"


WORKLOADS = {"transformer": _transformer, "mobilenet_v2": _mobilenet}


def run(quick: bool, rounds: int, only: set[str] | None) -> dict:
    import jax
    import tensorflow as tf

    out: dict = {"quick": quick, "rounds": rounds, "cpu_count": os.cpu_count(),
                 "load_before": _load(), "jax": jax.__version__, "tensorflow": tf.__version__,
                 "workloads": {}}
    budget = 0.3 if quick else 1.0
    old = os.environ.get("OXLA_CACHE_DIR")
    with tempfile.TemporaryDirectory() as cache_dir:
        os.environ["OXLA_CACHE_DIR"] = cache_dir
        try:
            for name, make in WORKLOADS.items():
                if only and name not in only:
                    continue
                info, engines = make(quick)
                anchor = info["anchor"]
                ref = engines[anchor].out
                row: dict = dict(info)
                row["max_rel_err_vs_anchor"] = {k: _rel_err(e.out, ref)
                                                for k, e in engines.items() if k != anchor}
                calls = {k: e.call for k, e in engines.items() if e.call is not None}
                med, spread = _interleaved(calls, rounds, budget, 0.3)
                row["median_s"] = med
                row["min_max_n"] = spread
                row["ratio_to_anchor"] = {k: v / med[anchor] for k, v in med.items()}
                row["first_call_s"] = {k: e.first_s for k, e in engines.items()}
                row["oxla_cache_hit_s"] = engines["oxla"].hit_s
                row["oxla_extra"] = engines["oxla"].extra
                out["workloads"][name] = row
                print(_row_lines(name, row), flush=True)
        finally:
            if old is None:
                os.environ.pop("OXLA_CACHE_DIR", None)
            else:
                os.environ["OXLA_CACHE_DIR"] = old
    out["load_after"] = _load()
    return out


def _row_lines(name: str, row: dict) -> str:
    anchor = row["anchor"]
    lines = [f"{name} ({row['shape']}) anchor {anchor}; max rel err vs anchor: "
             + ", ".join(f"{k} {v:.1e}" for k, v in row["max_rel_err_vs_anchor"].items())]
    lines.append("  latency / anchor: " + "  ".join(
        f"{k} {v:.2f}x" for k, v in row["ratio_to_anchor"].items()))
    fc = row["first_call_s"]
    lines.append("  first call (compile) s: " + "  ".join(
        f"{k} {v:.2f}" for k, v in fc.items() if v is not None)
        + f"  | oxla cache hit {row['oxla_cache_hit_s']:.2f}"
        + f"  | oxla first / {anchor} first {fc['oxla'] / fc[anchor]:.1f}x")
    ex = row["oxla_extra"]
    lines.append(f"  oxla backend share: first compile {ex['backend_first_s']:.2f} s "
                 f"({ex['first_cache']}), cache hit {ex['backend_hit_s']:.3f} s "
                 f"({ex['hit_cache']}); the rest is framework lowering + import")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes (seq 64; MobileNetV2 96x96 alpha 0.35 batch 1)")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--json", default=None, help="write results here")
    p.add_argument("--only", default=None, help="comma-separated: transformer,mobilenet_v2")
    a = p.parse_args(argv)
    rounds = a.rounds or (3 if a.quick else 5)
    print(f"load average before: {_load()}  (cpus {os.cpu_count()})")
    res = run(a.quick, rounds, set(a.only.split(",")) if a.only else None)
    print(f"load average after: {res['load_after']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
