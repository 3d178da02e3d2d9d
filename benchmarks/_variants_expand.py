"""Scope with topic names expanded into related words (issue 17), for offline_variants.py: each
topic also phrased through its k nearest whole words of the model's own tokenizer vocabulary
(no CLINC data), weighted against the shipped templates, and scored leave one of 14 lists out as
`.lolo14` (temperature and cut-off chosen in the folds), next to the shipped score."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _agreement_clinc import EXTRA_LISTS, FIT_LISTS, SCOPE_TEMPERATURES
from _embed_cache import CACHE_FILE, DiskCachedEmbedder
from _stats import F64, read_jsonl
from _variants_scope import _softmax_logodds, _unit, print_ranking

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline import scope
from convoeval.judges.offline.embedder import Embedder

TOKENIZER = Path(scope.__file__).parent / "assets" / "tokenizer.json"
#: The vocabulary's vectors live in their own file next to agreement.py's cache (same key).
VOCAB_CACHE = CACHE_FILE.with_name(CACHE_FILE.stem + "-vocab.pkl")
#: How an expansion word is phrased before it is embedded (one text per word).
EXPANSION_TEMPLATE = "a question about {word}"
KS = (5, 10, 20)
WEIGHTS = (0.25, 0.5, 1.0)
#: Topics whose expansion words are printed, so a reader can judge them.
SHOWN = ("travel", "cars", "commuting")


def vocabulary(path: Path = TOKENIZER) -> list[str]:
    """Whole words of the WordPiece vocabulary: no '##' pieces, letters only, 3+ characters."""
    vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    return [w for w in vocab if w.isascii() and w.isalpha() and len(w) >= 3]


class Expander:
    """Nearest vocabulary words of a topic name (bare word against bare topic name)."""

    def __init__(self, embed: Callable[[Sequence[str]], Any]) -> None:
        self.words = vocabulary()
        cached = DiskCachedEmbedder(VOCAB_CACHE)
        try:
            self.vecs = cached.embed(self.words).astype(np.float64)
        finally:
            cached.save()
        self.embed = embed

    def neighbours(self, topic: str, k: int, distinct: bool = False) -> list[str]:
        """The k closest words, leaving out the words of the topic name itself, and with
        `distinct` their inflections too (see `_inflection`)."""
        own = set(topic.lower().replace(",", " ").split())
        sims = self.vecs @ self.embed([topic])[0].astype(np.float64)
        picked: list[str] = []
        for i in np.argsort(-sims):
            word = self.words[i]
            if word not in own and not (distinct and any(_inflection(word, o) for o in own)):
                picked.append(word)
            if len(picked) == k:
                break
        return picked

    def expanded(self, topics: Sequence[str], k: int, weight: float, distinct: bool = False) -> F64:
        """(topics, dim) unit vectors: template mean + weight x mean of the expansion phrasings."""
        base = self.embed(
            [t.format(topic=x) for x in topics for t in scope.TOPIC_TEMPLATES]
        ).astype(np.float64)
        base = base.reshape(len(topics), len(scope.TOPIC_TEMPLATES), -1).mean(axis=1)
        if weight == 0 or k == 0:
            return _unit(base)
        words = [
            EXPANSION_TEMPLATE.format(word=w)
            for x in topics
            for w in self.neighbours(x, k, distinct)
        ]
        extra = self.embed(words).astype(np.float64).reshape(len(topics), k, -1).mean(axis=1)
        return _unit(base + weight * extra)


def _inflection(word: str, name_word: str) -> bool:
    """Is `word` a form of `name_word`: do they share their first min(5, shorter length)
    letters (car/cars, travelling/travel, commuted/commuting)?"""
    n = min(5, len(word), len(name_word))
    return word[:n] == name_word[:n]


def expand_scores(vecs: F64, topics: Sequence[str], ex: Expander) -> dict[str, dict[float, F64]]:
    """Per variant name, the prior-odds log odds per temperature (shipped softmax)."""
    out: dict[str, dict[float, F64]] = {}
    plain_a = ex.expanded(topics, 0, 0.0)
    plain_b = ex.expanded(scope.BACKGROUND_TOPICS, 0, 0.0)

    def score(ma: F64, mb: F64) -> dict[float, F64]:
        mb = mb[(mb @ ma.T).max(axis=1) < cal.SCOPE_OVERLAP]
        prior = len(topics) / max(len(mb), 1)
        return {t: _softmax_logodds(vecs @ ma.T, vecs @ mb.T, t, prior) for t in SCOPE_TEMPERATURES}

    out["shipped: 3 templates, 65 background topics"] = score(plain_a, plain_b)
    for distinct in (False, True):
        for k in KS:
            for w in WEIGHTS:
                name = f"k={k}, weight {w}" + (", inflections dropped" if distinct else "")
                ma = ex.expanded(topics, k, w, distinct)
                out[f"{name}, allowed only"] = score(ma, plain_b)
                out[f"{name}, allowed and background"] = score(
                    ma, ex.expanded(scope.BACKGROUND_TOPICS, k, w, distinct)
                )
    return out


def run_time_cost(ex: Expander) -> None:
    """Texts added per run and the time to embed them with a plain (uncached) Embedder."""
    plain = Embedder(cache_size=0)
    plain.embed(["warm up"] * 8)
    for k in KS:
        texts = [
            EXPANSION_TEMPLATE.format(word=w)
            for x in scope.BACKGROUND_TOPICS
            for w in ex.neighbours(x, k)
        ]
        started = time.perf_counter()
        plain.embed(texts)
        took = time.perf_counter() - started
        print(
            f"  k={k}: {k} more texts per allowed topic; background too: "
            f"{len(texts)} more once per run, embedded in {took:.2f} s ({len(texts) / took:.0f}/s)"
        )
    started = time.perf_counter()
    ex.neighbours("travel", 20)
    print(
        f"  nearest-word search over {len(ex.words)} words: "
        f"{(time.perf_counter() - started) * 1000:.1f} ms per topic, with a "
        f"{len(ex.words)} x 384 matrix ({ex.vecs.astype(np.float32).nbytes / 1e6:.1f} MB float32) "
        "to ship or build (building it embeds every word once)"
    )


def expansion_variants(embed: Callable[[Sequence[str]], Any], clinc_path: Any) -> None:
    """Print the chosen words, the ranking table and the run-time cost."""
    ex = Expander(embed)
    print(f"vocabulary: {len(ex.words)} whole words; expansion phrasing '{EXPANSION_TEMPLATE}'")
    for topic in SHOWN:
        print(f"  {topic}: {', '.join(ex.neighbours(topic, max(KS)))}")
        print(f"  {topic}, inflections dropped: {', '.join(ex.neighbours(topic, max(KS), True))}")
    rows = read_jsonl(clinc_path)
    vecs = embed([r["text"] for r in rows]).astype(np.float64)
    lists = FIT_LISTS | EXTRA_LISTS
    table = {n: expand_scores(vecs, t, ex) for n, (t, _) in lists.items()}
    print_ranking(table, rows, ("shipped: 3 templates, 65 background topics",), four=True)
    print("run-time cost (once per run):")
    run_time_cost(ex)
