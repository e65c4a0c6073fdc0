"""Moving arguments into oxla executables and results back into JAX pytrees."""

from __future__ import annotations

from collections.abc import Sequence
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
    """Rebuilds the result pytree from flat outputs, as jax or numpy arrays."""
    import jax

    if return_numpy:
        leaves = [np.asarray(o) for o in outputs]
    else:
        leaves = [jax.numpy.asarray(o) for o in outputs]
    return jax.tree_util.tree_unflatten(out_tree, leaves)
