"""The statistics of repeated runs (docs/repeats.md): a record's spread over its repeats, the
gates (`mean`, `lower-bound`, `pass-rate=P`), per-repeat means, and the percentile bootstrap
interval of a metric's mean (`bootstrap_ci`, numpy, seeded: the same data always give the same
interval). The runner's `_repeats.py` scores the repeats; this module only reads numbers and rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from convoeval.errors import UsageError
from convoeval.rows.row import RepeatEntry, ResultRow

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


def bootstrap_ci(
    values: Iterable[float], *, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float] | None:
    """The percentile bootstrap interval of the mean of `values` (None for no values): the
    `level` central share of the means of `resamples` resamples with replacement, drawn by
    `numpy.random.default_rng(seed)` (as `scipy.stats.bootstrap(..., method="percentile")`)."""
    import numpy as np  # loaded by the first interval, not with the runner (issue 35)

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
