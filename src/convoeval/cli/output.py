"""What `convoeval run` and `report` print: exit codes, error lines, the summary, the notes."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from convoeval._text import plural

if TYPE_CHECKING:
    from convoeval.runner import EvaluationResult
    from convoeval.stats.trials import TrialsSummary

#: Exit codes (DESIGN §7, §8): 2 unusable input or options, 3 a --fail-under gate failed,
#: 4 some (record, metric) pairs failed, 5 the judge refused the credentials, 6 a bug stopped
#: the run, 130 interrupted.
EXIT_INPUT = 2
EXIT_FAIL_UNDER = 3
EXIT_FAILED = 4
EXIT_AUTH = 5
EXIT_BUG = 6
EXIT_INTERRUPTED = 130


def fail(lines: list[str], code: int = EXIT_INPUT) -> NoReturn:
    """Print `lines` on stderr, scrubbed of every judge key, and exit with `code`."""
    from convoeval.judges.protocol._redact import scrub

    for line in lines:
        click.echo(scrub(line), err=True)
    sys.exit(code)


def refused_lines(exc: Exception, results: object) -> list[str]:
    """What to print when the judge refused its credentials (exit 5): the server's message, and
    where the rows written before the refusal are."""
    return [
        f"error: {exc}",
        f"stopped at the first refusal: the rows written so far are kept in {results}; run the "
        "same command with a valid key to resume",
    ]


def bug_lines(results: Path, secrets: Iterable[str | None] = ()) -> list[str]:
    """What to print when a bug (an exception that is not a judge or data error) stopped a run:
    its traceback (credentials masked), then what was kept and what to do."""
    from convoeval.judges.protocol._redact import redact

    shown = redact(traceback.format_exc().rstrip(), [s for s in secrets if s])
    return [
        shown,
        f"error: a bug stopped the run (exit {EXIT_BUG}): the exception above is not a judge or "
        f"data error. The rows written so far are kept in {results}: run the same command "
        "again to resume once it is fixed, and please report it",
    ]


@contextmanager
def exit_codes(
    written: Path,
    secrets: Iterable[str | None] = (),
    interrupted: Callable[[Exception], bool] = lambda exc: False,
) -> Iterator[None]:
    """What stops a command that writes `written` (results or conversations), as its exit code
    (DESIGN §8): a refused key 5 (what was written is kept), a data, option or judge error 2 (or
    130 when `interrupted` says so, as for a Ray run that lost every worker), Ctrl-C 130, a bad
    option value click's own 2, and anything else, a bug, 6 with its traceback (`secrets`
    masked)."""
    from convoeval.errors import ConvoevalError
    from convoeval.judges import JudgeAuthError

    try:
        yield
    except JudgeAuthError as exc:
        fail(refused_lines(exc, written), EXIT_AUTH)
    except ConvoevalError as exc:
        fail(error_lines(exc), EXIT_INTERRUPTED if interrupted(exc) else EXIT_INPUT)
    except KeyboardInterrupt:
        fail(["interrupted: run the same command again to resume"], EXIT_INTERRUPTED)
    except click.ClickException:
        raise  # a bad option value (exit 2), said by click
    except Exception:  # a bug: its traceback and exit 6; what was written is kept (resumable)
        fail(bug_lines(written, secrets), EXIT_BUG)


def error_lines(exc: Exception) -> list[str]:
    """What to print for a ConvoevalError: every problem line of a data error, else its text."""
    from convoeval.io import DataError, DataFileError
    from convoeval.runner import NothingToScoreError, RequiredFieldsError

    if isinstance(exc, RequiredFieldsError):
        return ["error: records lack fields the metrics need (nothing was scored):", *exc.problems]
    if isinstance(exc, NothingToScoreError):
        return [*exc.problems[:-1], f"error: {exc.problems[-1]}"]
    if isinstance(exc, DataError) and not isinstance(exc, DataFileError):
        return [*exc.problems, "error: invalid data, nothing was scored"]
    return [f"error: {exc}"]


def print_summary(result: EvaluationResult, trials: TrialsSummary | None = None) -> None:
    from rich.console import Console  # rich loads only when a table is printed

    from convoeval.report import summary_table, usage_text

    console = Console(width=max(100, Console().width))
    console.print(summary_table(result))
    click.echo(usage_text(result))
    from convoeval.stats.panels import agreement_lines

    for line in agreement_lines(result.panel_agreement()):
        click.echo(line)
    for line in trials.lines() if trials is not None else []:
        click.echo(line)


def trials_of(result: EvaluationResult, option: str | None) -> TrialsSummary | None:
    """pass^k / pass@k for `--trials TASK_FIELD[:SUCCESS]`; None without the option."""
    if option is None:
        return None
    from convoeval.stats.trials import parse_trials_option, trials_summary

    return trials_summary(result, *parse_trials_option(option))


def print_notes(result: EvaluationResult) -> None:
    """Which metrics ran (when chosen from the data) and which records were skipped as invalid."""
    meta = result.meta
    by_reason: dict[str, list[str]] = {}
    for name, why in meta.get("skipped_metrics", {}).items():
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():  # one line per reason, not per metric
        if len(names) == 1:
            click.echo(f"skipping {names[0]}: {why}", err=True)
        else:
            click.echo(f"skipping {len(names)} metrics, each {why}: {', '.join(names)}", err=True)
    partial: dict[str, list[str]] = {}
    for name, why in meta.get("partial_metrics", {}).items():
        partial.setdefault(why, []).append(name)
    for why, names in partial.items():
        click.echo(
            f"scoring {', '.join(names)} on the records that set "
            f"{'its' if len(names) == 1 else 'their'} fields: {why}",
            err=True,
        )
    if meta.get("skipped_metrics") or partial:
        click.echo(f"metrics: {', '.join(result.metric_names)}", err=True)
    invalid = meta.get("invalid", [])
    if invalid:
        click.echo(f"skipped {len(invalid)} invalid {plural(len(invalid), 'record')}:", err=True)
        for line in invalid:
            click.echo(f"  {line}", err=True)


def split_metrics(item: str) -> list[str]:
    """`-m a,b` is two metrics; `-m a:x=1,y=2` is one metric with two options."""
    return [item] if ":" in item else item.split(",")


def metric_list(items: tuple[str, ...]) -> list[str]:
    """Every metric named by the repeated `-m` option, blanks dropped (`split_metrics`)."""
    return [name.strip() for item in items for name in split_metrics(item) if name.strip()]


#: `compare --fail-if-worse` failed: the code of a failed gate, as `run --fail-under`'s.
EXIT_WORSE = EXIT_FAIL_UNDER
