"""Scope with the embeddings post-processed, and a two-feature score (issue 17, third round), for
offline_variants.py `scope_post`, each scored as agreement.py's `.lolo` and `.lolo14`.

All settings were written down here (and committed) before any figure on them was seen:

1. Post-processing before the cosines: request and topic vectors have a reference mean taken out
   and/or their top k principal components of the reference removed ("all but the top"), then
   are renormalised. Reference data is never CLINC: either the user turns of the DBDC3 dev file
   with the XSTest dev prompts ("requests"), or the 65 background topic vectors themselves
   ("background"). Settings: mean only, mean + top 1, 2, 3, 5 components. Which background
   topics compete (the 0.7 overlap cut-off) is decided on the raw vectors, as shipped.
2. Two features in a logistic model fitted in the folds (pooled rows of the training lists,
   features standardised there): the shipped prior-odds log-odds and the best raw cosine to an
   allowed topic; the log-odds and the margin (best allowed minus best kept background cosine);
   all three.
3. Chosen by us: (a) a hub penalty as CSLS (Conneau et al. 2018): each topic's cosine minus w
   times its mean cosine to its 10 nearest reference requests, w = 0.5 (CSLS's own weight once
   the request-side term, constant per request, cancels in the softmax) and w = 1; (b) separate
   centring: requests minus the reference requests' mean, topics minus the background topics'
   mean.
4. Added after the figures of 1-3 were seen, written down before their own: (c) the logistic
   model with the request's log word count, and with that and its product with the log-odds
   (short requests are close to many topics); (d) partial centring, requests and topics minus
   beta times the reference requests' mean, beta in 0, 0.25, 0.5, 0.75, 1 chosen in the folds
   with the temperature (beta = 0 is the shipped score and wins a tie).
5. Added after the figures of 1-4, before its own: (e) exemplar feedback (Rocchio): every topic
   vector (allowed and background) plus gamma times the mean of its 10 nearest reference
   requests, renormalised, gamma = 0.5 and 1.

Every variant has its temperature (and cut-off, and weights) chosen in the folds as agreement.py
does (best mean balanced accuracy over the training lists, cut-offs at 279 quantiles, the
sharpest temperature within 0.005 of the best), on a wider temperature grid than agreement.py's
because post-processed cosines spread more; the shipped score is printed on both grids.

Result (2026-12-02, calibration 2026-12-02.1): nothing shipped. None of these settings raises both
travel and cars out of fold; the mean-and-components settings lower the mean AUROC over the 14
lists by 0.002-0.022 and the mean balanced accuracy by 0.030-0.056.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _agreement_clinc import EXTRA_LISTS, FIT_LISTS, SCOPE_TEMPERATURES, TIE
from _stats import F64, auroc, balanced_accuracy, fit_logistic, read_jsonl
from _variants_scope import _softmax_logodds, _unit

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline import scope

WIDE_TEMPERATURES = (0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.3)
COMPONENTS = (1, 2, 3, 5)
HUB_K = 10
LISTS = FIT_LISTS | EXTRA_LISTS
#: train list names -> scores per list (log-odds-like, higher = in scope), per key; keys in
#: order of preference (sharpest temperature first).
Fitted = Callable[[tuple[str, ...]], dict[str, F64]]


def reference_texts(dbdc3: Path, xstest: Path) -> list[str]:
    """User turns of the DBDC3 dev dialogues and the XSTest dev prompts, each once."""
    texts = [
        t["utterance"]
        for d in read_jsonl(dbdc3)
        for t in d["turns"]
        if t["speaker"] == "U" and t["utterance"].strip()
    ]
    texts += [r["user"] for r in read_jsonl(xstest)]
    return list(dict.fromkeys(texts))


def fit_post(ref: F64, k: int) -> tuple[F64, F64]:
    """Mean of `ref` and its top k principal directions (k rows)."""
    mean = ref.mean(axis=0)
    if k == 0:
        return mean, np.zeros((0, ref.shape[1]))
    _, _, vt = np.linalg.svd(ref - mean, full_matrices=False)
    comps: F64 = vt[:k]
    return mean, comps


def apply_post(v: F64, mean: F64, comps: F64) -> F64:
    """Centre, remove the components, renormalise."""
    c = v - mean
    return _unit(c - (c @ comps.T) @ comps)


class Topics:
    """Raw unit vectors of a list's allowed topics and its kept background (cut-off on raw)."""

    def __init__(self, topics: Sequence[str], embed: Callable[[Sequence[str]], Any]) -> None:
        self.allowed = scope.topic_vectors(list(topics), embed).astype(np.float64)
        bg = scope.topic_vectors(scope.BACKGROUND_TOPICS, embed).astype(np.float64)
        self.background = bg[(bg @ self.allowed.T).max(axis=1) < cal.SCOPE_OVERLAP]
        self.prior = len(topics) / max(len(self.background), 1)


def _by_temp(sa: F64, sb: F64, prior: float, temps: Sequence[float]) -> dict[float, F64]:
    return {t: _softmax_logodds(sa, sb, t, prior) for t in temps}


def list_scores(
    vecs: F64, tp: Topics, ref: F64, bg_all: F64, log_words: F64
) -> dict[str, dict[Any, F64] | dict[str, F64]]:
    """Every fixed-rule variant's score per temperature, and the raw features for the logistic
    ones (under "features")."""
    out: dict[str, Any] = {}
    sa, sb = vecs @ tp.allowed.T, vecs @ tp.background.T
    out["shipped, agreement.py's temperatures"] = _by_temp(sa, sb, tp.prior, SCOPE_TEMPERATURES)
    out["shipped, wide temperatures"] = _by_temp(sa, sb, tp.prior, WIDE_TEMPERATURES)
    for source, data in (("requests", ref), ("background", bg_all)):
        for k in (0, *COMPONENTS):
            mean, comps = fit_post(data, k)
            pv = apply_post(vecs, mean, comps)
            pa, pb = apply_post(tp.allowed, mean, comps), apply_post(tp.background, mean, comps)
            label = "mean only" if k == 0 else f"mean + top {k} components"
            out[f"post ({source}): {label}"] = _by_temp(
                pv @ pa.T, pv @ pb.T, tp.prior, WIDE_TEMPERATURES
            )
    # CSLS hub penalty: a topic's mean cosine to its HUB_K nearest reference requests.
    hub_a = -np.sort(-(tp.allowed @ ref.T), axis=1)[:, :HUB_K].mean(axis=1)
    hub_b = -np.sort(-(tp.background @ ref.T), axis=1)[:, :HUB_K].mean(axis=1)
    for w in (0.5, 1.0):
        out[f"CSLS hub penalty, w = {w}"] = _by_temp(
            sa - w * hub_a, sb - w * hub_b, tp.prior, WIDE_TEMPERATURES
        )
    for gamma in (0.5, 1.0):
        near_a = np.argsort(-(tp.allowed @ ref.T), axis=1)[:, :HUB_K]
        near_b = np.argsort(-(tp.background @ ref.T), axis=1)[:, :HUB_K]
        fa = _unit(tp.allowed + gamma * ref[near_a].mean(axis=1))
        fb = _unit(tp.background + gamma * ref[near_b].mean(axis=1))
        out[f"exemplar feedback, gamma = {gamma}"] = _by_temp(
            vecs @ fa.T, vecs @ fb.T, tp.prior, WIDE_TEMPERATURES
        )
    rv = _unit(vecs - ref.mean(axis=0))
    mu_t = bg_all.mean(axis=0)
    ca, cb = _unit(tp.allowed - mu_t), _unit(tp.background - mu_t)
    out["separate centring (requests on requests' mean, topics on background mean)"] = _by_temp(
        rv @ ca.T, rv @ cb.T, tp.prior, WIDE_TEMPERATURES
    )
    out["partial centring on the requests' mean, beta chosen in the folds"] = {
        (t, beta): v
        for beta in (0.0, 0.25, 0.5, 0.75, 1.0)  # beta outer: beta = 0 first, wins a tie
        for t in WIDE_TEMPERATURES
        for v in [_partial(vecs, tp, ref.mean(axis=0), beta, t)]
    }
    out["features"] = {
        "best_cos": sa.max(axis=1),
        "margin": sa.max(axis=1) - sb.max(axis=1),
        "log_words": log_words,
    }
    return out


def _partial(vecs: F64, tp: Topics, mean: F64, beta: float, temp: float) -> F64:
    pv, pa, pb = (_unit(v - beta * mean) for v in (vecs, tp.allowed, tp.background))
    return _softmax_logodds(pv @ pa.T, pv @ pb.T, temp, tp.prior)


def _bacc_grid(s: F64, y: np.ndarray, cuts: F64) -> F64:
    """Balanced accuracy of `s >= c` for every c in `cuts` at once."""
    pos, neg = np.sort(s[y]), np.sort(s[~y])
    tpr = 1.0 - np.searchsorted(pos, cuts, side="left") / len(pos)
    tnr = np.searchsorted(neg, cuts, side="left") / len(neg)
    out: F64 = 0.5 * (tpr + tnr)
    return out


def _best_cut(scores: dict[str, F64], labels: dict[str, np.ndarray]) -> tuple[float, float]:
    """(mean balanced accuracy, cut-off) over `scores`' lists, as agreement.py's _best_cut."""
    pooled = np.concatenate(list(scores.values()))
    cuts = np.quantile(pooled, np.linspace(0.3, 0.995, 279))
    means = np.mean([_bacc_grid(scores[n], labels[n], cuts) for n in scores], axis=0)
    i = int(np.argmax(means))
    return float(means[i]), float(cuts[i])


def _fixed(per_list: dict[str, dict[Any, F64]], key: Any) -> Fitted:
    return lambda train: {n: per_list[n][key] for n in LISTS}


def _logistic(table: dict[str, Any], temp: float, feats: tuple[str, ...], labels: Any) -> Fitted:
    """Fitted on the training lists' pooled rows: log-odds at `temp` and `feats`."""

    def cols(n: str) -> F64:
        base = table[n]["shipped, wide temperatures"][temp]
        f = table[n]["features"] | {
            "log_words x log-odds": base * table[n]["features"]["log_words"]
        }
        return np.column_stack([base, *(f[name] for name in feats)])

    def fitted(train: tuple[str, ...]) -> dict[str, F64]:
        x = np.vstack([cols(n) for n in train])
        y = np.concatenate([labels[n] for n in train]).astype(np.float64)
        mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
        w, b = fit_logistic((x - mean) / std, y)
        return {n: ((cols(n) - mean) / std) @ w + b for n in LISTS}

    return fitted


def evaluate(variant: dict[Any, Fitted], labels: dict[str, np.ndarray]) -> dict[str, Any]:
    """`.lolo` per fitted list and `.lolo14` per list: (AUROC, balanced accuracy)."""

    chosen: set[Any] = set()

    def held(name: str, pool: Sequence[str]) -> tuple[float, float]:
        train = tuple(n for n in pool if not LISTS[n][1] & LISTS[name][1])
        per_key = {}
        for key, fit in variant.items():
            s = fit(train)
            per_key[key] = (*_best_cut({n: s[n] for n in train}, labels), s[name])
        top = max(m for m, _, _ in per_key.values())
        key = next(k for k, v in per_key.items() if v[0] >= top - TIE)
        chosen.add(key)
        _, cut, s = per_key[key]
        return auroc(s, labels[name]), balanced_accuracy(s >= cut, labels[name])

    return {
        "lolo": {n: held(n, list(FIT_LISTS)) for n in FIT_LISTS},
        "lolo14": {n: held(n, list(LISTS)) for n in LISTS},
        "chosen": sorted(chosen),
    }


def _line(label: str, res: dict[str, Any]) -> str:
    lolo = ", ".join(f"{a:.3f}/{b:.3f}" for a, b in res["lolo"].values())
    au = {n: v[0] for n, v in res["lolo14"].items()}
    ba = {n: v[1] for n, v in res["lolo14"].items()}
    return (
        f"  {label}: lolo {lolo}; lolo14 AUROC {np.mean(list(au.values())):.3f} / "
        f"{min(au.values()):.3f}, travel {au['travel']:.3f}, cars {au['cars_commuting']:.3f}; "
        f"bal.acc {np.mean(list(ba.values())):.3f} / {min(ba.values()):.3f}, "
        f"travel {ba['travel']:.3f}, cars {ba['cars_commuting']:.3f}; chosen in the folds: "
        + " ".join(str(k) for k in res["chosen"])
    )


def post_variants(
    embed: Callable[[Sequence[str]], Any], clinc: Path, dbdc3: Path, xstest: Path
) -> None:
    """Print every setting's `.lolo` and `.lolo14` figures."""
    rows = read_jsonl(clinc)
    labels = {n: np.array([r["domain"] in d for r in rows]) for n, (_, d) in LISTS.items()}
    vecs = embed([r["text"] for r in rows]).astype(np.float64)
    ref_texts = reference_texts(dbdc3, xstest)
    ref = embed(ref_texts).astype(np.float64)
    bg_all = scope.topic_vectors(scope.BACKGROUND_TOPICS, embed).astype(np.float64)
    log_words = np.log1p([len(r["text"].split()) for r in rows])
    table = {
        n: list_scores(vecs, Topics(t, embed), ref, bg_all, log_words)
        for n, (t, _) in LISTS.items()
    }
    print(
        f"scope post-processing ({len(ref_texts)} reference requests): lolo AUROC/balanced "
        "accuracy for banking+cards, travel, cooking+restaurants, cars+commuting; lolo14 "
        "AUROC mean / lowest, travel, cars; balanced accuracy the same"
    )
    for label in table["travel"]:
        if label == "features":
            continue
        per_list = {n: table[n][label] for n in LISTS}
        variant = {key: _fixed(per_list, key) for key in per_list["travel"]}
        print(_line(label, evaluate(variant, labels)), flush=True)
    for feats in (
        ("best_cos",),
        ("margin",),
        ("best_cos", "margin"),
        ("log_words",),
        ("log_words", "log_words x log-odds"),
    ):
        variant = {t: _logistic(table, t, feats, labels) for t in WIDE_TEMPERATURES}
        label = "logistic: shipped log-odds + " + " + ".join(feats)
        print(_line(label, evaluate(variant, labels)), flush=True)
