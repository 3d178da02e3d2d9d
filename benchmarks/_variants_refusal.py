"""Refusal feature variants for offline_variants.py (issue 17, round 2): sentence-level similarity
to the prototypes of _refusal_prototypes.py, substance and length, each set scored leave one
model out on XSTest (prompts grouped, as agreement.py), on the restyled replies, and on the
hand-written refusal_styles.jsonl (fitted on every dev row, as shipping would)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import _refusal_prototypes as rp
import numpy as np
from _agreement_xstest import STYLES, restyled
from _stats import (
    F64,
    best_threshold,
    fit_logistic,
    group_folds,
    model_out_splits,
    read_jsonl,
    sigmoid,
)

from convoeval.judges.offline import refusal

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_DIGIT = re.compile(r"\d")
_LIST = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*\u2022])\s+\S")
_CODE = re.compile(r"```|`[^`\n]+`")
GROUPS = {
    "referral": rp.REFERRAL,
    "disclaimer": rp.DISCLAIMER,
    "redirect": rp.REDIRECT,
    "moralising": rp.MORALISING,
    "decline": refusal.REFUSAL_PROTOTYPES,
}
MAX_SENTENCES = 6


def sentences(reply: str) -> list[str]:
    """The reply's first sentences with three words or more (list markers and headers dropped)."""
    parts = [s.strip() for s in _SPLIT.split(reply.strip())]
    kept = [s for s in parts if len(s.split()) >= 3]
    return (kept or [reply.strip() or "(empty)"])[:MAX_SENTENCES]


_NEG = re.compile(r"\b(?:not|no|never|nor)\b|n't\b")
_WORD = re.compile(r"[a-z0-9']+")
_STOP_TEXT = """the a an and or to of in on is are was were i you it that this what do does did be
    for with my your me we they he she have has not no yes why how can should would could who"""
_STOP = frozenset(_STOP_TEXT.split())


def _content(text: str) -> set[str]:
    return {w for w in _WORD.findall(refusal.normalise(text)) if w not in _STOP}


def negated_restatement(reply: str, request: str) -> float:
    """Share of the request's content words in the reply's first sentence, when that sentence
    is negated ("X is not inherently weaker than Y"): the premise is rejected, not answered."""
    first = sentences(reply)[0]
    if not _NEG.search(refusal.normalise(first)):
        return 0.0
    want = _content(request)
    return len(want & _content(first)) / max(1, len(want))


def columns(
    replies: Sequence[str],
    embed: Callable[[Sequence[str]], Any],
    requests: Sequence[str] | None = None,
) -> dict[str, F64]:
    """Every candidate feature by name: the shipped six and the new ones."""
    base = refusal.refusal_features(replies, embed)
    cols = {n: base[:, k] for k, n in enumerate(refusal.FEATURE_NAMES)}
    per = [sentences(r) for r in replies]
    flat = [s for ss in per for s in ss]
    vecs = embed(flat).astype(np.float64)
    answer = embed(rp.SUBSTANCE + refusal.ANSWER_PROTOTYPES).astype(np.float64)
    ans = (vecs @ answer.T).max(axis=1)
    group_sims = {g: (vecs @ embed(p).astype(np.float64).T).max(axis=1) for g, p in GROUPS.items()}
    bounds = np.cumsum([0] + [len(ss) for ss in per])
    for g, sims in group_sims.items():
        cols[f"{g}_margin_max"] = np.array(
            [(sims - ans)[a:b].max() for a, b in itertools.pairwise(bounds)]
        )
    decl = np.max(np.column_stack(list(group_sims.values())), axis=1)
    margin = decl - ans
    spans = list(itertools.pairwise(bounds))
    cols["any_margin_max"] = np.array([margin[a:b].max() for a, b in spans])
    cols["any_margin_mean"] = np.array([margin[a:b].mean() for a, b in spans])
    cols["any_margin_first"] = np.array([margin[a] for a, _ in spans])
    cols["declining_share"] = np.array([(margin[a:b] > 0).mean() for a, b in spans])
    cols["substance_max"] = np.array([ans[a:b].max() for a, b in spans])
    cols["has_digits_list_code"] = np.array(
        [float(bool(_DIGIT.search(r) or _LIST.search(r) or _CODE.search(r))) for r in replies]
    )
    cols["log_words"] = np.array([math.log1p(len(r.split())) for r in replies])
    reqs = requests or [""] * len(replies)
    cols["negated_restatement"] = np.array(
        [negated_restatement(r, q) for r, q in zip(replies, reqs, strict=True)]
    )
    cols["negated_restatement_half"] = (cols["negated_restatement"] >= 0.5).astype(np.float64)
    names = refusal.FEATURE_NAMES
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            cols[f"{a}*{b}"] = cols[a] * cols[b]
    return cols


PRODUCTS = tuple(
    f"{a}*{b}" for i, a in enumerate(refusal.FEATURE_NAMES) for b in refusal.FEATURE_NAMES[i + 1 :]
)


SETS: dict[str, tuple[str, ...]] = {
    "shipped (6 features)": refusal.FEATURE_NAMES,
    "+ the 15 pairwise products of the shipped six": (*refusal.FEATURE_NAMES, *PRODUCTS),
    "+ negated restatement of the request": (*refusal.FEATURE_NAMES, "negated_restatement"),
    "+ negated restatement >= half": (*refusal.FEATURE_NAMES, "negated_restatement_half"),
    "+ negated restatement, any_margin_max": (
        *refusal.FEATURE_NAMES,
        "negated_restatement",
        "any_margin_max",
    ),
    "+ any_margin_max": (*refusal.FEATURE_NAMES, "any_margin_max"),
    "+ 5 group margins": (
        *refusal.FEATURE_NAMES,
        "referral_margin_max",
        "disclaimer_margin_max",
        "redirect_margin_max",
        "moralising_margin_max",
        "decline_margin_max",
    ),
    "+ any max/mean/first": (
        *refusal.FEATURE_NAMES,
        "any_margin_max",
        "any_margin_mean",
        "any_margin_first",
    ),
    "+ any_margin_max, substance": (
        *refusal.FEATURE_NAMES,
        "any_margin_max",
        "substance_max",
        "has_digits_list_code",
        "log_words",
    ),
    "+ all new": (
        *refusal.FEATURE_NAMES,
        "referral_margin_max",
        "disclaimer_margin_max",
        "redirect_margin_max",
        "moralising_margin_max",
        "decline_margin_max",
        "any_margin_max",
        "any_margin_mean",
        "any_margin_first",
        "declining_share",
        "substance_max",
        "has_digits_list_code",
        "log_words",
    ),
}


def refusal_variants(embed: Callable[[Sequence[str]], Any], xstest_path: Any) -> None:
    """Each feature set: .lomo accuracy (and per model), restyled recall, refusal_styles right."""
    rows = read_jsonl(xstest_path)
    y = np.array([r["label"] != "answered" for r in rows])
    models = np.array([str(r.get("model")) for r in rows])
    dev = columns([r["assistant"] for r in rows], embed, [r["user"] for r in rows])
    texts, source_list, style_list = restyled(rows)
    source, style = np.array(source_list), np.array(style_list)
    rest = columns(texts, embed, [rows[i]["user"] for i in source_list])
    srows = read_jsonl(STYLES)
    sy = np.array([bool(r["refused"]) for r in srows])
    sty = columns([r["assistant"] for r in srows], embed, [r["user"] for r in srows])
    folds = group_folds([r["user"] for r in rows])

    def fit(x: F64, idx: np.ndarray) -> tuple[F64, float, float]:
        w, b = fit_logistic(x[idx], y[idx].astype(np.float64))  # as agreement.py fits
        return w, b, best_threshold(sigmoid(x[idx] @ w + b), y[idx])

    print(
        "refusal feature set: .lomo (gpt4/llama2new/mistral); buried recall/kept; partial;"
        " styles declines/answers kept"
    )
    for label, names in SETS.items():
        x = np.column_stack([dev[n] for n in names])
        xr = np.column_stack([rest[n] for n in names])
        pred = np.zeros(len(rows), dtype=bool)
        rpred = np.zeros(len(texts), dtype=bool)
        for train, test in model_out_splits(models, folds):
            w, b, t = fit(x, train)
            pred[test] = sigmoid(x[test] @ w + b) >= t
            mine = np.flatnonzero(np.isin(source, test))
            rpred[mine] = sigmoid(xr[mine] @ w + b) >= t
        w, b, t = fit(x, np.arange(len(rows)))
        sp = sigmoid(np.column_stack([sty[n] for n in names]) @ w + b) >= t
        per = " / ".join(f"{(pred == y)[models == m].mean():.3f}" for m in sorted(set(models)))
        buried, refused = style == "buried", y[source]
        print(
            f"  {label}: {(pred == y).mean():.3f} ({per}); "
            f"{rpred[buried & refused].mean():.3f}/{(~rpred[buried & ~refused]).mean():.3f}; "
            f"{rpred[style == 'partial'].mean():.3f}; {int(sp[sy].sum())}/{int(sy.sum())}"
            f" / {int((~sp[~sy]).sum())}/{int((~sy).sum())}"
        )
