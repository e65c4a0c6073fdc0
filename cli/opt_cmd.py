"""``oxla opt``: run a pass pipeline on a StableHLO file, like ``stablehlo-opt``."""

from __future__ import annotations

import os
import sys

import click

from oxla.cli.options import InputPath
from oxla.passes import DEFAULT_PIPELINE


@click.command("opt", epilog=f"The 'default' pipeline is: {DEFAULT_PIPELINE}")
@click.argument(
    "input_path", metavar="IN.mlir", type=InputPath(dir_okay=False, allow_dash=True)
)
@click.option(
    "-p",
    "--pipeline",
    default="default",
    show_default=True,
    help="passes to run, e.g. 'inline,canonicalize{max-iterations=10},cse'",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="write the result here (default: stdout)",
)
@click.option("--print-ir-before-all", is_flag=True, help="print the IR before every pass")
@click.option("--print-ir-after-all", is_flag=True, help="print the IR after every pass")
@click.option(
    "--print-ir-after",
    "print_after",
    multiple=True,
    metavar="PASS",
    help="print the IR after the named pass (repeatable)",
)
@click.option("--timing", is_flag=True, help="print a table of per-pass times to stderr")
@click.option("--generic", is_flag=True, help="print ops in the generic form")
@click.option(
    "--dump-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="write NN-pass.mlir after each pass into this directory",
)
@click.option(
    "--verify-each/--no-verify-each",
    default=True,
    show_default=True,
    help="verify the module after every pass",
)
def opt_command(
    input_path: str,
    pipeline: str,
    output: str | None,
    print_ir_before_all: bool,
    print_ir_after_all: bool,
    print_after: tuple[str, ...],
    timing: bool,
    generic: bool,
    dump_dir: str | None,
    verify_each: bool,
) -> None:
    """Parse IN.mlir ('-' for stdin), run PIPELINE over it and print the result."""
    from oxla.ir import parse_module, print_module
    from oxla.passes import PassManager

    if output is not None and input_path != "-" and os.path.exists(output) \
            and os.path.samefile(output, input_path):
        from oxla.errors import OxlaError

        raise OxlaError(f"-o {output} would overwrite the input; choose another path")
    if input_path == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        with open(input_path) as f:
            text, name = f.read(), input_path
    module = parse_module(text, name)
    pm = PassManager.from_pipeline(
        pipeline,
        verify_each=verify_each,
        print_before={"all"} if print_ir_before_all else set(),
        print_after={"all"} if print_ir_after_all else set(print_after),
        dump_dir=dump_dir,
        timing=timing,
        generic=generic,
    )
    pm.run(module)
    result = print_module(module, generic=generic)
    if output is None:
        click.echo(result)
    else:
        with open(output, "w") as f:
            f.write(result + "\n")
    if timing:
        click.echo(pm.timing_report(), err=True)
