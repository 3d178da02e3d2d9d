"""A learned relevance head for offline_variants.py (tried, not shipped): ridge regression of
(O - X) / votes on [u*v, |u-v|] of reply and input vectors, optionally with each window's reply
swapped for one from another dialogue added as a breakdown; its strength chosen by Spearman on
inner folds grouped by dialogue, and its nested out-of-fold scores, so that a model stacked on it
is fitted without the rows it is scored on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from _stats import F64, SEED, Index, group_folds, spearman

#: L2 strengths tried (on standardised inputs); one is chosen per training set.
RIDGE_ALPHA = (1e2, 1e3, 1e4, 1e5)


def fit_ridge(x: F64, y: F64, alpha: float) -> tuple[F64, float]:
    """Ridge regression on standardised columns (intercept not penalised); the weights and bias
    are returned for the raw columns."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / std
    centre = float(y.mean())
    ws = np.linalg.solve(z.T @ z + alpha * np.eye(x.shape[1]), z.T @ (y - centre))
    w: F64 = ws / std
    return w, centre - float(w @ mean)


def _fit(x: F64, y: F64, rows: Index, alpha: float, negatives: F64 | None) -> tuple[F64, float]:
    """Fit on `rows`; with `negatives` (row r: input r with a reply from another dialogue), each
    row's swapped twin is added as a turn everyone rated a breakdown (target -1)."""
    if negatives is None:
        return fit_ridge(x[rows], y[rows], alpha)
    both = np.vstack([x[rows], negatives[rows]])
    return fit_ridge(both, np.r_[y[rows], -np.ones(len(rows))], alpha)


def choose_alpha(
    x: F64,
    y: F64,
    groups: Sequence[object],
    rows: Index,
    negatives: F64 | None = None,
    select: F64 | None = None,
) -> tuple[float, F64]:
    """The ridge strength with the best Spearman of inner out-of-fold scores on `rows` (folds by
    group) with `select` (default: `y`), and those scores."""

    def score(train: Index, test: Index, alpha: float) -> F64:
        w, b = _fit(x, y, train, alpha, negatives)
        out: F64 = x[test] @ w + b
        return out

    return choose_strength(RIDGE_ALPHA, score, groups, rows, y if select is None else select)


def choose_strength(
    grid: Sequence[float],
    score: Callable[[Index, Index, float], F64],
    groups: Sequence[object],
    rows: Index,
    target: F64,
) -> tuple[float, F64]:
    """The strength in `grid` whose inner out-of-fold scores on `rows` (folds by group) have the
    best Spearman with `target`, and those scores; `score(train, test, strength)` fits on the
    rows `train` and scores the rows `test`."""
    best: tuple[float, float, F64] = (-2.0, grid[0], np.zeros(len(rows)))
    inner_folds = group_folds([groups[r] for r in rows])
    for strength in grid:
        inner = np.zeros(len(rows))
        for test in inner_folds:
            inner[test] = score(
                rows[np.setdiff1d(np.arange(len(rows)), test)], rows[test], strength
            )
        rho = spearman(inner, target[rows])
        if rho > best[0]:
            best = (rho, strength, inner)
    return best[1], best[2]


def nested_head(
    x: F64,
    y: F64,
    groups: Sequence[object],
    rows: Index,
    negatives: F64 | None = None,
    select: F64 | None = None,
) -> tuple[F64, float, F64, float]:
    """Fit on `rows`: (weights, bias) at the chosen strength, the strength, and the inner
    out-of-fold scores of `rows` (what a model stacked on the head is fitted on)."""
    alpha, inner = choose_alpha(x, y, groups, rows, negatives, select)
    w, b = _fit(x, y, rows, alpha, negatives)
    return w, b, inner, alpha


def head_inputs(replies: F64, inputs: F64) -> F64:
    """[u*v, |u-v|] per row of unit vectors u (replies) and v (inputs)."""
    out: F64 = np.hstack([replies * inputs, np.abs(replies - inputs)])
    return out


def swap_partners(dialogues: Sequence[object], folds: Sequence[Index]) -> Index:
    """For each row, a seeded row of the same fold from another dialogue (whose reply, put in
    this row's window, is a clearly irrelevant reply)."""
    rng = np.random.default_rng(SEED)
    groups = np.array([str(g) for g in dialogues])
    partner = np.zeros(len(groups), dtype=np.intp)
    for fold in folds:
        for i in fold:
            others = fold[groups[fold] != groups[i]]
            partner[i] = others[rng.integers(len(others))]
    return partner
