"""Sharding propagation in Shardy's model (``openxla/shardy`` ``docs/propagation.md``).

Every op is seen through its factor rule (:mod:`oxla.sharding.rules`). For each factor
the shardings of the op's operands and results along it are *projected* (the axes of
a dimension made of several factors are split among them, major first), the factor
gets the longest compatible axis list, and every tensor whose dimension is open
(``?``) along it takes that list back. Forward and backward sweeps over the function
repeat until nothing changes (a fixed point: shardings only grow).

Policy (stated, and tested):
- user priorities first: in round ``pN`` only dimension shardings of priority <= N
  (and those without one) are seen; a last round sees all;
- a conflict between two tensors along a factor keeps their longest common prefix
  (Shardy's basic strategy), so no tensor's sharding is ever overridden;
- closed dimensions are never changed, an axis is used once per tensor, and a factor
  takes an axis only while the product of its axes divides its size;
- ``need_replication`` factors (concatenated, variadic-reduced dims) do not propagate.

Function results are connected to the returned values, ``sdy.sharding_constraint``
and ``sdy.reshard`` results are fixed (their operand is not constrained by them, as
in Shardy), ``sdy.manual_computation`` is a boundary: its in/out shardings propagate
to its operands and results.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxla.ir.opdef import ELEMENTWISE
from oxla.ir.operation import Module, Operation, Value
from oxla.ir.sdy import (
    DimSharding,
    ShardingPerValueAttr,
    TensorShardingAttr,
)
from oxla.sharding import model as M
from oxla.sharding.factors import (  # noqa: F401  (re-exported for the partitioner)
    _compose,
    _identity_rule,
    _project,
    _propagate_op,
    _rank,
    _State,
)
from oxla.sharding.rules import rule_for

_FIXED = {"sdy.reshard", "sdy.manual_computation",
          "sdy.all_gather", "sdy.all_slice", "sdy.reduce_scatter", "sdy.all_reduce",
          "sdy.all_to_all", "sdy.collective_permute"}


@dataclass(frozen=True)
class ShardingPropagation:
    """Completes the shardings of a module annotated with ``sdy`` shardings.

    Assumes: ``sdy.mesh`` symbols for every sharding. Guarantees: every value that
    propagation reached carries a sharding (open dims marked ``?``), written where
    Shardy writes it; user shardings and closed dims are unchanged.
    """

    name: str = "sharding-propagation"
    max_iterations: int = 50
    divisible: bool = True  # False: Shardy's rule (uneven shards, padded later)
    op_priorities: bool = True  # element-wise ops propagate first (Shardy's default)
    sub_axes: bool = False  # True: split axes across reshape factors (Shardy's rule)
    strategy: str = "aggressive"  # or "basic": conflicts across factors (see _State)
    # calls join their operands and results to the callee's arguments and results; off
    # (Shardy's propagation passes alone): only through sdy.func_data_flow_edge ops, and
    # a private function's results are left to its callers
    connect_calls: bool = True

    def run(self, module: Module) -> Module:
        table = M.meshes(module)
        if not table and not any("sdy" in str(op.attributes.get("arg_attrs", ""))
                                 for op in module.functions):
            return module
        funcs = [f for f in module.functions if f.regions and f.regions[0].blocks]
        # one state for the whole module: calls join their operands and results to the
        # callee's arguments and results
        self._run_funcs(module, funcs, table)
        return module

    def _run_funcs(self, module: Module, funcs: list[Operation], table) -> None:
        st = _State(funcs[0] if funcs else None, table)
        st.divisible = self.divisible
        st.sub_axes = self.sub_axes
        st.strategy = self.strategy
        steps: list = []
        per_func = []
        callee_outs: dict[str, tuple[list, list[Value]]] = {}
        groups: dict[int, list[Value]] = {}  # sharding groups span the module
        for func in funcs:
            block = func.regions[0].blocks[0]
            for i, a in enumerate(block.args):
                s = M.arg_sharding(func, i)
                if s is not None:
                    st.sh[a] = s
            ops = [op for op in block.ops]
            ret = ops[-1] if ops and ops[-1].name == "func.return" else None
            top = set(ops)
            inner = [o for o in func.walk() if o is not func and o not in top]
            stand_ins: dict[Operation, list[Value]] = {}
            # one stand-in value per function result, joined to the returned value
            outs = [Value(v.type) for v in ret.operands] if ret is not None else []
            for i, o in enumerate(outs):
                s = M.result_sharding(func, i)
                if s is not None:
                    st.sh[o] = s
            for op in ops + inner:
                for r in op.results:
                    s = M.value_sharding(r)
                    if s is not None:
                        st.sh[r] = s
                if op.name == "sdy.manual_computation":
                    ins = op.attributes["in_shardings"].shardings  # type: ignore[attr-defined]
                    stand_ins[op] = [Value(v.type) for v in op.operands]
                    for v, sh in zip(stand_ins[op], ins):
                        st.sh[v] = sh
            steps += _steps(ops, ret, outs, stand_ins) + _steps(inner, None, [], {})
            for op in ops + inner:  # values of one sharding group share one sharding
                if op.name == "sdy.sharding_group":
                    groups.setdefault(op.attributes["group_id"].value, []).append(  # type: ignore
                        op.operands[0])
            per_func.append((func, block, ops + inner, outs, stand_ins))
            callee_outs[func.attributes["sym_name"].value] = (list(block.args), outs)  # type: ignore
        for _f, _, ops, _, _ in per_func:
            for op in ops:
                if op.name != "func.call":
                    continue
                target = callee_outs.get(op.attributes["callee"].root)  # type: ignore
                if target is None:
                    continue
                for a, b in list(zip(op.operands, target[0])) + list(zip(op.results, target[1])):
                    # without connect_calls only data-flow edges join a call to its callee
                    edge = any(u.owner.name == "sdy.func_data_flow_edge"
                               for u in list(a.uses) + list(b.uses))
                    if _rank(a) >= 0 and a.type == b.type and (self.connect_calls or edge):
                        r, slots = _identity_rule(a)
                        steps.append(_step([a, b], slots, r))
        # a group's members are joined in one step, run again after every step that
        # changed something (Shardy syncs a group whenever a member changes)
        group_steps = []
        for members in groups.values():
            members = [v for v in members if _rank(v) == _rank(members[0]) >= 0]
            if len(members) > 1:
                r, slots = _identity_rule(members[0])
                group_steps.append(_step(members, [slots[0]] * len(members), r))
        prios = set()
        for s in st.sh.values():
            prios.update(d.priority for d in s.dims if d.priority is not None)
        # op priorities inside each user priority: the stages of _Step.direction
        for prio in sorted(prios) + [None]:
            st.priority = prio
            for stage in ((0, 1, 2) if self.op_priorities else (2,)):
                st.stage = stage
                for _ in range(self.max_iterations):
                    changed = False
                    for step in group_steps + steps + steps[::-1]:
                        if step(st):
                            changed = True
                            for g in group_steps:
                                g(st)
                    if not changed:
                        break
        # priorities have done their work: they are dropped, as Shardy does
        st.sh = {v: _no_priorities(s) for v, s in st.sh.items()}
        for func, block, ops, outs, stand_ins in per_func:
            private = _is_private(func) and not self.connect_calls
            _write_back(st, func, block, ops, [] if private else outs, stand_ins)


def _is_private(func: Operation) -> bool:
    v = func.attributes.get("sym_visibility")
    return getattr(v, "value", v) == "private"


def _write_back(st: _State, func, block, ops, outs, stand_ins) -> None:
    """Stores the shardings of one function's values where Shardy keeps them."""
    for i, a in enumerate(block.args):
        if any(u.owner.name == "sdy.func_data_flow_edge" for u in a.uses):
            continue  # its sharding lives on the edge
        if a in st.sh and st.sh[a] != M.arg_sharding(func, i):
            M.set_arg_sharding(func, i, st.sh[a])
    for i, o in enumerate(outs):
        if o in st.sh and st.sh[o] != M.result_sharding(func, i):
            M.set_result_sharding(func, i, st.sh[o])
    mesh_name = next((s.mesh for s in st.sh.values() if isinstance(s.mesh, str)), None)
    for op, vals in stand_ins.items():
        a = op.attributes
        a["in_shardings"] = ShardingPerValueAttr(tuple(st.sh[v] for v in vals))
        a["out_shardings"] = ShardingPerValueAttr(tuple(
            st.sh.get(r, s) for r, s in zip(op.results, a["out_shardings"].shardings)))
    for op in ops:
        if op.name in ("sdy.sharding_constraint", "sdy.data_flow_edge"):
            if op.results[0] in st.sh:
                op.attributes["sharding"] = st.sh[op.results[0]]
            continue
        if op.name in _FIXED or not op.results or mesh_name is None:
            continue
        if any(u.owner.name == "sdy.data_flow_edge" for r in op.results for u in r.uses):
            continue  # its shardings live on its data-flow edges
        shs = [st.sh.get(r) for r in op.results]
        if any(s is not None for s in shs):
            M.set_op_shardings(op, shs, mesh_name)


def _no_priorities(s: TensorShardingAttr) -> TensorShardingAttr:
    if all(d.priority is None for d in s.dims):
        return s
    return TensorShardingAttr(s.mesh, tuple(DimSharding(d.axes, d.closed) for d in s.dims),
                              s.replicated, s.unreduced)


class _Step:
    """One op's (or data-flow edge's) propagation step. Its direction follows Shardy's
    op-priority schedule, stage by stage (``st.stage``):

    0. edges both ways; pass-through ops (element-wise, reshape, transpose) both ways,
       except forward when a result has several users and backward into an operand
       that other pass-through ops use too; ``dynamic_slice``/``dynamic_update_slice``
       forward only (unless a result has several users);
    1. also every other op along its pass-through (non-reduction) factors, and
       ``broadcast_in_dim`` backward only;
    2. every op, both ways.
    """

    def __init__(self, values, slots, rule, fixed=frozenset(), op: Operation | None = None):
        self.values, self.slots, self.rule, self.fixed = values, slots, rule, set(fixed)
        self.kind, self.n_in = "edge", 0
        self.defer_fwd = self.defer_bwd = False
        self.elementwise = op is None or op.has_trait(ELEMENTWISE)
        if op is not None:
            self.n_in = len(op.operands)
            self.kind = _KINDS.get(op.name, "pass" if op.has_trait(ELEMENTWISE) else "other")
            self.defer_fwd = any(_users(r) > 1 for r in op.results)
            # backward into a value that another pass-through user could also shard
            self.defer_bwd = any(_users(v, pass_only=True) > 1 for v in op.operands)

    def direction(self, stage: int) -> tuple[str, bool]:
        """(direction, pass-through factors only) in ``stage``."""
        if stage >= 2 or self.kind == "edge":
            return "BOTH", False
        if self.kind == "pass":
            if stage == 1:
                return "BOTH", False
            fwd, bwd = not self.defer_fwd, not self.defer_bwd
            return ("BOTH" if fwd and bwd else "FORWARD" if fwd else
                    "BACKWARD" if bwd else "NONE"), False
        if self.kind == "forward":
            if stage == 0:
                return ("NONE" if self.defer_fwd else "FORWARD"), False
            return "BOTH", True
        if stage == 0:
            return "NONE", False
        return ("BACKWARD" if self.kind == "broadcast" else "BOTH"), True

    def __call__(self, st: _State) -> bool:
        d, only_pass = self.direction(getattr(st, "stage", 2))
        if d == "NONE":
            return False
        return _propagate_op(st, self.values, self.slots, self.rule, self.fixed, d,
                             self.n_in, only_pass, self.kind == "edge" or self.elementwise)


_KINDS = {"stablehlo.reshape": "pass", "stablehlo.transpose": "pass",
          "stablehlo.dynamic_slice": "forward", "stablehlo.dynamic_update_slice": "forward",
          "stablehlo.broadcast_in_dim": "broadcast"}


def _users(v: Value, pass_only: bool = False) -> int:
    """The number of distinct ops using ``v`` (only pass-through ones: ``pass_only``)."""
    return len({id(u.owner) for u in v.uses if not pass_only or _KINDS.get(
        u.owner.name, "pass" if u.owner.has_trait(ELEMENTWISE) else "other") == "pass"})


def _step(values, slots, rule, fixed=frozenset(), op: Operation | None = None) -> _Step:
    return _Step(values, slots, rule, fixed, op)


def _seeded(step, value: Value, sharding: TensorShardingAttr):
    def run(st: _State) -> bool:
        st.sh.setdefault(value, sharding)
        return step(st)

    return run


def _control_flow_edges(op: Operation) -> list:
    """Data-flow edges of ``case``/``if`` (each result and every branch's returned value)
    and ``while`` (operand, result, body and condition arguments, body's returned value).

    One edge joins all its values at once, as Shardy's data-flow edge op does: a result
    whose branches disagree takes only what they have in common."""
    steps = []

    def join(vals: list[Value]) -> None:
        vals = [v for v in vals if _rank(v) >= 0 and v.type == vals[0].type]
        if len(vals) > 1:
            r, slots = _identity_rule(vals[0])
            steps.append(_step(vals, [slots[0]] * len(vals), r))

    terms = [reg.blocks[0].ops[-1] for reg in op.regions if reg.blocks and reg.blocks[0].ops]
    if op.name == "stablehlo.while":
        cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
        ret = body.ops[-1] if body.ops else None
        for i, r in enumerate(op.results):
            back = [ret.operands[i]] if ret is not None and i < len(ret.operands) else []
            join([r, op.operands[i], body.args[i], cond.args[i]] + back)
    else:
        for i, r in enumerate(op.results):
            join([r] + [t.operands[i] for t in terms if i < len(t.operands)])
    return steps


def _manual_edge(outer: Value, inner: Value, manual: set[str]):
    """Joins a manual computation's boundary sharding (global, ``outer``) and the body
    value (local over the manual axes, ``inner``) along the free axes."""
    def run(st: _State) -> bool:
        so, si = st.get(outer), st.get(inner)
        mesh_name = so.mesh if so is not None else si.mesh if si is not None else None
        if mesh_name is None:
            return False
        rank = _rank(outer)
        changed = False
        cur_o = list(so.dims) if so else [DimSharding((), False)] * rank
        cur_i = list(si.dims) if si else [DimSharding((), False)] * rank
        if len(cur_o) != rank or len(cur_i) != rank:
            return False
        new_o, new_i = list(cur_o), list(cur_i)
        for d in range(rank):
            pre = tuple(a for a in cur_o[d].axes if a.name in manual)
            free_o = tuple(a for a in cur_o[d].axes if a.name not in manual)
            free_i = cur_i[d].axes
            if not cur_i[d].closed and len(free_o) > len(free_i) and free_o[:len(free_i)] \
                    == free_i:
                new_i[d] = DimSharding(free_o, False, cur_i[d].priority)
            if not cur_o[d].closed and len(free_i) > len(free_o) and free_i[:len(free_o)] \
                    == free_o:
                new_o[d] = DimSharding(pre + free_i, False, cur_o[d].priority)
        for v, cur, new, s in ((outer, cur_o, new_o, so), (inner, cur_i, new_i, si)):
            if new != cur:
                st.sh[v] = TensorShardingAttr(s.mesh if s else mesh_name, tuple(new),
                                              s.replicated if s else (),
                                              s.unreduced if s else ())
                changed = True
        return changed

    return run


def _steps(ops: list[Operation], ret, outs: list[Value],
           stand_ins: dict | None = None) -> list:
    stand_ins = stand_ins or {}
    steps = []
    # values computed from the device id differ per device: they are never sharded
    varying: set[Value] = set()
    for op in ops:
        if op.name in ("stablehlo.partition_id", "stablehlo.replica_id") or any(
                v in varying for v in op.operands):
            varying.update(op.results)
    for op in ops:
        if any(r in varying for r in op.results):
            continue
        if op.name == "func.return":
            for v, o in zip(op.operands, outs):
                if _rank(v) >= 0:
                    r, slots = _identity_rule(v)
                    steps.append(_step([v, o], slots, r))
            continue
        if op.name == "sdy.sharding_constraint":  # its open dims may grow
            r, slots = _identity_rule(op.operands[0])
            steps.append(_step([op.operands[0], op.results[0]], slots, r))
            continue
        if op.name in ("stablehlo.case", "stablehlo.if", "stablehlo.while"):
            steps += _control_flow_edges(op)
            continue
        if op.name in ("sdy.propagation_barrier", "sdy.data_flow_edge",
                       "sdy.func_data_flow_edge", "stablehlo.optimization_barrier"):
            d = op.attributes.get("allowed_direction")
            d = d.value if hasattr(d, "value") else "BOTH"
            for v, res in zip(op.operands, op.results):
                if _rank(v) < 0:
                    continue
                r, slots = _identity_rule(v)
                if d != "NONE":
                    fixed = {0} if d == "FORWARD" else {1} if d == "BACKWARD" else set()
                    steps.append(_step([v, res], slots, r, fixed))
            continue
        if op.name == "sdy.manual_computation":
            manual = {a.name for a in op.attributes["manual_axes"].axes}  # type: ignore
            body = op.regions[0].blocks[0]
            for v, a, arg in zip(op.operands, stand_ins.get(op, []), body.args):
                if _rank(v) >= 0:  # operand <-> in_sharding <-> body argument
                    r, slots = _identity_rule(v)
                    steps.append(_step([v, a], slots, r))
                    steps.append(_manual_edge(a, arg, manual))
            term = body.ops[-1] if body.ops else None
            if term is not None and term.name == "sdy.return":
                for rv, res in zip(term.operands, op.results):
                    if _rank(rv) >= 0:  # returned value <-> out_sharding (the result)
                        steps.append(_manual_edge(res, rv, manual))
            continue
        if op.name in _FIXED:
            continue
        rule = rule_for(op)
        if rule is None:
            continue
        values = list(op.operands) + list(op.results)
        slots = rule.operands + rule.results
        if len(slots) != len(values):
            continue
        steps.append(_step(values, slots, rule, op=op))
    return steps


__all__ = ["ShardingPropagation"]
