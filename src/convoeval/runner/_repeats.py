"""Repeated runs (`evaluate(..., repeat=N)`, `--repeat N`): every record scored N times with
fresh judge samples, one row per record holding the spread, and the statistics of the gates.

Layout (docs/repeats.md): a repeated run writes the ordinary results file, one row per record,
so resume, `--retry-failed`, `convoeval report` and `convoeval agree` read it as any other. Each
row's `scores` holds the mean over the repeats and `reasons` / `details` those of the first
repeat; `repeats` holds, per metric, every repeat's value and the record's spread (mean, min,
max, std) and pass rate. A pair that fails in any repeat is failed (its `errors` entry names the
repeat; `--retry-failed` scores its N repeats again, the answered ones from the judge cache).
A record is written once its N repeats are done, so an interrupted run resumes at the record.

The confidence interval of a metric's mean is a percentile bootstrap over the records' means
(`bootstrap_ci`, numpy, seeded): the same data always give the same interval.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Sequence

import numpy as np

from convoeval.judges.protocol.base import Judge, Usage
from convoeval.judges.ensembles.repeat import repeat_scope
from convoeval.metrics import Metric, MetricResult
from convoeval.runner._inputs import Item
from convoeval.runner._plan import UsageError
from convoeval.runner._schedule import build_row, score_pair
from convoeval.runner.rows import RepeatEntry, ResultRow

#: The ways a `--fail-under` limit is read (`--gate`, `EvaluationResult.gate`).
GATE_MODES = ("mean", "lower-bound", "pass-rate")
#: Bootstrap resamples and seed of a metric's confidence interval (documented).
RESAMPLES = 2000
SEED = 0
LEVEL = 0.95


def parse_gate(spec: str) -> tuple[str, float | None]:
    """`mean`, `lower-bound` or `pass-rate=P` (0 < P <= 1) as (mode, pass rate)."""
    mode, sep, rate = spec.strip().partition("=")
    if mode in ("mean", "lower-bound") and not sep:
        return mode, None
    if mode == "pass-rate" and sep:
        try:
            value = float(rate)
        except ValueError:
            value = -1.0
        if 0 < value <= 1:
            return mode, value
    raise UsageError(f"a gate is mean, lower-bound or pass-rate=P (0 < P <= 1), not {spec!r}")


def spread(values: Sequence[float | None], threshold: float | None) -> RepeatEntry:
    """A record's spread over its repeats (`values`, None for a failed or unscored repeat):
    mean, min, max and sample std of the scored ones, and the share of all repeats scoring at
    or above `threshold` (None without a threshold or when no repeat scored)."""
    scored = [v for v in values if v is not None]
    mean = sum(scored) / len(scored) if scored else None
    std = None
    if mean is not None and len(scored) > 1:
        std = math.sqrt(sum((v - mean) ** 2 for v in scored) / (len(scored) - 1))
    rate = None
    if threshold is not None and scored:
        rate = sum(1 for v in scored if v >= threshold) / len(values)
    return {
        "values": list(values),
        "mean": mean,
        "min": min(scored) if scored else None,
        "max": max(scored) if scored else None,
        "std": std,
        "pass_rate": rate,
    }


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


def bootstrap_ci(
    values: Iterable[float], *, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of `values` (None for no values): the
    `level` central share of the means of `resamples` resamples with replacement, drawn by
    `numpy.random.default_rng(seed)` (as `scipy.stats.bootstrap(..., method="percentile")`)."""
    data = np.fromiter(values, dtype=float)
    if data.size == 0:
        return None
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    chunk = max(1, 1_000_000 // data.size)  # bounded memory for many records
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, data.size, (stop - start, data.size))
        means[start:stop] = data[picks].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def row_repeats(row: ResultRow, metric: str) -> list[float | None]:
    """A row's values of `metric` over its repeats (one value for an unrepeated row), failed
    repeats as None; empty when the metric is unscored and not failed."""
    entry = (row.get("repeats") or {}).get(metric)
    values = list(entry["values"]) if entry is not None else [row["scores"].get(metric)]
    failed = metric in (row.get("errors") or {})
    if not failed and all(v is None for v in values):
        return []
    return values


class RepeatMeans:
    """Per metric and repeat, the mean over records of that repeat's values with failed ones
    counted as 0 (unscored records left out): the gate each repeat alone would have seen."""

    def __init__(self, metrics: Sequence[str]) -> None:
        self.sums: dict[str, list[float]] = {name: [] for name in metrics}
        self.counts: dict[str, list[int]] = {name: [] for name in metrics}

    def add_row(self, row: ResultRow) -> None:
        """Count one results row."""
        for name, sums in self.sums.items():
            counts = self.counts[name]
            for index, value in enumerate(row_repeats(row, name)):
                if index == len(sums):
                    sums.append(0.0)
                    counts.append(0)
                sums[index] += value or 0.0
                counts[index] += 1

    def means(self, metric: str) -> list[float]:
        """The per-repeat means of `metric`, in repeat order."""
        return [s / c for s, c in zip(self.sums[metric], self.counts[metric], strict=True)]
