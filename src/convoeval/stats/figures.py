"""The statistics of `convoeval agree`, in numpy only (scipy and scikit-learn stay test
dependencies, so a user's install stays light): agreement rate, Cohen's kappa, Spearman,
Pearson, mean absolute error, the confusion matrix and percentile bootstrap intervals.

The formulas follow scikit-learn (`cohen_kappa_score`, `confusion_matrix`) and scipy (`pearsonr`,
`spearmanr`, `bootstrap(method="percentile", paired=True)`), so the tests compare them digit for
digit; a statistic that is undefined (one class only, a constant series) is None, not NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
#: A statistic of (human labels, judge values) arrays: a float, or None when undefined.
Statistic = Callable[[F64, F64], float | None]


def agreement_rate(human: F64, judge: F64) -> float | None:
    """The share of items where the judge gave the label's value."""
    return float(np.mean(human == judge)) if human.size else None


def classes_of(human: F64, judge: F64) -> list[float]:
    """The sorted values seen on either side (the confusion matrix's rows and columns)."""
    return sorted({float(v) for v in np.concatenate([human, judge])})


def confusion(human: F64, judge: F64, classes: Sequence[float]) -> list[list[int]]:
    """Counts per (label, judge value): rows are the labels, columns the judge's values."""
    where = {value: i for i, value in enumerate(classes)}
    matrix = np.zeros((len(classes), len(classes)), dtype=np.int64)
    for h, j in zip(human.tolist(), judge.tolist(), strict=True):
        matrix[where[h], where[j]] += 1
    return [[int(c) for c in row] for row in matrix]


def cohen_kappa(human: F64, judge: F64) -> float | None:
    """Cohen's kappa over the values seen (binary or categorical), as scikit-learn computes it;
    None when chance agreement is total (both sides use one and the same class)."""
    if not human.size:
        return None
    cm = np.array(confusion(human, judge, classes_of(human, judge)), dtype=np.float64)
    expected = np.outer(cm.sum(axis=1), cm.sum(axis=0)) / cm.sum()
    weights = 1.0 - np.eye(len(cm))
    chance = float(np.sum(weights * expected))
    if chance == 0.0:
        return None
    return float(1.0 - np.sum(weights * cm) / chance)


def _ranks(values: F64) -> F64:
    """Ranks from 1, ties given their average rank (scipy's `rankdata` default)."""
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(average, ends - starts)
    return ranks


def _constant(values: F64) -> bool:
    return bool(values.size == 0 or np.all(values == values[0]))


def pearson(human: F64, judge: F64) -> float | None:
    """Pearson's r as scipy's `pearsonr` computes it; None under two items or a constant side."""
    if human.size < 2 or _constant(human) or _constant(judge):
        return None
    xm = human - human.mean()
    ym = judge - judge.mean()
    xmax = np.max(np.abs(xm))
    ymax = np.max(np.abs(ym))
    normx = xmax * np.linalg.norm(xm / xmax)
    normy = ymax * np.linalg.norm(ym / ymax)
    return float(np.clip(np.dot(xm / normx, ym / normy), -1.0, 1.0))


def spearman(human: F64, judge: F64) -> float | None:
    """Spearman's rho (Pearson over average ranks, as scipy's `spearmanr`); None when undefined."""
    if human.size < 2 or _constant(human) or _constant(judge):
        return None
    return float(np.corrcoef(_ranks(human), _ranks(judge))[1, 0])


def mean_absolute_error(human: F64, judge: F64) -> float | None:
    """The mean of |judge - label|."""
    return float(np.mean(np.abs(judge - human))) if human.size else None


def bootstrap(
    statistic: Statistic,
    human: F64,
    judge: F64,
    resamples: int,
    seed: int,
    level: float,
) -> tuple[float, float] | None:
    """The two-sided percentile bootstrap interval at `level` over paired resamples of the items
    (scipy's draw: `integers(0, n, (resamples, n))` from `default_rng(seed)`); resamples where
    the statistic is undefined are left out; None under two items or when none is defined."""
    n = human.size
    if n < 2 or resamples < 1:
        return None
    indices = np.random.default_rng(seed).integers(0, n, (resamples, n))
    values = [statistic(human[i], judge[i]) for i in indices]
    kept = np.array([v for v in values if v is not None], dtype=np.float64)
    if not kept.size:
        return None
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(kept, [alpha, 1.0 - alpha])
    return float(low), float(high)


#: The figures of a binary or categorical verdict kind, and those added for numeric scores.
CATEGORICAL: dict[str, Statistic] = {"agreement": agreement_rate, "kappa": cohen_kappa}
NUMERIC: dict[str, Statistic] = {
    "spearman": spearman,
    "pearson": pearson,
    "mae": mean_absolute_error,
}


def figures(
    human: F64,
    judge: F64,
    numeric: bool,
    categorical: bool,
    bootstrap_options: tuple[int, int, float],
) -> tuple[dict[str, float | None], dict[str, tuple[float, float] | None]]:
    """Each statistic that applies and its bootstrap interval ((resamples, seed, level); the
    same seeded draw for every statistic)."""
    chosen: dict[str, Statistic] = {}
    if categorical:
        chosen.update(CATEGORICAL)
    if numeric:
        chosen.update(NUMERIC)
    values: dict[str, Any] = {name: fn(human, judge) for name, fn in chosen.items()}
    intervals = {
        name: bootstrap(fn, human, judge, *bootstrap_options) for name, fn in chosen.items()
    }
    return values, intervals
