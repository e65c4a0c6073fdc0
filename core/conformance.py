"""Running StableHLO test files: one file in-process (``oxla interpret``) and many files
on any backend, each isolated in a worker process with a timeout (``oxla conformance``).

A test file is split at ``// -----``; each chunk is a module. A module whose ``main``
calls ``@inputs``/``@expected`` runs ``main``; otherwise every public function without
arguments runs. ``check.*`` ops (and ``custom_call @check.*``) decide pass or fail.

For a compiling backend each test function is rewritten so that its constant inputs
(``@inputs()`` results, ``stablehlo.constant`` ops) are evaluated here and passed as
function arguments, and its top-level checks become extra results
(:mod:`oxla.conformance_compiled`): the backend cannot constant-fold the op under test
away. It compiles and runs that function; the checks are evaluated here. A test function
that calls ``interpreter.run_parallel`` runs on the interpreter, each grid of programs
compiled and run by the backend (:mod:`oxla.conformance_grid`).

A module without checks whose public ``main`` takes arguments (``testdata/dynamic/``)
is a round-trip test (:mod:`oxla.conformance_dynamic`): parse, verify, print/parse
stability, a run on synthetic inputs, and on a compiling backend a comparison with the
interpreter after ``stablehlo-refine-shapes``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oxla.conformance_compiled import SplitCheck, backend_runner, split_checks
from oxla.conformance_dynamic import is_roundtrip_module, roundtrip_runner
from oxla.conformance_grid import grid_runner, uses_grid

STATUSES = ("pass", "fail", "error", "timeout", "skip")
GRID_SKIP = ("needs a multi-process grid (collectives: interpreter.run_parallel) and this "
             "backend has no run_parallel: run it on the interpreter")


@dataclass
class FunctionResult:
    """The outcome of one test function: ``status`` is pass, fail or error."""

    chunk_line: int
    name: str
    status: str
    messages: list[str] = field(default_factory=list)


@dataclass
class FileResult:
    """The outcome of one file; it passes only if every function of every chunk does."""

    path: str
    status: str
    message: str = ""
    seconds: float = 0.0
    functions: list[FunctionResult] = field(default_factory=list)


@dataclass
class Report:
    """Totals over many files, as ``--json`` writes them."""

    backend: str
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    def unsupported_ops(self) -> dict[str, int]:
        """``op name -> files`` over the errors that name an unsupported op (``'X' is
        not supported ... (why)``; the key keeps the ``(why)``), most frequent first."""
        counts: dict[str, int] = {}
        for f in self.files:
            m = _UNSUPPORTED.search(f.message) if f.status == "error" else None
            if m:
                key = f"{m.group(1)} {m.group(2)}" if m.group(2) else m.group(1)
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def reasons(self) -> dict[str, int]:
        """Failures grouped by reason: status plus the message with paths, locations
        and numbers taken out, most frequent first."""
        counts: dict[str, int] = {}
        for f in self.files:
            if f.status in ("pass", "skip"):
                continue
            key = f"{f.status}: {reason(f.message)}"
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "total": len(self.files),
            "passed": self.count("pass"),
            "failed": self.count("fail"),
            "errors": self.count("error"),
            "timeouts": self.count("timeout"),
            "skipped": self.count("skip"),
            "seconds": round(self.seconds, 2),
            "unsupported_ops": self.unsupported_ops(),
            "reasons": self.reasons(),
            "files": [{"path": f.path, "status": f.status, "message": f.message}
                      for f in self.files],
        }

    def write_json(self, path: str | os.PathLike) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")


_UNSUPPORTED = re.compile(r"'([\w.]+)' [^'(]*?is not supported[^(]*(\((?!\+)[^)]*\))?")
_LOCATION = re.compile(r"(?:[\w./<>-]+\.mlir|<[\w-]+>):\d+:\d+: (?:error: )?")


def reason(message: str) -> str:
    """A failure message reduced to its reason: no ``@function:`` prefix, file
    locations, numbers, ``(+N more)`` tail; at most 120 characters."""
    msg = re.sub(r"^@[\w.$-]+: ", "", message)
    msg = _LOCATION.sub("", msg)
    msg = re.sub(r" \(\+\d+ more\)$", "", msg).split(": at [")[0]
    m = _UNSUPPORTED.search(msg)
    if m:
        msg = msg[m.start():]
    msg = re.sub(r"\d+", "N", msg)
    return msg[:120]


# -- discovery ---------------------------------------------------------------------------


def discover(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """``.mlir`` files under ``paths`` (files are taken as given), sorted, no duplicates.

    Raises:
        FileNotFoundError: when a path does not exist.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.rglob("*.mlir") if q.is_file()))
        elif p.exists():
            out.append(p)
        else:
            raise FileNotFoundError(f"no such file or directory: '{p}'")
    seen: set[Path] = set()
    return [p for p in out if not (p in seen or seen.add(p))]


def functions_to_run(module) -> list[str]:
    """The functions of a test module to run (see the module docstring)."""
    from oxla.ir import func_name, func_type, func_visibility

    names = [func_name(f) for f in module.functions]
    if "main" in names and ("inputs" in names or "expected" in names):
        return ["main"]
    return [func_name(f) for f in module.functions
            if func_visibility(f) == "public" and not func_type(f).inputs
            and f.regions and f.regions[0].blocks]


# -- running one file --------------------------------------------------------------------


def _message(exc: BaseException) -> str:
    from oxla.errors import OxlaError

    if isinstance(exc, OxlaError):
        return exc.one_line().removeprefix("error: ")
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _run_interpreter(module, name: str) -> list[str]:
    from oxla.interpreter import Context, run_function

    ctx = Context(module=module)
    run_function(module, name, [], ctx)
    return [str(f) for f in ctx.failures]


def run_file(path: str | os.PathLike, backend: str = "interpreter",
             compiled: bool | None = None) -> FileResult:
    """Runs every test function of one file in this process.

    Args:
        path: the test file.
        backend: a backend name (see ``oxla plugins``).
        compiled: compile each test function with the backend and check what it returns
            (:func:`split_checks`); default: for every backend but ``interpreter``.

    Never raises for a broken test: parse errors, missing rules and backend errors
    become ``error`` results.
    """
    from oxla.ir import parse_module, split_input_file

    t0 = time.perf_counter()
    path = str(path)
    res = FileResult(path, "skip")
    try:
        text = Path(path).read_text()
    except OSError as e:
        res.status, res.message = "error", f"cannot read file: {e}"
        return res
    if compiled is None:
        compiled = backend != "interpreter"
    from oxla.sharding import conformance as shardy

    if shardy.is_executable_test(text) or shardy.is_propagation_test(text):
        return shardy.run_file(path, text, backend, compiled)
    try:
        runner = backend_runner(backend) if compiled else _run_interpreter
        grid_run = grid_runner(backend) if compiled else None
        roundtrip = roundtrip_runner(backend if compiled else None)
    except Exception as e:
        res.status, res.message = "error", _message(e)
        return res
    for chunk, offset in split_input_file(text):
        line = offset + 1
        if not any(ln.strip() and not ln.strip().startswith("//")
                   for ln in chunk.splitlines()):
            continue  # an empty chunk (only comments)
        try:
            module = parse_module(chunk, path, offset)
            names = functions_to_run(module)
        except Exception as e:  # a chunk that does not parse fails the file
            res.functions.append(FunctionResult(line, "<parse>", "error", [_message(e)]))
            continue
        if not names and is_roundtrip_module(module):
            try:
                failures = roundtrip(module)
                status = "fail" if failures else "pass"
                res.functions.append(FunctionResult(line, "main", status, failures))
            except Exception as e:
                res.functions.append(FunctionResult(line, "main", "error", [_message(e)]))
            continue
        grid = compiled and uses_grid(module)
        for name in names:
            if grid and grid_run is None:  # the backend cannot run a process grid
                res.functions.append(FunctionResult(line, name, "skip", [GRID_SKIP]))
                continue
            try:
                failures = (grid_run if grid else runner)(module, name)
                status = "fail" if failures else "pass"
                res.functions.append(FunctionResult(line, name, status, failures))
            except Exception as e:
                res.functions.append(FunctionResult(line, name, "error", [_message(e)]))
    res.seconds = time.perf_counter() - t0
    if not res.functions:
        res.message = "no test functions (no checks and no public function without arguments)"
        return res
    bad = [f for f in res.functions if f.status not in ("pass", "skip")]
    if not bad:
        if all(f.status == "skip" for f in res.functions):
            res.message = res.functions[0].messages[0]
            return res  # still "skip"
        res.status = "pass"
        return res
    res.status = "error" if any(f.status == "error" for f in bad) else "fail"
    first = next(f for f in bad if f.status == res.status)
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    res.message = f"@{first.name}: {first.messages[0] if first.messages else ''}{more}"
    return res


# -- isolated workers --------------------------------------------------------------------


def _worker(conn, backend: str, runner: Callable[[str, str], FileResult] | None = None) -> None:
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            res = (runner or run_file)(task, backend)
            res.functions = []  # keep messages small over the pipe
        except BaseException as e:  # report, never die silently
            res = FileResult(str(task), "error", _message(e))
        conn.send(res)


class _Slot:
    def __init__(self, ctx, backend: str, runner: Callable[[str, str], FileResult] | None = None):
        self.parent, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, backend, runner), daemon=True)
        self.proc.start()
        child.close()
        self.task: str | None = None
        self.started = 0.0

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.parent.close()


def run_conformance(paths: Sequence[str | os.PathLike], backend: str = "interpreter",
                    jobs: int = 1, timeout: float = 60.0,
                    on_result: Callable[[FileResult], None] | None = None,
                    start_method: str | None = None, *, tasks: Sequence[str] | None = None,
                    task_runner: Callable[[str, str], FileResult] | None = None,
                    preload: Sequence[str] = ()) -> Report:
    """Runs every test file under ``paths`` on ``backend``, ``jobs`` files at a time.

    Each file runs in a worker process; a file running longer than ``timeout`` seconds
    has its worker killed (status ``timeout``), a worker that dies makes its file an
    ``error``; the run always goes on. ``on_result`` sees each result as it lands.
    Workers start from a ``forkserver`` (never forked from a process that may run
    threads, such as one that imported JAX) unless ``start_method`` says otherwise.

    Other test kinds (the ONNX node tests) pass ``tasks`` (names, instead of the files
    under ``paths``) and ``task_runner(task, backend) -> FileResult``, a module-level
    function; ``preload`` names modules the forkserver imports once for all workers.
    """
    from multiprocessing.connection import wait

    files = list(tasks) if tasks is not None else [str(p) for p in discover(paths)]
    t0 = time.perf_counter()
    report = Report(backend)
    methods = mp.get_all_start_methods()
    if start_method is None:
        start_method = "forkserver" if "forkserver" in methods else "spawn"
    ctx = mp.get_context(start_method)
    if start_method == "forkserver":
        ctx.set_forkserver_preload(["oxla.conformance", "oxla.interpreter", *preload])
    pending = list(reversed(files))
    results: dict[str, FileResult] = {}
    slots = [_Slot(ctx, backend, task_runner) for _ in range(max(1, min(jobs, len(files) or 1)))]

    def done(res: FileResult) -> None:
        results[res.path] = res
        if on_result is not None:
            on_result(res)

    try:
        while pending or any(s.task is not None for s in slots):
            for i, s in enumerate(slots):
                if s.task is None and pending:
                    s.task, s.started = pending.pop(), time.perf_counter()
                    try:
                        s.parent.send(s.task)
                    except (BrokenPipeError, OSError):
                        pending.append(s.task)
                        s.task = None
                        s.kill()
                        slots[i] = _Slot(ctx, backend, task_runner)
            busy = [s for s in slots if s.task is not None]
            ready = wait([s.parent for s in busy] + [s.proc.sentinel for s in busy], 0.2)
            now = time.perf_counter()
            for i, s in enumerate(slots):
                if s.task is None:
                    continue
                if s.parent in ready:
                    try:
                        res = s.parent.recv()
                    except (EOFError, OSError):
                        res = None
                    if res is not None:
                        res.seconds = now - s.started
                        s.task = None
                        done(res)
                        continue
                if not s.proc.is_alive() or s.proc.sentinel in ready:
                    s.proc.join(5)
                    code = s.proc.exitcode
                    done(FileResult(s.task, "error", f"worker crashed (exit code {code})",
                                    now - s.started))
                    s.task = None
                    s.kill()
                    slots[i] = _Slot(ctx, backend, task_runner)
                elif now - s.started > timeout:
                    done(FileResult(s.task, "timeout", f"timed out after {timeout:g} s",
                                    now - s.started))
                    s.task = None
                    s.kill()
                    slots[i] = _Slot(ctx, backend, task_runner)
    finally:
        for s in slots:
            try:
                s.parent.send(None)
            except (BrokenPipeError, OSError):
                pass
            s.proc.join(1)
            s.kill()
    report.files = [results[f] for f in files]
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["FileResult", "FunctionResult", "Report", "discover", "functions_to_run",
           "run_file", "split_checks", "SplitCheck", "reason", "run_conformance", "STATUSES", "asdict"]
