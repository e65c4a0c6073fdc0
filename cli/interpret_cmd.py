"""``oxla interpret FILE.mlir``: run a StableHLO test file on the reference interpreter."""

from __future__ import annotations

import sys

import click

from oxla.cli.options import InputPath


@click.command("interpret")
@click.argument("file", type=InputPath(dir_okay=False))
def interpret_command(file: str) -> None:
    """Run every test function of FILE (split at `// -----`) and evaluate its checks.

    Prints PASS/FAIL/ERROR per function with the differing elements (expected vs.
    actual); exits with status 1 when any check failed or a function could not run.
    """
    from oxla.conformance import run_file

    res = run_file(file, "interpreter")
    marks = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}
    for f in res.functions:
        where = f"{file}:{f.chunk_line}"
        click.echo(f"{marks[f.status]:5} @{f.name} ({where})")
        for m in f.messages:
            click.echo(f"      {m}")
    n = len(res.functions)
    bad = sum(1 for f in res.functions if f.status != "pass")
    if not n:
        click.echo(f"no test functions in {file}")
    else:
        click.echo(f"{n - bad} of {n} functions passed")
    if bad:
        sys.exit(1)
