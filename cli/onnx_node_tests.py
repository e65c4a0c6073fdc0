"""``oxla conformance --onnx-node-tests``: onnx's node tests on an oxla backend, and on
onnxruntime in the same run (``--compare onnxruntime``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click


def run_onnx_node_tests(backend: str, jobs: int, timeout: float, json_out: str | None,
                        verbose: bool, compare: Sequence[str], patterns: Sequence[str],
                        sample: int | None) -> None:
    """Runs the tests, prints per-runner totals and failure categories; exits 1 when an
    oxla test did not pass."""
    import json

    from oxla import plugins
    from oxla.errors import PluginError

    try:
        from oxla_frontend_onnx.node_tests import run_node_tests, select
    except ImportError as exc:
        raise PluginError(f"--onnx-node-tests needs oxla-frontend-onnx ({exc})",
                          notes=[plugins.install_hint("oxla-frontend-onnx")]) from None
    for runner in compare:
        if runner == "onnxruntime":
            import importlib.util

            if importlib.util.find_spec("onnxruntime") is None:
                raise PluginError("--compare onnxruntime needs onnxruntime, which is not "
                                  "importable", notes=["pip install onnxruntime"])
    names = select(patterns, sample)
    if not names:
        from oxla.errors import OxlaError

        raise OxlaError(f"no ONNX node test matches {', '.join(patterns)}")
    done = {"n": 0}

    def on_result(res) -> None:
        done["n"] += 1
        if verbose or (res.status != "pass" and res.path.startswith("oxla:")):
            click.echo(f"{res.status.upper():7} {res.path}"
                       + (f": {res.message}" if res.message else ""))

    report = run_node_tests(backend, names, compare, jobs=jobs, timeout=timeout,
                            on_result=on_result)
    for runner in ("oxla", *compare):
        c = report.counts(runner)
        label = f"oxla on '{backend}'" if runner == "oxla" else runner
        click.echo(f"{label}: {c['pass']} of {c['total']} node tests passed, {c['fail']} "
                   f"failed, {c['error']} errors, {c['timeout']} timeouts")
        if runner == "oxla":
            n = report.to_dict()["passed_with_static_inputs"].get("oxla", 0)
            click.echo(f"  ({n} of the passes bind shape-determining inputs (axes, shape, "
                       "pads...) as static inputs, compiled for their values)")
    click.echo(f"({len(names)} tests in {report.seconds:.1f} s)")
    for runner in ("oxla", *compare):
        reasons = report.reasons(runner)
        if reasons:
            click.echo(f"{runner} failures by category ({sum(reasons.values())} tests):")
            for why, n in list(reasons.items())[:40]:
                click.echo(f"  {n:5d}  {why}")
            if len(reasons) > 40:
                click.echo(f"  ... {len(reasons) - 40} more categories")
    if json_out:
        with open(json_out, "w") as fh:
            json.dump(report.to_dict(), fh, indent=1)
            fh.write("\n")
    if report.counts("oxla")["pass"] != report.counts("oxla")["total"]:
        sys.exit(1)
