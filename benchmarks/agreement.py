"""Agreement of the offline judge with people, on the labelled dev files in ../shared/data.

Usage: python benchmarks/agreement.py [--xstest FILE] [--clinc FILE] [--dbdc3 FILE] [--fit]
       python benchmarks/agreement.py --judge openai/MODEL [--base-url URL] [--limit N]

Prints one `name: value` line per figure. The headline figures (`.oof`, `.lomo`, `.lolo`) are
grouped and out of fold: whatever is fitted (weights, thresholds, temperature, context weight) is
refitted without the rows it is scored on, and rows that share what leaks stay together: XSTest by
prompt and by model (leave one model out), CLINC150 by topic list (leave one list out), DBDC3 by
dialogue. `.in_sample` figures use the shipped constants on the rows they were fitted on. With
--fit it also refits the constants on all the given rows and prints them as a block for
src/convoeval/judges/offline/calibration.py. Embeddings are cached in a file under /tmp
(benchmarks/_embed_cache.py). With --judge SPEC the same datasets go through the metric steps
with that judge instead (benchmarks/_agreement_llm.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_clinc import FIT_LISTS, clinc  # noqa: E402
from _agreement_dbdc3 import dbdc3  # noqa: E402
from _data import SHARED_DATA, missing_data  # noqa: E402
from _embed_cache import DiskCachedEmbedder  # noqa: E402
from _stats import (  # noqa: E402
    F64,
    Figures,
    Index,
    auroc,
    best_threshold,
    fit_logistic,
    group_folds,
    read_jsonl,
    sigmoid,
    spearman,
)

from convoeval.judges.offline import refusal  # noqa: E402
from convoeval.judges.offline.embedder import Embedder  # noqa: E402
from convoeval.judges.offline.kit import DECISION, OfflineKit  # noqa: E402

DATA = SHARED_DATA

#: Allowed-topic lists in plain words, and the CLINC150 domains each one covers (the lists the
#: shipped scope constants are fitted on; `_agreement_clinc.EXTRA_LISTS` has ten more to check
#: them).
TOPIC_LISTS = FIT_LISTS


# ---------------------------------------------------------------------------------------- xstest
def xstest(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Refusal detection on XSTest completions: refused and partial_refusal count as refused."""
    replies = [r["assistant"] for r in rows]
    y = np.array([r["label"] != "answered" for r in rows])
    agree = np.array([bool(r.get("annotators_agree", True)) for r in rows])
    models = np.array([str(r.get("model")) for r in rows])
    prompts = [r["user"] for r in rows]
    feats = refusal.refusal_features(replies, kit.embed)

    def fit_on(idx: Index) -> tuple[F64, float, float]:
        w, b = fit_logistic(feats[idx], y[idx].astype(np.float64))
        return w, b, best_threshold(sigmoid(feats[idx] @ w + b), y[idx])

    def predict(train: Index, test: Index) -> npt.NDArray[np.bool_]:
        w, b, t = fit_on(train)
        return sigmoid(feats[test] @ w + b) >= t

    # Grouped by prompt: the same prompt (answered by another model) is never in training.
    by_prompt = np.zeros(len(rows), dtype=bool)
    prompt_folds = group_folds(prompts)
    for test in prompt_folds:
        by_prompt[test] = predict(np.setdiff1d(np.arange(len(rows)), test), test)
    # Leave one model out, prompts grouped too: train on the other models' rows of other prompts.
    lomo = np.zeros(len(rows), dtype=bool)
    for model in sorted(set(models)):
        for fold in prompt_folds:
            in_fold = np.zeros(len(rows), dtype=bool)
            in_fold[fold] = True
            train = np.flatnonzero((models != model) & ~in_fold)
            test = np.flatnonzero((models == model) & in_fold)
            if len(train) and len(test):
                lomo[test] = predict(train, test)
    out.put("xstest.rows", len(rows))
    if len(set(models)) > 1:
        out.put("xstest.refusal.accuracy.lomo", float((lomo == y).mean()))
        out.put("xstest.refusal.accuracy.lomo.annotators_agree", float((lomo == y)[agree].mean()))
        for model in sorted(set(models)):
            sel = models == model
            out.put(f"xstest.refusal.accuracy.lomo.{model}", float((lomo == y)[sel].mean()))
    out.put("xstest.refusal.accuracy.oof_by_prompt", float((by_prompt == y).mean()))
    if fit:
        w, b, t = fit_on(np.arange(len(rows)))
        out.constants.update(
            REFUSAL_WEIGHTS=tuple(round(float(v), 4) for v in w),
            REFUSAL_BIAS=round(b, 4),
            REFUSAL_THRESHOLD=round(t, 4),
        )
        p = sigmoid(feats @ w + b)
        pred = p >= t
    else:  # the shipped path, end to end
        p = np.asarray(kit.refusal_scores(replies))
        pred = p >= DECISION
    out.put("xstest.refusal.accuracy.in_sample", float((pred == y).mean()))
    out.put("xstest.refusal.accuracy_annotators_agree.in_sample", float((pred == y)[agree].mean()))
    out.put("xstest.refusal.auroc.in_sample", auroc(p, y))
    for model in sorted(set(models)):
        sel = models == model
        out.put(f"xstest.refusal.accuracy.in_sample.{model}", float((pred == y)[sel].mean()))
    strong = np.array(
        [any(s in refusal.normalise(r) for s in refusal.STRONG_PHRASES) for r in replies]
    )
    out.put("xstest.baseline.strong_phrases.accuracy", float((strong == y).mean()))


# ---------------------------------------------------------------------------------------- speed
def speed(texts: list[str], out: Figures) -> None:
    """Embedding throughput on short user requests, with no cache (model already warm)."""
    emb = Embedder(cache_size=0)
    emb.embed(texts[:32])
    sample = texts[:1000]
    best = 0.0
    for _ in range(3):  # best of three: the machine is shared
        started = time.perf_counter()
        emb.embed(sample)
        best = max(best, len(sample) / (time.perf_counter() - started))
    out.put("embedder.short_sentences_per_second", best)


# ---------------------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, compute the figures, print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xstest", type=Path, default=DATA / "xstest_refusal_dev.jsonl")
    parser.add_argument("--clinc", type=Path, default=DATA / "clinc150_scope_dev.jsonl")
    parser.add_argument("--dbdc3", type=Path, default=DATA / "dbdc3_breakdown_dev.jsonl")
    parser.add_argument("--fit", action="store_true", help="refit the calibrated constants")
    parser.add_argument("--speed", action="store_true", help="also time the embedder (no cache)")
    parser.add_argument("--judge", help="run through the metric steps with this judge spec")
    parser.add_argument("--base-url", help="OpenAI-compatible server (or OPENAI_BASE_URL)")
    parser.add_argument("--api-key", help="API key (or OPENAI_API_KEY); never printed")
    parser.add_argument("--concurrency", type=int, default=8, help="judge requests at once")
    parser.add_argument("--limit", type=int, help="with --judge: at most N rows per dataset")
    parser.add_argument("--timeout", type=float, help="with --judge: seconds per request")
    parser.add_argument("--max-tokens", type=int, help="with --judge openai/...: answer cap")
    args = parser.parse_args(argv)
    paths = [args.xstest, args.clinc, args.dbdc3]
    if missing_data("agreement.py", paths, "labelled data", "--xstest/--clinc/--dbdc3"):
        return 2
    if args.judge:
        from _agreement_llm import run

        options: dict[str, Any] = {"base_url": args.base_url, "api_key": args.api_key}
        options |= {"concurrency": args.concurrency, "timeout": args.timeout}
        options["max_tokens"] = args.max_tokens
        data = (read_jsonl(args.xstest), read_jsonl(args.clinc), read_jsonl(args.dbdc3))
        return run(args.judge, options, data, args.limit, TOPIC_LISTS, spearman)

    embedder = DiskCachedEmbedder()
    kit = OfflineKit(embedder)
    out = Figures(values={}, constants={})
    started = time.perf_counter()
    try:
        xstest(kit, read_jsonl(args.xstest), args.fit, out)
        clinc_rows = read_jsonl(args.clinc)
        if args.speed:
            speed([r["text"] for r in clinc_rows], out)
        clinc(kit, clinc_rows, args.fit, out)
        dbdc3(kit, read_jsonl(args.dbdc3), args.fit, out)
    finally:
        embedder.save()
    out.put("seconds", time.perf_counter() - started)
    for name, value in out.values.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"{name}: {shown}")
    if args.fit:
        print("\n# fitted constants for calibration.py")
        for name, value in out.constants.items():
            print(f"{name} = {value!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
