"""Shardy's own tests as conformance data (``../shared/conformance/shardy``).

Two kinds of files (see that directory's README):

- *executable* tests (``//--- part1.mlir`` / ``//--- part2.mlir``): part1 is a sharded
  program; it is partitioned by :func:`~oxla.sharding.partition.partition`, a
  ``@sequential_*`` copy without shardings is added for every ``@parallel_*``
  function (as the test's ``run_*.sh`` does), and part2's harness runs the per-device
  programs through ``interpreter.run_parallel`` and checks them with ``check.*`` ops;
  a ``RUN`` line that renames part1's function with ``sed 's/OLD/NEW/g'`` (to run two
  lowerings of one program side by side) gets a partitioned copy under each new name;
- *propagation* tests (``sdy_opt ... | FileCheck``): every ``// -----`` chunk is
  propagated by :class:`~oxla.sharding.ShardingPropagation`, printed, and its
  ``CHECK`` lines are matched against the text by :func:`filecheck`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


def is_executable_test(text: str) -> bool:
    return "//--- part1.mlir" in text and "//--- part2.mlir" in text


def is_propagation_test(text: str) -> bool:
    return "// RUN: sdy_opt" in text and "CHECK" in text


def split_parts(text: str) -> dict[str, tuple[str, int]]:
    """``//--- NAME`` sections -> (text, line offset)."""
    parts: dict[str, tuple[str, int]] = {}
    lines = text.split("\n")
    name, start = None, 0
    for i, ln in enumerate(lines + ["//--- <end>"]):
        if ln.startswith("//--- "):
            if name is not None:
                parts[name] = ("\n".join(lines[start:i]), start)
            name, start = ln[6:].strip(), i + 1
    return parts


_RENAME = re.compile(r"sed\s+'s/(\w+)/(\w+)/g'")


def run_renames(text: str) -> list[tuple[str, str]]:
    """``(old, new)`` of each ``sed 's/OLD/NEW/g'`` on the test's ``RUN`` lines (word
    patterns only)."""
    run = " ".join(ln.split("RUN:", 1)[1].rstrip("\\ ") for ln in text.split("\n")
                   if ln.lstrip().startswith("// RUN:"))
    return [(m.group(1), m.group(2)) for m in _RENAME.finditer(run)]


def build_executable(text: str, path: str = "<string>"):
    """The combined module of an executable test: partitioned part1, sequential copies,
    part2's harness.

    Raises:
        OxlaError: a parse error, or what the partitioner does not support.
    """
    from oxla.ir import func_name, parse_module
    from oxla.sharding.model import drop_shardings
    from oxla.sharding.partition import partition

    parts = split_parts(text)
    p1, off1 = parts["part1.mlir"]
    p2, off2 = parts["part2.mlir"]
    par = parse_module(p1, path, off1)
    names = [func_name(f) for f in par.functions]
    partition(par)
    combined = par
    for old, new in run_renames(text):
        if old in names:
            copy = parse_module(re.sub(rf"@{old}\b", f"@{new}", p1), path, off1)
            partition(copy)
            for f in list(copy.functions):
                combined.body.append(f)
    if any(n.startswith("parallel_") for n in names) and \
            not any(n.startswith("sequential_") for n in names):
        seq = drop_shardings(parse_module(p1.replace("parallel_", "sequential_"), path, off1))
        for f in list(seq.functions):
            combined.body.append(f)
    if any(n.startswith("transformed_") for n in names):
        # import tests compare a rewritten function with its original (run_*.sh)
        orig = drop_shardings(parse_module(p1.replace("transformed_", "original_"), path,
                                           off1))
        for f in list(orig.functions):
            combined.body.append(f)
    harness = parse_module(p2, path, off2)
    for f in list(harness.functions):
        combined.body.append(f)
    return combined


# -- FileCheck, the part these tests use --------------------------------------------------

_DIRECTIVE = re.compile(r"//\s*CHECK(-NEXT|-SAME|-LABEL|-NOT|-DAG|-EMPTY)?:(.*)$")


def _pattern(text: str, env: dict[str, str]) -> tuple[re.Pattern, dict[str, str]]:
    """FileCheck pattern -> regex: ``{{re}}``, ``[[VAR:re]]`` captures, ``[[VAR]]`` uses;
    runs of whitespace match any whitespace."""
    out, i, groups = [], 0, {}
    text = text.strip()
    while i < len(text):
        if text.startswith("{{", i):
            j = text.index("}}", i + 2)
            out.append("(?:" + text[i + 2:j] + ")")
            i = j + 2
        elif text.startswith("[[", i):
            j = text.index("]]", i + 2)
            body = text[i + 2:j]
            if ":" in body:
                name, rx = body.split(":", 1)
                g = f"v{len(groups)}"
                groups[g] = name
                out.append(f"(?P<{g}>{rx})")
            else:
                out.append(re.escape(env.get(body, "\0undefined:" + body)))
            i = j + 2
        else:
            j = i
            while j < len(text) and not text.startswith("{{", j) and not text.startswith("[[", j):
                j += 1
            lit = text[i:j]
            out.append(r"\s+".join(re.escape(p) for p in re.split(r"\s+", lit)))
            i = j
    return re.compile("".join(out)), groups


@dataclass
class CheckResult:
    ok: bool
    checks: int = 0
    message: str = ""
    lines: list[str] = field(default_factory=list)


def filecheck(output: str, checks: list[tuple[str, str]]) -> CheckResult:
    """Matches ``output`` against ``(kind, pattern)`` directives in order
    (``CHECK``, ``-LABEL``, ``-NEXT``, ``-SAME``, ``-NOT``, ``-DAG``)."""
    lines = output.split("\n")
    env: dict[str, str] = {}
    line, col = 0, 0
    nots: list[tuple[str, re.Pattern]] = []

    def bind(m, groups) -> None:
        for g, name in groups.items():
            env[name] = m.group(g)

    for n, (kind, pat) in enumerate(checks):
        rx, groups = _pattern(pat, env)
        if kind == "NOT":
            nots.append((pat, rx))
            continue
        found = None
        if kind == "SAME":
            m = rx.search(lines[line], col) if line < len(lines) else None
            found = (line, m) if m else None
        elif kind == "NEXT":
            nl = line + 1
            m = rx.search(lines[nl]) if nl < len(lines) else None
            found = (nl, m) if m else None
        else:
            for k in range(line, len(lines)):
                m = rx.search(lines[k], col if k == line else 0)
                if m:
                    found = (k, m)
                    break
        if found is None:
            where = lines[line] if line < len(lines) else "<end>"
            return CheckResult(False, n, f"CHECK{'' if kind == '' else '-' + kind}: {pat.strip()} "
                               f"not found after: {where.strip()[:160]}")
        k, m = found
        for npat, nrx in nots:
            seg = "\n".join([lines[line][col:]] + lines[line + 1:k] + [lines[k][:m.start()]]) \
                if k > line else lines[line][col:m.start()]
            if nrx.search(seg):
                return CheckResult(False, n, f"CHECK-NOT: {npat.strip()} matched")
        nots = []
        bind(m, groups)
        line, col = k, m.end()
    return CheckResult(True, len(checks))


def check_directives(chunk: str) -> list[tuple[str, str]]:
    out = []
    for ln in chunk.splitlines():
        m = _DIRECTIVE.search(ln)
        if m:
            out.append(((m.group(1) or "").lstrip("-"), m.group(2)))
    return out


def run_propagation_chunk(chunk: str, path: str = "<string>", offset: int = 0,
                          pipeline: bool = False, strategy: str = "aggressive") -> CheckResult:
    """Propagates one chunk and matches its CHECK lines.

    ``strategy`` is Shardy's conflict strategy the file's RUN line asks for
    (``-sdy-basic-propagate``: basic; the other propagation passes: aggressive)."""
    from oxla.ir import parse_module, print_module
    from oxla.sharding.propagation import ShardingPropagation

    checks = check_directives(chunk)
    if not checks:
        return CheckResult(True, 0, "no CHECK lines")
    m = parse_module(chunk, path, offset)
    # Shardy propagates axes that split a dimension unevenly (its partitioner pads);
    # oxla's default keeps shards even
    ShardingPropagation(divisible=False, sub_axes=True, strategy=strategy,
                        connect_calls=pipeline).run(m)
    if pipeline:  # -sdy-propagation-pipeline ends by closing every sharding
        close_shardings(m)
    return filecheck(print_module(m, func_default_dialect=True), checks)


def close_shardings(module) -> None:
    """Removes every open mark (``?``) and explicit replicated axes, as the end of
    Shardy's propagation pipeline does."""
    from oxla.ir import attributes as A
    from oxla.ir.sdy import DimSharding, ShardingPerValueAttr, TensorShardingAttr

    def close(x):
        if isinstance(x, TensorShardingAttr):  # replicated axes become implicit
            return TensorShardingAttr(x.mesh, tuple(DimSharding(d.axes) for d in x.dims),
                                      (), x.unreduced)
        if isinstance(x, ShardingPerValueAttr):
            return ShardingPerValueAttr(tuple(close(y) for y in x.shardings))
        if isinstance(x, A.ArrayAttr):
            return A.ArrayAttr(tuple(close(y) for y in x))
        if isinstance(x, A.DictionaryAttr):
            return A.DictionaryAttr(tuple((k, close(v)) for k, v in x.entries))
        return x

    for op in module.walk():
        for k, v in list(op.attributes.items()):
            op.attributes[k] = close(v)


__all__ = ["is_executable_test", "is_propagation_test", "build_executable", "filecheck",
           "run_propagation_chunk", "check_directives", "split_parts"]


def run_file(path: str, text: str, backend: str, compiled: bool):
    """One Shardy test file as a :class:`~oxla.conformance.FileResult` (one function
    result per executable test or per propagation chunk)."""
    import time

    from oxla.conformance import FileResult, FunctionResult, _message, _run_interpreter
    from oxla.conformance_grid import grid_runner
    from oxla.ir import split_input_file

    t0 = time.perf_counter()
    res = FileResult(path, "skip")
    if is_executable_test(text):
        try:
            module = build_executable(text, path)
            if compiled:
                run = grid_runner(backend)
                if run is None:
                    raise RuntimeError(f"backend '{backend}' cannot run process grids")
                failures = run(module, "main")
            else:
                failures = _run_interpreter(module, "main")
            res.functions.append(FunctionResult(1, "main", "fail" if failures else "pass",
                                                failures))
        except Exception as e:
            res.functions.append(FunctionResult(1, "main", "error", [_message(e)]))
    else:
        for chunk, offset in split_input_file(text):
            if not check_directives(chunk):
                continue
            label = re.search(r"CHECK-LABEL:\s*func(?:\.func)?\s+(?:private\s+)?@([\w$.]+)",
                              chunk)
            name = label.group(1) if label else f"line{offset + 1}"
            try:
                run_line = text.split("\n", 1)[0]
                r = run_propagation_chunk(chunk, path, offset,
                                          "-sdy-propagation-pipeline" in run_line,
                                          "basic" if "-sdy-basic-propagate" in run_line
                                          else "aggressive")
                res.functions.append(FunctionResult(offset + 1, name,
                                                    "pass" if r.ok else "fail",
                                                    [] if r.ok else [r.message]))
            except Exception as e:
                res.functions.append(FunctionResult(offset + 1, name, "error", [_message(e)]))
    res.seconds = time.perf_counter() - t0
    bad = [f for f in res.functions if f.status != "pass"]
    if not res.functions:
        res.message = "no tests"
    elif not bad:
        res.status = "pass"
    else:
        res.status = "error" if any(f.status == "error" for f in bad) else "fail"
        first = next(f for f in bad if f.status == res.status)
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        res.message = f"@{first.name}: {first.messages[0] if first.messages else ''}{more}"
    return res
