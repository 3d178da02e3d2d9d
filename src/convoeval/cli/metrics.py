"""`convoeval metrics`: every metric, what it needs, whether it needs an LLM judge."""

from __future__ import annotations

import click


@click.command("metrics")
def list_metrics() -> None:
    """List every metric, its class, the fields it needs, and whether it needs an LLM judge."""
    import shutil
    import textwrap

    from convoeval.metrics import describe_metrics

    width = max(40, min(shutil.get_terminal_size().columns, 100))
    for info in describe_metrics():
        judge = (
            "LLM judge"
            if info["needs_llm"]
            else ("offline or LLM judge" if info["uses_judge"] else "no judge")
        )
        click.echo(f"{info['name']} ({info['class']})")
        about = f"needs {', '.join(info['required'])}; {judge}. {info['description']}"
        click.echo(textwrap.fill(about, width, initial_indent="  ", subsequent_indent="  "))
