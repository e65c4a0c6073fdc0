"""The SPMD partitioner: a sharded module -> one per-device program (XLA's
``SpmdPartitioner``, Shardy's ``insert-explicit-reshards`` + ``reshard-to-collectives``
+ ``convert-global-to-local`` in one walk).

Every value gets a local shape (its global shape divided by its shard counts). Each op
is partitioned through its factor rule: the factors take the axes of the op's result
shardings (a reduction factor those of its operands); an operand whose sharding
differs from what the factors imply is *resharded* first; the op then runs on local
shapes, and a sharded reduction factor (a dot's contracting dimension, a reduce's
reduced dimension) is completed by an ``all_reduce`` over its axes. Resharding is
``all_gather`` for axes to remove, a ``dynamic_slice`` at the device's shard offset
for axes to add (no communication). Ops without a rule run replicated on the global
shapes (every operand gathered). Uneven shards (a dimension its shard count does not
divide) are ``ceil(size / k)`` long, padded at the end: element-wise ops, dots,
reductions, transposes and broadcasts run on them, a reduced dimension's padding
replaced by the reduction's identity (masked with ``iota < size``); other ops keep
such a dimension whole. A gather from or a scatter into an operand sharded on its
indexed dimension is done per shard (:mod:`oxla.sharding.gather`), a convolution
sharded spatially with halo exchange (:mod:`oxla.sharding.halo`).
``sdy.manual_computation`` bodies are inlined as they are (they are per-device code
with explicit collectives); a body manual over some of the mesh axes is partitioned
along the others. A scatter of batch-sharded updates into a replicated table is, where
its update computation allows and it moves fewer bytes, local scatters combined by an
``all_reduce`` (:mod:`oxla.sharding.gather`).

Device coordinates come from ``stablehlo.partition_id``; collectives use
``channel_handle`` with ``use_global_device_ids`` (spec "flattened_ids": partition ids
are device ids, one replica).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oxla.errors import NotSupportedError
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.ir.builder import Builder
from oxla.ir.location import NameLoc
from oxla.ir.opdef import ELEMENTWISE
from oxla.ir.operation import Block, Module, Operation, Value
from oxla.ir.sdy import DimSharding, MeshAttr, TensorShardingAttr
from oxla.sharding import model as M
from oxla.sharding.collectives import (  # noqa: F401  (re-exported)
    Collective,
    DeviceOps,
    PartitionReport,
    Weight,
    _axes,
    _replicated,
    _tensor,
)
from oxla.sharding.factors import compose as _compose
from oxla.sharding.factors import project as _project
from oxla.sharding.gather import (
    batch_scatter_shardings,
    combined_scatter,
    combiner,
    identity,
    masked_gather,
    masked_scatter,
    scatter_shardings,
    sharded_index_dim,
)
from oxla.sharding.halo import halo_conv, halo_plan, input_sharding
from oxla.sharding.rules import NEED_REPLICATION, REDUCTION, rule_for

I32 = T.IntegerType(32)
_REDUCING = {"stablehlo.dot_general", "stablehlo.reduce", "stablehlo.convolution"}
_GLOBAL_OPS = {"stablehlo.iota", "stablehlo.constant", "sdy.constant", "stablehlo.rng",
               "stablehlo.rng_bit_generator"}


class _FuncPartitioner(DeviceOps):
    def __init__(self, func: Operation, mesh: MeshAttr, mesh_name: str,
                 report: PartitionReport, channel: list[int], tables=None,
                 hoist_weights: bool = False):
        self.func = func
        self.hoist_weights = hoist_weights
        self.tables = tables or {}
        self.mesh = mesh
        self.mesh_name = mesh_name
        self.report = report
        self.channel = channel
        self.vals: dict[Value, tuple[Value, TensorShardingAttr | None]] = {}
        self._coords: dict[str, Value] = {}
        self.complete: set[Value] = set()  # results of ops run whole (replicated)
        self.partial: set[Value] = set()  # partial sums left to an explicit all-reduce
        self.block = Block()
        self.b = Builder.at_end(self.block)

    def get(self, v: Value, tgt: TensorShardingAttr | None, why: str) -> Value:
        """The local value of ``v`` sharded as ``tgt`` (resharding when needed)."""
        local, cur = self.vals[v]
        if not isinstance(v.type, T.TensorType):
            return local
        if _same(cur, tgt, len(v.type.shape)):
            return local
        return self.reshard(local, cur, tgt, v.type.shape, why)

    def local_type(self, t, sh):
        if not isinstance(t, T.TensorType):
            return t
        return _tensor(M.local_shape(t.shape, sh, self.mesh), t.element_type)

    # -- the walk ---------------------------------------------------------------------
    def run(self) -> None:
        f = self.func
        old = f.regions[0].blocks[0]
        name = f.attributes["sym_name"].value  # type: ignore[attr-defined]
        ft = f.attributes["function_type"].type  # type: ignore[attr-defined]
        ins = [M.arg_sharding(f, i) for i in range(len(old.args))]
        outs = [M.result_sharding(f, i) for i in range(len(ft.results))]
        self.report.in_shardings[name] = ins
        self.report.out_shardings[name] = outs
        self.report.global_types[name] = (tuple(ft.inputs), tuple(ft.results))
        for a, s in zip(old.args, ins):
            self.vals[a] = (self.block.add_arg(self.local_type(a.type, s)), s)
        for op in list(old.ops):
            self.op(op, outs)
        region = f.regions[0]
        region.blocks = []
        region.add_block(self.block)
        new_ft = T.FunctionType(tuple(a.type for a in self.block.args),
                                tuple(v.type for v in self.block.ops[-1].operands))
        f.attributes["function_type"] = A.TypeAttr(new_ft)
        for i in range(len(ins)):
            M.set_arg_sharding(f, i, None)
        for i in range(len(outs)):
            M.set_result_sharding(f, i, None)

    def op(self, op: Operation, outs) -> None:
        n = op.name
        why = n
        if n == "func.return":
            vals = [self.get(v, s, "return") for v, s in zip(op.operands, outs)]
            self._mk("func.return", vals, [])
            return
        if n in ("sdy.sharding_constraint", "sdy.reshard"):
            s = op.attributes["sharding"]
            self.vals[op.results[0]] = (self.get(op.operands[0], s, n), s)
            return
        if n in ("sdy.all_reduce", "sdy.reduce_scatter"):
            x, cur = self.vals[op.operands[0]]
            key = "reduction_axes" if n == "sdy.all_reduce" else "reduce_scatter_axes"
            a = op.attributes[key]
            axes = a.axes if hasattr(a, "axes") else tuple(x for d in a.dims for x in d)
            # a value the partitioner computed whole (an op run replicated) is already
            # the sum the explicit all-reduce asks for
            if axes and op.operands[0] not in self.complete:
                x = self.all_reduce(x, axes, None, "reduction", n)
            s = op.attributes["out_sharding"]
            self.vals[op.results[0]] = (x, cur)
            self.vals[op.results[0]] = (self.get(op.results[0], s, n), s)
            return
        if n == "stablehlo.constant" and self.hoist_weights and self._hoist(op):
            return
        if n == "sdy.constant":
            c = Operation.create("stablehlo.constant", [], [op.results[0].type],
                                 {"value": op.attributes["value"]}, loc=op.loc)
            self.b.insert(c)
            self.vals[op.results[0]] = (c.results[0], None)
            return
        single = self._single_device(op)
        if single is not None:
            self.replicated(op)
            for r in op.results:
                lv, sh = self.vals[r]
                self.vals[r] = (self.broadcast_from(lv, single, n), sh)
            return
        if n in ("sdy.all_gather", "sdy.all_slice", "sdy.all_to_all",
                 "sdy.collective_permute"):
            s = op.attributes["out_sharding"]
            self.vals[op.results[0]] = (self.get(op.operands[0], s, n), s)
            return
        if n == "sdy.manual_computation":
            self.manual(op)
            return
        if n in ("sdy.sharding_group", "sdy.propagation_barrier", "sdy.data_flow_edge",
                 "sdy.func_data_flow_edge"):
            if op.results:
                self.vals[op.results[0]] = self.vals[op.operands[0]]
            return
        if n.startswith("sdy.") and n != "sdy.constant":
            raise NotSupportedError(f"the partitioner does not support '{n}' yet", op.loc)
        if n == "stablehlo.gather" and self._index_parallel_gather(op):
            return
        if n == "stablehlo.scatter" and (self._index_parallel_scatter(op)
                                         or self._batch_scatter(op)):
            return
        if n == "stablehlo.convolution" and self._halo_conv(op):
            return
        rule = None if n in _GLOBAL_OPS or any(
            r for r in op.regions if n != "stablehlo.reduce") else rule_for(op)
        if rule is None or len(rule.operands) != len(op.operands) \
                or len(rule.results) != len(op.results):
            self.replicated(op)
            return
        res_sh = [M.value_sharding(r) for r in op.results]
        opd_sh = [self.vals[v][1] if v in self.vals else None for v in op.operands]
        fa: dict[int, tuple] = {}
        projs = [_project(s, fs, rule.sizes, self.mesh) for s, fs in zip(res_sh, rule.results)]
        projs += [_project(s, fs, rule.sizes, self.mesh) for s, fs in zip(opd_sh, rule.operands)]
        used: set[str] = set()
        nres = len(op.results)

        def sharded_operands(f: int) -> bool:  # every operand holding f is sharded on it
            return all(p.get(f) for p, fs in zip(projs[nres:], rule.operands)
                       if any(f in d for d in fs))

        # a contraction the operands are already sharded on is kept (partial results,
        # then all_reduce or reduce_scatter) rather than gathered for the result's sake
        first = [f for f in range(len(rule.sizes)) if rule.kinds.get(f) == REDUCTION
                 and n in _REDUCING and sharded_operands(f)]
        for f in first + [f for f in range(len(rule.sizes)) if f not in first]:
            kind = rule.kinds.get(f)
            if kind == NEED_REPLICATION:
                continue
            if kind == REDUCTION and n not in _REDUCING:
                continue
            for p in projs:
                if f in p and p[f]:
                    ax = []
                    for a in p[f]:
                        if a.name in used:
                            break
                        ax.append(a)
                    if ax:
                        fa[f] = tuple(ax)
                        used.update(a.name for a in ax)
                    break
        self._even(fa, rule, list(op.operands) + list(op.results), _padding_ok(op))
        want_in = [self._from_factors(fs, fa, rule.sizes) for fs in rule.operands]
        locals_in = [self.get(v, s, why) for v, s in zip(op.operands, want_in)]
        self._mask_reductions(op, rule, fa, locals_in)
        got_out = [self._from_factors(fs, fa, rule.sizes) for fs in rule.results]
        new = Operation.create(n, locals_in, [self.local_type(r.type, s) for r, s in
                                              zip(op.results, got_out)],
                               {k: v for k, v in op.attributes.items() if k != M.KEY},
                               [r.clone() for r in op.regions], op.loc)
        if n == "stablehlo.slice":  # whole dimensions end at their local size
            lim = list(A.to_python(new.attributes["limit_indices"]))
            for d, size in enumerate(new.results[0].type.shape):
                if _axes(got_out[0], d):
                    lim[d] = size
            new.attributes["limit_indices"] = A.i64_array(lim)
        if n == "stablehlo.dynamic_slice":  # whole dimensions are sliced at local size
            new.attributes["slice_sizes"] = A.i64_array(list(new.results[0].type.shape))
        if n == "stablehlo.gather":  # operand passthrough dims: their local size
            ss = list(A.to_python(new.attributes["slice_sizes"]))
            for d, size in enumerate(locals_in[0].type.shape):
                if _axes(want_in[0], d):
                    ss[d] = size
            new.attributes["slice_sizes"] = A.i64_array(ss)
        self.b.insert(new)
        red = tuple(a for f, ax in fa.items() if rule.kinds.get(f) == REDUCTION for a in ax)
        results = list(new.results)
        explicit = all(u.owner.name == "sdy.all_reduce" for r in op.results for u in r.uses)
        if red and not explicit:  # (an explicit sdy.all_reduce completes the sum itself)
            body = op.regions[0] if n == "stablehlo.reduce" else None
            d = _scatter_dim(res_sh, got_out, red) if len(results) == 1 else None
            if d is not None and op.results[0].type.shape[d] % M.dim_shards(
                    res_sh[0], self.mesh, d):
                d = None  # an uneven result: all_reduce, then slice with padding
            if d is not None:  # the result is wanted sharded on the reduced axes
                results = [self.reduce_scatter(results[0], red, d, body.clone() if body
                                               else None, n)]
                got_out = [res_sh[0]]
            else:
                results = [self.all_reduce(r, red, body.clone() if body else None,
                                           "reduction", n) for r in results]
        for r, lv, s in zip(op.results, results, got_out):
            self.vals[r] = (lv, s)
            # no partial sums in it: an explicit all-reduce of it has nothing to add
            if not (red and explicit) and not any(v in self.partial for v in op.operands):
                self.complete.add(r)
            else:
                self.partial.add(r)
        self.report.op_shardings.append((n, ", ".join(str(s.body()) if s else "replicated"
                                                      for s in got_out)))

    def _even(self, fa: dict, rule, values, padding_ok: bool = False) -> None:
        """Drops the axes of factors that would split some dimension unevenly (that
        dimension then stays whole inside the op: correct, less parallel), except, for
        ops where padding at a dimension's end is harmless or masked (``padding_ok``),
        a dimension of one factor: it is split into ``ceil(size / k)`` shards."""
        slots = rule.operands + rule.results
        changed = True
        while changed:
            changed = False
            for v, fs in zip(values, slots):
                if not isinstance(v.type, T.TensorType):
                    continue
                for d, factors in enumerate(fs):
                    axes = _compose(factors, fa, rule.sizes, self.mesh)
                    if padding_ok and len(factors) == 1 \
                            and rule.sizes[factors[0]] == v.type.shape[d]:
                        continue
                    if axes and v.type.shape[d] % self._count(axes):
                        for f in factors:
                            if f in fa:
                                del fa[f]
                                changed = True

    def _hoist(self, op: Operation) -> bool:
        """A sharded constant becomes a trailing argument holding each device's shard
        (:class:`Weight`); False for replicated or scalar constants."""
        r = op.results[0]
        sh = M.value_sharding(r)
        value = op.attributes.get("value")
        if sh is None or not any(d.axes for d in sh.dims) or \
                not isinstance(value, A.DenseElementsAttr) or not isinstance(
                    r.type, T.TensorType) or not r.type.shape:
            return False
        arr = np.broadcast_to(value.array, r.type.shape)
        name = self.func.attributes["sym_name"].value  # type: ignore[attr-defined]
        sh = TensorShardingAttr(self.mesh_name, sh.dims)
        w = Weight(_loc_name(op) or f"constant{len(self.report.weights.get(name, []))}", sh,
                   r.type, M.shard_array(arr, sh, self.mesh))
        self.report.weights.setdefault(name, []).append(w)
        self.vals[r] = (self.block.add_arg(self.local_type(r.type, sh)), sh)
        self.complete.add(r)
        self.report.op_shardings.append((op.name, str(sh.body())))
        return True

    def _halo_conv(self, op: Operation) -> bool:
        """A convolution whose input is sharded on a spatial dimension: halo exchange
        (:mod:`oxla.sharding.halo`); False when the plan does not apply."""
        plan = halo_plan(op, self.vals[op.operands[0]][1], self.mesh)
        if plan is None:
            return False
        x = self.get(op.operands[0], input_sharding(op, plan, self.mesh_name), op.name)
        rank = len(op.operands[1].type.shape)
        w = self.get(op.operands[1], _replicated(self.mesh_name, rank), op.name)
        out, sh = halo_conv(self, op, x, w, plan, self.mesh_name)
        self.vals[op.results[0]] = (out, sh)
        self.complete.add(op.results[0])
        self.report.op_shardings.append((op.name, str(sh.body())))
        return True

    def _index_parallel_gather(self, op: Operation) -> bool:
        """A gather from a table sharded on its indexed dimension: local lookups, masked,
        summed (:mod:`oxla.sharding.gather`); False when the table is not so sharded."""
        x_sh = self.vals[op.operands[0]][1]
        d = sharded_index_dim(op, x_sh)
        if d is None or op.operands[0].type.shape[d] % self._count(_axes(x_sh, d)):
            return False
        ivd = int(op.attributes["dimension_numbers"].get("index_vector_dim", 0) or 0)
        table_axes = {a.name for a in _axes(x_sh, d)}
        i_cur = self.vals[op.operands[1]][1]
        rank = len(op.operands[1].type.shape)
        i_sh = TensorShardingAttr(self.mesh_name, tuple(
            DimSharding(()) if k == ivd or any(a.name in table_axes for a in _axes(i_cur, k))
            else DimSharding(_axes(i_cur, k)) for k in range(rank)))
        x = self.get(op.operands[0], x_sh, op.name)
        idx = self.get(op.operands[1], i_sh, op.name)
        out, sh = masked_gather(self, op, x, x_sh, idx, i_sh, d, self.mesh_name)
        self.vals[op.results[0]] = (out, sh)
        self.complete.add(op.results[0])
        self.report.op_shardings.append((op.name, str(sh.body())))
        return True

    def _index_parallel_scatter(self, op: Operation) -> bool:
        """A scatter into an operand sharded on its indexed dimension: each device
        applies the updates of its own rows (:mod:`oxla.sharding.gather`), no collective
        on the operand; False when the operand is not so sharded."""
        x_sh = self.vals[op.operands[0]][1]
        plan = scatter_shardings(op, x_sh, self.mesh_name)
        if plan is None:
            return False
        d, i_sh, u_sh = plan
        shape = op.operands[0].type.shape
        if any(shape[k] % self._count(_axes(x_sh, k)) for k in range(len(shape))):
            return False
        x = self.get(op.operands[0], x_sh, op.name)
        idx = self.get(op.operands[1], i_sh, op.name)
        upd = self.get(op.operands[2], u_sh, op.name)
        out = masked_scatter(self, op, x, x_sh, idx, upd, d)
        if out is None:
            return False
        self.vals[op.results[0]] = (out, x_sh)
        self.complete.add(op.results[0])
        self.report.op_shardings.append((op.name, str(x_sh.body())))
        return True

    def _batch_scatter(self, op: Operation) -> bool:
        """A scatter of batch-sharded indices/updates into a table not sharded on their
        axes: all-reduce form (:func:`~oxla.sharding.gather.combined_scatter`) when its
        update computation allows it and it moves fewer bytes than gathering the
        indices and updates (ring model, :mod:`oxla.sharding.cost`); the form taken is
        counted in ``report.scatter_forms``. False: the op runs replicated (gathered)."""
        plan = batch_scatter_shardings(op, self.vals[op.operands[0]][1],
                                       self.vals[op.operands[1]][1],
                                       self.vals[op.operands[2]][1], self.mesh,
                                       self.mesh_name)
        if not any(_axes(self.vals[v][1], d) for v in op.operands[1:]
                   for d in range(len(v.type.shape))):
            return False  # (nothing batch-sharded: not this op's case)
        forms = self.report.scatter_forms
        name = combiner(op)
        et = op.operands[0].type.element_type
        if plan is None or name is None or identity(name, et) is None:
            forms["gather"] = forms.get("gather", 0) + 1
            return False
        axes, x_sh, i_sh, u_sh = plan
        k = self._count(axes)
        local = self.local_type(op.operands[0].type, x_sh)
        table = local.num_elements * np.dtype(et.dtype).itemsize
        gather = 0
        for v in op.operands[1:]:
            size = np.dtype(v.type.element_type.dtype).itemsize
            cur = self.local_type(v.type, self.vals[v][1])
            gather += (v.type.num_elements - cur.num_elements) * size
        if 2 * (k - 1) / k * table >= gather:
            forms["gather"] = forms.get("gather", 0) + 1
            return False
        x = self.get(op.operands[0], x_sh, op.name)
        idx = self.get(op.operands[1], i_sh, op.name)
        upd = self.get(op.operands[2], u_sh, op.name)
        out = combined_scatter(self, op, x, idx, upd, axes, name)
        self.vals[op.results[0]] = (out, x_sh)
        self.complete.add(op.results[0])
        forms["all_reduce"] = forms.get("all_reduce", 0) + 1
        self.report.op_shardings.append((op.name, f"{x_sh.body()} (all-reduce of local "
                                         "scatters over " + ",".join(str(a) for a in axes)
                                         + ")"))
        return True

    def _mask_reductions(self, op: Operation, rule, fa: dict, locals_in: list) -> None:
        """Replaces the padding of unevenly sharded reduced dimensions by the reduction's
        identity: a reduce's init value, zero for a dot's contraction."""
        for f, axes in fa.items():
            size = rule.sizes[f]
            if rule.kinds.get(f) != REDUCTION or not size % self._count(axes):
                continue
            for i, fs in enumerate(rule.operands):
                for d, factors in enumerate(fs):
                    if factors != (f,):
                        continue
                    x = locals_in[i]
                    if op.name == "stablehlo.reduce":
                        fill = locals_in[i + len(op.operands) // 2]
                    else:
                        et = x.type.element_type
                        fill = self.b.constant(np.zeros((), et.dtype), et)
                    locals_in[i] = self.mask_padding(x, d, axes, size, fill)

    def _from_factors(self, dims_factors, fa, sizes) -> TensorShardingAttr:
        return TensorShardingAttr(self.mesh_name, tuple(
            DimSharding(_compose(fs, fa, sizes, self.mesh)) for fs in dims_factors))

    def _single_device(self, op: Operation) -> int | None:
        """The device of a single-device sharding (``<@m, []>`` on a mesh
        ``<[], device_ids=[k]>``), else None.

        Raises:
            NotSupportedError: a sharding over another mesh with axes.
        """
        a = op.attributes.get(M.KEY)
        if not isinstance(a, M.ShardingPerValueAttr):
            return None
        for s in a.shardings:
            if isinstance(s.mesh, str) and s.mesh != self.mesh_name:
                other = self.tables.get(s.mesh)
                if other is None or other.axes or other.device_ids is None \
                        or len(other.device_ids) != 1:
                    raise NotSupportedError(f"ops sharded over another mesh '@{s.mesh}' "
                                            "are not supported yet", op.loc)
                return other.device_ids[0]
        return None

    def replicated(self, op: Operation) -> None:
        ins = []
        for v in op.operands:
            rank = len(v.type.shape) if isinstance(v.type, T.TensorType) else 0
            ins.append(self.get(v, _replicated(self.mesh_name, rank), op.name))
        mapping = dict(zip(op.operands, ins))
        new = op.clone(mapping)
        new.attributes.pop(M.KEY, None)
        self.b.insert(new)
        for r, nr in zip(op.results, new.results):
            rank = len(r.type.shape) if isinstance(r.type, T.TensorType) else 0
            self.vals[r] = (nr, _replicated(self.mesh_name, rank))
            self.complete.add(r)
        self.report.op_shardings.append((op.name, "replicated"))

    def manual(self, op: Operation) -> None:
        """``sdy.manual_computation``: the body is per-device code along its manual
        axes (local shapes there, its own collectives over them). Over every mesh axis
        it is inlined as it is; over a subset, the body is partitioned like the rest of
        the function along the free axes (its values keep shardings over those only)."""
        manual = {a.name for a in op.attributes["manual_axes"].axes}  # type: ignore[attr-defined]
        ins = op.attributes["in_shardings"].shardings  # type: ignore[attr-defined]
        outs = op.attributes["out_shardings"].shardings  # type: ignore[attr-defined]
        body = op.regions[0].blocks[0]
        if manual != set(self.mesh.names):
            self._partial_manual(op, manual, ins, outs, body)
            return
        mapping: dict[Value, Value] = {}
        for a, v, s in zip(body.args, op.operands, ins):
            mapping[a] = self.get(v, s, "manual_computation")
        for inner in list(body.ops):
            if inner.name == "sdy.return":
                for r, rv, s in zip(op.results, inner.operands, outs):
                    self.vals[r] = (mapping.get(rv, rv), s)
                break
            c = inner.clone(mapping)
            self.b.insert(c)
            for ro, rn in zip(inner.results, c.results):
                mapping[ro] = rn
        self.report.op_shardings.append(("sdy.manual_computation", "manual"))

    def _partial_manual(self, op: Operation, manual: set[str], ins, outs, body) -> None:
        """A manual computation over some mesh axes (JAX's ``shard_map(...,
        axis_names=...)``). Each operand is resharded to its in-sharding (global); the
        device's local piece of it is then, as a body value, sharded over the free axes
        of that sharding (manual axes are a major prefix of each dimension, so the free
        ones split the manual-local block). Body ops are partitioned over the free
        axes; the body's own collectives (their replica groups are global device ids
        over the manual axes) run on the local pieces: all_reduce and
        collective_permute as they are, the others on values whole along the free
        axes. Returned values are resharded to the out-shardings' free part.

        Raises:
            NotSupportedError: a boundary sharding whose manual axes are not a prefix of
                a dimension's axes.
        """
        def free(s: TensorShardingAttr, rank: int) -> TensorShardingAttr:
            dims = []
            for d in range(rank):
                ax = _axes(s, d)
                k = 0
                while k < len(ax) and ax[k].name in manual:
                    k += 1
                if any(a.name in manual for a in ax[k:]):
                    raise NotSupportedError(
                        f"manual axes must come first in each dimension of a manual "
                        f"computation's sharding, got {s.body()}", op.loc)
                dims.append(DimSharding(ax[k:]))
            return TensorShardingAttr(self.mesh_name, tuple(dims))

        for a, v, s in zip(body.args, op.operands, ins):
            rank = len(v.type.shape) if isinstance(v.type, T.TensorType) else 0
            self.vals[a] = (self.get(v, s, "manual_computation"), free(s, rank))
        for inner in list(body.ops):
            if inner.name == "sdy.return":
                for r, rv, s in zip(op.results, inner.operands, outs):
                    rank = len(r.type.shape) if isinstance(r.type, T.TensorType) else 0
                    self.vals[r] = (self.get(rv, free(s, rank), "manual_computation"), s)
                break
            if inner.name in _MANUAL_COLLECTIVES:
                self._manual_collective(inner)
            else:
                self.op(inner, [])
        self.report.op_shardings.append(("sdy.manual_computation",
                                         "manual " + ",".join(sorted(manual))))

    def _manual_collective(self, op: Operation) -> None:
        """A collective written in a manual body. Its groups vary only manual axes, so
        it pairs devices with the same free-axis coordinates: all_reduce and
        collective_permute (element by element) run on any free-axis sharding; the
        dimensions that all_gather, reduce_scatter and all_to_all concatenate or split
        are made whole along the free axes first (the others keep their sharding);
        anything else runs on values whole along the free axes."""
        acting: tuple[int, ...] | None = ()
        if op.name in ("stablehlo.all_gather", "stablehlo.reduce_scatter"):
            key = "all_gather_dim" if op.name == "stablehlo.all_gather" \
                else "scatter_dimension"
            acting = (int(A.to_python(op.attributes[key])),)
        elif op.name == "stablehlo.all_to_all":
            acting = tuple(int(A.to_python(op.attributes[k])) for k in
                           ("split_dimension", "concat_dimension"))
        elif op.name not in ("stablehlo.all_reduce", "stablehlo.collective_permute"):
            acting = None
        ins = []
        shs = []
        for v in op.operands:
            rank = len(v.type.shape) if isinstance(v.type, T.TensorType) else 0
            cur = self.vals[v][1]
            if acting is None or cur is None:
                sh = _replicated(self.mesh_name, rank)
            else:
                sh = TensorShardingAttr(self.mesh_name, tuple(
                    DimSharding(()) if d in acting else DimSharding(_axes(cur, d))
                    for d in range(rank)))
            ins.append(self.get(v, sh, op.name))
            shs.append(sh)
        new = Operation.create(op.name, ins, [self.local_type(r.type, s) for r, s in
                                              zip(op.results, shs)],
                               {k: v for k, v in op.attributes.items() if k != M.KEY},
                               [r.clone() for r in op.regions], op.loc)
        self.b.insert(new)
        for r, nr, s in zip(op.results, new.results, shs):
            self.vals[r] = (nr, s)
            self.complete.add(r)
        self.report.op_shardings.append((op.name, ", ".join(str(s.body()) for s in shs)))


_MANUAL_COLLECTIVES = {"stablehlo.all_reduce", "stablehlo.all_gather",
                       "stablehlo.reduce_scatter", "stablehlo.all_to_all",
                       "stablehlo.collective_permute", "stablehlo.collective_broadcast"}
"""Collectives a manual computation's body may hold (explicit, over its manual axes)."""


_PADDING_OK = {"stablehlo.dot_general", "stablehlo.dot", "stablehlo.reduce",
               "stablehlo.transpose", "stablehlo.broadcast_in_dim"}
"""Ops whose result is right wherever their operands are (a dimension padded at its
end gives a result padded at its end), or whose reductions mask the padding."""


def _padding_ok(op: Operation) -> bool:
    if op.name in _PADDING_OK:
        return True
    if op.name in ("stablehlo.divide", "stablehlo.remainder") and op.results and \
            isinstance(op.results[0].type.element_type, T.IntegerType):
        return False  # (an integer division by the zeros of the padding)
    return not op.regions and op.name not in _GLOBAL_OPS and op.has_trait(ELEMENTWISE) \
        or op.name in ("stablehlo.convert", "stablehlo.select", "stablehlo.compare",
                       "stablehlo.clamp", "stablehlo.is_finite")


def _loc_name(op: Operation) -> str | None:
    loc = op.loc
    while loc is not None:
        if isinstance(loc, NameLoc):
            return loc.name
        loc = getattr(loc, "child", None)
    return None


def _scatter_dim(want: list, got: list, red: tuple) -> int | None:
    """The one dimension where the wanted result sharding is the computed one plus the
    reduced axes (then a reduce_scatter), or None."""
    w, g = want[0], got[0]
    if w is None or g is None or len(w.dims) != len(g.dims):
        return None
    diff = [d for d in range(len(w.dims)) if w.dims[d].axes != g.dims[d].axes]
    if len(diff) == 1 and w.dims[diff[0]].axes == g.dims[diff[0]].axes + tuple(red):
        return diff[0]
    return None


def _same(a: TensorShardingAttr | None, b: TensorShardingAttr | None, rank: int) -> bool:
    return all(_axes(a, d) == _axes(b, d) for d in range(rank))


def _module_mesh(module: Module) -> tuple[str, MeshAttr] | None:
    table = M.meshes(module)
    used = {s.mesh for op in module.walk() for s in _shardings_of(op)}
    used = {u for u in used if isinstance(u, str)}
    multi = [n for n in used if table.get(n) is not None and table[n].num_devices > 1]
    if not multi:
        return None if not table else next(iter(table.items()))
    if len(multi) > 1:
        raise NotSupportedError("shardings over several meshes are not supported yet: "
                                + ", ".join("@" + n for n in sorted(multi)))
    return multi[0], table[multi[0]]


def _shardings_of(op: Operation):
    for a in op.attributes.values():
        if isinstance(a, TensorShardingAttr):
            yield a
        elif hasattr(a, "shardings"):
            yield from a.shardings
        elif isinstance(a, A.ArrayAttr):
            for d in a:
                if isinstance(d, A.DictionaryAttr):
                    for _, x in d.entries:
                        if isinstance(x, TensorShardingAttr):
                            yield x


def _strip_nested(module: Module) -> None:
    """Drops the shardings left in regions copied whole (a collective's or a reduce's
    body, where JAX writes ``sdy.sharding_constraint`` on scalars)."""
    for op in list(module.walk()):
        if op.name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier"):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
        else:
            op.attributes.pop(M.KEY, None)


def partition(module: Module, propagate: bool = True, hoist_weights: bool = False
              ) -> PartitionReport:
    """Partitions ``module`` in place into its per-device program.

    Args:
        module: a module with ``sdy.mesh`` and shardings (run :class:`ImportShardings`
            first for GSPMD strings).
        propagate: run :class:`~oxla.sharding.ShardingPropagation` first.
        hoist_weights: slice sharded constants (weights) at compile time: each becomes
            a trailing argument of the per-device program and ``report.weights`` holds
            every device's shard of it (no program holds the whole weight).

    Returns:
        The :class:`PartitionReport` (shardings of arguments and results, collectives).

    Raises:
        NotSupportedError: several meshes.
    """
    from oxla.passes import make_pass
    from oxla.sharding.propagation import ShardingPropagation

    report = PartitionReport()
    found = _module_mesh(module)
    if found is None:
        return report
    if any(op.name == "func.call" for op in module.walk()):
        make_pass("inline").run(module)
    if propagate:
        ShardingPropagation().run(module)
    name, mesh = found
    report.mesh = mesh
    channel = [0]
    for f in list(module.functions):
        if f.regions and f.regions[0].blocks:
            _FuncPartitioner(f, mesh, name, report, channel, M.meshes(module),
                             hoist_weights).run()
    for op in list(module.body.ops):
        if op.name == "sdy.mesh":
            op.erase()
    _strip_nested(module)
    module.op.attributes["mhlo.num_partitions"] = A.IntegerAttr(mesh.num_devices,
                                                                T.IntegerType(32))
    module.op.attributes["mhlo.num_replicas"] = A.IntegerAttr(1, T.IntegerType(32))
    return report


@dataclass(frozen=True)
class SpmdPartition:
    """Rewrites a sharded module into its per-device SPMD program (local shapes,
    collectives).

    Assumes: ``sdy`` shardings (propagated or not: propagation runs first). Guarantees:
    no ``sdy`` op or sharding is left; ``mhlo.num_partitions`` is the device count.
    """

    name: str = "spmd-partition"

    def run(self, module: Module) -> Module:
        partition(module)
        return module


__all__ = ["partition", "SpmdPartition", "PartitionReport", "Collective", "Weight"]
