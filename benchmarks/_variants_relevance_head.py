"""Relevance variants for offline_variants.py (part `relevance_head`): a learned linear head over
the reply and input vectors (alone, or stacked as a 12th feature into the shipped model), the
cosine features on all-but-the-top vectors, and a swapped-reply check of each.

Heads, each over [u*v, |u-v|] of reply u and input v (and the same of u and the window mean): L2
logistic on the majority turns; ridge on (O - X) / votes of every voted turn; "ridge + swaps",
the same with each training window's reply swapped for another dialogue's added as a breakdown
(-1); "swaps only", true reply (1) against swapped (-1) with no human label fitted (the labels
only choose the strength).

Everything is out of fold with DBDC3's folds grouped by dialogue, as in `_agreement_dbdc3.py`. The
head's regularisation strength is chosen by Spearman on inner folds (grouped by dialogue) of the
training folds; its stacked weight is fitted on the inner out-of-fold head scores of the training
rows, so no held-out row is ever used. All-but-the-top removes the mean and the top k principal
directions estimated on CLINC150 texts and XSTest prompts and replies, never on DBDC3.

The swap check: each DBDC3 window also gets a reply taken from another dialogue of the same test
fold (so neither it nor its context was seen in training), a clear irrelevant reply; the figure is
how often the true reply scores above it (ties count half), over all voted turns, the turns most
annotators rated fine, those rated a breakdown, and fine turns whose swapped reply was itself
rated fine in its own dialogue (about 70 pairs). "examples" fits each model on every dev turn and
reads the bundled examples' 17 relevancy verdicts, the two verdicts of the unit tests in
tests/judges/offline and whether the history raises a follow-up's score there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _agreement_dbdc3 import dbdc3_windows
from _relevance_head import choose_strength, head_inputs, nested_head, swap_partners
from _stats import (
    F64,
    Index,
    auroc,
    best_threshold,
    fit_standardised,
    group_folds,
    read_jsonl,
    spearman,
)
from _variants_scope_post import apply_post, fit_post
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from convoeval.judges.offline.relevance import Window, context_parts
from convoeval.judges.offline.relevance_features import relevance_features

Embed = Callable[[Sequence[str]], Any]
#: Inverse L2 strengths for the logistic head (inputs standardised), one chosen per training set
#: on its inner folds (the ridge head's are `_relevance_head.RIDGE_ALPHA`).
LOGISTIC_C = (1e-4, 1e-3, 1e-2, 1e-1)


class _Data:
    """The DBDC3 windows, their labels, folds, swapped twins and vectors."""

    def __init__(self, dbdc3_path: Path) -> None:
        items = dbdc3_windows(read_jsonl(dbdc3_path))
        self.windows = [item[0] for item in items]
        self.n = len(items)
        o, x, total = (np.array([item[i] for item in items]) for i in (1, 2, 3))
        self.majority = (o * 2 > total) | (x * 2 > total)
        self.relevant = o * 2 > total
        self.target = (o - x) / np.maximum(total, 1)
        self.dialogue = np.array([item[4] for item in items])
        self.folds = group_folds(self.dialogue.tolist())
        self.swap = swap_partners(self.dialogue.tolist(), self.folds)
        swapped = [
            Window.of(w.history, w.user, self.windows[j].reply)
            for w, j in zip(self.windows, self.swap, strict=True)
        ]
        #: The real windows, then their swapped twins (rows n + i).
        self.all = self.windows + swapped


def pairs(windows: Sequence[Window], embed: Embed, with_window: bool) -> F64:
    """[u*v, |u-v|] of reply u and input v (and of u and the window mean w) per window."""
    u = embed([w.reply for w in windows]).astype(np.float64)
    v = embed([w.user for w in windows]).astype(np.float64)
    if not with_window:
        return head_inputs(u, v)
    means = np.stack([embed(context_parts(w)).mean(axis=0) for w in windows])
    means /= np.clip(np.linalg.norm(means, axis=1, keepdims=True), 1e-12, None)
    return np.hstack([head_inputs(u, v), head_inputs(u, means)])


def _head(kind: str, x: F64, d: _Data, idx: Index) -> tuple[Callable[[F64], F64], float, F64]:
    """Fit a head on training rows `idx` (strength chosen on their inner folds): its scoring
    function, the strength, and the inner out-of-fold scores of `idx`."""
    if kind != "logistic":
        negatives = x[d.n :] if "swaps" in kind else None
        # "swaps only": no human label is fitted, only true reply (1) against swapped (-1);
        # the labels choose the strength.
        y = np.ones(d.n) if kind == "swaps only" else d.target
        w, b, inner, alpha = nested_head(x[: d.n], y, d.dialogue.tolist(), idx, negatives, d.target)
        return (lambda rows: rows @ w + b), alpha, inner
    c, inner = choose_strength(
        LOGISTIC_C,
        lambda train, test, c: _logistic(x, d, train, c).decision_function(x[test]),
        d.dialogue.tolist(),
        idx,
        d.target,
    )
    return _logistic(x, d, idx, c).decision_function, c, inner


def _logistic(x: F64, d: _Data, idx: Index, c: float) -> Any:
    """L2 logistic on standardised inputs, fitted to the majority turns among `idx`."""
    sel = idx[d.majority[idx]]
    model = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000))
    return model.fit(x[sel], d.relevant[sel])


def _twin(idx: Index, d: _Data) -> Index:
    """Rows of `idx` followed by their swapped twins."""
    out: Index = np.r_[idx, idx + d.n]
    return out


def _report(label: str, score: F64, cut: float | None, d: _Data, examples_right: str) -> None:
    """One line: Spearman / agreement / AUROC out of fold; swap check; bundled examples."""
    real, twin = score[: d.n], score[d.n :]
    wins = (real > twin) + 0.5 * (real == twin)
    fine = d.relevant & d.majority
    broken = d.majority & ~d.relevant
    both = fine & fine[d.swap]
    print(
        f"  {label}: {spearman(real, d.target):.3f} / "
        + (f"{((real >= cut) == d.relevant)[d.majority].mean():.3f}" if cut is not None else "-")
        + " / "
        f"{auroc(real[d.majority], d.relevant[d.majority]):.3f}; "
        f"swap {wins.mean():.3f} (fine {wins[fine].mean():.3f}, breakdown "
        f"{wins[broken].mean():.3f}, fine for fine {wins[both].mean():.3f}); "
        f"examples {examples_right}"
    )


#: The relevance windows of tests/judges/offline (test_offline_relevance_features.py's off-topic
#: and on-topic replies, test_offline_kit.py's follow-up with and without its history), appended
#: to the bundled examples' windows.
_QUESTION = "How long is the warranty on the Volt Pro laptop?"
_FOLLOW_UP = "That model costs about 1,200 dollars and has 16 GB of memory."
UNIT_TEST_WINDOWS = (
    Window.of([], _QUESTION, "Standard shipping takes 3 to 5 business days."),
    Window.of([], _QUESTION, "The Volt Pro comes with a two-year warranty on hardware faults."),
    Window.of(
        [("Can you recommend a laptop for programming?", "A 14-inch model with 16 GB RAM.")],
        "How much is it?",
        _FOLLOW_UP,
    ),
    Window.of([], "How much is it?", _FOLLOW_UP),
)


def _kept(score: F64, expected: np.ndarray) -> str:
    """How many of the examples keep their verdict (score >= 0 is relevant), how many of the
    unit tests' two verdicts hold, and whether the history raises the follow-up's score."""
    n = len(expected)
    right = (score[:n] >= 0) == expected
    tests = int(score[n] < 0) + int(score[n + 1] >= 0)
    helps = "helps" if score[n + 2] > score[n + 3] else "hurts"
    return f"{right.sum()}/{n}, unit tests {tests}/2, context {helps}"


def _features_model(feats: F64, ex_feats: F64, expected: np.ndarray, d: _Data) -> tuple[F64, str]:
    """The shipped feature model on `feats` (rows self.all) out of fold; examples kept."""
    score = np.zeros(2 * d.n)
    for test in d.folds:
        train = np.setdiff1d(np.arange(d.n), test)
        w, b, cut = _fit_stacked(feats[train], d, train)
        score[_twin(test, d)] = feats[_twin(test, d)] @ w + b - cut
    w, b, cut = _fit_stacked(feats[: d.n], d, np.arange(d.n))
    return score, _kept(ex_feats @ w + b - cut, expected)


def _head_variants(
    kind: str, x: F64, ex_x: F64, feats: F64, ex_feats: F64, expected: np.ndarray, d: _Data
) -> tuple[tuple[F64, float, str], tuple[F64, str], list[float]]:
    """The head alone and stacked into the feature model, out of fold (nested)."""
    alone, stacked, chosen = np.zeros(2 * d.n), np.zeros(2 * d.n), []
    cuts = []
    for test in d.folds:
        train = np.setdiff1d(np.arange(d.n), test)
        score, param, inner = _head(kind, x, d, train)
        chosen.append(param)
        rows = _twin(test, d)
        head = score(x[rows])
        cut = best_threshold(inner[d.majority[train]], d.relevant[train][d.majority[train]])
        alone[rows] = head - cut
        cuts.append(cut)
        w, b, fcut = _fit_stacked(np.column_stack([feats[train], inner]), d, train)
        stacked[rows] = np.column_stack([feats[rows], head]) @ w + b - fcut
    # Fitted on every dev turn, applied to the bundled examples.
    everyone = np.arange(d.n)
    score, param, inner = _head(kind, x, d, everyone)
    ex_head = score(ex_x)
    cut = best_threshold(inner[d.majority], d.relevant[d.majority])
    alone_right = _kept(ex_head - cut, expected)
    w, b, fcut = _fit_stacked(np.column_stack([feats[: d.n], inner]), d, everyone)
    stacked_right = _kept(np.column_stack([ex_feats, ex_head]) @ w + b - fcut, expected)
    return (
        (alone, 0.0, alone_right),
        (stacked, stacked_right),
        [*chosen, param],
    )


def _fit_stacked(cols: F64, d: _Data, rows: Index) -> tuple[F64, float, float]:
    """The shipped model's fit on `cols`, whose row r holds the features of DBDC3 turn rows[r]:
    logistic on standardised features of the majority turns, threshold with the best agreement."""
    sel = d.majority[rows]
    relevant = d.relevant[rows]
    w, b = fit_standardised(cols, relevant[sel].astype(np.float64), sel)
    return w, b, best_threshold(cols[sel] @ w + b, relevant[sel])


def abtt(embed: Embed, background: F64, k: int) -> Embed:
    """`embed` with the mean and the top `k` principal directions of `background` removed,
    re-normalised (all-but-the-top)."""
    mean, top = fit_post(background, k)
    return lambda texts: apply_post(embed(texts).astype(np.float64), mean, top)


def background_texts(clinc_path: Path, xstest_path: Path) -> list[str]:
    """Texts that are not DBDC3: CLINC150 requests, XSTest prompts and replies."""
    clinc = [r["text"] for r in read_jsonl(clinc_path)]
    xs = read_jsonl(xstest_path)
    prompts = list(dict.fromkeys(r["user"] for r in xs))
    return clinc + prompts + [r["assistant"] for r in xs]


def relevance_head_variants(
    embed: Embed,
    dbdc3_path: Path,
    clinc_path: Path,
    xstest_path: Path,
    examples: list[Window],
    expected: np.ndarray,
) -> None:
    """Print every variant: Spearman / agreement / AUROC out of fold, swap check, examples."""
    d = _Data(dbdc3_path)
    examples = [*examples, *UNIT_TEST_WINDOWS]
    feats = relevance_features(d.all, embed)
    ex_feats = relevance_features(examples, embed)
    fine = d.relevant & d.majority
    print(
        "relevance head / all-but-the-top: Spearman / agreement / AUROC out of fold; "
        f"swap check (turns: all {d.n}, fine {fine.sum()}, breakdown "
        f"{(d.majority & ~d.relevant).sum()}, fine for fine {(fine & fine[d.swap]).sum()}); "
        "examples kept"
    )
    shipped, right = _features_model(feats, ex_feats, expected, d)
    _report("shipped (11 features)", shipped, 0.0, d, right)
    cosine = feats[:, 0]
    _report("plain cosine of reply and input (no fit)", cosine, None, d, "-")
    for with_window in (False, True):
        x, ex_x = pairs(d.all, embed, with_window), pairs(examples, embed, with_window)
        name = "[u*v, |u-v|] reply-input" + (" + reply-window" if with_window else "")
        for kind in ("logistic", "ridge", "ridge + swaps", "swaps only"):
            (alone, cut, a_right), (stacked, s_right), chosen = _head_variants(
                kind, x, ex_x, feats, ex_feats, expected, d
            )
            grid = ", ".join(f"{p:g}" for p in chosen)
            _report(f"{kind} head over {name}, alone", alone, cut, d, a_right)
            _report(
                f"shipped + {kind} head over {name} (strength per fold, all: {grid})",
                stacked,
                0.0,
                d,
                s_right,
            )
    background = embed(background_texts(clinc_path, xstest_path)).astype(np.float64)
    for k in range(6):
        wrapped = abtt(embed, background, k)
        f = relevance_features(d.all, wrapped)
        score, right = _features_model(f, relevance_features(examples, wrapped), expected, d)
        label = f"all-but-the-top, mean and {k} directions removed"
        _report(f"shipped on {label}", score, 0.0, d, right)
        _report(f"plain cosine on {label}", f[:, 0], None, d, "-")
