"""``oxla run``: load a ``.oxla`` artifact, run it on ``.npy`` inputs, report outputs."""

from __future__ import annotations

import time

import click
import numpy as np

from oxla.errors import OxlaError


def _load_input(path: str) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        raise OxlaError(f"no such file: '{path}'") from exc
    except ValueError as exc:
        raise OxlaError(f"'{path}' is not a .npy array file: {exc}") from exc


@click.command("run")
@click.argument("artifact", metavar="ARTIFACT.oxla", type=click.Path(exists=True))
@click.option("--input", "-i", "inputs", multiple=True, metavar="FILE.npy",
              help="one .npy file per argument, in order")
@click.option("--output", "-o", type=click.Path(), default=None,
              help="write the results to this .npz (result0, result1, ...)")
def run_command(artifact: str, inputs: tuple[str, ...], output: str | None) -> None:
    """Run a compiled artifact on .npy inputs; print each output's shape and dtype."""
    import oxla

    exe = oxla.load(artifact)
    args = [_load_input(p) for p in inputs]
    t0 = time.perf_counter()
    outs = [np.asarray(o) for o in exe(*args)]
    seconds = time.perf_counter() - t0
    for i, o in enumerate(outs):
        click.echo(f"result{i}: shape {tuple(o.shape)} dtype {o.dtype}")
    click.echo(f"ran in {seconds * 1e3:.3f} ms on backend {exe.backend}")
    if output is not None:
        np.savez(output, **{f"result{i}": o for i, o in enumerate(outs)})
        click.echo(f"wrote {output}")
