"""CLINC150 scope figures for agreement.py: AUROC and balanced accuracy per list of allowed topics,
leave one list out (the temperature and the threshold chosen on lists that share no domain with
the list scored), and the shipped constants on lists that were never used to choose them."""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
from _stats import (
    F64,
    Figures,
    Index,
    auroc,
    balanced_accuracy,
    grouped_bootstrap,
    sigmoid,
)

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline import scope
from convoeval.judges.offline.kit import DECISION, OfflineKit

TopicLists = dict[str, tuple[tuple[str, ...], frozenset[str]]]

#: The lists the shipped temperature and threshold are chosen on (`--fit`).
FIT_LISTS: TopicLists = {
    "banking_credit_cards": (("banking", "credit cards"), frozenset({"banking", "credit_cards"})),
    "travel": (("travel",), frozenset({"travel"})),
    "cooking_restaurants": (("cooking and food", "restaurants"), frozenset({"kitchen_and_dining"})),
    "cars_commuting": (("cars", "commuting"), frozenset({"auto_and_commute"})),
}


def _extra_lists() -> TopicLists:
    """Lists for validation only: single domains named by their CLINC domain name in plain words
    (the domains whose name says what their requests are about; "home", "utility" and "meta" do
    not), and every pair of the lists above."""
    lists: TopicLists = {
        "banking": (("banking",), frozenset({"banking"})),
        "credit_cards": (("credit cards",), frozenset({"credit_cards"})),
        "work": (("work",), frozenset({"work"})),
        "small_talk": (("small talk",), frozenset({"small_talk"})),
    }
    for a, b in combinations(FIT_LISTS, 2):
        lists[f"{a}+{b}"] = (FIT_LISTS[a][0] + FIT_LISTS[b][0], FIT_LISTS[a][1] | FIT_LISTS[b][1])
    return lists


EXTRA_LISTS = _extra_lists()
SCOPE_TEMPERATURES = (0.03, 0.05, 0.07, 0.1, 0.15)
#: Mean balanced accuracies closer than this count as a tie (the sharper temperature wins).
TIE = 0.005


def _logit(p: F64) -> F64:
    q = np.clip(p, 1e-12, 1 - 1e-12)
    out: F64 = np.log(q / (1 - q))
    return out


def _best_cut(scores: dict[str, F64], labels: dict[str, npt.NDArray[np.bool_]]) -> float:
    """One cut-off (log-odds) for the given lists: best mean balanced accuracy over them."""
    pooled = np.concatenate(list(scores.values()))
    cuts = np.quantile(pooled, np.linspace(0.3, 0.995, 279))
    means = [np.mean([balanced_accuracy(scores[n] >= c, labels[n]) for n in scores]) for c in cuts]
    return float(cuts[int(np.argmax(means))])


def _table(
    kit: OfflineKit, texts: list[str], lists: TopicLists, expand: bool
) -> dict[float, dict[str, F64]]:
    """Log-odds scores per temperature and list, with or without broad topics expanded."""
    return {
        temp: {
            n: _logit(
                np.asarray(
                    scope.scope_probabilities(
                        texts,
                        list(topics),
                        kit.embed,
                        temperature=temp,
                        overlap=cal.SCOPE_OVERLAP,
                        expand=expand,
                    )
                )
            )
            for n, (topics, _) in lists.items()
        }
        for temp in SCOPE_TEMPERATURES
    }


def _chooser(
    table: dict[float, dict[str, F64]], labels: dict[str, npt.NDArray[np.bool_]]
) -> Callable[[list[str]], tuple[float, float]]:
    """choose(names): the temperature and cut-off with the best mean balanced accuracy there."""

    def choose(names: list[str]) -> tuple[float, float]:
        fits = {t: _best_cut({n: table[t][n] for n in names}, labels) for t in SCOPE_TEMPERATURES}

        def mean_bacc(t: float) -> float:
            return float(
                np.mean([balanced_accuracy(table[t][n] >= fits[t], labels[n]) for n in names])
            )

        # The sharpest temperature within TIE of the best: when the lists cannot tell them
        # apart, a request should beat its closest competitors, not the average background.
        best = max(mean_bacc(t) for t in SCOPE_TEMPERATURES)
        temp = min(t for t in SCOPE_TEMPERATURES if mean_bacc(t) >= best - TIE)
        return temp, fits[temp]

    return choose


def _held_out_lists(
    table: dict[float, dict[str, F64]],
    labels: dict[str, npt.NDArray[np.bool_]],
    lists: TopicLists,
    names: list[str],
) -> dict[str, tuple[F64, float]]:
    """Leave one list out: each list's scores and the cut-off chosen (with the temperature) on
    the lists of `names` that share no domain with it."""
    choose = _chooser(table, labels)
    held = {}
    for name in names:
        temp, cut = choose([n for n in names if not lists[n][1] & lists[name][1]])
        held[name] = (table[temp][name], cut)
    return held


def clinc(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """In-scope scoring on CLINC150: 4 lists the constants are fitted on, 10 more to check them.
    The worst list, not the mean, is the headline; the same procedure with broad topics left
    unexpanded (calibration 2026-12-02.1) is scored beside it, with paired intervals."""
    texts = [r["text"] for r in rows]
    lists = FIT_LISTS | EXTRA_LISTS
    labels = {n: np.array([r["domain"] in doms for r in rows]) for n, (_, doms) in lists.items()}
    table = _table(kit, texts, lists, cal.SCOPE_EXPAND)
    choose = _chooser(table, labels)

    # 95% intervals: whole intents drawn with replacement within each CLINC domain (requests of
    # one intent are alike, so an intent is what leaks; each out-of-scope request is its own
    # group). Every list's label is a function of the domain, so each keeps its in/out counts.
    domains = np.array([r["domain"] for r in rows])
    intents = np.array(
        [r["intent"] if r["domain"] != "out_of_scope" else f"oos-{i}" for i, r in enumerate(rows)]
    )

    def boot(stat: Callable[[Index], float]) -> tuple[float, float]:
        return grouped_bootstrap(stat, intents, strata=domains)

    def figures(held: dict[str, tuple[F64, float]], i: Index) -> tuple[list[float], list[float]]:
        """(AUROC, balanced accuracy) per list on the rows `i`."""
        y = {n: labels[n][i] for n in held}
        aucs = [auroc(s[i], y[n]) for n, (s, _) in held.items()]
        baccs = [balanced_accuracy(s[i] >= c, y[n]) for n, (s, c) in held.items()]
        return aucs, baccs

    everything = np.arange(len(rows))
    previous = _table(kit, texts, lists, expand=False) if cal.SCOPE_EXPAND else None

    def put_lolo(group: str, names: list[str]) -> None:
        """Each list of `names` scored with what the others sharing no domain with it chose; the
        worst list first, then each list, then the mean."""
        held = _held_out_lists(table, labels, lists, names)
        aucs, baccs = figures(held, everything)
        for figure, values in (("auroc", aucs), ("balanced_accuracy", baccs)):
            out.put(f"clinc.min.{figure}.{group}", min(values))
            out.put(f"clinc.min.{figure}.{group}.list", names[int(np.argmin(values))])
            if group == "lolo":
                k = ["auroc", "balanced_accuracy"].index(figure)
                out.put_interval(
                    f"clinc.min.{figure}.{group}", boot(lambda i, k=k: min(figures(held, i)[k]))
                )
        if previous is not None:  # calibration 2026-12-02.1's procedure, broad topics unexpanded
            before = _held_out_lists(previous, labels, lists, names)
            old_aucs, old_baccs = figures(before, everything)
            for k, (figure, values) in enumerate(
                (("auroc", old_aucs), ("balanced_accuracy", old_baccs))
            ):
                out.put(f"clinc.min.{figure}.{group}.unexpanded", min(values))
                out.put(
                    f"clinc.min.{figure}.{group}.unexpanded.list", names[int(np.argmin(values))]
                )
                for n, v in zip(names, values, strict=True):
                    out.put(f"clinc.{n}.{figure}.{group}.unexpanded", v)
                if group == "lolo":  # paired: the same resampled rows for both
                    gain = (aucs, baccs)[k]
                    out.put(f"clinc.min.{figure}.{group}.gain", min(gain) - min(values))
                    out.put_interval(
                        f"clinc.min.{figure}.{group}.gain",
                        boot(lambda i, k=k: min(figures(held, i)[k]) - min(figures(before, i)[k])),
                    )
        for n, a_, b_ in zip(names, aucs, baccs, strict=True):
            s_, cut = held[n]
            out.put(f"clinc.{n}.auroc.{group}", a_)
            out.put(f"clinc.{n}.balanced_accuracy.{group}", b_)
            if group == "lolo":
                y = labels[n]
                out.put(f"clinc.{n}.accuracy.lolo", float(((s_ >= cut) == y).mean()))
                out.put_interval(
                    f"clinc.{n}.auroc.{group}", boot(lambda i, s_=s_, y=y: auroc(s_[i], y[i]))
                )
                out.put_interval(
                    f"clinc.{n}.balanced_accuracy.{group}",
                    boot(lambda i, p=s_ >= cut, y=y: balanced_accuracy(p[i], y[i])),
                )
        out.put(f"clinc.mean.balanced_accuracy.{group}", float(np.mean(baccs)))
        out.put_interval(
            f"clinc.mean.balanced_accuracy.{group}",
            boot(lambda i: float(np.mean(figures(held, i)[1]))),
        )

    put_lolo("lolo", list(FIT_LISTS))
    put_lolo("lolo14", list(lists))
    if fit:
        temp, cut = choose(list(FIT_LISTS))
        out.constants.update(
            SCOPE_TEMPERATURE=temp, SCOPE_THRESHOLD=round(float(sigmoid(np.array(cut))), 4)
        )
        scores = {n: sigmoid(table[temp][n] - cut) for n in lists}
    else:  # the shipped path, end to end: re-centred scores, decision at 0.5
        scores = {n: np.asarray(kit.scope_scores(texts, list(t))) for n, (t, _) in lists.items()}
    for name, (topics, _) in lists.items():
        s, y = scores[name], labels[name]
        kind = "in_sample" if name in FIT_LISTS else "held_out"
        plain = (kit.embed(texts) @ kit.embed(list(topics)).T).max(axis=1)
        out.put(f"clinc.{name}.in_scope_rows", int(y.sum()))
        out.put(f"clinc.{name}.auroc.{kind}", auroc(s, y))
        out.put(f"clinc.{name}.balanced_accuracy.{kind}", balanced_accuracy(s >= DECISION, y))
        out.put(f"clinc.{name}.accuracy.{kind}", float(((s >= DECISION) == y).mean()))
        out.put(f"clinc.{name}.baseline.plain_cosine.auroc", auroc(plain, y))
