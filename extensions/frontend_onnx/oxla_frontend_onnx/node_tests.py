"""The ONNX node tests, generated in memory by the installed onnx, run on an oxla backend
(and on onnxruntime in the same run) with onnx's own tolerances.

``onnx.backend.test.loader.load_node_model_tests()`` builds every test case (model plus
input/output data) from onnx's Python test generators; the wheel ships no data files.
A task is ``"<runner>:<test name>"`` with runner ``oxla`` or ``onnxruntime``; each runs
in an isolated worker (:func:`oxla.conformance.run_conformance`), so a crash or hang of
one test never stops the run.
"""

from __future__ import annotations

import fnmatch
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

RUNNERS = ("oxla", "onnxruntime")

_CASES: dict[str, Any] | None = None


def cases() -> dict[str, Any]:
    """Every node test case by name (``test_abs``...), generated once per process."""
    global _CASES
    if _CASES is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import numpy as _np

            with _np.errstate(all="ignore"):
                from onnx.backend.test.loader import load_node_model_tests

                _CASES = {c.name: c for c in load_node_model_tests()}
    return _CASES


def select(patterns: Sequence[str] = (), sample: int | None = None) -> list[str]:
    """Test names matching any glob in ``patterns`` (all when empty), sorted.

    With ``sample``, at most that many, chosen so every op (the test's first node
    ``op_type``) keeps at least one test: the CI sample.
    """
    names = sorted(cases())
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if sample is None or sample >= len(names):
        return names
    by_op: dict[str, list[str]] = {}
    for n in names:
        by_op.setdefault(op_of(n), []).append(n)
    picked = [v[0] for v in by_op.values()]
    if len(picked) < sample:
        rest = [n for n in names if n not in set(picked)]
        step = max(1, len(rest) // (sample - len(picked)))
        picked += rest[::step][:sample - len(picked)]
    return sorted(picked)


def op_of(name: str) -> str:
    """The op a test exercises: the first non-Constant node's ``op_type`` (for an
    ``_expanded`` test, that of the test it expands)."""
    all_cases = cases()
    if name.endswith("_expanded") and name[:-len("_expanded")] in all_cases:
        name = name[:-len("_expanded")]
    nodes = all_cases[name].model.graph.node
    ops = [n.op_type for n in nodes if n.op_type != "Constant"] or ["Constant"]
    return ops[0]


def _to_np(x: Any) -> Any:
    import onnx
    from onnx import numpy_helper

    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    return np.asarray(x) if not isinstance(x, list | tuple | dict) and x is not None else x


def compare_outputs(expected: Sequence[Any], got: Sequence[Any], rtol: float,
                    atol: float) -> str | None:
    """None when ``got`` matches ``expected`` as onnx's backend tests require (same count,
    same dtype, ``assert_allclose(rtol, atol)``); else the first difference."""
    if len(got) != len(expected):
        return f"expected {len(expected)} outputs, got {len(got)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        if e is None or g is None:
            if e is not g:
                return f"output #{i}: expected {'None' if e is None else 'a value'}"
            continue
        if isinstance(e, list | tuple):  # a sequence: element by element
            if not isinstance(g, list | tuple):
                return f"output #{i}: expected a sequence"
            bad = compare_outputs([_to_np(x) for x in e], list(g), rtol, atol)
            if bad:
                return f"output #{i} (sequence): {bad}"
            continue
        e, g = np.asarray(e), np.asarray(g)
        if e.dtype != g.dtype:
            return f"output #{i}: dtype {g.dtype}, expected {e.dtype}"
        if e.shape != g.shape:
            return f"output #{i}: shape {g.shape}, expected {e.shape}"
        if e.dtype == object:
            if not np.array_equal(e, g):
                return f"output #{i}: values differ"
            continue
        ef, gf = e, g
        if e.dtype.kind == "V" or e.dtype.itemsize < 2 and e.dtype.kind not in "biu":
            ef, gf = e.astype(np.float32), g.astype(np.float32)
        elif e.dtype.kind not in "biufc":
            ef, gf = e.astype(np.float32), g.astype(np.float32)
        try:
            np.testing.assert_allclose(gf, ef, rtol=rtol, atol=atol)
        except AssertionError as exc:
            lines = [ln for ln in str(exc).splitlines() if "Max" in ln or "Mismatch" in ln]
            return f"output #{i}: mismatch ({'; '.join(ln.strip() for ln in lines)})"
    return None


_NEEDS_CONST = re.compile(r"\(input #\d+ '([^']*)'\) must be a constant at import time")


def _run_oxla(case: Any, inputs: list[Any], backend: str,
              bound: list[str] | None = None) -> list[Any]:
    """Imports, compiles and runs one case. An input a rule needs at import time (a
    shape, axes, pads...) is bound as a static input and the model is imported again:
    compiled for that value, as ``jax.jit`` does with a static argument."""
    import oxla
    from oxla.errors import NotSupportedError
    from oxla_frontend_onnx.importer import graph_inputs, group_results, import_model

    names = [i.name for i in graph_inputs(case.model.graph)]
    feeds = dict(zip(names, inputs))
    static: dict[str, Any] = {}
    for _ in range(len(names) + 1):
        try:
            module = import_model(case.model, static_inputs=static)
            break
        except NotSupportedError as exc:
            m = _NEEDS_CONST.search(exc.message)
            if m is None:
                raise
            want = [m.group(1)] if m.group(1) in feeds else [
                n for n, v in feeds.items() if np.asarray(v).dtype.kind in "iu"
                and np.asarray(v).size <= 64]
            want = [n for n in want if n not in static]
            if not want:
                raise
            static.update({n: np.asarray(feeds[n]) for n in want})
    if static and _all_constant(module):
        raise FoldedError("every output was computed at import time (all inputs bound "
                          "static): not a test of the backend")
    exe = oxla.compile(module, backend=backend, cache=False)
    if bound is not None:
        bound.extend(static)
    return group_results(module, exe(*[np.asarray(feeds[n]) for n in names
                                       if n not in static]))


class FoldedError(Exception):
    """A test whose outputs all became constants at import time."""


def _all_constant(module: Any) -> bool:
    func = next(op for op in module.body.ops if op.name == "func.func")
    ret = func.regions[0].block.ops[-1]
    return all(getattr(v, "owner", None) is not None and getattr(v.owner, "name", "") ==
               "stablehlo.constant" for v in ret.operands)


def _run_ort(case: Any, inputs: list[Any]) -> list[Any]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(case.model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return list(sess.run(None, dict(zip(names, inputs))))


def run_task(task: str, backend: str) -> Any:
    """Runs one ``runner:test`` task; returns an :class:`oxla.conformance.FileResult`
    (``path`` is the task)."""
    from oxla.conformance import FileResult

    runner, _, name = task.partition(":")
    t0 = time.perf_counter()
    case = cases().get(name)
    if case is None:
        return FileResult(task, "error", f"no node test named '{name}'")
    inputs, expected = case.data_sets[0]
    inputs = [_to_np(x) for x in inputs]
    expected = [_to_np(x) for x in expected]
    bound: list[str] = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _run_ort(case, inputs) if runner == "onnxruntime" else _run_oxla(
                case, inputs, backend, bound)
    except Exception as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if msg.startswith("error: "):
            msg = msg[len("error: "):]
        return FileResult(task, "error", f"{type(exc).__name__}: {msg}"[:400],
                          time.perf_counter() - t0)
    bad = compare_outputs(expected, got, case.rtol, case.atol)
    note = f"static inputs: {', '.join(bound)}" if bound else ""
    return FileResult(task, "fail" if bad else "pass", bad or note, time.perf_counter() - t0)


@dataclass
class NodeTestReport:
    """Per-runner results of one node-test run."""

    backend: str
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    def counts(self, runner: str) -> dict[str, int]:
        out = {"total": 0, "pass": 0, "fail": 0, "error": 0, "timeout": 0}
        for r in self.results.get(runner, {}).values():
            out["total"] += 1
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def reasons(self, runner: str) -> dict[str, int]:
        from oxla.conformance import reason

        c: dict[str, int] = {}
        for r in self.results.get(runner, {}).values():
            if r.status != "pass":
                key = f"{r.status}: {_category(reason(r.message))}"
                c[key] = c.get(key, 0) + 1
        return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_dict(self) -> dict[str, Any]:
        static = {r: sum(1 for v in res.values() if v.status == "pass" and v.message)
                  for r, res in self.results.items()}
        return {"backend": self.backend, "seconds": round(self.seconds, 1),
                "counts": {r: self.counts(r) for r in self.results},
                "passed_with_static_inputs": static,
                "reasons": {r: self.reasons(r) for r in self.results},
                "tests": {r: {n: {"status": v.status, "message": v.message}
                              for n, v in sorted(res.items())}
                          for r, res in self.results.items()}}


def _category(msg: str) -> str:
    """A reason with the node's name and index taken out, so one op is one category."""
    msg = re.sub(r" node '[^']*' \(#N, ", " node (", msg)
    return re.sub(r"output #N: mismatch \(.*", "output mismatch", msg)


def run_node_tests(backend: str, names: Sequence[str], compare: Sequence[str] = (),
                   jobs: int = 1, timeout: float = 60.0,
                   on_result: Callable[[Any], None] | None = None) -> NodeTestReport:
    """Runs ``names`` on oxla's ``backend`` and on every runner in ``compare``."""
    from oxla.conformance import run_conformance

    tasks = [f"{r}:{n}" for n in names for r in ("oxla", *compare)]
    t0 = time.perf_counter()
    rep = run_conformance([], backend, jobs=jobs, timeout=timeout, on_result=on_result,
                          tasks=tasks, task_runner=run_task,
                          preload=["oxla_frontend_onnx._preload"])
    out = NodeTestReport(backend)
    for f in rep.files:
        runner, _, name = f.path.partition(":")
        out.results.setdefault(runner, {})[name] = f
    out.seconds = time.perf_counter() - t0
    return out
