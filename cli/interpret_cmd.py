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
    actual); exits with status 1 when any check failed or a function could not run, 2
    when nothing in FILE parses.
    """
    from oxla.conformance import run_file

    res = run_file(file, "interpreter")
    if res.functions and all(f.name == "<parse>" for f in res.functions):
        # nothing of the file parses: a user error (exit 2), not a failed test (exit 1)
        first = res.functions[0].messages[0] if res.functions[0].messages else "no module"
        line = first.splitlines()[0]
        click.echo(line if "error: " in line else f"error: {line}", err=True)
        sys.exit(2)
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
