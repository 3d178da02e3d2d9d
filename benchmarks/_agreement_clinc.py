"""CLINC150 scope figures for agreement.py: AUROC and balanced accuracy per list of allowed topics,
leave one list out (the temperature and the threshold chosen on lists that share no domain with
the list scored), and the shipped constants on lists that were never used to choose them."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt
from _stats import F64, Figures, auroc, balanced_accuracy, grouped_bootstrap, sigmoid

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


def clinc(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """In-scope scoring on CLINC150: 4 lists the constants are fitted on, 10 more to check them."""
    texts = [r["text"] for r in rows]
    lists = FIT_LISTS | EXTRA_LISTS
    labels = {n: np.array([r["domain"] in doms for r in rows]) for n, (_, doms) in lists.items()}
    table = {
        temp: {
            n: _logit(
                np.asarray(
                    scope.scope_probabilities(
                        texts, list(topics), kit.embed, temperature=temp, overlap=cal.SCOPE_OVERLAP
                    )
                )
            )
            for n, (topics, _) in lists.items()
        }
        for temp in SCOPE_TEMPERATURES
    }

    def choose(names: list[str]) -> tuple[float, float]:
        """Temperature and cut-off with the best mean balanced accuracy over `names`."""
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

    # 95% intervals: whole intents drawn with replacement within each CLINC domain (requests of
    # one intent are alike, so an intent is what leaks; each out-of-scope request is its own
    # group). Every list's label is a function of the domain, so each keeps its in/out counts.
    domains = np.array([r["domain"] for r in rows])
    intents = np.array(
        [r["intent"] if r["domain"] != "out_of_scope" else f"oos-{i}" for i, r in enumerate(rows)]
    )

    def put_lolo(group: str, names: list[str], pool: list[str]) -> None:
        """Each list of `names` scored with what `pool`'s lists sharing no domain with it chose."""
        held, said = [], []
        for name in names:
            temp, cut = choose([n for n in pool if not lists[n][1] & lists[name][1]])
            s, y = table[temp][name], labels[name]
            held.append((auroc(s, y), balanced_accuracy(s >= cut, y)))
            said.append((s >= cut, y))
            out.put(f"clinc.{name}.auroc.{group}", held[-1][0])
            out.put(f"clinc.{name}.balanced_accuracy.{group}", held[-1][1])
            if group == "lolo":
                out.put(f"clinc.{name}.accuracy.lolo", float(((s >= cut) == y).mean()))
                ci = {"auroc": lambda i, s=s, y=y: auroc(s[i], y[i])}
                ci["balanced_accuracy"] = lambda i, p=s >= cut, y=y: balanced_accuracy(p[i], y[i])
                for figure, stat in ci.items():
                    interval = grouped_bootstrap(stat, intents, strata=domains)
                    out.put_interval(f"clinc.{name}.{figure}.{group}", interval)
        out.put(f"clinc.min.auroc.{group}", min(h[0] for h in held))
        out.put(f"clinc.min.balanced_accuracy.{group}", min(h[1] for h in held))
        out.put(f"clinc.mean.balanced_accuracy.{group}", float(np.mean([h[1] for h in held])))
        out.put_interval(
            f"clinc.mean.balanced_accuracy.{group}",
            grouped_bootstrap(
                lambda i: float(np.mean([balanced_accuracy(p[i], y[i]) for p, y in said])),
                intents,
                strata=domains,
            ),
        )

    put_lolo("lolo", list(FIT_LISTS), list(FIT_LISTS))
    put_lolo("lolo14", list(lists), list(lists))
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
