"""The ``oxla`` command group and its entry point.

To add a built-in command, write it as a module under ``cli/`` and add one line to
:data:`COMMANDS`; it is imported only when used. Error handling, ``--debug`` and plugin
warnings are handled by :class:`oxla.cli.app.OxlaGroup` for every command.
"""

from __future__ import annotations

import click

import oxla
from oxla.cli.app import OxlaGroup

COMMANDS: dict[str, str] = {
    "plugins": "oxla.cli.plugins_cmd:plugins_command",
    "interpret": "oxla.cli.interpret_cmd:interpret_command",
    "conformance": "oxla.cli.conformance_cmd:conformance_command",
    "opt": "oxla.cli.opt_cmd:opt_command",
    "compile": "oxla.cli.compile_cmd:compile_command",
    "run": "oxla.cli.run_cmd:run_command",
    "launch": "oxla.cli.launch_cmd:launch_command",
}
"""Built-in commands: name -> ``"module:attribute"`` of the ``click.Command``."""


@click.group(cls=OxlaGroup, lazy_commands=COMMANDS)
@click.option("--debug", is_flag=True, help="show tracebacks instead of one-line errors")
@click.version_option(oxla.__version__, prog_name="oxla", message="%(prog)s %(version)s")
def cli(debug: bool) -> None:
    """oxla: an open ML compiler (StableHLO in, optimized code out)."""


def main() -> None:
    """Console-script entry point (``oxla``)."""
    cli.main(prog_name="oxla")


if __name__ == "__main__":
    main()
