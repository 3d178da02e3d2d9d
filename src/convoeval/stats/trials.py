"""pass^k and pass@k over repeated trials of the same tasks, from a results file.

Agents are run several times per task. Records carry a task id (a metadata field, e.g.
tau-bench's `task_id`) and a success criterion: a metric at or above a threshold, or a recorded
field such as tau-bench's `reward`. With n trials of a task and c successes, the unbiased
estimates are pass^k = C(c, k) / C(n, k) (all k trials succeed; tau-bench, Yao et al. 2024) and
pass@k = 1 - C(n - c, k) / C(n, k) (at least one succeeds; Chen et al. 2021), averaged over tasks,
for k = 1 .. the fewest trials any task has.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

from convoeval.errors import ConvoevalError
from convoeval.rows.files import RunLike, iter_rows, require_meta
from convoeval.rows.row import ResultRow

_SPEC = re.compile(r"^\s*([^:<>=\s]+)\s*(?::\s*([^<>=\s]+)\s*(?:>=\s*(\S+))?)?\s*$")


class TrialsError(ConvoevalError, ValueError):
    """A trials option that cannot be applied (bad spec, no task id, nothing to count)."""


@dataclass(frozen=True)
class TaskTrials:
    """One task: how many trials were counted and how many succeeded."""

    task: str
    trials: int
    successes: int


@dataclass(frozen=True)
class TrialsSummary:
    """pass^k and pass@k by k over the tasks, with what was counted and how."""

    task_field: str
    success: str
    tasks: tuple[TaskTrials, ...]
    pass_hat_k: dict[int, float]
    pass_at_k: dict[int, float]
    #: Records left out: no task id, or success could not be decided (unscored, field absent).
    skipped: int

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form (k keys as text)."""
        return {
            "task_field": self.task_field,
            "success": self.success,
            "tasks": len(self.tasks),
            "trials": sum(t.trials for t in self.tasks),
            "successes": sum(t.successes for t in self.tasks),
            "skipped": self.skipped,
            "pass_hat_k": {str(k): v for k, v in self.pass_hat_k.items()},
            "pass_at_k": {str(k): v for k, v in self.pass_at_k.items()},
        }

    def lines(self) -> list[str]:
        """Plain text for a summary: one line per k."""
        counted = sum(t.trials for t in self.tasks)
        head = (
            f"trials: {len(self.tasks)} tasks by {self.task_field}, {counted} trials, success = "
            f"{self.success}" + (f", {self.skipped} records skipped" if self.skipped else "")
        )
        rows = [
            f"  k={k}: pass^k {self.pass_hat_k[k]:.4f}  pass@k {self.pass_at_k[k]:.4f}"
            for k in self.pass_hat_k
        ]
        return [head, *rows]


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """The chance that k trials drawn without replacement from n all succeed: C(c,k)/C(n,k)."""
    _check(trials, successes, k)
    return comb(successes, k) / comb(trials, k)


def pass_at_k(trials: int, successes: int, k: int) -> float:
    """The chance that at least one of k trials drawn from n succeeds: 1 - C(n-c,k)/C(n,k)."""
    _check(trials, successes, k)
    return 1.0 - comb(trials - successes, k) / comb(trials, k)


def summarize_trials(
    tasks: Iterable[TaskTrials], task_field: str, success: str, skipped: int = 0
) -> TrialsSummary:
    """pass^k and pass@k for k = 1 .. the fewest trials of any task (mean over tasks)."""
    counted = tuple(tasks)
    if not counted:
        raise TrialsError(f"trials: no record has a task id in {task_field!r} and a success")
    ks = range(1, min(t.trials for t in counted) + 1)
    hat = {k: _mean(pass_hat_k(t.trials, t.successes, k) for t in counted) for k in ks}
    at = {k: _mean(pass_at_k(t.trials, t.successes, k) for t in counted) for k in ks}
    return TrialsSummary(task_field, success, counted, hat, at, skipped)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items)


def trials_summary(
    results: RunLike | str | os.PathLike[str],
    task_field: str,
    success: str | None = None,
) -> TrialsSummary:
    """pass^k / pass@k of an `EvaluationResult` or a results file path.

    `task_field`: the task id, a key of the sample's metadata (dotted for nested ones, e.g.
    `task_id`) or a sample field. `success`: a metric name (passes at its threshold in this run),
    `METRIC>=X`, or a recorded field (`reward`: true or a number >= 1 succeeds; `reward>=0.5`);
    None: the run's only metric with a threshold."""
    if isinstance(results, str | os.PathLike):
        meta, rows = require_meta(results), iter_rows(results)
    else:
        meta, rows = results.meta, results.rows()
    thresholds = {m["name"]: m.get("threshold") for m in meta.get("metrics", [])}
    test, described = _criterion(success, thresholds)
    return trials_from_rows(rows, task_field, test, described)


def trials_from_rows(
    rows: Iterable[ResultRow], task_field: str, test: Any, success: str
) -> TrialsSummary:
    """Count trials and successes per task over results rows (`test(row)`: True, False, None)."""
    counts: dict[str, list[int]] = {}
    skipped = 0
    for row in rows:
        sample = row.get("sample") or {}
        found, task = _lookup(sample.get("metadata") or {}, task_field)
        if not found:
            found, task = _lookup(sample, task_field)
        outcome = test(row) if found and task is not None else None
        if outcome is None:
            skipped += 1
            continue
        entry = counts.setdefault(str(task), [0, 0])
        entry[0] += 1
        entry[1] += bool(outcome)
    tasks = [TaskTrials(task, n, c) for task, (n, c) in counts.items()]
    return summarize_trials(tasks, task_field, success, skipped)


def parse_trials_option(text: str) -> tuple[str, str | None]:
    """`TASK_FIELD[:SUCCESS]` (the CLI's `--trials`), e.g. `task_id:reward` or
    `task_id:trajectory_match>=1`."""
    match = _SPEC.match(text)
    if not match:
        raise TrialsError(
            f"--trials {text!r}: expected TASK_FIELD[:SUCCESS], e.g. task_id:reward or "
            "task_id:trajectory_match>=1"
        )
    task, name, bar = match.groups()
    return task, (f"{name}>={bar}" if bar else name)


def _criterion(success: str | None, thresholds: Mapping[str, float | None]) -> tuple[Any, str]:
    if success is None:
        named = [n for n, t in thresholds.items() if t is not None]
        if len(named) != 1:
            raise TrialsError(
                "trials: say what success is (a metric, METRIC>=X or a recorded field such as "
                f"reward); this run has {len(named)} metrics with a threshold"
            )
        success = named[0]
    name, _, bar_text = success.partition(">=")
    name = name.strip()
    bar: float | None = None
    if bar_text:
        try:
            bar = float(bar_text)
        except ValueError:
            raise TrialsError(f"trials: {bar_text!r} in {success!r} is not a number") from None
    if name in thresholds:
        limit = bar if bar is not None else thresholds[name]
        if limit is None:
            raise TrialsError(f"trials: metric {name!r} has no threshold; give {name}>=X")
        return _metric_test(name, limit), f"{name} >= {limit:g}"
    field = name.removeprefix("metadata.")
    described = f"{field} >= {bar:g}" if bar is not None else f"{field} (true or >= 1)"
    return _field_test(field, bar), described


def _metric_test(name: str, limit: float) -> Any:
    def test(row: ResultRow) -> bool | None:
        if name in (row.get("errors") or {}):
            return False  # a failed record does not pass (as in the pass rate)
        value = row["scores"].get(name)
        return None if value is None else value >= limit

    return test


def _field_test(field: str, bar: float | None) -> Any:
    def test(row: ResultRow) -> bool | None:
        sample = row.get("sample") or {}
        found, value = _lookup(sample.get("metadata") or {}, field)
        if not found or value is None:
            return None
        if isinstance(value, bool):
            return value if bar is None else float(value) >= bar
        if isinstance(value, int | float):
            return value >= (1.0 if bar is None else bar)
        return None

    return test


def _lookup(data: Any, path: str) -> tuple[bool, Any]:
    for part in path.split("."):
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        else:
            return False, None
    return True, data


def _check(trials: int, successes: int, k: int) -> None:
    if not (0 <= successes <= trials and 1 <= k <= trials):
        raise ValueError(
            f"need 0 <= successes <= trials and 1 <= k <= trials, got {trials=}, {successes=}, {k=}"
        )
