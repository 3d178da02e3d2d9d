"""DBDC3 relevancy figures for agreement.py: the shipped cosine model, plain cosines and the
previous calibration's feature model, leaving one system out (the headline) and by dialogue.

DBDC3's `subset` names the system that wrote the replies; a left-out system is the nearest thing
in the dev data to a corpus the judge never saw. Plain cosine is printed beside every figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _relevance_previous import PREVIOUS_VERSION, previous_probabilities, relevance_features
from _stats import (
    F64,
    Bools,
    Figures,
    Index,
    auroc,
    best_threshold,
    best_threshold_each_group_alike,
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
from convoeval.judges.offline.relevance_features import reply_input_cosines


def window_cosines(windows: list[Window], embed: Callable[[Sequence[str]], FloatArray]) -> F64:
    """cos(reply, window), the window being the normalised mean of its texts' vectors (the
    earlier turns and the input): plain cosine of the reply with its whole context."""
    replies = embed([w.reply for w in windows])
    contexts = np.stack([embed(context_parts(w)).mean(axis=0) for w in windows])
    contexts /= np.clip(np.linalg.norm(contexts, axis=1, keepdims=True), 1e-12, None)
    out: F64 = (replies * contexts).sum(axis=1).astype(np.float64)
    return out


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


@dataclass
class Turns:
    """The voted DBDC3 turns with their labels, groups and scores (one row per turn)."""

    windows: list[Window]
    majority: Bools  # most annotators said O, or most said X
    relevant: Bools  # most said O
    target: F64  # (O - X) / votes
    dialogue: Index
    system: Any  # the `subset` of the dialogue ("all" when the file has none)
    cosine: F64  # cos(reply, input): the shipped model's only input
    window: F64  # cos(reply, window)
    previous: F64  # the 2026-12-02.1 feature model's feature rows

    @classmethod
    def read(cls, kit: OfflineKit, dialogues: list[dict[str, Any]]) -> Turns:
        items = dbdc3_windows(dialogues)
        windows = [item[0] for item in items]
        o, x, total = (np.array([item[i] for item in items]) for i in (1, 2, 3))
        dialogue = np.array([item[4] for item in items])
        system = np.array([str(dialogues[k].get("subset", "all")) for k in dialogue])
        return cls(
            windows,
            (o * 2 > total) | (x * 2 > total),
            o * 2 > total,
            (o - x) / np.maximum(total, 1),
            dialogue,
            system,
            reply_input_cosines(windows, kit.embed),
            window_cosines(windows, kit.embed),
            relevance_features(windows, kit.embed),
        )

    def voted(self, idx: Index) -> Index:
        """The rows of `idx` with a majority."""
        return idx[self.majority[idx]]

    def fit_shipped(self, idx: Index) -> tuple[float, float]:
        """The shipped model's (slope, cosine threshold) fitted on the majority turns of `idx`:
        a logistic slope, and the threshold with the best agreement counting each system alike."""
        sel = self.voted(idx)
        w, _ = fit_logistic(self.cosine[sel][:, None], self.relevant[sel].astype(np.float64))
        return float(w[0]), self.cut(self.cosine, idx)

    def cut(self, score: F64, idx: Index) -> float:
        """The threshold on `score` fitted on `idx` as the shipped one is (systems alike)."""
        sel = self.voted(idx)
        return best_threshold_each_group_alike(score[sel], self.relevant[sel], self.system[sel])

    def pooled_cut(self, score: F64, idx: Index) -> float:
        """The threshold with the best agreement on the majority turns of `idx`, rows pooled."""
        sel = self.voted(idx)
        return best_threshold(score[sel], self.relevant[sel])

    def previous_refit(self, train: Index, test: Index) -> F64:
        """The 2026-12-02.1 feature model refitted on `train` as it was fitted then (standardised
        logistic, pooled threshold), scored on `test` (0.5 = its verdict)."""
        sel = self.voted(train)
        y = self.relevant[sel].astype(np.float64)
        w, b = fit_standardised(self.previous[train], y, self.majority[train])
        cut = best_threshold(self.previous[sel] @ w + b, self.relevant[sel])
        return sigmoid(self.previous[test] @ w + b - cut)

    def agreement(self, verdict: Bools, idx: Index) -> float:
        """Share of the majority turns of `idx` where `verdict` (aligned with idx) is the
        majority's."""
        m = self.majority[idx]
        return float((verdict == self.relevant[idx])[m].mean())


def leave_one_system_out(t: Turns, out: Figures) -> None:
    """Per left-out system: Spearman with (O - X) / votes and agreement with the majority, for the
    shipped model refitted without it, plain cosine (input; window), the previous calibration
    as shipped (in-sample) and refitted without it, with paired intervals by dialogue."""
    worst: dict[str, list[float]] = {}
    for name in sorted(set(t.system)):
        test = np.flatnonzero(t.system == name)
        train = np.flatnonzero(t.system != name)
        _, cut = t.fit_shipped(train)
        voted = t.voted(test)
        out.put(f"dbdc3.majority_turns.system.{name}", len(voted))
        out.put(f"dbdc3.relevant_share.system.{name}", float(t.relevant[voted].mean()))
        refit = t.previous_refit(train, test)
        rows: dict[str, tuple[F64, Bools]] = {
            "relevancy": (t.cosine[test], t.cosine[test] >= cut),
            "baseline.plain_cosine": (
                t.cosine[test],
                t.cosine[test] >= t.pooled_cut(t.cosine, train),
            ),
            "baseline.window_cosine": (t.window[test], t.window[test] >= t.cut(t.window, train)),
            "previous_refit": (refit, refit >= 0.5),
        }
        for kind, (score, verdict) in rows.items():
            for figure, value in (
                ("spearman", spearman(score, t.target[test])),
                ("agreement", t.agreement(verdict, test)),
            ):
                out.put(f"dbdc3.{kind}.{figure}.loso.{name}", value)
                worst.setdefault(f"dbdc3.{kind}.{figure}.loso.worst", []).append(value)
        out.put_interval(
            f"dbdc3.relevancy.spearman.loso.{name}",
            grouped_bootstrap(
                lambda i, test=test: spearman(t.cosine[test][i], t.target[test][i]),
                t.dialogue[test],
            ),
        )
        gain = f"dbdc3.previous_refit.spearman_minus_plain_cosine.loso.{name}"
        out.put(gain, spearman(refit, t.target[test]) - spearman(t.cosine[test], t.target[test]))

        def paired(i: Index, refit: F64 = refit, test: Index = test) -> float:
            y = t.target[test][i]
            return spearman(refit[i], y) - spearman(t.cosine[test][i], y)

        out.put_interval(gain, grouped_bootstrap(paired, t.dialogue[test]))
        previous = previous_probabilities(t.previous[test])
        out.put(
            f"dbdc3.previous_calibration.spearman.in_sample.system.{name}",
            spearman(previous, t.target[test]),
        )
        out.put(
            f"dbdc3.previous_calibration.agreement.in_sample.system.{name}",
            t.agreement(previous >= 0.5, test),
        )
    for key, values in worst.items():
        out.put(key, min(values))


def by_dialogue(t: Turns, out: Figures) -> None:
    """The shipped model refitted in 5 folds grouped by dialogue, with 95% intervals (dialogues
    drawn whole), beside plain cosine."""
    n = len(t.windows)
    oof = np.zeros(n)
    plain = np.zeros(n, dtype=bool)
    for test in group_folds(list(t.dialogue)):
        train = np.setdiff1d(np.arange(n), test)
        slope, cut = t.fit_shipped(train)
        oof[test] = sigmoid(slope * (t.cosine[test] - cut))
        plain[test] = t.cosine[test] >= t.pooled_cut(t.cosine, train)
    m, rel = t.majority, t.relevant
    hit = (oof >= 0.5) == rel
    for name, value, stat in (
        ("agreement", float(hit[m].mean()), lambda i: hit[t.voted(i)].mean()),
        ("spearman", spearman(oof, t.target), lambda i: spearman(oof[i], t.target[i])),
        (
            "auroc_majority",
            auroc(oof[m], rel[m]),
            lambda i: auroc(oof[t.voted(i)], rel[t.voted(i)]),
        ),
    ):
        out.put(f"dbdc3.relevancy.{name}.oof", value)
        out.put_interval(f"dbdc3.relevancy.{name}.oof", grouped_bootstrap(stat, t.dialogue))
    out.put("dbdc3.baseline.plain_cosine.agreement.oof", float((plain == rel)[m].mean()))
    out.put("dbdc3.baseline.plain_cosine.spearman", spearman(t.cosine, t.target))
    out.put("dbdc3.baseline.plain_cosine.auroc_majority", auroc(t.cosine[m], rel[m]))
    out.put("dbdc3.baseline.window_cosine.spearman", spearman(t.window, t.target))
    out.put("dbdc3.baseline.window_cosine.auroc_majority", auroc(t.window[m], rel[m]))


def dbdc3(kit: OfflineKit, dialogues: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Relevancy on DBDC3: leave one system out (when the file names more than one), by dialogue,
    then the shipped path on all rows (or, with `fit`, the refit on all rows)."""
    t = Turns.read(kit, dialogues)
    m, rel = t.majority, t.relevant
    out.put("dbdc3.system_turns", len(t.windows))
    out.put("dbdc3.majority_turns", int(m.sum()))
    out.put("dbdc3.systems", len(set(t.system)))
    if len(set(t.system)) > 1:
        leave_one_system_out(t, out)
    by_dialogue(t, out)
    if fit:
        slope, cut = t.fit_shipped(np.arange(len(t.windows)))
        out.constants.update(
            RELEVANCE_COSINE_SLOPE=round(slope, 4), RELEVANCE_COSINE_THRESHOLD=round(cut, 4)
        )
        score = sigmoid(slope * (t.cosine - cut))
    else:  # the shipped path, end to end
        score = np.asarray(kit.relevance_scores(t.windows))
    out.put("dbdc3.relevancy.agreement.in_sample", float(((score >= DECISION) == rel)[m].mean()))
    out.put("dbdc3.relevancy.auroc_majority.in_sample", auroc(score[m], rel[m]))
    out.put("dbdc3.relevancy.spearman.in_sample", spearman(score, t.target))
    previous = previous_probabilities(t.previous)
    out.put("dbdc3.previous_calibration.version", PREVIOUS_VERSION)
    out.put(
        "dbdc3.previous_calibration.agreement.in_sample",
        float(((previous >= 0.5) == rel)[m].mean()),
    )
    out.put("dbdc3.previous_calibration.spearman.in_sample", spearman(previous, t.target))
    out.put("dbdc3.baseline.always_relevant.agreement", float(rel[m].mean()))
