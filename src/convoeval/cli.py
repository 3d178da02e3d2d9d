"""The `convoeval` command line: parse arguments, call the library, print. No logic of its own."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from convoeval import __version__
from convoeval.io.records import FORMATS as DATA_FORMATS

FORMATS = click.Choice(list(DATA_FORMATS))
FORMAT_OPTION = click.option(
    "--format",
    "layout",
    type=FORMATS,
    default="auto",
    show_default=True,
    help="Record layout; auto detects it per record.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="convoeval")
def main() -> None:
    """Score multi-turn conversations of chatbots and tool-using agents."""


@main.command()
@click.argument("data", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@FORMAT_OPTION
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
    table.add_column("metric", no_wrap=True)
    for column in ("needs fields", "judge", "what it measures"):
        table.add_column(column)
    for info in describe_metrics():
        judge = (
            "LLM judge"
            if info["needs_llm"]
            else ("offline or LLM" if info["uses_judge"] else "none")
        )
        table.add_row(info["name"], ", ".join(info["required"]), judge, info["description"])
    Console(width=max(120, Console().width)).print(table)


#: Exit codes of `convoeval run`: 2 for unusable input, 3 when a --fail-under gate fails.
EXIT_INPUT = 2
EXIT_FAIL_UNDER = 3


def _pairs(values: tuple[str, ...], option: str) -> dict[str, float]:
    """Parse repeated `METRIC=X` options into a dict."""
    out: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            out[name.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"expected METRIC=NUMBER, got {value!r}", param_hint=option)
    return out


def _fail(lines: list[str], code: int = EXIT_INPUT) -> None:
    for line in lines:
        click.echo(line, err=True)
    sys.exit(code)


def _print_summary(result: object) -> None:
    from convoeval.report import summary_table, usage_text
    from convoeval.runner import EvaluationResult

    assert isinstance(result, EvaluationResult)
    console = Console(width=max(100, Console().width))
    console.print(summary_table(result))
    click.echo(usage_text(result))


@main.command()
@click.argument("data", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-m",
    "--metric",
    "metric_names",
    multiple=True,
    metavar="METRIC",
    help="Metric to run (repeat, or comma-separate). Default: every metric the data "
    "and the judge support.",
)
@click.option(
    "--judge",
    default="offline",
    show_default=True,
    help="'offline' (embedded, no key) or 'openai/MODEL' (any OpenAI-compatible server).",
)
@click.option("--base-url", default=None, help="OpenAI-compatible server URL (or OPENAI_BASE_URL).")
@click.option(
    "--api-key",
    default=None,
    help="API key (or OPENAI_API_KEY); never written to a file or printed.",
)
@FORMAT_OPTION
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Results JSONL (default: ./<data name>.results.jsonl). Re-running resumes it.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the HTML report here.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=16,
    show_default=True,
    help="Concurrent judge requests per endpoint.",
)
@click.option("--no-cache", is_flag=True, help="Do not use the judge answer cache.")
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    metavar="METRIC=X",
    help="Pass mark of a metric (repeatable).",
)
@click.option(
    "--fail-under",
    "fail_under",
    multiple=True,
    metavar="METRIC=X",
    help="Exit with code 3 when METRIC's mean is below X or nothing was scored.",
)
@click.option("--overwrite", is_flag=True, help="Start the results file again instead of resuming.")
def run(
    data: Path,
    metric_names: tuple[str, ...],
    judge: str,
    base_url: str | None,
    api_key: str | None,
    layout: str,
    output: Path | None,
    report_path: Path | None,
    concurrency: int,
    no_cache: bool,
    thresholds: tuple[str, ...],
    fail_under: tuple[str, ...],
    overwrite: bool,
) -> None:
    """Score every conversation of DATA and write one results row per record.

    Exit codes: 0 done; 2 invalid data, missing fields, unusable options or a results file made
    for other data or metrics (nothing is scored); 3 a --fail-under gate failed.
    """
    from convoeval.io import DataError, DataFileError, read_records
    from convoeval.runner import OfflineJudgeError, ResultsFileError, evaluate, select_metrics
    from convoeval.runner.inputs import RequiredFieldsError
    from convoeval.runner.plan import build_metrics, is_offline

    limits = _pairs(thresholds, "--threshold")
    gates = _pairs(fail_under, "--fail-under")
    names = [n.strip() for item in metric_names for n in item.split(",") if n.strip()]
    if is_offline(judge) and (base_url or api_key):
        click.echo(
            "note: --base-url and --api-key are used only by an openai/MODEL judge", err=True
        )
    try:
        if not names:
            records = (r.sample if r.ok else None for r in read_records(data, format=layout))
            names, skipped = select_metrics(records, offline=is_offline(judge))
            for name, why in skipped.items():
                click.echo(f"skipping {name}: {why}", err=True)
            if not names:
                _fail(["error: no metric can run on this data with this judge (see above)"])
            click.echo(f"metrics: {', '.join(names)}", err=True)
        unknown = sorted((set(limits) | set(gates)) - set(names))
        if unknown:
            _fail([f"error: --threshold/--fail-under name metrics not in this run: {unknown}"])
        metrics = build_metrics(names, limits)
        target = output or Path(f"{data.name.split('.')[0] or 'data'}.results.jsonl")
        result = evaluate(
            data,
            metrics,
            judge,
            max_concurrency=concurrency,
            cache=not no_cache,
            output=target,
            overwrite=overwrite,
            format=layout,
            base_url=base_url,
            api_key=api_key,
        )
    except RequiredFieldsError as exc:
        _fail(["error: records lack fields the metrics need (nothing was scored):", *exc.problems])
        return
    except DataFileError as exc:
        _fail([f"error: {exc}"])
        return
    except DataError as exc:
        _fail([*exc.problems, "error: invalid data, nothing was scored"])
        return
    except (OfflineJudgeError, ResultsFileError, ValueError, TypeError) as exc:
        _fail([f"error: {exc}"])
        return
    except KeyboardInterrupt:
        click.echo("interrupted: run the same command again to resume", err=True)
        sys.exit(130)
    _print_summary(result)
    click.echo(f"results: {target} ({len(result)} rows)")
    if report_path is not None:
        from convoeval.report import write_report

        write_report(result, report_path)
        click.echo(f"report: {report_path}")
    summary = result.summary()
    failed = [
        f"fail-under: {name} mean "
        + (
            "n/a (nothing scored)"
            if summary[name]["mean"] is None
            else f"{summary[name]['mean']:.4f} < {limit:g}"
        )
        for name, limit in gates.items()
        if summary[name]["mean"] is None or summary[name]["mean"] < limit
    ]
    if failed:
        _fail(failed, EXIT_FAIL_UNDER)


@main.command()
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="HTML file to write (default: RESULTS with .html).",
)
def report(results: Path, output: Path | None) -> None:
    """Render the HTML report of a saved results file (it reads the rows and the sidecar meta)."""
    from convoeval.report import write_report
    from convoeval.runner import EvaluationResult, ResultsFileError

    try:
        result = EvaluationResult.from_file(results)
    except (OSError, ResultsFileError) as exc:
        _fail([f"error: {exc}"])
        return
    target = output or results.with_suffix(".html")
    write_report(result, target)
    _print_summary(result)
    click.echo(f"report: {target}")


if __name__ == "__main__":  # pragma: no cover
    main()
