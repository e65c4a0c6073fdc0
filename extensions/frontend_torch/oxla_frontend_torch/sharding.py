"""Sharding annotations on torch tensors: :func:`shard` marks a parameter, buffer or
example input; ``oxla_frontend_torch.compile(..., mesh=, shardings=)`` names them too.

::

    import oxla_frontend_torch as ot

    ot.shard(model.fc1.weight, "model=2", ("model", None))     # column-parallel
    ot.shard(model.fc2.weight, "model=2", (None, "model"))     # row-parallel
    f = ot.compile(model, (x,), backend="cpu")                 # runs on 2 devices
    f = ot.compile(model, (x,), mesh="data=2", shardings={"arg0": ("data", None)})

Parameters and buffers that are DTensors (``torch.distributed.tensor``) when
``torch.export`` keeps them in the program's ``state_dict`` are annotated from their
placements (:func:`undistribute`), and DTensor inputs likewise: ``Shard(d)`` on mesh dimension ``m`` puts mesh axis
``m`` (its ``mesh_dim_names`` name) on tensor dimension ``d``, major first, as DTensor
splits it; ``Replicate()`` adds nothing.

A spec gives one item per tensor dimension: ``None`` (or ``"_"``) for a replicated
dimension, an axis name, or a tuple of axis names (major first); a string
``"data,_"`` is the CLI's ``--shard`` form. Only the annotated tensors need a spec:
propagation completes the others (:mod:`oxla.sharding`). The compiled function takes
and returns whole tensors; inside, it runs the per-device program on an in-process grid
of the mesh's devices (:class:`oxla.sharding.run.ShardedExecutable`).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from oxla.errors import NotSupportedError, OxlaError
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


def placement_spec(t: Any, name: str) -> tuple[str, str]:
    """``(mesh text, spec text)`` of DTensor ``t``'s mesh and placements.

    Raises:
        NotSupportedError: a ``Partial`` (pending reduction) or strided-shard placement.
    """
    from torch.distributed.tensor import Shard

    mesh = t.device_mesh
    names = mesh.mesh_dim_names or tuple(f"d{i}" for i in range(mesh.ndim))
    dims: list[list[str]] = [[] for _ in range(t.dim())]
    for axis, p in zip(names, t.placements):
        if type(p) is Shard:
            dims[p.dim % t.dim()].append(axis)
        elif not p.is_replicate():
            raise NotSupportedError(f"'{name}' is a DTensor with placement "
                                    f"{type(p).__name__} ({p}) on mesh "
                                    f"dimension '{axis}': only Shard(dim) and Replicate() "
                                    "are read as shardings")
    text = ",".join(f"{n}={int(k)}" for n, k in zip(names, mesh.shape))
    return text, ",".join("+".join(d) if d else "_" for d in dims)


ARGS_ATTR = "_oxla_arg_shardings"
"""The attribute :func:`undistribute` sets on a program whose user inputs were DTensors:
``{"argN": (mesh text, spec text)}``."""


def undistribute(ep: Any) -> Any:
    """``ep`` without DTensors: when its parameters, buffers or inputs are DTensors, it is
    exported again from ``ep.module()`` with each parameter and buffer replaced by its
    whole value marked (:func:`shard`) with its placements, and plain inputs of the
    global shapes; the inputs' placements go to ``ARGS_ATTR`` (``argN`` items). Tracing
    does not mix DTensors with plain tensors, so this runs before decompositions.

    Every rank of the DTensors' process group must call this (``full_tensor`` gathers).

    Raises:
        NotSupportedError: an unsupported placement, or a DTensor of a fake process group
            (its other shards exist nowhere).
    """
    if "torch.distributed.tensor" not in sys.modules:
        return ep  # (no DTensor can exist without it)
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    state = {k: v for k, v in ep.state_dict.items() if isinstance(v, DTensor)}
    inputs = [n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"
              and n.name in {s.arg.name for s in ep.graph_signature.input_specs
                             if s.kind.name == "USER_INPUT"}]
    if not state and not any(isinstance(v, DTensor) for v in inputs):
        return ep
    for name, t in state.items():
        if any(dist.get_backend(t.device_mesh.get_group(i)) == "fake"
               for i in range(t.device_mesh.ndim)):
            raise NotSupportedError(f"'{name}' is a DTensor of a fake process group: only "
                                    "this rank's shard exists, so the whole weight cannot "
                                    "be compiled; use a real process group (gloo)")
    gm = ep.module()
    for name, t in state.items():
        mesh, spec = placement_spec(t, name)
        whole = t.full_tensor().detach()
        if name in dict(ep.named_parameters()):
            whole = torch.nn.Parameter(whole, requires_grad=False)
        shard(whole, mesh, spec)
        owner, _, leaf = name.rpartition(".")
        target = gm.get_submodule(owner) if owner else gm
        if isinstance(whole, torch.nn.Parameter):
            setattr(target, leaf, whole)
        else:
            target.register_buffer(leaf, whole)
    args = {f"arg{i}": placement_spec(v, f"input {i}") for i, v in enumerate(inputs)
            if isinstance(v, DTensor)}
    plain = tuple(torch.zeros(tuple(v.shape), dtype=v.dtype) for v in inputs)
    out = torch.export.export(gm, plain, strict=False)
    setattr(out, ARGS_ATTR, args)
    return out


def collect(model: Any, example_inputs: Sequence[Any], mesh: Any,
            shardings: Mapping[str, Any] | None,
            program: Any = None) -> tuple[str, list[str]] | None:
    """The mesh and ``--shard`` items of a model's annotations, or None when none.

    ``shardings`` keys are ``argN``, ``resultN``, a parameter or buffer name
    (``state_dict`` key or glob) or ``param:GLOB``; values are specs. Tensors marked with
    :func:`shard` (model parameters and buffers, example inputs, and the ``state_dict``
    of ``program``, the ExportedProgram, where DTensors were) add theirs.

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
    for name, t in (program.state_dict.items() if program is not None else ()):
        mark = getattr(t, ATTR, None)
        item = f"param:{name}={mark[1]}" if mark is not None else None
        if item is not None and item not in items:
            meshes.add(mark[0])
            items.append(item)
    for target, (m, spec) in getattr(program, ARGS_ATTR, {}).items():
        meshes.add(m)
        items.append(f"{target}={spec}")
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


__all__ = ["shard", "collect", "mesh_text", "spec_text", "placement_spec", "undistribute",
           "ARGS_ATTR"]
