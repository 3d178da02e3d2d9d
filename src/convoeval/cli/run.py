"""`convoeval run DATA`: score every conversation and write one results row per record."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, cast

import click

from convoeval._text import plural
from convoeval.cli.config import config_option, judge_specs
from convoeval.cli.options import (
    ENGINE_OPTIONS,
    FIELD_OPTION,
    FILE,
    FORMAT_OPTION,
    GATE_OPTION,
    JUDGE_OPTIONS,
    MESSAGES_FIELD_OPTION,
    PRICE_OPTION,
    REPEAT_OPTION,
    TRIALS_OPTION,
    Greedy,
    count_option,
    default_output,
    engine_options,
    flag_option,
    gate_mode,
    metric_option,
    output_option,
    pairs,
    parse_prices,
    reading_options,
    repeated_option,
    report_option,
    share_endpoint_limit,
)
from convoeval.cli.output import (
    EXIT_FAIL_UNDER,
    EXIT_FAILED,
    error_lines,
    exit_codes,
    fail,
    metric_list,
    print_notes,
    print_summary,
    trials_of,
)


@click.command()
@click.argument("data", type=FILE)
@config_option
@metric_option(
    "METRIC[:key=value,...]",
    "Metric to run, with constructor options (repeat, or comma-separate plain names), "
    "e.g. -m tool_call_accuracy:strict_order=false. Default: every metric the data and the "
    "judge support.",
)
@JUDGE_OPTIONS
@PRICE_OPTION
@FORMAT_OPTION
@MESSAGES_FIELD_OPTION
@FIELD_OPTION
@count_option("--limit", help="Score only the first N records.")
@flag_option(
    "--skip-invalid", help="Score the valid records; list the invalid ones (FILE:LINE) and go on."
)
@click.option(
    "--reference-topics",
    "reference_topics",
    cls=Greedy,
    multiple=True,
    metavar="T ...",
    help="Topics for every record that has none: several values up to the next option (so "
    "give DATA before it), or @FILE with one topic per line.",
)
@output_option("Results JSONL (default: ./<data name>.results.jsonl). Re-running resumes it.")
@report_option("Also write the HTML report here.")
@repeated_option(
    "--threshold", "thresholds", metavar="METRIC=X", help="Pass mark of a metric (repeatable)."
)
@repeated_option(
    "--fail-under",
    "fail_under",
    metavar="METRIC=X",
    help="Exit with code 3 when METRIC's mean (failed records counted as 0) is below X or "
    "nothing was scored; X is a finite number within METRIC's score range.",
)
@GATE_OPTION
@REPEAT_OPTION
@flag_option("--overwrite", help="Start the results file again instead of resuming.")
@flag_option(
    "--retry-failed", help="Re-score only the failed (record, metric) pairs of the results file."
)
@TRIALS_OPTION
@ENGINE_OPTIONS
@flag_option("-q", "--quiet", help="No progress lines or notes.")
def run(
    data: Path,
    metric_names: tuple[str, ...],
    judge: tuple[str, ...],
    base_url: str | None,
    api_key: str | None,
    timeout: float | None,
    retry_budget: float | None,
    reason_first: bool,
    judge_samples: int | None,
    output: Path | None,
    report_path: Path | None,
    concurrency: int | None,
    max_concurrency: int | None,
    no_cache: bool,
    batch: bool,
    prices: tuple[str, ...],
    thresholds: tuple[str, ...],
    fail_under: tuple[str, ...],
    gate_spec: str,
    repeat: int | None,
    overwrite: bool,
    retry_failed: bool,
    trials: str | None,
    engine: str,
    ray_address: str | None,
    ray_workers: int | None,
    ray_block_size: int | None,
    quiet: bool,
    **reading: Any,
) -> None:
    """Score every conversation of DATA and write one results row per record.

    Exit codes: 0 done; 2 unusable data or options (a --threshold or --fail-under limit that
    is not a finite number within its metric's score range too), an unreachable judge, or a
    results file made by another run (nothing is scored); 3 a --fail-under gate failed; 4 some
    (record, metric) pairs failed (the judge gave up: retry them with --retry-failed); 5 the
    judge refused the credentials (401/403: the run stopped at the first refusal, the rows
    written are kept); 6 a bug (an exception that is not a judge or data error) stopped the
    run: its traceback is shown and the rows written so far are kept (run again to resume);
    130 interrupted, or a Ray run that lost every worker (the rows written are kept: run again
    to resume).
    """
    from convoeval.errors import ConvoevalError, one_spelling
    from convoeval.judges import resolve_judge
    from convoeval.runner import evaluate
    from convoeval.runner._lock import check_writable
    from convoeval.runner._plan import build_metrics, check_gates, metric_ranges
    from convoeval.stats.trials import parse_trials_option

    limits = pairs(thresholds, "--threshold")
    given_prices = parse_prices(prices)
    gates = pairs(fail_under, "--fail-under")
    mode, pass_rate = gate_mode(gate_spec)
    target = output or default_output(data)
    offline = all(one.strip().lower() == "offline" for one in judge)
    if offline and (base_url or api_key) and not quiet:
        click.echo(
            "note: --base-url and --api-key are used only by an openai/MODEL judge", err=True
        )
    if offline and (judge_samples or 1) > 1 and not quiet:
        click.echo("note: --judge-samples is used only by an LLM judge", err=True)
    if offline and (repeat or 1) > 1 and not quiet:
        click.echo("note: the offline judge is deterministic: its repeats agree", err=True)
    lost = functools.partial(_workers_lost, engine=engine)
    with exit_codes(target, [api_key, os.environ.get("OPENAI_API_KEY")], lost):
        spelled = {"--concurrency": concurrency, "--max-concurrency": max_concurrency}
        concurrency = cast(int | None, one_spelling(spelled))
        shared = {
            "base_url": base_url,
            "api_key": api_key,
            "cache": False if no_cache else None,
            "timeout": timeout,
            "retry_budget": retry_budget,
            "reason_first": reason_first or None,
            "judge_samples": judge_samples,
            "batch": batch or None,
        }
        members = judge_specs(judge, {**shared, "concurrency": concurrency})
        chosen = resolve_judge(members, **shared)
        if concurrency is not None:
            share_endpoint_limit(chosen, concurrency)
        if report_path is not None:
            check_writable(report_path, "report")
        if trials is not None:
            parse_trials_option(trials)
        names = metric_list(metric_names)
        if names:  # the gate limits are checked before scoring, as the thresholds are
            check_gates(gates, metric_ranges(build_metrics(names, limits)))
        result = evaluate(
            data,
            names or None,
            chosen,
            output=target,
            overwrite=overwrite,
            retry_failed=retry_failed,
            thresholds=limits,
            repeat=repeat,
            prices=given_prices,
            show_progress=not quiet,
            **reading_options(**reading),
            **engine_options(engine, ray_address, ray_workers, ray_block_size),
        )
        gate = result.gate(gates, mode, pass_rate)
    try:
        summary = trials_of(result, trials)
    except ConvoevalError as exc:
        fail(error_lines(exc))
    if not quiet:
        print_notes(result)
    print_summary(result, summary)
    ran = result.meta.get("engine")
    if ran:  # Ray: its start-up apart from the scoring time
        click.echo(
            f"engine {ran['name']}: {ran['workers']} {plural(ran['workers'], 'worker')}, "
            f"start-up {ran['startup_s']:.1f} s, scoring {ran['scoring_s']:.1f} s"
        )
    click.echo(f"results: {target} ({len(result)} {plural(len(result), 'row')})")
    if report_path is not None:
        from convoeval.report import write_report

        write_report(result, report_path, trials=summary)
        click.echo(f"report: {report_path}")
    failed = result.failed()
    if failed:
        noun = plural(failed, "pair")
        gate.append(
            f"failed: {failed} (record, metric) {noun} could not be scored (see the errors in "
            f"{target}); pass rates and --fail-under count them as not passing. Re-score only "
            "them by running the same command with --retry-failed"
        )
    if gate:
        fail(gate, EXIT_FAILED if failed else EXIT_FAIL_UNDER)


def _workers_lost(exc: Exception, engine: str) -> bool:
    """Whether `exc` is a Ray run's loss of every worker (resumable, exit 130); the Ray engine's
    module loads only for a Ray run."""
    if engine != "ray":
        return False
    from convoeval.engines.ray.engine import RayWorkersLost

    return isinstance(exc, RayWorkersLost)
