"""``import-shardings``: GSPMD annotations (``mhlo.sharding`` strings) -> the sdy model.

JAX without Shardy writes ``mhlo.sharding`` on function arguments and results,
``stablehlo.custom_call @Sharding`` for ``with_sharding_constraint``, and for
``shard_map`` the chain ``@Sharding -> @SPMDFullToShardShape -> call @body ->
@Sharding{manual} -> @SPMDShardToFullShape``. This pass adds an ``sdy.mesh @mesh``
over :func:`~oxla.sharding.gspmd.mesh_for` the device count and rewrites those into
``sdy.sharding`` attributes, ``sdy.sharding_constraint`` and
``sdy.manual_computation`` (the body inlined into its region), which is what Shardy's
own import does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.operation import Block, Module, Operation, Region
from oxla.ir.sdy import (
    AxisRef,
    AxisSetAttr,
    DimSharding,
    ShardingPerValueAttr,
    TensorShardingAttr,
)
from oxla.sharding import model as M
from oxla.sharding.gspmd import GspmdSharding, mesh_for, parse_gspmd

_KEY = "mhlo.sharding"


def _target(op: Operation) -> str | None:
    if op.name != "stablehlo.custom_call":
        return None
    a = op.attributes.get("call_target_name")
    return a.value if isinstance(a, A.StringAttr) else None


def _str_of(op_or_attrs) -> str | None:
    a = op_or_attrs.get(_KEY) if isinstance(op_or_attrs, dict) else op_or_attrs.attributes.get(
        _KEY)
    return a.value if isinstance(a, A.StringAttr) else None


def _rank(v) -> int:
    return len(v.type.shape) if isinstance(v.type, T.TensorType) else 0


@dataclass(frozen=True)
class ImportShardings:
    """Converts GSPMD ``mhlo.sharding`` annotations into sdy shardings over one mesh.

    Assumes: every tiled sharding uses the same device count. Guarantees: no
    ``mhlo.sharding`` or ``@Sharding``/``@SPMD*`` custom call is left; a module
    without them is unchanged.
    """

    name: str = "import-shardings"

    def run(self, module: Module) -> Module:
        texts = self._collect(module)
        if not texts:
            return module
        parsed = [parse_gspmd(t) for t in texts]
        counts = {p.num_devices for p in _flat(parsed) if p.kind == "tiled"}
        n = module.op.attributes.get("mhlo.num_partitions")
        if counts and len(counts) > 1:
            raise NotSupportedError("GSPMD shardings over different device counts: "
                                    + ", ".join(map(str, sorted(counts))))
        ndev = counts.pop() if counts else (n.value if isinstance(n, A.IntegerAttr) else 1)
        mesh = mesh_for(ndev)
        M.ensure_mesh(module, mesh)
        for f in list(module.functions):
            if f.parent is not None:  # (not a shard_map body inlined and erased)
                self._func(module, f, mesh)
        return module

    def _collect(self, module: Module) -> list[str]:
        out = []
        for f in module.functions:
            for key in ("arg_attrs", "res_attrs"):
                arr = f.attributes.get(key)
                if isinstance(arr, A.ArrayAttr):
                    for d in arr:
                        s = _str_of(dict(d.entries)) if isinstance(d, A.DictionaryAttr) else None
                        if s:
                            out.append(s)
            for op in f.walk():
                s = _str_of(op)
                if s:
                    out.append(s)
        return out

    def _conv(self, text: str, rank: int, mesh) -> object:
        return parse_gspmd(text).to_sdy(rank, mesh)

    def _func(self, module: Module, f: Operation, mesh) -> None:
        ft = f.attributes["function_type"].type  # type: ignore[attr-defined]
        for key, types, setter in (("arg_attrs", ft.inputs, M.set_arg_sharding),
                                   ("res_attrs", ft.results, M.set_result_sharding)):
            arr = f.attributes.get(key)
            if not isinstance(arr, A.ArrayAttr):
                continue
            for i, d in enumerate(arr):
                s = _str_of(dict(d.entries)) if isinstance(d, A.DictionaryAttr) else None
                if s is None:
                    continue
                g = parse_gspmd(s)
                entries = {k: v for k, v in d.entries if k != _KEY}
                new = list(f.attributes[key])
                new[i] = A.DictionaryAttr(tuple(entries.items()))
                f.attributes[key] = A.ArrayAttr(tuple(new))
                if g.kind == "tiled" or g.kind == "replicated":
                    rank = len(types[i].shape) if isinstance(types[i], T.TensorType) else 0
                    setter(f, i, g.to_sdy(rank, mesh))
        if not f.regions or not f.regions[0].blocks:
            return
        self._ops(module, f.regions[0].blocks[0], mesh, frozenset())

    def _ops(self, module: Module, block: Block, mesh, manual: frozenset) -> None:
        """Converts the annotations of ``block``'s ops; ``manual``: the mesh axes that
        are manual here (inside a shard_map body), whose subgroups are dropped from its
        shardings (the body's shardings are over the free axes)."""
        for op in list(block.ops):
            if op.parent is None:
                continue
            t = _target(op)
            if t == "SPMDFullToShardShape":
                self._manual(module, op, mesh, manual)
            elif op.name == "func.call" and not op.operands and op.results and all(
                    _shard_to_full(r) is not None for r in op.results):
                self._manual(module, op, mesh, manual)  # (e.g. axis_index: no operand)
            elif t == "Sharding":
                s = _str_of(op)
                g = parse_gspmd(s) if s else GspmdSharding("replicated")
                if g.kind == "manual":
                    if manual:  # inside a body: an identity
                        op.results[0].replace_all_uses_with(op.operands[0])
                        op.erase()
                    continue
                c = Operation.create("sdy.sharding_constraint", [op.operands[0]],
                                     [op.results[0].type],
                                     {"sharding": _sdy(g, _rank(op.operands[0]), mesh,
                                                       manual, op)},
                                     loc=op.loc)
                op.parent.insert_before(op, c)
                op.results[0].replace_all_uses_with(c.results[0])
                op.erase()
            elif _str_of(op) is not None:
                g = parse_gspmd(_str_of(op))
                op.attributes.pop(_KEY)
                elems = g.elements if g.kind == "tuple" else (g,)
                if all(e.kind in ("tiled", "replicated") for e in elems) and \
                        len(elems) == len(op.results):
                    op.attributes[M.KEY] = ShardingPerValueAttr(tuple(
                        _sdy(e, _rank(r), mesh, manual, op) for e, r in zip(elems, op.results)))
            if manual:
                for region in op.regions:  # (a collective's reducer holds @Sharding too)
                    for blk in region.blocks:
                        self._ops(module, blk, mesh, manual)

    def _manual(self, module: Module, start: Operation, mesh, outer: frozenset) -> None:
        """``Sharding(x){S} -> FullToShard -> call @body -> Sharding{M} ->
        ShardToFull{S2}`` becomes ``sdy.manual_computation``; ``start`` is the
        FullToShard (or, for a body without operands, the call). Its manual axes are
        those of the ``manual`` subgroup of the FullToShard's (or the returned
        @Sharding's) sharding, all the mesh for ``{manual}``, less the axes already
        manual around it (``outer``); the body is converted in turn.

        Raises:
            NotSupportedError: another shape of shard_map, or a manual sharding over
                axes that are not manual.
        """
        if start.name == "func.call":
            call = start
        else:
            users = [u.owner for u in start.results[0].uses]
            if len(users) != 1 or users[0].name != "func.call":
                raise NotSupportedError("shard_map form not recognized: SPMDFullToShardShape "
                                        "must feed one call", start.loc)
            call = users[0]
        first = [u.owner for u in call.results[0].uses] if call.results else []
        head = _str_of(first[0]) if first else None
        marker = _str_of(start) if start.name != "func.call" else head
        manual = _manual_axes(parse_gspmd(marker or "{manual}"), mesh) - outer
        if not manual:
            raise NotSupportedError("shard_map form not recognized: no manual axis",
                                    call.loc)
        ins, in_sh = [], []
        for v in call.operands:
            src = v.owner if hasattr(v, "owner") and isinstance(v.owner, Operation) else None
            if src is None or _target(src) != "SPMDFullToShardShape":
                raise NotSupportedError("shard_map form not recognized: every call operand "
                                        "must come from SPMDFullToShardShape", call.loc)
            x = src.operands[0]
            pre = x.owner if isinstance(getattr(x, "owner", None), Operation) else None
            ins.append(x)
            if pre is not None and pre.name == "sdy.sharding_constraint":
                in_sh.append(pre.attributes["sharding"])
            elif pre is not None and _target(pre) == "Sharding":
                in_sh.append(_sdy(parse_gspmd(_str_of(pre) or "{replicated}"), _rank(x),
                                  mesh, outer, pre))
            else:
                in_sh.append(GspmdSharding("replicated").to_sdy(_rank(x), mesh))
        outs, out_sh, tails = [], [], []
        for r in call.results:
            us = [u.owner for u in r.uses]
            if len(us) != 1 or _target(us[0]) != "Sharding":
                raise NotSupportedError("shard_map form not recognized: a call result must "
                                        "feed one @Sharding{manual}", call.loc)
            us2 = [u.owner for u in us[0].results[0].uses]
            if len(us2) != 1 or _target(us2[0]) != "SPMDShardToFullShape":
                raise NotSupportedError("shard_map form not recognized: expected "
                                        "SPMDShardToFullShape", call.loc)
            s2 = _str_of(us2[0])
            outs.append(us2[0].results[0])
            out_sh.append(_sdy(parse_gspmd(s2), _rank(outs[-1]), mesh, outer, us2[0]))
            tails.append((us[0], us2[0]))
        callee = module.lookup(call.attributes["callee"].root)  # type: ignore[attr-defined]
        body = callee.regions[0].blocks[0]
        blk = Block()
        mapping = {a: blk.add_arg(a.type) for a in body.args}
        for inner in body.ops:
            if inner.name == "func.return":
                blk.append(Operation.create("sdy.return",
                                            [mapping.get(v, v) for v in inner.operands]))
                break
            c = inner.clone(mapping)
            blk.append(c)
            for a, b in zip(inner.results, c.results):
                mapping[a] = b
        region = Region()
        region.add_block(blk)
        mc = Operation.create("sdy.manual_computation", ins, [o.type for o in outs], {
            "in_shardings": ShardingPerValueAttr(tuple(in_sh)),
            "out_shardings": ShardingPerValueAttr(tuple(out_sh)),
            "manual_axes": AxisSetAttr(tuple(AxisRef(n) for n in mesh.names if n in manual))},
            [region], call.loc)
        call.parent.insert_before(call, mc)
        for o, r in zip(outs, mc.results):
            o.replace_all_uses_with(r)
        for a, b in tails:
            b.erase()
            a.erase()
        srcs = [v.owner for v in call.operands]
        call.erase()
        for src in srcs:
            src.erase()
        if manual | outer != set(mesh.names):
            self._ops(module, blk, mesh, frozenset(manual | outer))
        if callee is not None and not any(op.name == "func.call" and
                                          op.attributes["callee"].root == callee.attributes[
                                              "sym_name"].value for op in module.walk()):
            callee.erase()


def _shard_to_full(r) -> Operation | None:
    """The ``@SPMDShardToFullShape`` that ``r`` feeds through one ``@Sharding``."""
    us = [u.owner for u in r.uses]
    if len(us) != 1 or _target(us[0]) != "Sharding":
        return None
    us2 = [u.owner for u in us[0].results[0].uses]
    return us2[0] if len(us2) == 1 and _target(us2[0]) == "SPMDShardToFullShape" else None


def _manual_axes(g: GspmdSharding, mesh) -> frozenset:
    """The mesh axes a manual sharding is manual over: all for ``{manual}``, those of
    the ``manual`` subgroup of a tiled one, none otherwise."""
    if g.kind == "manual":
        return frozenset(mesh.names)
    if g.kind != "tiled" or "manual" not in g.last_tile_dims:
        return frozenset()
    groups = g.axis_groups(mesh)
    k = len(g.tile) - len(g.last_tile_dims) + g.last_tile_dims.index("manual")
    return frozenset(groups[k])


def _sdy(g: GspmdSharding, rank: int, mesh, manual: frozenset, op: Operation):
    """``g`` over ``mesh`` where the axes ``manual`` are manual: those appear only as
    ``g``'s manual subgroup, and are left out of the result; the dimensions ``op``
    leaves unspecified are open.

    Raises:
        NotSupportedError: a manual subgroup over other axes, a tensor dimension tiled
            along a manual axis.
    """
    found = _manual_axes(g, mesh) if g.kind == "tiled" else frozenset()
    if found and found != manual:
        raise NotSupportedError(f"GSPMD sharding '{g}' is manual over "
                                f"{sorted(found)}, expected {sorted(manual)}", op.loc)
    s = g.to_sdy(rank, mesh)
    if any(a.name in manual for d in s.dims for a in d.axes):
        raise NotSupportedError(f"GSPMD sharding '{g}' tiles a dimension along a manual "
                                "axis", op.loc)
    free = _unspecified_dims(op)
    dims = tuple(DimSharding(d.axes, False, d.priority) if k in free else d
                 for k, d in enumerate(s.dims))
    return TensorShardingAttr(s.mesh, dims, tuple(a for a in s.replicated
                                                  if a.name not in manual), s.unreduced)


def _unspecified_dims(op: Operation) -> set[int]:
    """The dimensions a ``@Sharding`` leaves to propagation (``backend_config =
    "unspecified_dims=[0,1]"``, JAX's unconstrained dims): open in sdy."""
    cfg = op.attributes.get("backend_config")
    text = cfg.value if isinstance(cfg, A.StringAttr) else ""
    m = re.search(r"unspecified_dims=\[([\d,\s]*)\]", text)
    return {int(x) for x in m.group(1).split(",") if x.strip()} if m else set()


def _flat(items):
    for p in items:
        if p.kind == "tuple":
            yield from _flat(p.elements)
        else:
            yield p


__all__ = ["ImportShardings"]
