"""DBDC3 relevancy figures for agreement.py: the shipped feature model, the earlier weighted-cosine
kit and plain cosine, out of fold with the folds grouped by dialogue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _stats import (
    F64,
    Figures,
    Index,
    auroc,
    best_threshold,
    fit_logistic,
    fit_standardised,
    group_folds,
    grouped_bootstrap,
    sigmoid,
    spearman,
)

from convoeval.judges.offline.embedder import FloatArray
from convoeval.judges.offline.kit import DECISION, OfflineKit
from convoeval.judges.offline.relevance import Window, context_parts
from convoeval.judges.offline.relevance_features import relevance_features

CONTEXT_WEIGHTS = (0.0, 0.25, 0.5, 0.75)


def relevance_similarity(
    windows: list[Window], embed: Callable[[Sequence[str]], FloatArray], *, context_weight: float
) -> F64:
    """The kit's relevance score until calibration 2026-12-01.2, kept as a baseline: the
    weighted mean of cos(reply, input) and cos(reply, window), the window being the normalised
    mean of its texts' vectors."""
    n = len(windows)
    vectors = embed([w.reply for w in windows] + [w.user for w in windows])
    replies, users = vectors[:n], vectors[n:]
    contexts = np.stack([embed(context_parts(w)).mean(axis=0) for w in windows])
    contexts /= np.clip(np.linalg.norm(contexts, axis=1, keepdims=True), 1e-12, None)
    to_user = (replies * users).sum(axis=1).astype(np.float64)
    to_context = (replies * contexts).sum(axis=1).astype(np.float64)
    mixed: F64 = (1.0 - context_weight) * to_user + context_weight * to_context
    return mixed


def dbdc3_windows(
    dialogues: list[dict[str, Any]], size: int = 3
) -> list[tuple[Window, int, int, int, int]]:
    """(window, O, X, votes, dialogue index) for every voted system turn after a user turn."""
    items = []
    for k, d in enumerate(dialogues):
        turns = d["turns"]
        exchanges: list[tuple[str, str]] = []
        for i, turn in enumerate(turns):
            if turn["speaker"] != "S" or i == 0 or turns[i - 1]["speaker"] != "U":
                continue
            user, reply = turns[i - 1]["utterance"], turn["utterance"]
            if "O" in turn:
                history = exchanges[max(0, len(exchanges) - (size - 1)) :]
                o, t, x = int(turn["O"]), int(turn.get("T", 0)), int(turn["X"])
                items.append((Window.of(history, user, reply), o, x, o + t + x, k))
            exchanges.append((user, reply))
    return items


def dbdc3(kit: OfflineKit, dialogues: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Relevancy on DBDC3 by dialogue: majority agreement, Spearman with (O - X) / votes.

    The feature model is fitted to the majority turns (relevant when most said O), and its
    threshold is the one with the best agreement on them."""
    items = dbdc3_windows(dialogues)
    windows = [item[0] for item in items]
    o, x, total = (np.array([item[i] for item in items]) for i in (1, 2, 3))
    majority = (o * 2 > total) | (x * 2 > total)
    relevant = o * 2 > total
    target = (o - x) / np.maximum(total, 1)
    rel_major = relevant[majority]
    sims = {w: relevance_similarity(windows, kit.embed, context_weight=w) for w in CONTEXT_WEIGHTS}
    feats = relevance_features(windows, kit.embed)

    def fit_cosine(idx: Index, weight: float) -> tuple[float, float]:
        sel = idx[majority[idx]]
        w, b = fit_logistic(sims[weight][sel][:, None], relevant[sel].astype(np.float64), l2=0.0)
        return float(-b / w[0]), float(1.0 / w[0])

    def agreement(score: F64, cut: float, idx: Index) -> float:
        sel = idx[majority[idx]]
        return float(((score[sel] >= cut) == relevant[sel]).mean())

    def fit_features(idx: Index) -> tuple[F64, float, float]:
        sel = idx[majority[idx]]
        w, b = fit_standardised(feats[idx], relevant[sel].astype(np.float64), majority[idx])
        return w, b, best_threshold(feats[sel] @ w + b, relevant[sel])

    oof, cosine_oof = np.zeros(len(items)), np.zeros(len(items))
    plain_oof = np.zeros(len(items), dtype=bool)
    for test in group_folds([item[4] for item in items]):
        train = np.setdiff1d(np.arange(len(items)), test)
        fw, fb, cut = fit_features(train)
        oof[test] = sigmoid(feats[test] @ fw + fb - cut)
        fits = {w: fit_cosine(train, w) for w in CONTEXT_WEIGHTS}
        weight = max(CONTEXT_WEIGHTS, key=lambda w: agreement(sims[w], fits[w][0], train))
        center, scale = fits[weight]
        cosine_oof[test] = sigmoid((sims[weight][test] - center) / scale)
        plain_oof[test] = sims[0.0][test] >= fit_cosine(train, 0.0)[0]
    out.put("dbdc3.system_turns", len(items))
    out.put("dbdc3.majority_turns", int(majority.sum()))
    out.put("dbdc3.relevancy.agreement.oof", float(((oof >= 0.5) == relevant)[majority].mean()))
    out.put("dbdc3.relevancy.spearman.oof", spearman(oof, target))
    out.put("dbdc3.relevancy.auroc_majority.oof", auroc(oof[majority], rel_major))
    # 95% intervals of the three by drawing dialogues whole, on the out-of-fold scores above
    dialogue, hit = [item[4] for item in items], (oof >= 0.5) == relevant
    for name, stat in (
        ("agreement", lambda i: hit[i[majority[i]]].mean()),
        ("spearman", lambda i: spearman(oof[i], target[i])),
        ("auroc_majority", lambda i: auroc(oof[i[majority[i]]], relevant[i[majority[i]]])),
    ):
        out.put_interval(f"dbdc3.relevancy.{name}.oof", grouped_bootstrap(stat, dialogue))
    out.put(
        "dbdc3.baseline.weighted_cosine.agreement.oof",
        float(((cosine_oof >= 0.5) == relevant)[majority].mean()),
    )
    out.put("dbdc3.baseline.weighted_cosine.spearman.oof", spearman(cosine_oof, target))
    out.put(
        "dbdc3.baseline.weighted_cosine.auroc_majority.oof", auroc(cosine_oof[majority], rel_major)
    )
    out.put(
        "dbdc3.baseline.plain_cosine.agreement.oof", float((plain_oof == relevant)[majority].mean())
    )
    out.put("dbdc3.baseline.plain_cosine.spearman", spearman(sims[0.0], target))
    out.put("dbdc3.baseline.plain_cosine.auroc_majority", auroc(sims[0.0][majority], rel_major))
    if fit:
        fw, fb, cut = fit_features(np.arange(len(items)))
        out.constants.update(
            RELEVANCE_FEATURE_WEIGHTS=tuple(round(float(v), 4) for v in fw),
            RELEVANCE_FEATURE_BIAS=round(fb, 4),
            RELEVANCE_FEATURE_THRESHOLD=round(float(sigmoid(np.array(cut))), 4),
        )
        score = sigmoid(feats @ fw + fb - cut)
    else:  # the shipped path, end to end
        score = np.asarray(kit.relevance_scores(windows))
    out.put(
        "dbdc3.relevancy.agreement.in_sample",
        float(((score >= DECISION) == relevant)[majority].mean()),
    )
    out.put("dbdc3.relevancy.auroc_majority.in_sample", auroc(score[majority], rel_major))
    out.put("dbdc3.relevancy.spearman.in_sample", spearman(score, target))
    out.put("dbdc3.baseline.always_relevant.agreement", float(relevant[majority].mean()))
