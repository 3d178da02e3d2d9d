"""The `convoeval agree` command: compare a results file with labels, print the table and its
notes, write the optional page (`cli/__init__.py` only registers it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from convoeval.cli.options import FILE, file_option, metric_option, report_option
from convoeval.cli.output import fail


@click.command("agree")
@click.argument("results", type=FILE)
@file_option(
    "--labels",
    metavar="FILE",
    help="JSONL labels keyed by record id (default: each record's metadata.labels).",
)
@metric_option("NAME", "Only this metric (repeat, or comma-separate names).", name="metrics")
@report_option("Also write an HTML page of the figures and the disagreements.")
def agree_command(
    results: Path, labels: Path | None, metrics: Sequence[str], report_path: Path | None
) -> None:
    """Compare the verdicts of RESULTS with human labels (docs/agreement.md).

    Exit codes: 0 done; 2 unreadable results, bad labels (FILE:LINE) or no labels found.
    """
    from convoeval.errors import ConvoevalError
    from convoeval.report.agreement import (
        agreement_table,
        class_names,
        interval_note,
        write_agreement_report,
    )
    from convoeval.runner._lock import check_writable
    from convoeval.stats.agree import agree

    names = [n.strip() for item in metrics for n in item.split(",") if n.strip()]
    try:
        if report_path is not None:
            check_writable(report_path, "report")
        report = agree(results, labels, names or None)
    except ConvoevalError as exc:
        fail([f"error: {exc}"])
    if report.unknown_metrics:
        click.echo(f"note: labels for metrics not in this run: {report.unknown_metrics}", err=True)
    if report.unmatched_labels:
        click.echo(
            f"note: {report.unmatched_labels} labelled ids have no row in {results}", err=True
        )
    if not report.kinds:
        where = f"in {labels}" if labels is not None else "in the records' metadata.labels"
        fail([f"error: no labels {where} for the metrics of {results} (see docs/agreement.md)"])
    from rich.console import Console  # rich loads only when a table is printed

    console = Console(width=max(150, Console().width))
    console.print(agreement_table(report))
    click.echo(interval_note(report))
    for item in report.kinds:
        if item.confusion:
            click.echo(
                f"confusion {item.metric} {item.kind} (rows label, columns judge, over "
                f"{', '.join(class_names(item))}): {item.confusion}"
            )
    if report_path is not None:
        write_agreement_report(report, report_path)
        click.echo(f"report: {report_path}")
