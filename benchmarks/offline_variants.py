"""Variants of the offline judge that were tried for issue 17 and not shipped, measured the same
grouped way as agreement.py, so the README's "tried" figures come from a command.

Usage: python benchmarks/offline_variants.py [relevance] [scope] [scope_ranking] [refusal]
       [scope_expand] [scope_post] [relevance_head] [refusal_head] [--clinc FILE] [--dbdc3 FILE]
       [--xstest FILE]

relevance: logistic models over sets of relevance features on DBDC3, out of fold by dialogue
(Spearman with (O - X) / votes, agreement and AUROC on the majority turns), each also fitted on
every dev turn and applied to the bundled examples (do they keep their expected relevancy
verdicts?). scope: per-list threshold adjustments on top of the shipped scope score, leave one
list out over the 14 lists of agreement.py (chosen on lists that share no domain with the list
scored): mean and lowest balanced accuracy, and travel's and cars'. scope_ranking and scope_expand:
other ways of ranking requests (_variants_scope.py; topic names expanded into nearby words of the
tokenizer vocabulary, _variants_expand.py). scope_post: embeddings post-processed with a mean and
principal components of non-CLINC requests, a hub penalty, and a logistic two-feature score
(_variants_scope_post.py), `.lolo` and `.lolo14`. relevance_head: a learned head over the reply and
input vectors, alone or stacked into the feature model, all-but-the-top vectors, and a
swapped-reply check (_variants_relevance_head.py; 6-9 minutes at load 4-5). refusal_head: a learned
head over the reply opening's embedding, alone or stacked, leave one model out
(_variants_refusal_head.py; about 12 minutes at load 3). Embeddings come from the same disk cache
as agreement.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from _agreement_clinc import EXTRA_LISTS, FIT_LISTS  # noqa: E402
from _agreement_dbdc3 import dbdc3_windows  # noqa: E402
from _data import add_labelled_options, missing_labelled  # noqa: E402
from _embed_cache import DiskCachedEmbedder  # noqa: E402
from _stats import (  # noqa: E402
    F64,
    auroc,
    balanced_accuracy,
    best_threshold,
    fit_standardised,
    group_folds,
    read_jsonl,
    spearman,
)
from _variants_expand import expansion_variants  # noqa: E402
from _variants_refusal import refusal_variants  # noqa: E402
from _variants_refusal_head import head_variants  # noqa: E402
from _variants_relevance_head import relevance_head_variants  # noqa: E402
from _variants_scope import scope_ranking_variants  # noqa: E402
from _variants_scope_post import post_variants  # noqa: E402

from convoeval import evaluate  # noqa: E402
from convoeval.judges.offline import (  # noqa: E402
    OfflineJudge,
    OfflineKit,
    Window,
    scope,
)
from convoeval.judges.offline import calibration as cal  # noqa: E402
from convoeval.judges.offline import relevance_features as rf  # noqa: E402

EXAMPLES = HERE.parent / "examples" / "support.jsonl"
#: The one bundled exchange whose expected verdict is "not relevant" (tests/judges/offline).
OFF_TOPIC_REPLY = "Standard shipping takes 3 to 5 business days"


class _RecordingKit(OfflineKit):
    """A kit that keeps every relevance window it is asked about."""

    def __init__(self, embedder: Any) -> None:
        super().__init__(embedder)
        self.windows: list[Window] = []

    def relevance_scores(self, windows: Sequence[Window]) -> list[float]:
        self.windows.extend(windows)
        return super().relevance_scores(windows)


def _columns(windows: list[Window], embed: Callable[[Sequence[str]], Any]) -> dict[str, F64]:
    """Every candidate feature, by name: the shipped ones and the ones left out."""
    feats = rf.relevance_features(windows, embed)
    cols = {name: feats[:, k] for k, name in enumerate(rf.FEATURE_NAMES)}
    replies = embed([w.reply for w in windows]).astype(np.float64)
    joined = embed([w.context() for w in windows]).astype(np.float64)
    cols["cos_joined_context"] = (replies * joined).sum(axis=1)
    last_reply = [([r for _, r in w.history if r.strip()] or [w.user])[-1] for w in windows]
    last_input = [([u for u, _ in w.history if u.strip()] or [w.user])[-1] for w in windows]
    cols["cos_last_reply"] = (replies * embed(last_reply)).sum(axis=1)
    cols["cos_last_input"] = (replies * embed(last_input)).sum(axis=1)
    cols["input_is_question"] = np.array([float(rf.is_question(w.user)) for w in windows])
    cols["input_word_overlap"] = np.array([rf.word_overlap(w.reply, w.user) for w in windows])
    cols["cos_input_squared"] = cols["cos_input"] ** 2
    cols["has_history"] = np.array([float(bool(w.history)) for w in windows])
    return cols


#: Five more features that cost no model time (no joined text, no position).
_FREE = (
    "cos_last_reply",
    "cos_last_input",
    "input_is_question",
    "input_word_overlap",
    "cos_input_squared",
)

RELEVANCE_SETS: dict[str, tuple[str, ...]] = {
    "shipped (11 features)": rf.FEATURE_NAMES,
    "the 5 features of calibration 2026-12-01.2, window as one joined text": (
        "cos_input",
        "cos_joined_context",
        "generic",
        "word_overlap",
        "reply_is_question",
    ),
    "shipped + joined-text window cosine": (*rf.FEATURE_NAMES, "cos_joined_context"),
    "shipped + 5 more, all free (no joined text, no position)": (*rf.FEATURE_NAMES, *_FREE),
    "shipped + 6 more (no position)": (*rf.FEATURE_NAMES, *_FREE, "cos_joined_context"),
    "shipped + 6 more + has_history (a position feature)": (
        *rf.FEATURE_NAMES,
        *_FREE,
        "cos_joined_context",
        "has_history",
    ),
}


def bundled_examples(embedder: DiskCachedEmbedder) -> tuple[list[Window], np.ndarray]:
    """The relevance windows of the bundled examples and their expected verdicts."""
    kit = _RecordingKit(embedder)
    evaluate(
        str(EXAMPLES), ["conversation_relevancy"], judge=OfflineJudge(kit), show_progress=False
    )
    expected = np.array([not w.reply.startswith(OFF_TOPIC_REPLY) for w in kit.windows])
    return kit.windows, expected


def relevance(embedder: DiskCachedEmbedder, dbdc3_path: Path) -> None:
    """Feature sets on DBDC3 out of fold, and whether each keeps the bundled examples right."""
    items = dbdc3_windows(read_jsonl(dbdc3_path))
    windows = [item[0] for item in items]
    o, x, total = (np.array([item[i] for item in items]) for i in (1, 2, 3))
    majority = (o * 2 > total) | (x * 2 > total)
    relevant = o * 2 > total
    target = (o - x) / np.maximum(total, 1)
    examples, expected = bundled_examples(embedder)
    dev, ex = _columns(windows, embedder.embed), _columns(examples, embedder.embed)
    folds = group_folds([item[4] for item in items])

    share = o / np.maximum(total, 1)
    soft = [False]

    def fit(cols: F64, idx: np.ndarray) -> tuple[F64, float, float]:
        sel = idx[majority[idx]]
        if soft[0]:  # every voted turn, the share of "fine" votes as a soft label
            w, b = fit_standardised(cols[idx], share[idx])
        else:
            w, b = fit_standardised(cols[idx], relevant[sel].astype(np.float64), majority[idx])
        return w, b, best_threshold(cols[sel] @ w + b, relevant[sel])

    print("relevance feature set: Spearman / agreement / AUROC out of fold; examples kept")
    runs = [(label, names, False) for label, names in RELEVANCE_SETS.items()]
    runs += [
        (f"{label}, soft labels on all turns", names, True)
        for label, names in list(RELEVANCE_SETS.items())[:1]
    ]
    for label, names, soft[0] in runs:
        cols = np.column_stack([dev[n] for n in names])
        oof = np.zeros(len(items))
        for test in folds:
            w, b, cut = fit(cols, np.setdiff1d(np.arange(len(items)), test))
            oof[test] = cols[test] @ w + b - cut
        w, b, cut = fit(cols, np.arange(len(items)))
        right = (np.column_stack([ex[n] for n in names]) @ w + b - cut >= 0) == expected
        print(
            f"  {label}: {spearman(oof, target):.3f} / "
            f"{((oof >= 0) == relevant)[majority].mean():.3f} / "
            f"{auroc(oof[majority], relevant[majority]):.3f}; examples {right.sum()}/{len(right)}"
        )


def scope_variants(embedder: DiskCachedEmbedder, clinc_path: Path) -> None:
    """Per-list threshold adjustments, leave one list out over the 14 lists."""
    rows = read_jsonl(clinc_path)
    texts = [r["text"] for r in rows]
    lists = FIT_LISTS | EXTRA_LISTS
    labels = {n: np.array([r["domain"] in d for r in rows]) for n, (_, d) in lists.items()}
    # These variants were measured on the score of calibration 2026-12-01.3 (43 background
    # topics), and still are, so that their README figures reproduce.
    own = scope.OWN_TOPICS
    background = scope.topic_vectors(own, embedder.embed)
    # Probes: each background topic in two phrasings the scope templates do not use.
    probe_templates = ("I'd like to ask something about {topic}.", "Tell me about {topic}.")
    score: dict[str, F64] = {}
    adjust: dict[str, dict[str, float]] = {}
    for name, (topics, _) in lists.items():
        probes = [t.format(topic=b) for b in own for t in probe_templates]
        logit = _logit(
            scope.scope_probabilities(
                texts + probes,
                list(topics),
                embedder.embed,
                temperature=0.07,
                overlap=cal.SCOPE_OVERLAP,
                background_topics=own,
            )
        )
        score[name], probe = logit[: len(texts)], logit[len(texts) :]
        allowed = scope.topic_vectors(list(topics), embedder.embed)
        adjust[name] = {
            "probe mean": float(probe.mean()),
            "probe 90th percentile": float(np.quantile(probe, 0.9)),
            "probe max": float(probe.max()),
            "closest background topic": float((background @ allowed.T).max()),
        }
    variants: dict[str, Callable[[str, float], F64]] = {
        "shared cut-off (shipped)": lambda n, a: score[n],
    }
    for key in adjust["travel"]:
        variants[f"minus a x {key}"] = lambda n, a, k=key: score[n] - a * adjust[n][k]
    print("scope threshold variant: mean / lowest balanced accuracy; travel; cars (leave one out)")
    for label, make in variants.items():
        right, chosen = {}, []
        for name in lists:
            train = [m for m in lists if not lists[m][1] & lists[name][1]]
            best = (-1.0, 0.0, 0.0)
            for a in np.linspace(-2.0, 2.0, 21) if "minus" in label else [0.0]:
                pooled = np.concatenate([make(m, a) for m in train])
                for cut in np.quantile(pooled, np.linspace(0.3, 0.995, 120)):
                    m_ba = np.mean([balanced_accuracy(make(m, a) >= cut, labels[m]) for m in train])
                    best = max(best, (float(m_ba), float(a), float(cut)))
            _, a, cut = best
            chosen.append(a)
            right[name] = balanced_accuracy(make(name, a) >= cut, labels[name])
        print(
            f"  {label}: {np.mean(list(right.values())):.3f} / {min(right.values()):.3f}; "
            f"{right['travel']:.3f}; {right['cars_commuting']:.3f}"
            + (f"; a from {min(chosen):.1f} to {max(chosen):.1f}" if "minus" in label else "")
        )


def _logit(p: Sequence[float]) -> F64:
    q = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1 - 1e-12)
    out: F64 = np.log(q / (1 - q))
    return out


#: Scope ranking variants printed list by list too.
DETAIL = (
    "3 templates, mean vector (43 background, 2026-12-01.3)",
    "background: the 43 + IAB tier 1 (65), overlap 0.7 (shipped in 2026-12-01.4)",
    "background: IAB tier 1 alone (23), overlap 0.7",
)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and print the variants asked for (all by default)."""
    known = [
        "relevance",
        "scope",
        "refusal",
        "refusal_head",
        "scope_ranking",
        "scope_expand",
        "scope_post",
        "relevance_head",
    ]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", help=f"parts to run (default: all): {known}")
    add_labelled_options(parser)
    args = parser.parse_args(argv)
    parts = args.parts or known
    if set(parts) - set(known):
        parser.error(f"unknown part(s) {sorted(set(parts) - set(known))}")
    if missing_labelled("offline_variants.py", args):
        return 2
    embedder = DiskCachedEmbedder()
    try:
        if "relevance" in parts:
            relevance(embedder, args.dbdc3)
        if "relevance_head" in parts:
            examples, expected = bundled_examples(embedder)
            relevance_head_variants(
                embedder.embed, args.dbdc3, args.clinc, args.xstest, examples, expected
            )
        if "scope" in parts:
            scope_variants(embedder, args.clinc)
        if "scope_ranking" in parts:
            scope_ranking_variants(embedder.embed, args.clinc, DETAIL)
        if "refusal" in parts:
            refusal_variants(embedder.embed, args.xstest)
        if "refusal_head" in parts:
            head_variants(embedder.embed, args.xstest)
        if "scope_expand" in parts:
            expansion_variants(embedder.embed, args.clinc)
        if "scope_post" in parts:
            post_variants(embedder.embed, args.clinc, args.dbdc3, args.xstest)
    finally:
        embedder.save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
