"""`convoeval compare BASE NEW`: two results files compared record by record (docs/compare.md):
the table, what did not pair, the most regressed conversations with both reasons, the optional
HTML diff page, and the `--fail-if-worse` gate (exit 3)."""

from __future__ import annotations

from pathlib import Path

import click

from convoeval.cli.options import (
    FILE,
    count_option,
    flag_option,
    metric_option,
    pairs,
    repeated_option,
    report_option,
)
from convoeval.cli.output import EXIT_WORSE, fail, metric_list


@click.command("compare")
@click.argument("base", type=FILE)
@click.argument("new", type=FILE)
@metric_option(
    "METRIC",
    "Compare only this metric (repeat, or comma-separate names). Default: every metric "
    "both runs have.",
)
@report_option("Also write the HTML diff page here.")
@repeated_option(
    "--fail-if-worse",
    "fail_if_worse",
    metavar="METRIC=DELTA",
    help="Exit with code 3 when NEW's mean of METRIC is lower than BASE's by more than DELTA "
    "and the 95% interval of the difference lies below 0 (repeatable).",
)
@count_option(
    "--top",
    minimum=0,
    default=5,
    show_default=True,
    help="The N most regressed conversations shown per metric.",
)
@flag_option(
    "--allow-other-references",
    help="Compare even when paired records have other references than in BASE (they are "
    "then listed in a warning).",
)
def compare_command(
    base: Path,
    new: Path,
    metric_names: tuple[str, ...],
    report_path: Path | None,
    fail_if_worse: tuple[str, ...],
    top: int,
    allow_other_references: bool,
) -> None:
    """Compare NEW's results with BASE's, record by record: is NEW better or worse?

    Exit codes: 0 done; 2 unreadable results, runs that cannot be compared (nothing pairs,
    other references, other metric options) or bad options; 3 a --fail-if-worse gate failed.
    """
    from convoeval.errors import ConvoevalError
    from convoeval.report.compare import (
        comparison_table,
        method_note,
        write_comparison_report,
    )
    from convoeval.runner._lock import check_writable
    from convoeval.stats.compare import compare
    from convoeval.stats.compare_result import check_limits

    limits = pairs(fail_if_worse, "--fail-if-worse")
    names = metric_list(metric_names)
    chosen = [*names, *(m for m in limits if m not in names)] if names else None
    try:
        check_limits(limits)
        if report_path is not None:
            check_writable(report_path, "report")
        result = compare(base, new, chosen, top=top, allow_other_references=allow_other_references)
        problems = result.gate(limits)
    except ConvoevalError as exc:
        fail([f"error: {exc}"])
    for line in result.pairing_lines():
        click.echo(line)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    from rich.console import Console  # rich loads only when a table is printed

    console = Console(width=max(150, Console().width))
    console.print(comparison_table(result))
    click.echo(method_note(result))
    for line in result.regression_lines():
        click.echo(line)
    if report_path is not None:
        write_comparison_report(result, report_path)
        click.echo(f"report: {report_path}")
    if problems:
        fail(problems, EXIT_WORSE)
