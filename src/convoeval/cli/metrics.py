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
    name_width = max(len("metric"), *(len(str(i["name"])) for i in infos))
    judges_width = max(len(JUDGES_OFFLINE), len("judges"))
    click.echo(f"{'metric':<{name_width}}  {'judges':<{judges_width}}  class")
    for info in infos:
        judges = judges_column(info)
        click.echo(f"{info['name']:<{name_width}}  {judges:<{judges_width}}  {info['class']}")
        about = f"needs {', '.join(info['required'])}. {info['description']}"
        click.echo(textwrap.fill(about, width, initial_indent="  ", subsequent_indent="  "))
    click.echo(
        "judges: offline is the embedded judge (the default, no key); gguf is a local GGUF "
        "model run in this process (--judge gguf:PATH, no key, no server); any LLM is any "
        "OpenAI-compatible judge (--judge openai/MODEL)."
    )
