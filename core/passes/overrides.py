"""Bottleneck overrides: a subgraph, written as a small StableHLO function, replaced by
a kernel wherever it occurs (the ``pattern`` form of :class:`oxla.protocols.PatternInfo`).

The pattern is a ``func.func`` whose body is the subgraph as a frontend emits it and
whose single result is its root. The matcher walks it as a DAG from the root, against
the program's ops:

* an op matches an op of the same name and result index whose attributes are those of
  the pattern op (discardable ``mhlo.``/``sdy.`` ones aside) and whose regions hold the
  same op names; constants match equal values (a splat against any shape);
* commutative ops (``add``, ``multiply``, ``maximum``, ``minimum``, ``and``, ``or``,
  ``xor``) match their operands in either order;
* broadcast forms: ``broadcast_in_dim`` of a scalar (``dims = []``) also matches a
  splat constant of the broadcast's type, the scalar then binding to that constant;
* a function argument matches any value of its type (``?`` dims are wildcards; the same
  argument must match the same value each time); an argument bound through a splat
  constant matches a constant (read its value with :meth:`Match.const`);
* types: element types and ranks must be equal, static pattern dims equal;
* every value computed inside the match other than the root (constants aside) must
  have no user outside it, else replacing the root would not remove the subgraph.

Then each constraint ``(description, fn(match) -> bool)`` runs in order; the first
that fails (or raises) is the reason the override did not fire there. The replacement
``replace(match, rewriter, root) -> [values]`` makes the kernel call.

The report of a compile (what fired where, what did not and why) is collected per
thread by :func:`collect` and put in ``exe.stats["overrides"]`` by ``oxla.compile``;
``OXLA_DISABLE_OVERRIDES=name,...`` turns overrides off by name
(:func:`disabled_overrides`).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oxla.ir import BlockArgument, Operation, Value, parse_module
from oxla.ir import attributes as A
from oxla.ir import types as T

COMMUTATIVE = frozenset(f"stablehlo.{n}" for n in (
    "add", "multiply", "maximum", "minimum", "and", "or", "xor"))
_LOCAL = threading.local()


def disabled_overrides() -> set[str]:
    """The names in ``$OXLA_DISABLE_OVERRIDES`` (comma-separated)."""
    return {n.strip() for n in os.environ.get("OXLA_DISABLE_OVERRIDES", "").split(",")
            if n.strip()}


@contextlib.contextmanager
def collect() -> Iterator[list[dict]]:
    """Collects the override reports of the compiles run inside (this thread)."""
    prev = getattr(_LOCAL, "report", None)
    _LOCAL.report = report = []
    try:
        yield report
    finally:
        _LOCAL.report = prev


def current_report() -> list[dict] | None:
    """The report being collected on this thread (None outside :func:`collect`)."""
    return getattr(_LOCAL, "report", None)


def _record(entry: dict) -> None:
    report = getattr(_LOCAL, "report", None)
    if report is not None:
        report.append(entry)


@dataclass
class Match:
    """What a pattern's arguments matched: a program ``Value`` or, for an argument
    matched through a splat constant, the constant's scalar value."""

    values: dict[str, Value | np.ndarray] = field(default_factory=dict)
    ops: list[Operation] = field(default_factory=list)
    root: Operation | None = None

    def __getitem__(self, name: str) -> Value | np.ndarray:
        return self.values[name]

    def value(self, name: str, rewriter: Any = None) -> Value:
        """The program value of argument ``name``; one matched through a folded
        constant becomes a new ``stablehlo.constant`` before the root (through
        ``rewriter``).

        Raises:
            TypeError: a folded constant and no ``rewriter``.
        """
        v = self.values[name]
        if isinstance(v, Value):
            return v
        if rewriter is None:
            raise TypeError(f"pattern argument %{name} matched a folded constant")
        t = self.type(name)
        op = rewriter.create_before(self.root, "stablehlo.constant", [], [t],
                                    {"value": A.dense(np.ascontiguousarray(v), t)})
        self.values[name] = op.results[0]
        return op.results[0]

    def type(self, name: str) -> T.TensorType:
        """The type of what argument ``name`` matched."""
        v = self.values[name]
        if isinstance(v, Value):
            return v.type
        return T.TensorType(v.shape, T.element_type_from_dtype(v.dtype))

    def const(self, name: str) -> float | int | None:
        """The value of argument ``name`` when it matched a constant whose elements are
        all equal (a splat, a folded scalar broadcast), else None."""
        v = self.values[name]
        if isinstance(v, Value):
            op = v.owner_op
            if op is None or op.name != "stablehlo.constant":
                return None
            v = np.asarray(op.attributes["value"].array)
        if v.size and np.all(v == v.reshape(-1)[0]):
            return v.reshape(-1)[0].item()
        return None

    def shape(self, name: str) -> tuple[int | None, ...]:
        """The shape of what argument ``name`` matched."""
        return tuple(self.type(name).shape)


class Failure(Exception):
    """Why a candidate did not match; ``depth``: ops matched before it failed."""

    def __init__(self, why: str, depth: int):
        super().__init__(why)
        self.depth = depth


def _splat(op: Operation) -> np.generic | None:
    if op.name != "stablehlo.constant":
        return None
    arr = np.asarray(op.attributes["value"].array)
    if arr.size == 0 or not np.all(arr == arr.reshape(-1)[0]):
        return None
    return arr.reshape(-1)[0]


def _fits(pt: T.Type, vt: T.Type) -> bool:
    if not isinstance(pt, T.TensorType) or not isinstance(vt, T.TensorType):
        return str(pt) == str(vt)
    return (pt.element_type == vt.element_type and pt.rank == vt.rank
            and all(p is None or p == v for p, v in zip(pt.shape, vt.shape)))


def _attrs(op: Operation) -> dict[str, str]:
    return {k: str(v) for k, v in op.attributes.items() if "." not in k}


def _region_shape(op: Operation) -> list[list[str]]:
    return [[o.name for o in r.block.ops] for r in op.regions]


class Matcher:
    """Matches one pattern function against program ops (see the module doc)."""

    def __init__(self, pattern_text: str, name: str = "override"):
        module = parse_module(pattern_text, f"<override {name}>")
        funcs = module.functions
        if len(funcs) != 1:
            raise ValueError(f"override '{name}': the pattern must be one func.func")
        self.func = funcs[0]
        block = self.func.regions[0].block
        self.arg_names = [(a.name_hint or f"arg{i}").lstrip("%")
                          for i, a in enumerate(block.args)]
        self._arg_index = {a: i for i, a in enumerate(block.args)}
        ret = block.terminator
        if ret is None or len(ret.operands) != 1 or ret.operands[0].owner_op is None:
            raise ValueError(f"override '{name}': the pattern must return one value "
                             "computed by an op")
        self.root_value = ret.operands[0]
        self.root_op_name = self.root_value.owner_op.name
        self.pattern_ops = [o for o in block.ops if o is not ret]

    def match(self, op: Operation) -> Match:
        """Matches the pattern rooted at ``op``.

        Raises:
            Failure: the first difference (with how far the match got).
        """
        m = Match(root=op)
        if len(op.results) != 1:
            raise Failure(f"{op.name} has {len(op.results)} results", 0)
        self._value(self.root_value, op.results[0], m, {})
        inside = set(map(id, m.ops))
        for o in m.ops:
            if o is op or o.name == "stablehlo.constant":
                continue
            for r in o.results:
                for u in r.uses:
                    if id(u.owner) not in inside:
                        raise Failure(f"{o.name} at {o.loc} inside the match is also used "
                                      f"outside it (by {u.owner.name})", len(m.ops))
        return m

    def _bind(self, name: str, got: Value | np.ndarray, m: Match) -> None:
        have = m.values.get(name)
        if have is None:
            m.values[name] = got
            return
        same = have is got if isinstance(got, Value) else (
            not isinstance(have, Value) and np.array_equal(have, got))
        if not same:
            raise Failure(f"pattern argument %{name} would match two different values",
                          len(m.ops))

    def _value(self, p: Value, v: Value, m: Match, seen: dict) -> None:
        if isinstance(p, BlockArgument) and p in self._arg_index:
            if not _fits(p.type, v.type):
                raise Failure(f"%{self.arg_names[self._arg_index[p]]}: {v.type} does not "
                              f"fit {p.type}", len(m.ops))
            self._bind(self.arg_names[self._arg_index[p]], v, m)
            return
        pop, vop = p.owner_op, v.owner_op
        where = f"pattern {pop.name}"
        if vop is None:
            raise Failure(f"{where}: found a block argument", len(m.ops))
        if id(vop) in seen:
            if seen[id(vop)] is not pop:
                raise Failure(f"{where}: {vop.name} at {vop.loc} matched twice", len(m.ops))
            return
        if not _fits(p.type, v.type):
            raise Failure(f"{where}: type {v.type} does not fit {p.type}", len(m.ops))
        if pop.name == "stablehlo.broadcast_in_dim" and vop.name == "stablehlo.constant":
            src = self._unbroadcast(pop, vop, m)  # broadcast form: a folded broadcast
            self._folded(pop.operands[0], src, m)
            m.ops.append(vop)
            seen[id(vop)] = pop
            return
        if vop.name != pop.name or v.index != p.index:
            raise Failure(f"{where}: found {vop.name} at {vop.loc}", len(m.ops))
        if pop.name == "stablehlo.constant":
            pv, vv = _splat(pop), _splat(vop)
            if pv is None or vv is None or pv != vv:
                raise Failure(f"{where}: constant {vv} at {vop.loc}, expected {pv}",
                              len(m.ops))
            m.ops.append(vop)
            seen[id(vop)] = pop
            return
        if _attrs(pop) != _attrs(vop):
            diff = sorted(set(_attrs(pop).items()) ^ set(_attrs(vop).items()))
            raise Failure(f"{where}: attributes differ at {vop.loc} ({diff[0][0]})",
                          len(m.ops))
        if _region_shape(pop) != _region_shape(vop):
            raise Failure(f"{where}: its region differs at {vop.loc}", len(m.ops))
        if len(pop.operands) != len(vop.operands):
            raise Failure(f"{where}: operand count differs at {vop.loc}", len(m.ops))
        orders = [list(range(len(pop.operands)))]
        if pop.name in COMMUTATIVE and len(pop.operands) == 2:
            orders.append([1, 0])
        last: Failure | None = None
        for order in orders:
            trial = Match(dict(m.values), list(m.ops) + [vop], m.root)
            tseen = dict(seen)
            tseen[id(vop)] = pop
            try:
                for i, j in enumerate(order):
                    self._value(pop.operands[i], vop.operands[j], trial, tseen)
            except Failure as f:
                if last is None or f.depth > last.depth:
                    last = f
                continue
            m.values, m.ops = trial.values, trial.ops
            seen.update(tseen)
            return
        assert last is not None
        raise last

    def _unbroadcast(self, pop: Operation, vop: Operation, m: Match) -> np.ndarray:
        """The operand of ``pop`` (a broadcast_in_dim) that folding turned into the
        constant ``vop``.

        Raises:
            Failure: the constant is not such a broadcast.
        """
        full = np.asarray(vop.attributes["value"].array)
        dims = [int(d) for d in np.asarray(A.to_python(
            pop.attributes["broadcast_dimensions"])).reshape(-1)]
        src_t = pop.operands[0].type
        if dims != sorted(dims) or len(dims) != src_t.rank:
            raise Failure("pattern broadcast_in_dim: unsorted dims", len(m.ops))
        index: list[Any] = [0] * full.ndim
        shape = []
        for i, d in enumerate(dims):
            want = src_t.shape[i]
            size = full.shape[d] if want is None else want
            if size not in (1, full.shape[d]):
                raise Failure(f"constant at {vop.loc} does not fit {src_t}", len(m.ops))
            index[d] = slice(0, size)
            shape.append(size)
        src = full[tuple(index)].reshape(shape)
        view = src.reshape([full.shape[d] if d in dims and shape[dims.index(d)] > 1 else 1
                            for d in range(full.ndim)])
        if not np.array_equal(np.broadcast_to(view, full.shape), full):
            raise Failure(f"constant at {vop.loc} is not a broadcast along dims {dims}",
                          len(m.ops))
        return src

    def _folded(self, p: Value, src: np.ndarray, m: Match) -> None:
        if isinstance(p, BlockArgument) and p in self._arg_index:
            self._bind(self.arg_names[self._arg_index[p]], src, m)
            return
        pv = _splat(p.owner_op) if p.owner_op is not None else None
        if pv is None or src.size == 0 or not np.all(src == pv):
            raise Failure(f"pattern broadcast of constant {pv}: found another constant",
                          len(m.ops))


Constraint = tuple[str, Callable[[Match], bool]]


class Override:
    """One override's rewrite function (``fn(op, rewriter)``, what the greedy driver of
    ``plugin-patterns`` calls) and its report.

    Args:
        name: the override's name (``OXLA_DISABLE_OVERRIDES``, reports).
        pattern: the StableHLO text of the pattern function.
        replace: ``replace(match, rewriter, root) -> list[Value]``.
        constraints: checked in order after the structure matched.
    """

    def __init__(self, name: str, pattern: str,
                 replace: Callable[[Match, Any, Operation], Sequence[Value]],
                 constraints: Sequence[Constraint] = ()):
        self.name, self.replace, self.constraints = name, replace, tuple(constraints)
        self.matcher = Matcher(pattern, name)
        self.root_op = self.matcher.root_op_name

    def check(self, op: Operation) -> Match:
        """The match at ``op`` with every constraint checked.

        Raises:
            Failure: the structural difference or the first failed constraint.
        """
        m = self.matcher.match(op)
        for desc, fn in self.constraints:
            try:
                ok = bool(fn(m))
            except Exception as exc:  # noqa: BLE001 - a constraint that raises fails
                ok, desc = False, f"{desc} ({type(exc).__name__}: {exc})"
            if not ok:
                raise Failure(f"constraint failed: {desc}", len(m.ops) + 1)
        return m

    def __call__(self, op: Operation, rewriter: Any) -> bool:
        try:
            m = self.check(op)
        except Failure:
            return False
        new = list(self.replace(m, rewriter, op))
        rewriter.replace_op(op, new)
        _record({"override": self.name, "fired": True, "loc": str(op.loc)})
        return True

    def explain(self, module: Any) -> dict | None:
        """Why it fires nowhere in ``module``: the candidate that got furthest (None
        when a candidate matches)."""
        best: Failure | None = None
        for op in module.walk():
            if op.name != self.root_op:
                continue
            try:
                self.check(op)
                return None
            except Failure as f:
                if best is None or f.depth > best.depth:
                    best, where = f, str(op.loc)
        if best is None:
            return {"override": self.name, "fired": False,
                    "reason": f"the program has no {self.root_op}"}
        return {"override": self.name, "fired": False, "loc": where, "reason": str(best)}


def report_unfired(module: Any, overrides: Sequence[Override], fired: set[str]) -> None:
    """Records, for each override that fired nowhere, why (see :meth:`Override.explain`)."""
    for o in overrides:
        if o.name not in fired:
            why = o.explain(module)
            if why is not None:
                _record(why)


def summarize(report: Sequence[dict]) -> list[dict]:
    """The report as one entry per override: ``{"override", "fired": count, "where":
    [locs], "reason"}``."""
    out: dict[str, dict] = {}
    for e in report:
        s = out.setdefault(e["override"], {"override": e["override"], "fired": 0,
                                           "where": [], "reason": ""})
        if e["fired"]:
            s["fired"] += 1
            s["where"].append(e["loc"])
        else:
            s["reason"] = (f"{e['reason']} (at {e['loc']})" if e.get("loc")
                           else e["reason"])
    return list(out.values())
