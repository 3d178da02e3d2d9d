"""`convoeval metrics`: every metric, what it needs, and which judges can run it."""

from __future__ import annotations

import click

#: Which judges can run a metric: the offline one, a local GGUF file (`--judge gguf:PATH`), any
#: other LLM judge (`--judge openai/MODEL`). A metric that needs no judge runs with any.
JUDGES_OFFLINE = "offline, gguf, any LLM"
JUDGES_LLM = "gguf, any LLM"
JUDGES_NONE = "none needed"


def judges_column(info: dict[str, object]) -> str:
    """The judges that can run a metric described by `describe_metrics`."""
    if info["needs_llm"]:
        return JUDGES_LLM
    return JUDGES_OFFLINE if info["uses_judge"] else JUDGES_NONE


@click.command("metrics")
def list_metrics() -> None:
    """List every metric, which judges can run it (offline, gguf, any LLM), its class, and the
    fields it needs."""
    import shutil
    import textwrap

    from convoeval.metrics import describe_metrics

    width = max(40, min(shutil.get_terminal_size().columns, 100))
    infos = describe_metrics()
    names = [f"{info['name']} ({info['class']})" for info in infos]
    name_width = max(len("metric (class)"), *(len(name) for name in names))
    judges_width = max(len(JUDGES_OFFLINE), len("judges"))
    # a judges column when it fits the terminal, else the judges lead each description
    columns = name_width + 2 + judges_width <= width
    click.echo(f"{'metric (class)':<{name_width}}  judges" if columns else "metric (class)")
    for name, info in zip(names, infos, strict=True):
        judges = judges_column(info)
        click.echo(f"{name:<{name_width}}  {judges}" if columns else name)
        about = f"needs {', '.join(info['required'])}. {info['description']}"
        if not columns:
            about = f"judges: {judges}. {about}"
        click.echo(textwrap.fill(about, width, initial_indent="  ", subsequent_indent="  "))
    legend = (
        "judges: offline is the embedded judge (the default, no key); gguf is a local GGUF "
        "model run in this process (--judge gguf:PATH, no key, no server); any LLM is any "
        "OpenAI-compatible judge (--judge openai/MODEL)."
    )
    click.echo(textwrap.fill(legend, width))
