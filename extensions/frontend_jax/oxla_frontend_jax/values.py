"""Moving arguments into oxla executables and results back into JAX pytrees."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from oxla.ir import types as T

_PY_SCALARS = (bool, int, float, complex)


def to_numpy_args(leaves: Sequence[Any], types: Sequence[Any]) -> list[Any]:
    """Converts flat arguments to numpy for an executable with input ``types``.

    Python scalars are weakly typed in JAX and take the dtype the module declares; arrays
    keep their own dtype, so a mismatch is reported by the executable
    (``RuntimeInputError``, expected before given) instead of being cast silently.
    """
    out = []
    for leaf, t in zip(leaves, types):
        if isinstance(leaf, _PY_SCALARS) and isinstance(t, T.TensorType):
            out.append(np.asarray(leaf, dtype=t.element_type.dtype))
        elif isinstance(leaf, np.ndarray | np.generic):
            out.append(np.asarray(leaf))
        elif hasattr(leaf, "__array__"):
            out.append(np.asarray(leaf))
        else:
            out.append(leaf)
    if len(leaves) != len(types):  # let the executable report the count
        out.extend(leaves[len(types):])
    return out


def wrap_outputs(outputs: Sequence[Any], out_tree: Any, return_numpy: bool) -> Any:
    """Rebuilds the result pytree from flat outputs, as jax or numpy arrays.

    jax arrays are made by :func:`_device_put_fast` where this jax has it (one
    ``batched_device_put`` for the call's results instead of one dispatched
    ``jnp.asarray`` per result, 50-150 us each on CPU: as much as a small program's whole
    run), else by ``jnp.asarray``; both give the same arrays.
    """
    import jax

    if return_numpy:
        leaves = [np.asarray(o) for o in outputs]
    else:
        put = _device_put_fast()
        leaves = None if put is None else put(outputs)
        if leaves is None:
            leaves = [jax.numpy.asarray(o) for o in outputs]
    return jax.tree_util.tree_unflatten(out_tree, leaves)


@cache
def _device_put_fast() -> Callable[[Sequence[Any]], list | None] | None:
    """``put(outputs)``: the outputs as jax arrays on the default CPU device through
    ``jax._src.interpreters.pxla.batched_device_put`` (what ``jax.device_put`` ends in,
    without its dispatch), or None for a result it does not cover (not a numpy array,
    or a dtype jax would canonicalize, e.g. int64 without ``jax_enable_x64``). None
    when this jax lacks those internals."""
    try:
        import jax
        from jax._src import core, dtypes
        from jax._src.interpreters.pxla import batched_device_put
        from jax.sharding import SingleDeviceSharding
    except ImportError:
        return None
    devices = jax.devices()
    if not devices or devices[0].platform != "cpu":
        return None
    device = devices[0]
    sharding = SingleDeviceSharding(device)

    def put(outputs: Sequence[Any]) -> list | None:
        out = []
        for o in outputs:
            if type(o) is not np.ndarray or dtypes.canonicalize_dtype(o.dtype) != o.dtype:
                return None
            out.append(batched_device_put(core.ShapedArray(o.shape, o.dtype), sharding,
                                          [o], [device]))
        return out

    return put
