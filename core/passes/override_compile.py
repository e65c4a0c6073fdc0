"""Compiling with bottleneck overrides: the report in ``exe.stats["overrides"]`` and
``--verify-overrides`` (``extra={"verify_overrides": True}``).

:func:`compile_with_overrides` wraps a backend's ``compile``: when overrides exist for
the backend, their names go into ``options.extra["overrides"]`` (so a compile cache
tells programs compiled with different overrides apart), the plugin-patterns pass's
report is collected and summarized into ``exe.stats["overrides"]`` (one entry per
override: ``fired`` count, ``where``, and for one that never fired the ``reason``, the
first failed constraint of the candidate that matched furthest). A cache hit skips the
passes, so its report is rebuilt by running them again on a copy.

Verifying: each fired override also records, through side-effecting
``interpreter.probe`` custom calls, its kernel's operands and result, and keeps the
original subgraph as a function. On the first call of the executable each subgraph
runs on the interpreter with the recorded operands; a result whose max |error| exceeds
the override's tolerance times max |reference| (default 1e-5; exact for integers)
raises :class:`~oxla.errors.OxlaError` naming the override and where it fired.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np

from oxla import plugins
from oxla.errors import NotSupportedError, OxlaError
from oxla.ir import Block, Module, Operation, Region, Value, print_module
from oxla.ir import attributes as A
from oxla.ir import types as T
from oxla.passes import PROBE_TARGET
from oxla.passes import overrides as ov

_LOCAL = threading.local()


def verifying() -> list[dict] | None:
    """The sites list of the verifying compile running on this thread, or None."""
    return getattr(_LOCAL, "sites", None)


def _probe(rewriter: Any, anchor: Operation, v: Value, pid: str) -> Value:
    op = rewriter.create_before(anchor, "stablehlo.custom_call", [v], [v.type],
                                {"call_target_name": A.StringAttr(PROBE_TARGET),
                                 "backend_config": A.StringAttr(pid),
                                 "has_side_effect": A.BoolAttr(True)})
    return op.results[0]


def subgraph_module(m: ov.Match, inputs: list[Value]) -> Module:
    """The matched ops as ``func.func @main(inputs) -> root``."""
    from oxla.ir import Builder

    module = Builder.module()
    block = Block([v.type for v in inputs])
    mapping: dict[Value, Value] = dict(zip(inputs, block.args))
    order = {id(o): i for i, o in enumerate(m.root.parent.ops)} if m.root.parent else {}
    for o in sorted(m.ops, key=lambda o: order.get(id(o), 0)):
        for v in o.operands:
            if v not in mapping:
                raise NotSupportedError("--verify-overrides: a matched value comes from "
                                        "outside the kernel's operands")
        block.append(o.clone(mapping))
    root = mapping[m.root.results[0]]
    block.append(Operation.create("func.return", [root], []))
    ft = A.TypeAttr(T.FunctionType(tuple(v.type for v in inputs), (root.type,)))
    fn = Operation.create("func.func", [], [], {"sym_name": A.StringAttr("main"),
                                               "function_type": ft}, [Region([block])])
    module.body.append(fn)
    return module


def instrument(m: ov.Match, rewriter: Any, root: Operation, operands: list[Value],
               name: str, tolerance: float | None) -> tuple[list[Value], Any]:
    """Probes ``operands`` when verifying; returns the operands to call the kernel with
    and a function probing its result."""
    sites = verifying()
    if sites is None:
        return operands, lambda vals: vals
    sid = f"override:{name}:{len(sites)}"
    sites.append({"override": name, "id": sid, "loc": str(root.loc),
                  "module": print_module(subgraph_module(m, operands)),
                  "tolerance": tolerance, "n": len(operands)})
    probed = [_probe(rewriter, root, v, f"{sid}:in{i}") for i, v in enumerate(operands)]
    return probed, lambda vals: [_probe(rewriter, root, v, f"{sid}:out") for v in vals]


class VerifiedExecutable:
    """An executable that checks its overrides against the interpreter on its first
    call (module doc); everything else is the wrapped executable's."""

    def __init__(self, exe: Any, sites: list[dict]):
        self._exe, self._sites, self.verified = exe, sites, False
        self.verify_report: list[dict] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exe, name)

    def __call__(self, *args: Any) -> Any:
        out = self._exe(*args)
        if not self.verified:
            self.verified = True
            self._verify(self._exe.probes)
        return out

    def _verify(self, records: dict) -> None:
        import oxla

        for s in self._sites:
            ins = [records.get(f"{s['id']}:in{i}", [None])[0] for i in range(s["n"])]
            got = records.get(f"{s['id']}:out", [None])[0]
            if got is None or any(x is None for x in ins):
                raise OxlaError(f"--verify-overrides: override '{s['override']}' at "
                                f"{s['loc']} did not run on the first call")
            ref = np.asarray(oxla.compile(s["module"], backend="interpreter")(*ins)[0])
            err = float(np.max(np.abs(got.astype(np.float64) - ref))) if ref.size else 0.0
            scale = float(np.max(np.abs(ref))) if ref.size else 0.0
            floating = np.issubdtype(ref.dtype, np.floating)
            tol = s["tolerance"] if s["tolerance"] is not None else (1e-5 if floating
                                                                     else 0.0)
            self.verify_report.append({"override": s["override"], "loc": s["loc"],
                                       "max_error": err, "max_reference": scale})
            if err > tol * scale or (not floating and err > 0):
                raise OxlaError(f"--verify-overrides: override '{s['override']}' at "
                                f"{s['loc']}: max |error| {err:.3g} against the "
                                f"interpreter exceeds {tol:g} x max |reference| "
                                f"{scale:.3g}")


def compile_with_overrides(backend: Any, name: str, module: Module, options: Any) -> Any:
    """``backend.compile(module, options)`` with the overrides' report (module doc)."""
    from oxla.passes.plugin_patterns import PluginPatterns, override_infos

    infos = override_infos(name)
    extra = dict(options.extra)
    verify = bool(extra.pop("verify_overrides", False))
    off = sorted({p.name for p in plugins.patterns(backend=name, builtin=False)
                  if p.pattern and p.name in ov.disabled_overrides()})
    disabled = [{"override": n, "fired": 0, "where": [],
                 "reason": "disabled by OXLA_DISABLE_OVERRIDES"} for n in off]
    if not infos:
        exe = backend.compile(module, dataclasses.replace(options, extra=extra))
        if disabled:
            exe.stats["overrides"] = disabled
        return exe
    extra["overrides"] = ",".join(sorted(p.name for p in infos))
    if verify:
        extra["verify_overrides"] = True
    opts = dataclasses.replace(options, extra=extra)
    prev = getattr(_LOCAL, "sites", None)
    _LOCAL.sites = [] if verify else None
    try:
        with ov.collect() as report:
            exe = backend.compile(module, opts)
        sites = _LOCAL.sites
    finally:
        _LOCAL.sites = prev
    if not report:  # a cache hit ran no passes: rerun them on a copy for the report
        from oxla.passes import run_pipeline

        copy = module.clone()
        with ov.collect() as report:
            out = run_pipeline(copy, opts.pipeline or "default")
            PluginPatterns(backend=name).run(out if isinstance(out, Module) else copy)
    exe.stats["overrides"] = ov.summarize(report) + disabled
    if verify:
        if not hasattr(exe, "probes"):
            raise NotSupportedError(f"--verify-overrides is not supported by the {name} "
                                    "backend (its executables record no probes)")
        return VerifiedExecutable(exe, sites or [])
    return exe


def explain_lines(summary: list[dict] | None) -> list[str]:
    """``--explain-overrides``: one line per override, then one per site it fired at."""
    if not summary:
        return ["overrides: none for this backend"]
    lines = []
    for e in summary:
        if e["fired"]:
            lines.append(f"override {e['override']}: fired {e['fired']} time(s)")
            lines += [f"  at {w}" for w in e["where"]]
        else:
            lines.append(f"override {e['override']}: not fired: {e['reason']}")
    return lines


def random_inputs(signature: Any, seed: int = 0) -> list[np.ndarray]:
    """Inputs for ``signature``: normal floats, integers in [0, 2), random bools."""
    rng = np.random.default_rng(seed)
    out = []
    for t in signature.inputs:
        dt = np.dtype(t.element_type.dtype)
        shape = tuple(t.shape)
        if dt == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(np.bool_))
        elif np.issubdtype(dt, np.integer):
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            out.append(rng.standard_normal(shape).astype(dt))
    return out


def verify_on_random_inputs(module: Module, backend: str) -> list[str]:
    """``--verify-overrides`` for a compile: one call of a verifying twin on
    :func:`random_inputs`; returns one line per checked site.

    Raises:
        OxlaError: a kernel's result differs beyond its tolerance.
        NotSupportedError: the backend records no probes.
    """
    import oxla

    exe = oxla.compile(module, backend=backend, cache=False,
                       extra={"verify_overrides": True})
    if not isinstance(exe, VerifiedExecutable):
        return ["verify-overrides: no override fired"]
    exe(*random_inputs(exe.signature))
    return [f"verified override {r['override']} at {r['loc']}: max |error| "
            f"{r['max_error']:.3g} (max |reference| {r['max_reference']:.3g})"
            for r in exe.verify_report]
