"""``oxla conformance PATH... --backend NAME``: run StableHLO test files on a backend,
each file isolated in a worker process with a timeout."""

from __future__ import annotations

import sys
from collections import Counter

import click

from oxla.cli.options import InputPath, backend_option

_STYLE = {"pass": "green", "fail": "red", "error": "magenta", "timeout": "yellow",
          "skip": "dim"}


@click.command("conformance")
@click.argument("paths", nargs=-1, required=False, type=InputPath())
@backend_option()
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="files run at a time, each in its own worker process")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, help="seconds a file may run before its worker is killed")
@click.option("--json", "json_out", type=click.Path(dir_okay=False),
              help="write the totals and per-file results to this JSON file")
@click.option("--verbose", "-v", is_flag=True, help="print passing and skipped files too")
@click.option("--summary/--no-summary", default=None,
              help="print failures grouped by reason and unsupported ops with their file "
                   "counts (default: on for compiling backends)")
@click.option("--onnx-node-tests", is_flag=True, default=False,
              help="run the ONNX node tests the installed onnx generates (needs "
                   "oxla-frontend-onnx) instead of PATHS")
@click.option("--compare", "compare", multiple=True, type=click.Choice(["onnxruntime"]),
              help="with --onnx-node-tests: also run onnxruntime on the same tests")
@click.option("-k", "patterns", multiple=True, metavar="GLOB",
              help="with --onnx-node-tests: only tests matching GLOB (test_conv*)")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="with --onnx-node-tests: at most N tests, at least one per op")
def conformance_command(paths: tuple[str, ...], backend: str, jobs: int, timeout: float,
                        json_out: str | None, verbose: bool, summary: bool | None,
                        onnx_node_tests: bool, compare: tuple[str, ...],
                        patterns: tuple[str, ...], sample: int | None) -> None:
    """Run every `.mlir` test file under PATHS on BACKEND and report pass/fail totals.

    With --onnx-node-tests, run onnx's node tests instead (PATHS must then be omitted),
    optionally on onnxruntime too (--compare onnxruntime) so both counts come from one
    run. A crash or a hang counts as a failed file and never stops the run. Exits with
    status 1 when a file failed, errored or timed out.
    """
    from oxla.errors import OxlaError

    if onnx_node_tests:
        if paths:
            raise OxlaError("--onnx-node-tests takes no PATHS")
        from oxla.cli.onnx_node_tests import run_onnx_node_tests

        run_onnx_node_tests(backend, jobs, timeout, json_out, verbose, compare, patterns,
                            sample)
        return
    if not paths:
        raise OxlaError("give PATHS (test files or directories), or --onnx-node-tests")
    if compare or patterns or sample:
        raise OxlaError("--compare, -k and --sample go with --onnx-node-tests")
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from oxla.conformance import discover, run_conformance

    console = Console(stderr=False, highlight=False)
    total = len(discover(paths))
    counts: Counter[str] = Counter()
    with Progress(TextColumn("[bold]conformance[/]"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.description}"), console=console,
                  transient=True) as progress:
        task = progress.add_task("", total=total)

        def on_result(res) -> None:
            counts[res.status] += 1
            if verbose or res.status not in ("pass", "skip"):
                msg = f": {res.message}" if res.message else ""
                progress.console.print(
                    f"[{_STYLE[res.status]}]{res.status.upper():7}[/] {res.path}{msg}",
                    markup=True, soft_wrap=True)
            progress.update(task, advance=1, description=" ".join(
                f"{k}={v}" for k, v in sorted(counts.items())))

        report = run_conformance(paths, backend, jobs=jobs, timeout=timeout,
                                 on_result=on_result)
    d = report.to_dict()
    ran = d["total"] - d["skipped"]
    rate = f" ({100.0 * d['passed'] / ran:.2f}% of {ran} run)" if ran else ""
    click.echo(f"{d['total']} files on '{backend}' in {report.seconds:.1f} s: "
               f"{d['passed']} passed{rate}, {d['failed']} failed, {d['errors']} errors, "
               f"{d['timeouts']} timeouts, {d['skipped']} skipped")
    if summary or (summary is None and backend != "interpreter"):
        _print_summary(report)
    if json_out:
        report.write_json(json_out)
    if d["failed"] or d["errors"] or d["timeouts"]:
        sys.exit(1)
    if d["total"] == 0:
        from oxla.errors import OxlaError

        raise OxlaError(f"no .mlir test files under {', '.join(map(str, paths))}")


def _print_summary(report, top: int = 25) -> None:
    """Unsupported ops (files per op) and failures grouped by reason, ``top`` of each."""
    ops = report.unsupported_ops()
    if ops:
        click.echo(f"unsupported op counts ({sum(ops.values())} files, {len(ops)} ops):")
        for name, n in list(ops.items())[:top]:
            click.echo(f"  {n:6d}  {name}")
        if len(ops) > top:
            click.echo(f"  ... {len(ops) - top} more ops")
    reasons = report.reasons()
    if reasons:
        click.echo(f"failures by reason ({sum(reasons.values())} files):")
        for why, n in list(reasons.items())[:top]:
            click.echo(f"  {n:6d}  {why}")
        if len(reasons) > top:
            click.echo(f"  ... {len(reasons) - top} more reasons")
