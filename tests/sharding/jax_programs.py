"""Writes JAX programs with NamedSharding (Shardy and GSPMD forms) and their jax.jit
results on forced host devices, for tests/sharding (run in a subprocess: the device
count must be set before jax is imported).

Usage: python jax_programs.py OUT_DIR  (writes OUT_DIR/<case>.{sdy,gspmd}.mlir and
OUT_DIR/<case>.npz with inputs ``in0..`` and jax's outputs ``out0..``; for a shard_map
case, OUT_DIR/<case>.plain.mlir is an unsharded program computing the same)
"""

from __future__ import annotations

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

AUTO = jax.sharding.AxisType.Auto


def mesh(shape, names):
    return jax.make_mesh(shape, names, axis_types=(AUTO,) * len(shape))


def cases():
    m22 = mesh((2, 2), ("data", "model"))
    m2 = mesh((2,), ("x",))
    m8 = mesh((2, 4), ("data", "model"))
    rng = np.random.default_rng(0)

    def r(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def mlp(x, w1, w2):  # column-parallel then row-parallel: one all-reduce
        h = jnp.tanh(x @ w1)
        h = jax.lax.with_sharding_constraint(h, NamedSharding(m22, P("data", "model")))
        return h @ w2

    yield ("mlp_2x2", mlp, (r(8, 16), r(16, 8), r(8, 4)), m22,
           (P("data", None), P(None, "model"), P("model", None)))

    def shapes(x, y):  # reshape, transpose, broadcast, concatenate, reduce
        a = x.reshape(4, 2, 8).transpose(0, 2, 1).reshape(4, 16)
        b = jnp.concatenate([a, y], axis=1) + jnp.sum(x, axis=1, keepdims=True)[:4]
        return b * 2.0, jnp.max(b, axis=0)

    yield ("shapes_2", shapes, (r(8, 8), r(4, 8)), m2, (P("x", None), P(None, None)))

    def mlp8(x, w):
        return jax.nn.relu(x @ w).sum(axis=0)

    yield ("dot_2x4", mlp8, (r(8, 16), r(16, 8)), m8, (P("data", "model"), P("model", None)))

    def train_step(w1, w2, x, y):  # data parallel: the batch is sharded
        def loss(params):
            a, b = params
            return jnp.mean((jnp.tanh(x @ a) @ b - y) ** 2)

        g1, g2 = jax.grad(loss)((w1, w2))
        return w1 - 0.1 * g1, w2 - 0.1 * g2

    m4 = mesh((4,), ("data",))
    yield ("train_step_4", train_step, (r(8, 16), r(16, 4), r(16, 8), r(16, 4)), m4,
           (P(), P(), P("data", None), P("data", None)))

    def embed_step(table, ids, y):  # data parallel: the table's gradient is a scatter-add
        def loss(t):
            return jnp.mean((t[ids].sum(axis=1) - y) ** 2)
        return table - 0.1 * jax.grad(loss)(table)

    ids = rng.integers(0, 16, (32, 4)).astype(np.int32)
    yield ("embed_step_4", embed_step, (r(16, 8), ids, r(32, 8)), m4,
           (P(), P("data", None), P("data", None)))

    def smap(x):
        f = jax.shard_map(lambda a: jax.lax.psum(a, "model") * 2.0, mesh=m22,
                          in_specs=P("data", "model"), out_specs=P("data", None))
        return f(x)

    yield ("shard_map_2x2", smap, (r(8, 16),), m22, (P(),))

    # shard_map over a subset of the mesh axes: the body is manual along "model" and
    # still auto-partitioned along "data" (the batch stays sharded inside it)
    def pmap_dot(x, w):
        def body(a, b):
            return jax.lax.psum(jnp.tanh(a @ b), "model")
        f = jax.shard_map(body, mesh=m22, in_specs=(P(None, "model"), P("model", None)),
                          out_specs=P(), axis_names={"model"})
        return f(x, w) * 2.0

    def pmap_dot_plain(x, w):  # the same sum of per-block products, no sharding
        blocks = jnp.einsum("bik,ikn->ibn", x.reshape(8, 2, 8), w.reshape(2, 8, 8))
        return jnp.tanh(blocks).sum(axis=0) * 2.0

    yield ("shard_map_partial_2x2", pmap_dot, (r(8, 16), r(16, 8)), m22,
           (P("data", "model"), P("model", None)), pmap_dot_plain)

    # manual along "data" (axis_index, ppermute, tiled all_gather, a local reduce),
    # auto along "model" (the operand's columns stay sharded inside the body)
    def pmap_ops(x):
        def body(a):
            b = a * (jax.lax.axis_index("data") + 1).astype(a.dtype)
            c = jax.lax.ppermute(b, "data", perm=[(0, 1), (1, 0)])
            return (jax.lax.all_gather(c, "data", axis=0, tiled=True),
                    jnp.sum(c, axis=0, keepdims=True))
        f = jax.shard_map(body, mesh=m22, in_specs=P("data", None),
                          out_specs=(P(), P("data", None)), axis_names={"data"},
                          check_vma=False)
        return f(x)

    def pmap_ops_plain(x):
        c = jnp.concatenate([2.0 * x[4:], x[:4]])
        return c, jnp.stack([c[:4].sum(axis=0), c[4:].sum(axis=0)])

    # manual along "model" with psum_scatter and all_to_all (they split or concatenate
    # dimensions, so their operands are made whole along "data" first)
    def pmap_split(x):
        def body(a):
            return (jax.lax.psum_scatter(a, "model", scatter_dimension=1, tiled=True),
                    jax.lax.all_to_all(a, "model", 0, 1, tiled=True))
        f = jax.shard_map(body, mesh=m22, in_specs=P(None, "model"),
                          out_specs=(P(None, "model"), P("model", None)),
                          axis_names={"model"})
        return f(x)

    def pmap_split_plain(x):
        return x[:, :8] + x[:, 8:], x

    yield ("shard_map_partial_split_2x2", pmap_split, (r(8, 16),), m22,
           (P("data", "model"),), pmap_split_plain)

    # 2x4, manual along "data" where the operand's rows are on ("data", "model"): in
    # the body the manual-local rows stay split along "model" (the minor axis)
    def pmap_minor(x):
        f = jax.shard_map(lambda a: jax.lax.psum(jnp.sin(a) * 3.0, "data"), mesh=m8,
                          in_specs=P("data", None), out_specs=P(), axis_names={"data"})
        return f(x) + 1.0

    def pmap_minor_plain(x):
        return (jnp.sin(x[:8]) * 3.0 + jnp.sin(x[8:]) * 3.0) + 1.0

    yield ("shard_map_partial_2x4", pmap_minor, (r(16, 8),), m8,
           (P(("data", "model"), None),), pmap_minor_plain)

    yield ("shard_map_partial_ops_2x2", pmap_ops, (r(8, 16),), m22, (P("data", "model"),),
           pmap_ops_plain)


def main(out: str) -> None:
    os.makedirs(out, exist_ok=True)
    for name, fn, args, m, specs, *plain in cases():
        if plain:  # an unsharded program computing the same (for a shard_map's body)
            with open(os.path.join(out, f"{name}.plain.mlir"), "w") as f:
                f.write(jax.jit(plain[0]).lower(*args).as_text())
        shardings = tuple(NamedSharding(m, s) for s in specs)
        outs = None
        for shardy in (True, False):
            jax.config.update("jax_use_shardy_partitioner", shardy)
            j = jax.jit(fn, in_shardings=shardings)
            text = j.lower(*args).as_text()
            with open(os.path.join(out, f"{name}.{'sdy' if shardy else 'gspmd'}.mlir"),
                      "w") as f:
                f.write(text)
            if outs is None:
                res = j(*args)
                outs = [np.asarray(o) for o in (res if isinstance(res, tuple) else (res,))]
        np.savez(os.path.join(out, f"{name}.npz"),
                 **{f"in{i}": a for i, a in enumerate(args)},
                 **{f"out{i}": o for i, o in enumerate(outs)})


if __name__ == "__main__":
    main(sys.argv[1])
