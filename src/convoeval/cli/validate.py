"""`convoeval validate DATA`: check every record, print FILE:LINE problems, exit 1 if any."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from convoeval.cli.options import (
    FIELD_OPTION,
    FORMAT_OPTION,
    MESSAGES_FIELD_OPTION,
    fields,
)


@click.command()
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@FORMAT_OPTION
@MESSAGES_FIELD_OPTION
@FIELD_OPTION
@click.option(
    "--max-errors",
    type=int,
    default=1000,
    show_default=True,
    help="Stop printing problems after this many (all are still counted).",
)
def validate(
    data: Path,
    layout: str,
    messages_field: str | None,
    field_paths: tuple[str, ...],
    max_errors: int,
) -> None:
    """Check every record of DATA; print FILE:LINE: problem for each invalid one (and
    FILE:LINE: gap: ... for what a trace conversation lacks)."""
    from convoeval.errors import ConvoevalError
    from convoeval.io import read_records
    from convoeval.io.records import UNKNOWN_LAYOUT

    total = invalid = printed = same_layout = 0
    layout_problem = None  # an unknown layout is said once, not for every record
    try:  # a bad option or an unreadable file: nothing to check
        records = read_records(
            data, format=layout, messages_field=messages_field, fields=fields(field_paths)
        )
    except ConvoevalError as exc:  # anything else is a bug: its traceback shows
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    try:
        for record in records:
            total += 1
            for note in record.notes:  # a trace conversation's gaps: valid, but said
                click.echo(f"{record.where}: {note}", err=True)
            if record.errors:
                invalid += 1
                if record.errors[0].startswith(UNKNOWN_LAYOUT):
                    if record.errors == layout_problem:
                        same_layout += 1
                        continue
                    layout_problem = record.errors
                for line in record.problems():
                    if printed < max_errors:
                        click.echo(line, err=True)
                    printed += 1
    except ConvoevalError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    noun = "record" if total == 1 else "records"
    if invalid:
        hidden = printed - max_errors
        if hidden > 0:
            click.echo(f"... and {hidden} more problems not shown", err=True)
        if same_layout:
            click.echo(f"... and {same_layout} more records in that unknown layout", err=True)
        click.echo(f"{total} {noun}, {invalid} invalid")
        sys.exit(1)
    click.echo(f"{total} {noun}, all valid")
