"""Repeated runs (`evaluate(..., repeat=N)`, `--repeat N`): every record scored N times with
fresh judge samples, one row per record holding the spread, and the statistics of the gates.

Layout (docs/repeats.md): a repeated run writes the ordinary results file, one row per record,
so resume, `--retry-failed`, `convoeval report` and `convoeval agree` read it as any other. Each
row's `scores` holds the mean over the repeats and `reasons` / `details` those of the first
repeat; `repeats` holds, per metric, every repeat's value and the record's spread (mean, min,
max, std) and pass rate. A pair that fails in any repeat is failed (its `errors` entry names the
repeat; `--retry-failed` scores its N repeats again, the answered ones from the judge cache).
A record is written once its N repeats are done, so an interrupted run resumes at the record.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from convoeval.judges.ensembles.repeat import repeat_scope
from convoeval.judges.protocol.base import Judge, Usage
from convoeval.metrics import Metric, MetricResult
from convoeval.rows.row import ResultRow
from convoeval.runner._inputs import Item
from convoeval.runner._schedule import build_row, score_pair
from convoeval.stats.repeats import spread


#: The ways a `--fail-under` limit is read (`--gate`, `EvaluationResult.gate`).
def combine_repeats(results: Sequence[MetricResult]) -> MetricResult:
    """One metric's result over its repeats: the first failure (naming its repeat), else the
    mean of the scored repeats with the first repeat's reason and details; usage of all."""
    usage = Usage()
    for result in results:
        usage.add(result.usage)
    for number, result in enumerate(results, start=1):
        if result.error is not None:
            message = f"repeat {number} of {len(results)}: {result.error['message']}"
            return MetricResult.failure(result.error["type"], message, dict(result.details), usage)
    scored = [r.value for r in results if r.value is not None]
    first = results[0]
    if not scored:
        return MetricResult.unscored(first.reason or "not scored", dict(first.details), usage)
    return MetricResult(sum(scored) / len(scored), first.reason, dict(first.details), usage)


async def score_repeated(
    item: Item,
    metrics: Sequence[Metric],
    judges: Sequence[Judge | None],
    raise_exceptions: bool,
    previous: ResultRow | None = None,
    *,
    repeat: int,
) -> ResultRow:
    """Score a record `repeat` times with `metrics` (all repeats at once, each in its own
    `repeat_scope`) and build its row; with `previous`, only these metrics are re-scored."""

    async def one(index: int) -> list[MetricResult]:
        with repeat_scope(index):  # tasks started here inherit the repeat
            return list(
                await asyncio.gather(
                    *(
                        score_pair(metric, item.sample, judge, raise_exceptions)
                        for metric, judge in zip(metrics, judges, strict=True)
                    )
                )
            )

    runs = await asyncio.gather(*(one(index) for index in range(repeat)))
    per_metric = [[run[k] for run in runs] for k in range(len(metrics))]
    row = build_row(item, metrics, [combine_repeats(results) for results in per_metric], previous)
    entries = dict(previous.get("repeats") or {}) if previous is not None else {}
    for metric, results in zip(metrics, per_metric, strict=True):
        entries[metric.name] = spread([r.value for r in results], metric.threshold)
    row["repeats"] = entries
    return row
