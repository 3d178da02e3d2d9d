"""`convoeval report RESULTS`: the HTML report of a saved results file."""

from __future__ import annotations

from pathlib import Path

import click

from convoeval.cli.options import (
    FILE,
    PRICE_OPTION,
    TRIALS_OPTION,
    output_option,
    parse_prices,
)
from convoeval.cli.output import (
    fail,
    print_summary,
    trials_of,
)


@click.command()
@click.argument("results", type=FILE)
@output_option("HTML file to write (default: RESULTS with .html).")
@TRIALS_OPTION
@PRICE_OPTION
def report(results: Path, output: Path | None, trials: str | None, prices: tuple[str, ...]) -> None:
    """Render the HTML report of a saved results file (it reads the rows and the sidecar meta)."""
    from convoeval.errors import ConvoevalError
    from convoeval.report import write_report
    from convoeval.runner import EvaluationResult
    from convoeval.runner._lock import check_writable

    target = output or results.with_suffix(".html")
    given_prices = parse_prices(prices)
    try:
        result = EvaluationResult.from_file(results, prices=given_prices)
        check_writable(target, "report")
        summary = trials_of(result, trials)
        write_report(result, target, trials=summary)
    except ConvoevalError as exc:
        fail([f"error: {exc}"])
    print_summary(result, summary)
    click.echo(f"report: {target}")
