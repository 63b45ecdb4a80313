"""``citewise scan``: a contract checked against a playbook."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from citewise.cli.common import (
    FormatOpt,
    OutputFormat,
    build_engine,
    console,
    errors,
    progress_bar,
)
from citewise.scan.checks import Verdict

_SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan"}
_VERDICT_STYLE = {Verdict.DEVIATES: "red", Verdict.NEEDS_REVIEW: "yellow",
                  Verdict.NOT_FOUND: "magenta", Verdict.COMPLIANT: "green"}
#: Characters of the cited clause shown under the explanation in the table.
TABLE_QUOTE_CHARS = 240


def scan(
    file: Annotated[Path, typer.Argument(help="The contract to check (PDF, DOCX, text...).")],
    playbook: Annotated[str, typer.Option(
        "--playbook", "-p", help="A bundled playbook name or a YAML file path.")] = "default",
    checker: Annotated[str | None, typer.Option(
        help="auto, llm or rules (default: CITEWISE_SCAN_CHECKER).")] = None,
    fmt: FormatOpt = OutputFormat.text,
) -> None:
    """Check a document against a playbook; flags sorted by severity, each with a citation."""
    with errors():
        engine = build_engine()
        if checker not in (None, "auto", "llm", "rules"):
            raise typer.BadParameter("use auto, llm or rules", param_hint="--checker")
        with progress_bar("scanning", fmt is OutputFormat.text and sys.stderr.isatty()) as update:
            report = engine.scan(file, playbook, checker=engine.scan_checker(checker),
                                 progress=update)
    if fmt is OutputFormat.json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
        return
    table = Table(title=f"{escape(report.document.path)} - playbook {escape(report.playbook)}",
                  show_lines=True)
    for col in ("severity", "rule", "verdict", "explanation", "where"):
        table.add_column(col, overflow="fold")
    for f in report.flags:
        explanation = escape(f.explanation)
        if f.quote:
            quote = f.quote if len(f.quote) <= TABLE_QUOTE_CHARS else \
                f.quote[: TABLE_QUOTE_CHARS - 1] + "…"
            explanation += f"\n[dim]“{escape(quote)}”[/]"
        table.add_row(f"[{_SEVERITY_STYLE[f.severity.value]}]{f.severity.value}[/]",
                      escape(f.title),
                      f"[{_VERDICT_STYLE[f.verdict]}]{f.verdict.label}[/]",
                      explanation, escape(f.where.replace(", chars", "\nchars") or "-"))
    console.print(table)
    counts = ", ".join(f"{sum(f.verdict is v for f in report.flags)} {v.label}"
                       for v in _VERDICT_STYLE)
    console.print(f"{counts}; {sum(report.timings_ms.values()) / 1000:.1f} s")


