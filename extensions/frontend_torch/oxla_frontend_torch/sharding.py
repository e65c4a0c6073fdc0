"""Sharding annotations on torch tensors: :func:`shard` marks a parameter, buffer or
example input; ``oxla_frontend_torch.compile(..., mesh=, shardings=)`` names them too.

::

    import oxla_frontend_torch as ot

    ot.shard(model.fc1.weight, "model=2", ("model", None))     # column-parallel
    ot.shard(model.fc2.weight, "model=2", (None, "model"))     # row-parallel
    f = ot.compile(model, (x,), backend="cpu")                 # runs on 2 devices
    f = ot.compile(model, (x,), mesh="data=2", shardings={"arg0": ("data", None)})

A spec gives one item per tensor dimension: ``None`` (or ``"_"``) for a replicated
dimension, an axis name, or a tuple of axis names (major first); a string
``"data,_"`` is the CLI's ``--shard`` form. Only the annotated tensors need a spec:
propagation completes the others (:mod:`oxla.sharding`). The compiled function takes
and returns whole tensors; inside, it runs the per-device program on an in-process grid
of the mesh's devices (:class:`oxla.sharding.run.ShardedExecutable`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from oxla.errors import OxlaError
from oxla.ir.sdy import MeshAttr
from oxla.sharding.annotate import parse_mesh, spec_text

ATTR = "_oxla_sharding"
"""The attribute :func:`shard` sets on a tensor: ``(mesh text, spec text)``."""


def mesh_text(mesh: str | Mapping[str, int] | MeshAttr) -> str:
    """``"data=2,model=2"`` from that text, a ``{"data": 2, ...}`` dict or a MeshAttr.

    Raises:
        OxlaError: a malformed mesh.
    """
    if isinstance(mesh, MeshAttr):
        text = ",".join(f"{n}={k}" for n, k in mesh.axes)
    elif isinstance(mesh, Mapping):
        text = ",".join(f"{n}={int(k)}" for n, k in mesh.items())
    else:
        text = str(mesh)
    parse_mesh(text)  # checks it
    return text


def shard(tensor: torch.Tensor, mesh: str | Mapping[str, int] | MeshAttr,
          spec: str | Sequence[Any]) -> torch.Tensor:
    """Marks ``tensor`` (a parameter, buffer or example input) as sharded over ``mesh``.

    Args:
        tensor: the tensor to annotate; it is returned unchanged (the mark is an
            attribute, read by ``compile``).
        mesh: ``"data=2,model=2"``, ``{"data": 2, "model": 2}`` or a MeshAttr.
        spec: one item per dimension (see the module docstring).

    Raises:
        OxlaError: a malformed mesh, a spec with the wrong number of dimensions.
    """
    text = spec_text(spec)
    if len(text.split(",")) != tensor.dim():
        raise OxlaError(f"a sharding spec for a {tensor.dim()}-d tensor needs "
                        f"{tensor.dim()} items, got '{text}'")
    setattr(tensor, ATTR, (mesh_text(mesh), text))
    return tensor


def collect(model: Any, example_inputs: Sequence[Any], mesh: Any,
            shardings: Mapping[str, Any] | None) -> tuple[str, list[str]] | None:
    """The mesh and ``--shard`` items of a model's annotations, or None when none.

    ``shardings`` keys are ``argN``, ``resultN``, a parameter or buffer name
    (``state_dict`` key or glob) or ``param:GLOB``; values are specs. Tensors marked with
    :func:`shard` (model parameters and buffers, example inputs) add theirs.

    Raises:
        OxlaError: annotations over different meshes, shardings without a mesh.
    """
    meshes: set[str] = set()
    items: list[str] = []
    if isinstance(model, torch.nn.Module):
        named = list(model.named_parameters(remove_duplicate=False)) + list(
            model.named_buffers(remove_duplicate=False))
        for name, t in named:
            mark = getattr(t, ATTR, None)
            if mark is not None:
                meshes.add(mark[0])
                items.append(f"param:{name}={mark[1]}")
    for i, x in enumerate(example_inputs):
        mark = getattr(x, ATTR, None) if isinstance(x, torch.Tensor) else None
        if mark is not None:
            meshes.add(mark[0])
            items.append(f"arg{i}={mark[1]}")
    if mesh is not None:
        meshes.add(mesh_text(mesh))
    for key, spec in (shardings or {}).items():
        target = key if key.startswith("param:") or (
            key[:3] == "arg" and key[3:].isdigit()) or (
            key[:6] == "result" and key[6:].isdigit()) else f"param:{key}"
        items.append(f"{target}={spec_text(spec)}")
    if not items:
        return None
    if not meshes:
        raise OxlaError("shardings= needs mesh= (e.g. mesh='data=2,model=2')")
    if len(meshes) > 1:
        raise OxlaError("the annotations use different meshes: " + "; ".join(sorted(meshes))
                        + " (one mesh per program)")
    return meshes.pop(), items


__all__ = ["shard", "collect", "mesh_text", "spec_text"]
