"""The demo's end-to-end job: a small transformers LlamaForCausalLM (random weights,
random RMSNorm scales) exported with torch.export, compiled for cpu with and without
the demo's RMSNorm override, compared, and timed in one run.

    python examples/kernels_demo/llama_override.py [--layers 2] [--seq 32] [--hidden 64]

Needs torch, transformers, oxla-frontend-torch, oxla-backend-cpu and this package
(installed, or run from the checkout: the script registers it itself when it is not).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

NAME = "demo.llama-rmsnorm"


def build(layers: int = 2, hidden: int = 64, seq: int = 32, seed: int = 0):
    """``(model, input ids, ExportedProgram)``."""
    import torch
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=hidden,
                                   intermediate_size=2 * hidden, num_hidden_layers=layers,
                                   num_attention_heads=4, num_key_value_heads=2,
                                   max_position_embeddings=max(64, seq), use_cache=False)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # ones would let constant folding drop the scale multiply
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(1.0, 0.2)
    ids = torch.randint(0, cfg.vocab_size, (1, seq))
    return model, ids, torch.export.export(model, (ids,))


def ensure_registered() -> None:
    """Registers this package's plugin when it is not installed (run from a checkout)."""
    from oxla import plugins

    if any(p.name == NAME for p in plugins.patterns(backend="cpu", builtin=False)):
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from oxla_kernels_demo import plugin

    from oxla.plugins import PluginRegistry, PluginSource

    reg = PluginRegistry()
    reg.register_builtins()
    reg.load_entry_points()
    reg.register(plugin, PluginSource("oxla-kernels-demo", "0.1.0", "kernels_demo = x"))
    plugins.set_registry(reg)


def compile_both(ep, ids):
    """``(executable with the override, executable without it, StableHLO text)``."""
    import oxla
    from oxla import plugins
    from oxla.ir import print_module

    text = print_module(plugins.get_frontend("torch").import_object(ep, [ids]))
    with_it = oxla.compile(text, backend="cpu", cache=False)
    old = os.environ.get("OXLA_DISABLE_OVERRIDES")
    os.environ["OXLA_DISABLE_OVERRIDES"] = NAME
    try:
        without = oxla.compile(text, backend="cpu", cache=False)
    finally:
        if old is None:
            del os.environ["OXLA_DISABLE_OVERRIDES"]
        else:
            os.environ["OXLA_DISABLE_OVERRIDES"] = old
    return with_it, without, text


def fired(exe) -> int:
    """How many times the override fired in ``exe``."""
    return sum(e["fired"] for e in exe.stats.get("overrides", []) if e["override"] == NAME)


def latency(a, b, x, rounds: int = 7, calls: int = 20) -> tuple[float, float]:
    """Median ms per call of ``a`` and ``b``, measured in interleaved rounds."""
    ta, tb = [], []
    for _ in range(rounds):
        for exe, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            for _ in range(calls):
                exe(x)
            out.append((time.perf_counter() - t0) / calls * 1e3)
    return float(np.median(ta)), float(np.median(tb))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--seq", type=int, default=32)
    args = ap.parse_args()
    ensure_registered()
    model, ids, ep = build(args.layers, args.hidden, args.seq)
    with_it, without, _ = compile_both(ep, ids)
    x = ids.numpy()
    a, b = np.asarray(with_it(x)[0]), np.asarray(without(x)[0])
    ref = model(ids).logits.detach().numpy()
    err = float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
    print(f"Llama: {args.layers} layers, hidden {args.hidden}, sequence {args.seq}")
    print(f"override {NAME} fired {fired(with_it)} times (2 x layers + 1 = "
          f"{2 * args.layers + 1})")
    print(f"with vs without: max |error| {err:.2e} of max |logit|; vs torch: "
          f"{float(np.max(np.abs(a - ref)) / np.max(np.abs(ref))):.2e}")
    la, lb = latency(with_it, without, x)
    print(f"latency: with the override {la:.3f} ms, without {lb:.3f} ms "
          f"(with / without = {la / lb:.2f}x)")
    ok = err <= 1e-5 and fired(with_it) == 2 * args.layers + 1
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
