"""DBDC3 relevancy figures for agreement.py: the shipped kit, the feature model and plain cosine,
out of fold with the folds grouped by dialogue."""

from __future__ import annotations

from typing import Any

import numpy as np
from _stats import F64, Figures, Index, auroc, fit_logistic, group_folds, sigmoid, spearman

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.kit import DECISION, OfflineKit
from convoeval.judges.offline.relevance import Window, relevance_similarity
from convoeval.judges.offline.relevance_features import (
    relevance_features,
    relevance_probabilities,
)

CONTEXT_WEIGHTS = (0.0, 0.25, 0.5, 0.75)


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
    """Relevancy on DBDC3 by dialogue: majority agreement, Spearman with (O - X) / votes."""
    items = dbdc3_windows(dialogues)
    windows = [item[0] for item in items]
    o, x, total = (np.array([item[i] for item in items]) for i in (1, 2, 3))
    majority = (o * 2 > total) | (x * 2 > total)
    relevant = o * 2 > total
    target = (o - x) / np.maximum(total, 1)
    rel_major = relevant[majority]
    sims = {w: relevance_similarity(windows, kit.embed, context_weight=w) for w in CONTEXT_WEIGHTS}

    def fit_on(idx: Index, weight: float) -> tuple[float, float]:
        sel = idx[majority[idx]]
        w, b = fit_logistic(sims[weight][sel][:, None], relevant[sel].astype(np.float64), l2=0.0)
        return float(-b / w[0]), float(1.0 / w[0])

    def agreement(score: F64, cut: float, idx: Index) -> float:
        sel = idx[majority[idx]]
        return float(((score[sel] >= cut) == relevant[sel]).mean())

    feats = relevance_features(windows, kit.embed)

    def fit_features(idx: Index) -> tuple[F64, float]:
        sel = idx[majority[idx]]
        return fit_logistic(feats[sel], relevant[sel].astype(np.float64))

    oof, plain_oof = np.zeros(len(items)), np.zeros(len(items), dtype=bool)
    feature_oof = np.zeros(len(items))
    for test in group_folds([item[4] for item in items]):
        train = np.setdiff1d(np.arange(len(items)), test)
        fw, fb = fit_features(train)
        feature_oof[test] = sigmoid(feats[test] @ fw + fb)
        fits = {w: fit_on(train, w) for w in CONTEXT_WEIGHTS}
        weight = max(CONTEXT_WEIGHTS, key=lambda w: agreement(sims[w], fits[w][0], train))
        center, scale = fits[weight]
        oof[test] = sigmoid((sims[weight][test] - center) / scale)
        plain_oof[test] = sims[0.0][test] >= fit_on(train, 0.0)[0]
    out.put("dbdc3.system_turns", len(items))
    out.put("dbdc3.majority_turns", int(majority.sum()))
    out.put("dbdc3.relevancy.agreement.oof", float(((oof >= 0.5) == relevant)[majority].mean()))
    out.put("dbdc3.relevancy.spearman.oof", spearman(oof, target))
    out.put(
        "dbdc3.baseline.plain_cosine.agreement.oof", float((plain_oof == relevant)[majority].mean())
    )
    out.put("dbdc3.baseline.plain_cosine.spearman", spearman(sims[0.0], target))
    out.put("dbdc3.baseline.plain_cosine.auroc_majority", auroc(sims[0.0][majority], rel_major))
    out.put("dbdc3.relevancy.auroc_majority.oof", auroc(oof[majority], rel_major))
    out.put(
        "dbdc3.features.agreement.oof", float(((feature_oof >= 0.5) == relevant)[majority].mean())
    )
    out.put("dbdc3.features.spearman.oof", spearman(feature_oof, target))
    out.put("dbdc3.features.auroc_majority.oof", auroc(feature_oof[majority], rel_major))
    if fit:
        fw, fb = fit_features(np.arange(len(items)))
        out.constants.update(
            RELEVANCE_FEATURE_WEIGHTS=tuple(round(float(v), 4) for v in fw),
            RELEVANCE_FEATURE_BIAS=round(fb, 4),
        )
        shipped = sigmoid(feats @ fw + fb)
    else:
        shipped = np.asarray(relevance_probabilities(windows, kit.embed))
    out.put(
        "dbdc3.features.agreement.in_sample", float(((shipped >= 0.5) == relevant)[majority].mean())
    )
    out.put("dbdc3.features.spearman.in_sample", spearman(shipped, target))
    center, scale = cal.RELEVANCE_CENTER, cal.RELEVANCE_SCALE
    weight = cal.RELEVANCE_CONTEXT_WEIGHT
    if fit:
        every = np.arange(len(items))
        fits = {w: fit_on(every, w) for w in CONTEXT_WEIGHTS}
        weight = max(CONTEXT_WEIGHTS, key=lambda w: agreement(sims[w], fits[w][0], every))
        center, scale = fits[weight]
        out.constants.update(
            RELEVANCE_CONTEXT_WEIGHT=weight,
            RELEVANCE_CENTER=round(center, 4),
            RELEVANCE_SCALE=round(scale, 4),
        )
        score = sigmoid(
            (relevance_similarity(windows, kit.embed, context_weight=weight) - center) / scale
        )
    else:  # the shipped path, end to end
        score = np.asarray(kit.relevance_scores(windows))
    out.put(
        "dbdc3.relevancy.agreement.in_sample",
        float(((score >= DECISION) == relevant)[majority].mean()),
    )
    out.put("dbdc3.relevancy.auroc_majority.in_sample", auroc(score[majority], relevant[majority]))
    out.put("dbdc3.relevancy.spearman.in_sample", spearman(score, target))
    out.put("dbdc3.baseline.always_relevant.agreement", float(relevant[majority].mean()))
