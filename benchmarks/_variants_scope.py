"""Scope ranking variants for offline_variants.py (issue 17, round 2): how a topic is phrased and
matched (3 or 10 templates, mean vector or closest phrasing, every phrasing as a competitor) and
a z-score of the allowed similarity against the request's background similarities. Each is
scored leave one list out over the 14 lists of agreement.py (temperature and cut-off chosen on
the lists that share no CLINC domain with the list scored, as `.lolo14`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _agreement_clinc import EXTRA_LISTS, FIT_LISTS, SCOPE_TEMPERATURES, TIE
from _stats import F64, auroc, balanced_accuracy, read_jsonl

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline import scope

#: Seven more request-like topic phrasings (committed in 46b94c3 before any figure was measured
#: with them): a topic is then matched by its closest phrasing, or by the mean of all of them.
MORE_TEMPLATES: tuple[str, ...] = (
    "{topic}",
    "I need some help with something to do with {topic}.",
    "Tell me about {topic}.",
    "What should I know about {topic}?",
    "I'm asking about {topic}.",
    "My question is related to {topic}.",
    "How does {topic} work?",
)
#: The IAB tier-1 names (committed in 2d836d5, before any figure; now shipped in scope.py).
IAB_TIER1 = scope.IAB_TIER1
ALL_TEMPLATES = scope.TOPIC_TEMPLATES + MORE_TEMPLATES
#: The background of calibrations up to 2026-12-01.3: the 43 topics written for this library.
OWN = scope.OWN_TOPICS


def _phrasings(
    topics: Sequence[str], templates: Sequence[str], embed: Callable[[Sequence[str]], Any]
) -> F64:
    """(topics, templates, dim) unit vectors of every phrasing."""
    vecs = embed([t.format(topic=x) for x in topics for t in templates]).astype(np.float64)
    return vecs.reshape(len(topics), len(templates), -1)


def _unit(v: F64) -> F64:
    out: F64 = v / np.clip(np.linalg.norm(v, axis=-1, keepdims=True), 1e-12, None)
    return out


def _softmax_logodds(allowed: F64, background: F64, temp: float, prior: float) -> F64:
    """log odds of the allowed mass over the background mass, prior odds divided out."""
    logits = np.concatenate([allowed, background], axis=1) / temp
    top = logits.max(axis=1, keepdims=True)
    a = np.exp(logits[:, : allowed.shape[1]] - top).sum(axis=1)
    b = np.exp(logits[:, allowed.shape[1] :] - top).sum(axis=1)
    out: F64 = np.log(np.clip(a, 1e-300, None)) - np.log(np.clip(b * prior, 1e-300, None))
    return out


def _background_variant(
    vecs: F64,
    topics: Sequence[str],
    background: Sequence[str],
    overlap: float,
    embed: Callable[[Sequence[str]], Any],
) -> dict[float, F64]:
    """The shipped score (3 templates, mean vector, prior odds) with another background list."""
    ma = _unit(_phrasings(topics, scope.TOPIC_TEMPLATES, embed).mean(axis=1))
    mb = _unit(_phrasings(background, scope.TOPIC_TEMPLATES, embed).mean(axis=1))
    mb = mb[(mb @ ma.T).max(axis=1) < overlap]
    prior = len(topics) / max(len(mb), 1)
    return {t: _softmax_logodds(vecs @ ma.T, vecs @ mb.T, t, prior) for t in SCOPE_TEMPERATURES}


def variant_scores(
    texts: Sequence[str], topics: Sequence[str], embed: Callable[[Sequence[str]], Any]
) -> dict[str, dict[Any, F64]]:
    """Every variant's score per temperature (the z-score has one, keyed by every temperature)."""
    vecs = embed(list(texts)).astype(np.float64)
    out: dict[str, dict[Any, F64]] = {}
    wide = tuple(dict.fromkeys(OWN + IAB_TIER1))  # "shopping" is in both
    out["background: the 43 + IAB tier 1 (65), overlap 0.7 (shipped in 2026-12-01.4)"] = (
        _background_variant(vecs, topics, wide, cal.SCOPE_OVERLAP, embed)
    )
    out["background: IAB tier 1 alone (23), overlap 0.7"] = _background_variant(
        vecs, topics, IAB_TIER1, cal.SCOPE_OVERLAP, embed
    )
    by_overlap = {ov: _background_variant(vecs, topics, wide, ov, embed) for ov in (0.6, 0.7, 0.8)}
    out["background: the 43 + IAB tier 1, overlap 0.6/0.7/0.8 chosen in the folds"] = {
        (t, ov): by_overlap[ov][t] for t in SCOPE_TEMPERATURES for ov in (0.6, 0.7, 0.8)
    }
    for tname, templates in (("3", scope.TOPIC_TEMPLATES), ("10", ALL_TEMPLATES)):
        pa = _phrasings(topics, templates, embed)
        pb = _phrasings(OWN, templates, embed)
        ma, mb = _unit(pa.mean(axis=1)), _unit(pb.mean(axis=1))
        keep = (mb @ ma.T).max(axis=1) < cal.SCOPE_OVERLAP
        pb, mb = pb[keep], mb[keep]
        prior = len(topics) / max(len(mb), 1)
        mean_a, mean_b = vecs @ ma.T, vecs @ mb.T
        max_a = np.einsum("nd,tkd->ntk", vecs, pa).max(axis=2)
        max_b = np.einsum("nd,tkd->ntk", vecs, pb).max(axis=2)
        flat_a = vecs @ pa.reshape(-1, pa.shape[-1]).T
        flat_b = vecs @ pb.reshape(-1, pb.shape[-1]).T
        out[
            f"{tname} templates, mean vector"
            + (" (43 background, 2026-12-01.3)" if tname == "3" else "")
        ] = {t: _softmax_logodds(mean_a, mean_b, t, prior) for t in SCOPE_TEMPERATURES}
        out[f"{tname} templates, closest phrasing"] = {
            t: _softmax_logodds(max_a, max_b, t, prior) for t in SCOPE_TEMPERATURES
        }
        out[f"{tname} templates, every phrasing competes"] = {
            t: _softmax_logodds(flat_a, flat_b, t, prior) for t in SCOPE_TEMPERATURES
        }
        z = (mean_a.max(axis=1) - mean_b.mean(axis=1)) / (mean_b.std(axis=1) + 1e-9)
        out[f"{tname} templates, z-score of the best allowed vs background"] = {
            t: z for t in SCOPE_TEMPERATURES
        }
        if tname == "3":
            # Centred: the mean background topic vector taken out of every vector first, so a
            # request's likeness to all templated topics alike does not count.
            mu = mb.mean(axis=0)
            cv, ca, cb = _unit(vecs - mu), _unit(ma - mu), _unit(mb - mu)
            out["3 templates, centred on the background mean"] = {
                t: _softmax_logodds(cv @ ca.T, cv @ cb.T, t, prior) for t in SCOPE_TEMPERATURES
            }

            # Second order: does the request relate to the background topics the way the
            # allowed topic does? Pearson correlation of the two similarity profiles.
            def zs(m: F64) -> F64:
                out_: F64 = (m - m.mean(axis=1, keepdims=True)) / (
                    m.std(axis=1, keepdims=True) + 1e-9
                )
                return out_

            corr = (zs(mean_b) @ zs(ma @ mb.T).T / mean_b.shape[1]).max(axis=1)
            out["3 templates, profile correlation alone"] = {t: corr for t in SCOPE_TEMPERATURES}
            base = out["3 templates, mean vector (43 background, 2026-12-01.3)"]
            out["3 templates, mean vector + a x profile correlation"] = {
                (t, a): base[t] + a * corr for t in SCOPE_TEMPERATURES for a in (0, 1, 2, 4, 8, 16)
            }
    return out


def scope_ranking_variants(
    embed: Callable[[Sequence[str]], Any], clinc_path: Any, detail: Sequence[str] = ()
) -> None:
    """AUROC and balanced accuracy per variant, leave one of 14 lists out."""
    rows = read_jsonl(clinc_path)
    texts = [r["text"] for r in rows]
    lists = FIT_LISTS | EXTRA_LISTS
    table = {n: variant_scores(texts, list(t), embed) for n, (t, _) in lists.items()}
    print_ranking(table, rows, detail)


def print_ranking(
    table: dict[str, dict[str, dict[Any, F64]]],
    rows: Sequence[dict[str, Any]],
    detail: Sequence[str] = (),
    four: bool = False,
) -> None:
    """Score each variant of `table` (list -> variant -> key -> score per row) leave one of the 14
    lists out, its key (temperature, ...) and cut-off chosen as `.lolo14`, and print a line each;
    with `four`, each line ends with travel's and cars' `.lolo` figures (chosen on the other three
    of the four fitted lists, as agreement.py's headline)."""
    lists = FIT_LISTS | EXTRA_LISTS
    labels = {n: np.array([r["domain"] in d for r in rows]) for n, (_, d) in lists.items()}
    print(
        "scope ranking variant (leave one of 14 lists out): AUROC mean / min, travel, cars; "
        "balanced accuracy mean / min, travel, cars"
    )
    for variant in table["travel"]:

        def choose(names: list[str], v: str = variant) -> tuple[Any, float]:
            per_key: dict[Any, tuple[float, float]] = {}
            for t in table[names[0]][v]:
                pooled = np.concatenate([table[n][v][t] for n in names])
                per_key[t] = max(
                    (
                        float(
                            np.mean(
                                [balanced_accuracy(table[n][v][t] >= c, labels[n]) for n in names]
                            )
                        ),
                        float(c),
                    )
                    for c in np.quantile(pooled, np.linspace(0.3, 0.995, 140))
                )
            # the first key (sharpest temperature) within TIE of the best wins, as agreement.py
            top = max(m for m, _ in per_key.values())
            key = next(k for k, (m, _) in per_key.items() if m >= top - TIE)
            return key, per_key[key][1]

        au, ba, four_of = {}, {}, {}
        for name in lists:
            t, cut = choose([n for n in lists if not lists[n][1] & lists[name][1]])
            s = table[name][variant][t]
            au[name] = auroc(s, labels[name])
            ba[name] = balanced_accuracy(s >= cut, labels[name])
            if name in FIT_LISTS:  # `.lolo`: chosen on the other three of the four lists
                t, cut = choose([n for n in FIT_LISTS if n != name])
                s = table[name][variant][t]
                four_of[name] = (
                    auroc(s, labels[name]),
                    balanced_accuracy(s >= cut, labels[name]),
                )
        if variant in detail:
            print(f"  {variant}, per list (lolo14 AUROC / balanced accuracy):")
            for name in lists:
                print(f"    {name}: {au[name]:.3f} / {ba[name]:.3f}")
            print(
                "    four lists (lolo): "
                + ", ".join(f"{a:.3f} / {b:.3f}" for a, b in four_of.values())
            )
        print(
            f"  {variant}: {np.mean(list(au.values())):.3f} / {min(au.values()):.3f}, "
            f"{au['travel']:.3f}, {au['cars_commuting']:.3f}; "
            f"{np.mean(list(ba.values())):.3f} / {min(ba.values()):.3f}, "
            f"{ba['travel']:.3f}, {ba['cars_commuting']:.3f}"
            + (
                f"; lolo travel {four_of['travel'][0]:.3f} / {four_of['travel'][1]:.3f}, cars "
                f"{four_of['cars_commuting'][0]:.3f} / {four_of['cars_commuting'][1]:.3f}"
                if four
                else ""
            )
        )
