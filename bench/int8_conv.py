"""Integer convolutions on oxla cpu, before and after the 8-bit im2col + integer GEMM
rewrite (:mod:`oxla_backend_cpu.int8_conv`), against an anchor, in one interleaved run
each (:func:`timing.interleaved`):

* an ONNX ``QLinearConv`` model (u8 input with zero point 128, i8 kernel, 3x3, pad 1)
  against onnxruntime;
* a JAX int8 convolution with ``preferred_element_type=int32`` (the same shape) against
  XLA:CPU on the same StableHLO text.

"before" is the same compile with the rewrite switched off in this process. Outputs are
checked against the anchor (exact for the i32 convolution; within one quantization step
for QLinearConv). Not a test::

    .venv/bin/python bench/int8_conv.py [--size 1,64,56,56] [--filters 64] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import interleaved  # noqa: E402


def _qlinearconv_model(n, c, h, w, f, k):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    wq = rng.integers(-127, 128, (f, c, k, k)).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(wq, "w"),
             numpy_helper.from_array(np.array(0.003, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.5, np.float32), "ys"),
             numpy_helper.from_array(np.array(128, np.uint8), "yz")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                            ["y"], pads=[k // 2] * 4, kernel_shape=[k, k])
    g = helper.make_graph([node], "qconv",
                          [helper.make_tensor_value_info("x", TensorProto.UINT8, [n, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [n, f, h, w])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


REWRITTEN = [0]


def _switch(on: bool) -> None:
    """Turns the rewrite on (counting the convolutions it rewrites) or off."""
    import oxla_backend_cpu.policy as pol
    from oxla_backend_cpu.int8_conv import rewrite_int8_convs

    def counted(module):
        n = rewrite_int8_convs(module)
        REWRITTEN[0] += n
        return n

    pol.rewrite_int8_convs = counted if on else (lambda module: 0)


def _report(name, times, anchor, load):
    med = {k: float(np.median(v)) for k, v in times.items()}
    parts = "  ".join(f"{k} {v * 1e3:9.3f} ms" for k, v in med.items())
    ratios = "  ".join(f"{k}/{anchor} {med[k] / med[anchor]:6.2f}x" for k in med if k != anchor)
    print(f"{name:12s} {parts}  {ratios}  load {load:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1,64,56,56", help="N,C,H,W of the input")
    ap.add_argument("--filters", type=int, default=64)
    ap.add_argument("--kernel", type=int, default=3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.3, help="seconds per timed block")
    ap.add_argument("--only", default="onnx,jax")
    args = ap.parse_args()
    n, c, h, w = (int(s) for s in args.size.split(","))
    f, k = args.filters, args.kernel
    if args.threads is not None:
        os.environ["OXLA_NUM_THREADS"] = str(args.threads)
        os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + \
            " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    rng = np.random.default_rng(1)
    only = set(args.only.split(","))

    if "onnx" in only:
        import onnxruntime as ort
        from oxla_frontend_onnx import compile as onnx_compile

        model = _qlinearconv_model(n, c, h, w, f, k)
        x = rng.integers(0, 256, (n, c, h, w)).astype(np.uint8)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "qconv.onnx")
            with open(path, "wb") as fh:
                fh.write(model.SerializeToString())
            so = ort.SessionOptions()
            if args.threads is not None:
                so.intra_op_num_threads = args.threads
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            _switch(True)
            after = onnx_compile(path, "cpu", cache=False)
            print(f"qlinearconv: convolutions rewritten: {REWRITTEN[0]}")
            _switch(False)
            before = onnx_compile(path, "cpu", cache=False)
            _switch(True)
        ref = sess.run(None, {"x": x})[0].astype(np.int64)
        for name, fn in (("after", after), ("before", before)):
            got = np.asarray(fn(x)[0]).astype(np.int64)
            print(f"qlinearconv {name}: max |oxla - onnxruntime| = "
                  f"{int(np.abs(got - ref).max())} quantization steps")
        times = interleaved({"oxla": lambda: after(x), "oxla-before": lambda: before(x),
                             "onnxruntime": lambda: sess.run(None, {"x": x})},
                            args.rounds, args.budget, settle_s=0.05, max_calls=200)
        _report(f"qlinearconv {n}x{c}x{h}x{w} {f}f {k}x{k}", times, "onnxruntime",
                os.getloadavg()[0])

    if "jax" in only:
        import jax
        import jax.numpy as jnp
        from oxla_backend_cpu.backend import CPUBackend

        from oxla.ir import parse_module
        from oxla.protocols import CompileOptions

        def conv(a, b):
            return jax.lax.conv_general_dilated(a, b, (1, 1), ((k // 2, k // 2),) * 2,
                                                preferred_element_type=jnp.int32)

        a = rng.integers(-128, 128, (n, c, h, w)).astype(np.int8)
        b = rng.integers(-128, 128, (f, c, k, k)).astype(np.int8)
        xla = jax.jit(conv)
        text = xla.lower(a, b).as_text()
        _switch(True)
        REWRITTEN[0] = 0
        after = CPUBackend().compile(parse_module(text, "conv.mlir"), CompileOptions(cache=False))
        print(f"jax int8 conv: convolutions rewritten: {REWRITTEN[0]}")
        _switch(False)
        before = CPUBackend().compile(parse_module(text, "conv.mlir"), CompileOptions(cache=False))
        _switch(True)
        ref = np.asarray(xla(a, b))
        for name, exe in (("after", after), ("before", before)):
            assert np.array_equal(np.asarray(exe(a, b)[0]), ref), f"oxla {name} != XLA"
        print("jax int8 conv: oxla (after and before) == XLA:CPU bit for bit")
        times = interleaved({"oxla": lambda: after(a, b), "oxla-before": lambda: before(a, b),
                             "xla": lambda: jax.block_until_ready(xla(a, b))},
                            args.rounds, args.budget, settle_s=0.05, max_calls=200)
        _report(f"jax i8 conv {n}x{c}x{h}x{w} {f}f {k}x{k}", times, "xla",
                os.getloadavg()[0])


if __name__ == "__main__":
    main()
