"""The `convoeval` command line: parse arguments, call the library, print. No logic of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from convoeval import __version__

FORMATS = click.Choice(["auto", "ragas", "openai", "deepeval"])


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="convoeval")
def main() -> None:
    """Score multi-turn conversations of chatbots and tool-using agents."""


@main.command()
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "layout",
    type=FORMATS,
    default="auto",
    show_default=True,
    help="Record layout; auto detects it per record.",
)
@click.option(
    "--max-errors",
    type=int,
    default=1000,
    show_default=True,
    help="Stop printing problems after this many (all are still counted).",
)
def validate(data: Path, layout: str, max_errors: int) -> None:
    """Check every record of DATA; print FILE:LINE: problem for each invalid one."""
    from convoeval.io import DataFileError, read_records

    total = invalid = printed = 0
    try:
        for record in read_records(data, format=layout):
            total += 1
            if record.errors:
                invalid += 1
                for line in record.problems():
                    if printed < max_errors:
                        click.echo(line, err=True)
                    printed += 1
    except DataFileError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    noun = "record" if total == 1 else "records"
    if invalid:
        hidden = printed - max_errors
        if hidden > 0:
            click.echo(f"... and {hidden} more problems not shown", err=True)
        click.echo(f"{total} {noun}, {invalid} invalid")
        sys.exit(1)
    click.echo(f"{total} {noun}, all valid")


@main.command("metrics")
def list_metrics() -> None:
    """List every metric, the fields it needs, and whether it needs an LLM judge."""
    from convoeval.metrics import describe_metrics

    table = Table(title="convoeval metrics")
    for column in ("metric", "needs fields", "judge", "what it measures"):
        table.add_column(column)
    for info in describe_metrics():
        judge = (
            "LLM judge"
            if info["needs_llm"]
            else ("offline or LLM" if info["uses_judge"] else "none")
        )
        table.add_row(info["name"], ", ".join(info["required"]), judge, info["description"])
    Console(width=max(100, Console().width)).print(table)


if __name__ == "__main__":  # pragma: no cover
    main()
