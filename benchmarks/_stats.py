"""Statistics and plumbing for the agreement benchmark: ranks, AUROC, Spearman, a logistic fit,
grouped folds (rows that share a prompt, a dialogue or a model never straddle train and test),
reading JSON Lines, and the collected figures."""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Index = npt.NDArray[np.intp]
SEED = 20261130


def ranks(x: Sequence[float] | F64) -> F64:
    """1-based ranks with ties averaged."""
    arr = np.asarray(x, dtype=np.float64)
    order = np.argsort(arr, kind="mergesort")
    out = np.empty(len(arr), dtype=np.float64)
    sorted_vals = arr[order]
    i = 0
    while i < len(arr):
        j = i
        while j + 1 < len(arr) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
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
