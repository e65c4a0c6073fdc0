"""``oxla plugins``: what is installed, where it comes from, whether it works here; with
``--coverage``, which ops of the op table each backend has no rule for."""

from __future__ import annotations

import json

import click

from oxla import plugins


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="print a JSON list of objects")
@click.option("--coverage", is_flag=True,
              help="per backend, the ops of the op table it has no rule for")
@click.option("--backend", default=None, metavar="NAME",
              help="with --coverage: only this backend")
def plugins_command(as_json: bool, coverage: bool, backend: str | None) -> None:
    """List installed frontends, backends, passes, patterns, custom calls and commands.

    Each row gives the plugin's name, kind, distribution and version, and whether it is
    available on this machine (with the reason when not). With ``--coverage``: for each
    backend (or only ``--backend NAME``), the ops of the op table it has no rule for,
    computed from its rule tables (``--json``: objects with keys ``backend``, ``ops``,
    ``covered``, ``missing``).
    """
    if backend is not None and not coverage:
        raise click.UsageError("--backend goes with --coverage")
    if coverage:
        _coverage(backend, as_json)
        return
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


def _coverage(backend: str | None, as_json: bool) -> None:
    reports = plugins.coverage(backend)
    if as_json:
        click.echo(json.dumps([c.to_dict() for c in reports], indent=2))
        return
    for c in reports:
        if c.missing is None:
            click.echo(f"{c.backend}: does not declare its rules")
            continue
        click.echo(f"{c.backend}: {c.total - len(c.missing)} of {c.total} ops have a rule; "
                   f"{len(c.missing)} without")
        for name in c.missing:
            click.echo(f"  {name}")
