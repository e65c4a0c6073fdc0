"""Printing sweep results: the text summary of the scripts and the Markdown failure
table of the docs."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sweep_common import Result, summarize


def _pct(n: int, d: int) -> str:
    return f"{100.0 * n / d:.1f}%" if d else "-"


def text(results: Sequence[Result], summary: dict[str, Any], title: str,
         seconds: float) -> str:
    """The failures, one line each, then the counts per family and in total."""
    lines = []
    for r in results:
        if r.status not in ("pass", "skip"):
            tag = " [pending]" if r.pending else " [not counted]" if (
                r.status == "excluded") else ""
            lines.append(f"{r.status.upper():>12} {r.name}{tag}: {r.reason}")
    lines.append("")
    lines.append(f"{title} ({seconds:.0f} s)")
    width = max([len(f) for f in summary["families"]] + [10])
    lines.append(f"  {'family':<{width}}  pass/total  pending")
    for fam, c in summary["families"].items():
        lines.append(f"  {fam:<{width}}  {c['pass']:>4}/{c['cases']:<5}  {c['pending']:>7}")
    t = summary["total"]
    counted = t["cases"] - t["pending"]
    lines.append(f"  {'total':<{width}}  {t['pass']:>4}/{t['cases']:<5}  {t['pending']:>7}  "
                 f"({_pct(t['pass'], t['cases'])}; {_pct(t['pass'], counted)} of the "
                 f"{counted} not pending)")
    if t.get("excluded"):
        lines.append(f"  not counted: {t['excluded']} the framework's own XLA compilation "
                     "cannot compile either")
    return "\n".join(lines)


def markdown(results: Sequence[Result], summary: dict[str, Any]) -> str:
    """The per-family counts and the failure table (Markdown)."""
    out = ["| family | pass / total | pending |", "|---|---|---|"]
    for fam, c in summary["families"].items():
        out.append(f"| {fam} | {c['pass']} / {c['cases']} | {c['pending']} |")
    t = summary["total"]
    out.append(f"| **total** | **{t['pass']} / {t['cases']}** | {t['pending']} |")
    if t.get("excluded"):
        out += ["", f"Not counted: {t['excluded']} (status `excluded`: the framework's own "
                "XLA compilation fails on them too, checked on this run)."]
    out += ["", "| function | family | status | reason |", "|---|---|---|---|"]
    for r in results:
        if r.status in ("pass", "skip"):
            continue
        reason = r.reason.replace("|", "\\|")
        if r.pending:
            reason = f"{r.pending}: {reason}"
        out.append(f"| `{r.name}` | {r.family} | {r.status} | {reason} |")
    notes = [r for r in results if r.status == "pass" and r.note]
    if notes:
        out += ["", "Passing with a note:", "", "| function | note |", "|---|---|"]
        out += [f"| `{r.name}` | {r.note.replace('|', chr(92) + '|')} |" for r in notes]
    return "\n".join(out) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options both sweep scripts take (``scripts/jax_sweep.py``,
    ``scripts/tf_sweep.py``)."""
    p.add_argument("--backend", default="cpu")
    p.add_argument("-k", dest="keyword", help="only cases whose name contains this")
    p.add_argument("--family", help="only families whose name contains this")
    p.add_argument("--sample", action="store_true", help="only the CI sample")
    p.add_argument("--json", type=Path, help="write every result here")
    p.add_argument("--markdown", type=Path, help="write the failure table here")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per case as it runs")


def finish(a: argparse.Namespace, results: Sequence[Result], title: str, seconds: float,
           extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Prints the summary, writes ``--json`` (with ``extra``) and ``--markdown``;
    returns the summary."""
    summary = summarize(results)
    print(text(results, summary, title, seconds))
    if a.json:
        a.json.write_text(json.dumps({"summary": summary, "seconds": round(seconds, 1),
                                      **(extra or {}),
                                      "results": [r.to_json() for r in results]}, indent=1))
    if a.markdown:
        a.markdown.write_text(markdown(results, summary))
    return summary
