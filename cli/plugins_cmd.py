"""``oxla plugins``: what is installed, where it comes from, whether it works here."""

from __future__ import annotations

import json

import click

from oxla import plugins


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of objects")
def plugins_command(as_json: bool) -> None:
    """List installed frontends, backends, passes, patterns, custom calls and commands.

    Each row gives the plugin's name, kind, distribution and version, and whether it is
    available on this machine (with the reason when not).
    """
    records = plugins.plugin_records()
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in records], indent=2))
        return
    header = ("NAME", "KIND", "DISTRIBUTION", "VERSION", "STATUS")
    rows = [
        (
            r.name,
            r.kind,
            r.distribution,
            r.version,
            "available" if r.available else f"unavailable: {r.reason}",
        )
        for r in records
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)]
        click.echo("  ".join([*cells, row[4]]).rstrip())
