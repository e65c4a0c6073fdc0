"""oxla ``cuda`` vs XLA:GPU (``jax[cuda13]``) vs ``torch.compile`` on one NVIDIA GPU.

Not a test, and it needs a GPU: without one (no NVIDIA driver, or
``OXLA_CUDA_DEVICE=sim``) it prints one ``error:`` line saying it was not run and exits
2. One run on an H200 gives every figure issue #14 asks for, written to ``--json``:

* ``chain`` (fusion-heavy: ten elementwise ops over 2 x 64M f32): oxla's achieved
  bandwidth as a fraction of the **measured device copy bandwidth** (``torch``'s
  ``dst.copy_(src)`` of 1 GiB, read + write bytes); target >= 0.8;
* ``gemm`` (8192^3 f32, full f32: cuBLAS pedantic math in oxla, TF32 off in torch,
  ``jax_default_matmul_precision=highest`` in XLA): oxla's time as a fraction of
  torch's ``a @ b``; target >= 0.9 of torch's speed;
* ``softmax`` and ``layer_norm`` (32768 x 1024), a pre-LN ``transformer`` block
  (batch 8, sequence 512, width 1024, 16 heads), and GPT-2 small (``transformers``,
  random weights, f32 logits, sequence 128) at batch 1 and 8: oxla vs the faster of
  XLA:GPU and torch.compile; target: oxla <= the faster;
* ``dispatch``: one 4-element add, the per-call cost of each engine.

Same StableHLO text: every jax workload is lowered once with
``jax.jit(f).lower(*args).as_text()`` and that text is what oxla and XLA:GPU compile;
GPT-2's text is oxla's torch import of the exported model (``torch.export``), compiled by
oxla and XLA:GPU alike. torch.compile (inductor, default mode) runs the equivalent torch
function or the model itself.

What a call includes: oxla ``exe.run_on_device(*torch_cuda_tensors)`` (inputs read in
place through ``__cuda_array_interface__``, results left on the device, one stream,
one CUDA graph for a loop-free program) then ``torch.cuda.synchronize()``; XLA
``execute(device_buffers)`` + ``block_until_ready``; torch the compiled function on
CUDA tensors + ``torch.cuda.synchronize()``. Timing is interleaved (engines take
turns, one untimed call then a block of timed calls, medians reported). Each engine's
first result is compared with XLA's (max |error| / max |value|).

Install on the GPU machine: ``pip install -e extensions/backend_cuda 'jax[cuda13]'
torch transformers`` (``bench/cuda_device_check.sh`` does it).

Usage::

    python bench/cuda_vs_xla.py [--quick] [--json OUT.json] [--rounds N] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from timing import interleaved

F32 = np.float32


@dataclass
class Workload:
    name: str
    text: str  # the StableHLO every engine but torch compiles
    args: list[np.ndarray]
    torch_fn: Callable | None  # the equivalent torch function (None: no torch engine)
    bytes_moved: float = 0.0
    flops: float = 0.0
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Platform:
    """The GPU a run is for: the oxla backend, jax's platform name for the same device
    and how the backend is named in messages. torch calls both "cuda" (ROCm builds of
    torch keep the ``torch.cuda`` API), so the torch engines need nothing per platform."""

    backend: str  # oxla backend name ("cuda", "hip")
    jax_platform: str  # jax/XLA platform ("cuda", "rocm")
    package: str  # the backend's import package
    sim_env: str  # the environment variable that selects its simulated device
    gpu: str  # what it needs, for messages ("an NVIDIA GPU")
    script: str  # the script's name, for messages


CUDA = Platform("cuda", "cuda", "oxla_backend_cuda", "OXLA_CUDA_DEVICE", "an NVIDIA GPU",
                "bench/cuda_vs_xla.py")
HIP = Platform("hip", "rocm", "oxla_backend_hip", "OXLA_HIP_DEVICE", "an AMD GPU",
               "bench/hip_vs_xla.py")
PLATFORM = CUDA  # bench/hip_vs_xla.py runs this script's main() with HIP


def gpu_reason() -> str:
    """'' when a real GPU can run all three engines here, else why not."""
    p = PLATFORM
    if os.environ.get(p.sim_env, "").strip().lower() == "sim":
        return f"{p.sim_env}=sim is the simulated device, not a GPU"
    try:
        device = __import__(f"{p.package}.device", fromlist=["status"])
    except ImportError:
        return f"{p.package.replace('_', '-')} is not installed"
    ok, why = device.status()
    if not ok:
        return why
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no GPU (torch.cuda.is_available() is False)"
    return ""


# --- workloads ------------------------------------------------------------------------

def _jax_workloads(quick: bool) -> list[Workload]:
    import jax
    import jax.numpy as jnp
    import torch

    jax.config.update("jax_default_matmul_precision", "highest")
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(F32)

    chain_n = (1 << 22) if quick else (1 << 26)
    gemm_n = 2048 if quick else 8192
    rows = 4096 if quick else 32768
    tb, seq, d, heads = (2, 128, 256, 4) if quick else (8, 512, 1024, 16)

    def chain(a, b, np_=jnp, max_=jnp.maximum):
        x = a * b
        x = x + a
        x = x * 1.5
        x = x - b
        x = max_(x, np_.zeros_like(x))
        x = np_.abs(x)
        x = x + 1.0
        x = np_.sqrt(x)
        x = x / b
        return -x

    def layer_norm(x, g, b, rsqrt=jax.lax.rsqrt):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * rsqrt(v + 1e-5) * g + b

    def block(x, wq, wk, wv, wo, w1, w2, g1, g2, F=None):
        tril = (lambda n: jnp.tril(jnp.ones((n, n), bool))) if F is None else \
            (lambda n: torch.tril(torch.ones((n, n), dtype=torch.bool, device=x.device)))
        softmax = jax.nn.softmax if F is None else (lambda a, axis: torch.softmax(a, axis))
        gelu = jax.nn.gelu if F is None else (
            lambda a: torch.nn.functional.gelu(a, approximate="tanh"))
        where = jnp.where if F is None else torch.where
        rsqrt = jax.lax.rsqrt if F is None else torch.rsqrt
        einsum = jnp.einsum if F is None else torch.einsum

        def ln(h, g):
            m = h.mean(-1, keepdims=True)
            v = ((h - m) ** 2).mean(-1, keepdims=True)
            return (h - m) * rsqrt(v + 1e-5) * g

        b_, s_, d_ = x.shape
        dh = d_ // heads
        h = ln(x, g1)
        q, k, v = ((h @ w).reshape(b_, s_, heads, dh) for w in (wq, wk, wv))
        att = einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
        att = softmax(where(tril(s_), att, -1e9), axis=-1)
        o = einsum("bhqk,bkhd->bqhd", att, v).reshape(b_, s_, d_)
        x = x + o @ wo
        return x + gelu(ln(x, g2) @ w1) @ w2

    specs = [
        ("chain", chain, lambda a, b: chain(a, b, torch, torch.maximum),
         [r(chain_n), r(chain_n) + 3], dict(bytes_moved=3 * 4 * chain_n)),
        ("gemm", lambda a, b: a @ b, lambda a, b: a @ b, [r(gemm_n, gemm_n), r(gemm_n, gemm_n)],
         dict(flops=2 * gemm_n**3)),
        ("softmax", lambda x: jax.nn.softmax(x, axis=-1), lambda x: torch.softmax(x, -1),
         [r(rows, 1024)], {}),
        ("layer_norm", layer_norm, lambda x, g, b: layer_norm(x, g, b, torch.rsqrt),
         [r(rows, 1024), r(1024), r(1024)], {}),
        ("transformer", block, lambda *a: block(*a, F=torch),
         [r(tb, seq, d)] + [r(d, d, scale=0.03) for _ in range(4)]
         + [r(d, 4 * d, scale=0.03), r(4 * d, d, scale=0.015), r(d), r(d)], {}),
        ("dispatch", lambda a, b: a + b, lambda a, b: a + b, [r(4), r(4)], {}),
    ]
    return [Workload(name, jax.jit(jf).lower(*args).as_text(), args, tf, **kw)
            for name, jf, tf, args, kw in specs]


def _gpt2_workloads(quick: bool, batches: list[int]) -> list[Workload]:
    import torch
    import transformers
    from oxla_frontend_torch.importer import import_program

    from oxla.ir import print_module

    torch.manual_seed(0)
    layers, seq = (2, 32) if quick else (12, 128)
    lm = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(use_cache=False, n_layer=layers)).eval()

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids).logits

    model = Logits(lm).eval()
    out = []
    for b in batches:
        ids = torch.randint(0, 50257, (b, seq), generator=torch.Generator().manual_seed(b))
        ep = torch.export.export(model, (ids,), strict=False)
        module = import_program(ep, params_as_inputs=True)  # weights as arguments
        params = []
        for spec in ep.graph_signature.input_specs:
            if spec.target is not None and spec.kind.name in ("PARAMETER", "BUFFER",
                                                               "CONSTANT_TENSOR"):
                t = ep.state_dict.get(spec.target)
                t = ep.constants[spec.target] if t is None else t
                params.append(t.detach().numpy())
        out.append(Workload(f"gpt2_b{b}", print_module(module), params + [ids.numpy()],
                            _UserArgsOnly(model, len(params)),
                            extra={"layers": layers, "seq": seq}))
    return out


class _UserArgsOnly:
    """``model`` called with the workload's last arguments (the weights are its own)."""

    def __init__(self, model, n_params: int):
        self.model, self.n_params = model, n_params

    def cuda(self):
        self.model = self.model.cuda()
        return self

    def __call__(self, *args):
        return self.model(*args[self.n_params:])


# --- engines ------------------------------------------------------------------------

@dataclass
class Engine:
    call: Callable[[], object] | None
    compile_s: float = 0.0
    note: str = ""
    result: np.ndarray | None = None


def _first(out) -> np.ndarray:
    o = out[0] if isinstance(out, list | tuple) else out
    for conv in ("numpy", "__array__"):
        if hasattr(o, "detach"):
            return o.detach().cpu().numpy()
        if hasattr(o, conv):
            return np.asarray(getattr(o, conv)())
    return np.asarray(o)


def _oxla(w: Workload) -> Engine:
    import torch

    from oxla.ir import parse_module
    from oxla.plugins import get_backend
    from oxla.protocols import CompileOptions

    try:
        t0 = time.perf_counter()
        exe = get_backend(PLATFORM.backend).compile(parse_module(w.text, f"{w.name}.mlir"),
                                                    CompileOptions())
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=f"unsupported: {str(exc).splitlines()[0][:100]}")
    args = [torch.from_numpy(a).cuda() for a in w.args]

    def call():
        outs = exe.run_on_device(*args)
        torch.cuda.synchronize()
        return outs

    return Engine(call, compile_s, result=_first(call()))


def _xla(w: Workload) -> Engine:
    import jax
    from jax._src import xla_bridge as xb
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client as xc

    backend = xb.get_backend(PLATFORM.jax_platform)
    dev = backend.local_devices()[0]
    try:
        t0 = time.perf_counter()
        with mlir.make_ir_context():
            module = mlir.ir.Module.parse(w.text)
            exe = backend.compile_and_load(module, executable_devices=xc.DeviceList((dev,)),
                                           compile_options=xc.CompileOptions())
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=f"rejected: {str(exc).splitlines()[0][:100]}")
    bufs = [jax.device_put(a, dev) for a in w.args]

    def call():
        outs = exe.execute(bufs)
        for o in outs:
            o.block_until_ready()
        return outs

    return Engine(call, compile_s, result=np.asarray(call()[0]))


def _inductor(w: Workload) -> Engine:
    import torch

    if w.torch_fn is None:
        return Engine(None, note="no torch equivalent")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    fn = w.torch_fn
    if isinstance(fn, _UserArgsOnly):
        fn.cuda()
        fn.model = torch.compile(fn.model)
        compiled = fn
    else:
        compiled = torch.compile(fn)
    args = [torch.from_numpy(a).cuda() for a in w.args]

    def call():
        with torch.inference_mode():
            out = compiled(*args)
        torch.cuda.synchronize()
        return out

    try:
        t0 = time.perf_counter()
        first = call()
        compile_s = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return Engine(None, note=f"failed: {str(exc).splitlines()[0][:100]}")
    return Engine(call, compile_s, result=_first(first))


def _torch_eager_matmul(w: Workload) -> Callable:
    import torch

    a, b = (torch.from_numpy(x).cuda() for x in w.args)

    def call():
        out = a @ b
        torch.cuda.synchronize()
        return out
    return call


def copy_bandwidth(nbytes: int = 1 << 30, rounds: int = 20) -> float:
    """Bytes/s of a device-to-device copy (read + write), median of ``rounds``."""
    import torch

    src = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    times = []
    for _ in range(rounds + 2):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return 2 * nbytes / statistics.median(times[2:])


# --- the run ------------------------------------------------------------------------

def run(quick: bool, rounds: int, only: set[str] | None) -> dict:
    workloads = _jax_workloads(quick) + _gpt2_workloads(quick, [1, 8])
    if only:
        workloads = [w for w in workloads if w.name in only]
    copy_bw = copy_bandwidth(1 << 28 if quick else 1 << 30)
    report: dict = {"device": None, "copy_bandwidth_gbs": copy_bw / 1e9, "workloads": {}}
    import torch

    report["device"] = torch.cuda.get_device_name(0)
    for w in workloads:
        print(f"[{w.name}] compiling ...", file=sys.stderr, flush=True)
        engines = {"oxla": _oxla(w), "xla": _xla(w), "inductor": _inductor(w)}
        calls = {k: e.call for k, e in engines.items() if e.call is not None}
        if w.name == "gemm":
            calls["torch"] = _torch_eager_matmul(w)
        med = {}
        if calls:
            times = interleaved(calls, rounds, budget_s=0.5, settle_s=0.05, max_calls=200)
            med = {k: statistics.median(v) for k, v in times.items()}
        ref = engines["xla"].result
        row: dict = {"seconds": med, **w.extra}
        for k, e in engines.items():
            row[f"{k}_compile_s"] = e.compile_s
            if e.note:
                row[f"{k}_note"] = e.note
            if e.result is not None and ref is not None and e.result.shape == ref.shape:
                scale = float(np.max(np.abs(ref))) or 1.0
                row[f"{k}_rel_error"] = float(np.max(np.abs(e.result - ref))) / scale
        t = med.get("oxla")
        if t:
            if w.bytes_moved:
                row["oxla_fraction_of_copy_bandwidth"] = w.bytes_moved / t / copy_bw
            if w.name == "gemm" and "torch" in med:
                row["oxla_fraction_of_torch"] = med["torch"] / t
                row["oxla_tflops"] = w.flops / t / 1e12
            rivals = [med[k] for k in ("xla", "inductor") if k in med]
            if rivals:
                row["oxla_over_fastest_rival"] = t / min(rivals)
            if w.name == "dispatch":
                row["per_call_us"] = {k: v * 1e6 for k, v in med.items()}
        report["workloads"][w.name] = row
        print(_line(w.name, row), flush=True)
    report["targets"] = _targets(report["workloads"])
    return report


def _targets(rows: dict) -> dict:
    """Each target of issue #14 with its figure and whether it was met (None: no figure)."""
    out = {}
    chain = rows.get("chain", {}).get("oxla_fraction_of_copy_bandwidth")
    out["fusion >= 0.8 of copy bandwidth"] = [chain, None if chain is None else chain >= 0.8]
    gemm = rows.get("gemm", {}).get("oxla_fraction_of_torch")
    out["gemm >= 0.9 of torch"] = [gemm, None if gemm is None else gemm >= 0.9]
    for name in ("softmax", "layer_norm", "transformer", "gpt2_b1", "gpt2_b8"):
        v = rows.get(name, {}).get("oxla_over_fastest_rival")
        out[f"{name} <= fastest of XLA:GPU and torch.compile"] = [
            v, None if v is None else v <= 1.0]
    return out


def _line(name: str, row: dict) -> str:
    sec = row["seconds"]
    cells = " ".join(f"{k}={v * 1e3:.3f}ms" for k, v in sec.items())
    notes = " ".join(f"[{k}: {v}]" for k, v in row.items() if k.endswith("_note"))
    figs = " ".join(f"{k}={v:.3g}" for k, v in row.items()
                    if k.startswith("oxla_") and isinstance(v, float) and "compile" not in k)
    return f"{name:12s} {cells} {figs} {notes}".rstrip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--json", help="write every figure to this JSON file")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", help="comma-separated workload names")
    args = parser.parse_args(argv)
    why = gpu_reason()
    if why:
        print(f"error: {PLATFORM.script} needs {PLATFORM.gpu} and was not run here ({why})",
              file=sys.stderr)
        return 2
    rounds = args.rounds or (3 if args.quick else 7)
    report = run(args.quick, rounds, set(args.only.split(",")) if args.only else None)
    for target, (value, met) in report["targets"].items():
        status = "no figure" if met is None else ("met" if met else "NOT met")
        print(f"target {target}: {'-' if value is None else f'{value:.3g}'} ({status})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
