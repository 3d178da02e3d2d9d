"""Statistics and plumbing for the agreement benchmark: ranks, AUROC, Spearman, a logistic fit,
grouped folds (rows that share a prompt, a dialogue or a model never straddle train and test),
a grouped bootstrap interval, reading JSON Lines, and the collected figures."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Index = npt.NDArray[np.intp]
SEED = 20261130
#: Resamples of a bootstrap interval, and its two-sided level.
RESAMPLES = 2000
LEVEL = 0.95


def ranks(x: Sequence[float] | F64) -> F64:
    """1-based ranks with ties averaged."""
    arr = np.asarray(x, dtype=np.float64)
    order = np.argsort(arr, kind="mergesort")
    sorted_vals = arr[order]
    starts = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1]])
    ends = np.r_[starts[1:], len(arr)]
    out = np.empty(len(arr), dtype=np.float64)
    out[order] = np.repeat((starts + ends - 1) / 2.0 + 1.0, ends - starts)
    return out


def auroc(scores: Sequence[float] | F64, labels: Sequence[bool] | Bools) -> float:
    """Area under the ROC curve (Mann-Whitney U over averaged ranks)."""
    y = np.asarray(labels, dtype=bool)
    r = ranks(scores)
    npos = int(y.sum())
    nneg = len(y) - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    return float((r[y].sum() - npos * (npos + 1) / 2.0) / (npos * nneg))


def spearman(a: Sequence[float] | F64, b: Sequence[float] | F64) -> float:
    """Spearman rank correlation (Pearson on averaged ranks)."""
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def balanced_accuracy(pred: Bools, y: Bools) -> float:
    """Mean of the recall on positives and the recall on negatives."""
    return float(0.5 * (pred[y].mean() + (~pred[~y]).mean()))


def fit_logistic(x: F64, y: F64, l2: float = 1e-3, iters: int = 50) -> tuple[F64, float]:
    """L2-regularised logistic regression by Newton steps (a handful of features only)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.r_[np.full(d, l2), 0.0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) / n + reg * w
        hess = (xb.T * (p * (1 - p))) @ xb / n + np.diag(reg) + 1e-9 * np.eye(d + 1)
        w = w - np.linalg.solve(hess, grad)
    return w[:-1], float(w[-1])


def fit_standardised(x: F64, y: F64, fit_on: Bools | None = None) -> tuple[F64, float]:
    """`fit_logistic` on `x` standardised by its rows' mean and spread (so the L2 penalty treats
    the features alike), fitted on the rows `fit_on` (default all) against `y`; the weights and
    bias are returned for the raw features."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    rows = x if fit_on is None else x[fit_on]
    ws, b = fit_logistic((rows - mean) / std, y)
    return ws / std, float(b - (ws * mean / std).sum())


def sigmoid(z: F64) -> F64:
    """The logistic function."""
    out: F64 = 1.0 / (1.0 + np.exp(-z))
    return out


def best_threshold(scores: F64, y: Bools) -> float:
    """The cut-off in `scores` with the best accuracy (midpoint between neighbours)."""
    vals = np.unique(scores)
    cuts = np.r_[vals[0] - 1e-6, (vals[:-1] + vals[1:]) / 2.0, vals[-1] + 1e-6]
    accs = [float(((scores >= c) == y).mean()) for c in cuts]
    return float(cuts[int(np.argmax(accs))])


def best_threshold_each_group_alike(scores: F64, y: Bools, groups: npt.NDArray[Any]) -> float:
    """The cut-off in `scores` with the best mean over `groups` of the accuracy within each group,
    so that a small group counts as much as a large one (a new corpus is one more group)."""
    vals = np.unique(scores)
    cuts = np.r_[vals[0] - 1e-6, (vals[:-1] + vals[1:]) / 2.0, vals[-1] + 1e-6]
    right = (scores[None, :] >= cuts[:, None]) == y[None, :]
    names = np.unique(groups)
    mean = np.mean([right[:, groups == g].mean(axis=1) for g in names], axis=0)
    return float(cuts[int(np.argmax(mean))])


def group_folds(groups: Sequence[Hashable], k: int = 5) -> list[Index]:
    """k test folds of row indices; all rows of one group land in the same fold (seeded)."""
    names = sorted({str(g) for g in groups})
    order = np.random.default_rng(SEED).permutation(len(names))
    fold_of = {names[j]: i % k for i, j in enumerate(order)}
    assigned = np.array([fold_of[str(g)] for g in groups])
    return [np.flatnonzero(assigned == f) for f in range(k)]


def model_out_splits(
    models: npt.NDArray[Any], folds: Sequence[Index]
) -> Iterator[tuple[Index, Index]]:
    """Leave one model out with rows grouped by `folds` too: per model and fold, (train, test)
    = the other models' rows outside the fold, that model's rows inside it (empty pairs skipped)."""
    for model in sorted(set(models)):
        for fold in folds:
            in_fold = np.zeros(len(models), dtype=bool)
            in_fold[fold] = True
            train = np.flatnonzero((models != model) & ~in_fold)
            test = np.flatnonzero((models == model) & in_fold)
            if len(train) and len(test):
                yield train, test


def grouped_bootstrap(
    statistic: Callable[[Index], float],
    groups: Sequence[Hashable] | npt.NDArray[Any],
    strata: Sequence[Hashable] | npt.NDArray[Any] | None = None,
    resamples: int | None = None,
    seed: int = SEED,
) -> tuple[float, float]:
    """The percentile bootstrap interval at LEVEL of `statistic(rows)`, `rows` an index array made
    by drawing as many groups as there are, with replacement, and taking all rows of each drawn
    group together; with `strata` (constant within a group) each stratum's groups are drawn apart,
    so every stratum keeps its number of groups. Resamples where the statistic is NaN are left
    out. One row per group and no strata is scipy.stats.bootstrap's draw and percentile method.
    `resamples` defaults to the module's RESAMPLES, read at each call."""
    resamples = RESAMPLES if resamples is None else resamples
    names, group_of = np.unique(np.asarray(groups), return_inverse=True)
    order = np.argsort(group_of, kind="stable")  # rows of group g: order[first[g]:first[g]+size[g]]
    size = np.bincount(group_of, minlength=len(names))
    first = np.cumsum(size) - size
    stratum = np.zeros(len(names), dtype=np.intp)
    if strata is not None:
        _, codes = np.unique(np.asarray(strata), return_inverse=True)
        stratum[group_of] = codes
        if (stratum[group_of] != codes).any():
            raise ValueError("grouped_bootstrap: a group spans two strata")
    rng = np.random.default_rng(seed)
    picks = np.hstack(
        [
            members[rng.integers(0, len(members), (resamples, len(members)))]
            for members in (np.flatnonzero(stratum == s) for s in np.unique(stratum))
        ]
    )
    values = np.empty(resamples)
    for r, picked in enumerate(picks):
        counts = size[picked]
        offset = np.repeat(first[picked] - (np.cumsum(counts) - counts), counts)
        values[r] = statistic(order[np.arange(counts.sum()) + offset])
    values = values[~np.isnan(values)]
    if not values.size:
        return float("nan"), float("nan")
    tail = (1.0 - LEVEL) / 2.0 * 100.0
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclass
class Figures:
    """Collected `name: value` figures and fitted constants, in the order they were made."""

    values: dict[str, float | int | str]
    constants: dict[str, Any]

    def put(self, name: str, value: float | int | str) -> None:
        self.values[name] = value

    def put_interval(self, name: str, interval: tuple[float, float]) -> None:
        """The 95% interval of figure `name` as its own figure `name.ci95: low-high`, placed
        right after that figure."""
        items = list(self.values.items())
        at = next((k + 1 for k, (key, _) in enumerate(items) if key == name), len(items))
        items.insert(at, (f"{name}.ci95", f"{interval[0]:.3f}-{interval[1]:.3f}"))
        self.values.clear()
        self.values.update(items)
