"""Printing sweep results: the text summary of the scripts and the Markdown failure
table of the docs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sweep_common import Result


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
