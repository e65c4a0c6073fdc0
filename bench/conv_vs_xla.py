"""Convolutions: oxla ``cpu`` vs XLA:CPU on the same StableHLO text (latency ratios).

Not a test. Same method as ``cpu_vs_xla.py`` (whose engines and interleaved timing it
reuses): one interleaved run, median per-call time, shown as a ratio to XLA measured in
the same run. Workloads: a MobileNetV2 inverted-residual block (1x1 expand, 3x3
depthwise, 1x1 project, NHWC, batch 1), the same depthwise conv alone in NHWC and NCHW,
a ResNet 3x3 conv (NCHW), and a grouped conv.

Usage::

    python bench/conv_vs_xla.py [--quick] [--rounds N] [--only NAME,...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_xla import Workload, _interleaved, _oxla, _xla  # noqa: E402

F32 = np.float32


def _workloads(quick: bool) -> list[Workload]:
    import jax

    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(F32)

    hw, c, t = (28, 16, 6) if quick else (56, 24, 6)
    e = c * t

    def conv(x, k, stride=1, dn=("NHWC", "HWIO", "NHWC"), groups=1):
        return jax.lax.conv_general_dilated(x, k, (stride, stride), "SAME",
                                            dimension_numbers=dn,
                                            feature_group_count=groups)

    def mobilenet_block(x, w1, wd, w2):
        y = jax.nn.relu6(conv(x, w1))
        y = jax.nn.relu6(conv(y, wd, groups=e))
        return x + conv(y, w2)

    def depthwise_nhwc(x, wd):
        return jax.nn.relu6(conv(x, wd, groups=e))

    def depthwise_nchw(x, wd):
        return jax.nn.relu6(conv(x, wd, dn=("NCHW", "OIHW", "NCHW"), groups=e))

    rc, rhw = (32, 28) if quick else (64, 56)

    def resnet_conv(x, w, b):
        y = conv(x, w, dn=("NCHW", "OIHW", "NCHW")) + b[None, :, None, None]
        return jax.nn.relu(y)

    def grouped(x, w):
        return conv(x, w, groups=8)

    out = [
        Workload("mobilenet_block", mobilenet_block,
                 [r(1, hw, hw, c), r(1, 1, c, e, scale=0.2), r(3, 3, 1, e, scale=0.3),
                  r(1, 1, e, c, scale=0.1)]),
        Workload("depthwise_nhwc", depthwise_nhwc, [r(1, hw, hw, e), r(3, 3, 1, e)]),
        Workload("depthwise_nchw", depthwise_nchw, [r(1, e, hw, hw), r(e, 1, 3, 3)]),
        Workload("resnet_conv", resnet_conv, [r(1, rc, rhw, rhw), r(rc, rc, 3, 3, scale=0.05),
                                              r(rc)], flops=2 * rc * rc * 9 * rhw * rhw),
        Workload("grouped", grouped, [r(2, rhw // 2, rhw // 2, 2 * rc),
                                      r(3, 3, 2 * rc // 8, 2 * rc, scale=0.1)]),
    ]
    for w in out:
        w.text = jax.jit(w.fn).lower(*w.args).as_text()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument("--only", default="", help="comma-separated workload names")
    p.add_argument("--json", default="", help="write results here")
    a = p.parse_args()
    rounds = a.rounds or (3 if a.quick else 7)
    only = set(filter(None, a.only.split(",")))
    res: dict = {}
    with tempfile.TemporaryDirectory() as cache_dir:
        for w in _workloads(a.quick):
            if only and w.name not in only:
                continue
            ox, xla = _oxla(w, cache_dir), _xla(w)
            if ox.call is None:
                print(f"{w.name:16s} oxla {ox.note}")
                continue
            got, want = ox.call(), xla.call()
            err = max(float(np.max(np.abs(np.asarray(g) - np.asarray(x))))
                      for g, x in zip(got, want))
            med = _interleaved({"oxla": ox.call, "xla": xla.call}, rounds,
                               0.05 if a.quick else 0.25, 0.2)
            ratio = med["oxla"] / med["xla"]
            res[w.name] = {"median_s": med, "ratio": ratio, "max_abs_err": err,
                           "compile_s": {"oxla": ox.compile_s, "xla": xla.compile_s},
                           "temp_bytes": {"oxla": ox.temp_bytes, "xla": xla.temp_bytes}}
            extra = f" {w.flops / med['oxla'] / 1e9:.1f} GFLOP/s" if w.flops else ""
            print(f"{w.name:16s} oxla/xla {ratio:6.2f}x  ({med['oxla'] * 1e3:.3f} ms vs "
                  f"{med['xla'] * 1e3:.3f} ms){extra}  max|err| {err:.1e}  temp oxla "
                  f"{ox.temp_bytes} xla {xla.temp_bytes}")
    if res:
        g = math.exp(sum(math.log(v["ratio"]) for v in res.values()) / len(res))
        print(f"geomean oxla/xla: {g:.2f}x")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
