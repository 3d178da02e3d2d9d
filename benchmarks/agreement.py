"""Agreement of the offline judge with people, on the labelled dev files in ../shared/data.

Usage: python benchmarks/agreement.py [--xstest FILE] [--clinc FILE] [--dbdc3 FILE] [--fit]
       python benchmarks/agreement.py --judge openai/MODEL [--base-url URL] [--limit N]

Prints one `name: value` line per figure. With --fit it also refits the few calibrated constants on
the given files and prints them as a block for src/convoeval/judges/offline/calibration.py; the
figures printed alongside are then for the refitted constants. Every fitted figure also gets a
5-fold cross-validated estimate (`.cv5`), where the fit is redone on four folds and scored on the
fifth, so that the dev figure's optimism can be judged. With --judge SPEC the same datasets go
through the metric steps with that judge instead (benchmarks/_agreement_llm.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from convoeval.judges.offline import calibration as cal  # noqa: E402
from convoeval.judges.offline import refusal, scope  # noqa: E402
from convoeval.judges.offline.embedder import Embedder  # noqa: E402
from convoeval.judges.offline.kit import DECISION, OfflineKit  # noqa: E402
from convoeval.judges.offline.relevance import Window, relevance_similarity  # noqa: E402

DATA = REPO.parent / "shared" / "data"
F64 = npt.NDArray[np.float64]

#: Allowed-topic lists in plain words, and the CLINC150 domains each one covers.
TOPIC_LISTS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "banking_credit_cards": (("banking", "credit cards"), frozenset({"banking", "credit_cards"})),
    "travel": (("travel",), frozenset({"travel"})),
    "cooking_restaurants": (("cooking and food", "restaurants"), frozenset({"kitchen_and_dining"})),
    "cars_commuting": (("cars", "commuting"), frozenset({"auto_and_commute"})),
}
SCOPE_TEMPERATURES = (0.05, 0.07, 0.1, 0.15, 0.2)
FOLDS = 5
SEED = 20261130


# ---------------------------------------------------------------------------------------- stats
def ranks(x: Sequence[float] | F64) -> F64:
    """1-based ranks with ties averaged."""
    arr = np.asarray(x, dtype=np.float64)
    order = np.argsort(arr, kind="mergesort")
    out = np.empty(len(arr), dtype=np.float64)
    sorted_vals = arr[order]
    i = 0
    while i < len(arr):
        j = i
        while j + 1 < len(arr) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        out[order[i : j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return out


def auroc(scores: Sequence[float] | F64, labels: Sequence[bool] | npt.NDArray[np.bool_]) -> float:
    """Area under the ROC curve (Mann-Whitney U over averaged ranks)."""
    y = np.asarray(labels, dtype=bool)
    r = ranks(scores)
    npos = int(y.sum())
    nneg = len(y) - npos
    if npos == 0 or nneg == 0:
        return float("nan")
    return float((r[y].sum() - npos * (npos + 1) / 2.0) / (npos * nneg))


def spearman(a: Sequence[float] | F64, b: Sequence[float] | F64) -> float:
    """Spearman rank correlation (Pearson on averaged ranks)."""
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def fit_logistic(x: F64, y: F64, l2: float = 1e-3, iters: int = 50) -> tuple[F64, float]:
    """L2-regularised logistic regression by Newton steps (a handful of features only)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    reg = np.r_[np.full(d, l2), 0.0]
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xb @ w)))
        grad = xb.T @ (p - y) / n + reg * w
        hess = (xb.T * (p * (1 - p))) @ xb / n + np.diag(reg) + 1e-9 * np.eye(d + 1)
        w = w - np.linalg.solve(hess, grad)
    return w[:-1], float(w[-1])


def best_threshold(scores: F64, y: npt.NDArray[np.bool_]) -> float:
    """The cut-off in `scores` with the best accuracy (midpoint between neighbours)."""
    vals = np.unique(scores)
    cuts = np.r_[vals[0] - 1e-6, (vals[:-1] + vals[1:]) / 2.0, vals[-1] + 1e-6]
    accs = [float(((scores >= c) == y).mean()) for c in cuts]
    return float(cuts[int(np.argmax(accs))])


def folds(n: int) -> list[npt.NDArray[np.intp]]:
    """Fixed random folds of range(n)."""
    idx = np.random.default_rng(SEED).permutation(n)
    return list(np.array_split(idx, FOLDS))


def cross_validate(
    n: int, fit_and_score: Callable[[npt.NDArray[np.intp], npt.NDArray[np.intp]], float]
) -> float:
    """Mean held-out figure over the folds; `fit_and_score(train, test)` refits on `train`."""
    parts = folds(n)
    scores = []
    for k, test in enumerate(parts):
        train = np.concatenate([p for i, p in enumerate(parts) if i != k])
        scores.append(fit_and_score(train, test))
    return float(np.mean(scores))


# ---------------------------------------------------------------------------------------- data
def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@dataclass
class Figures:
    """Collected `name: value` figures and fitted constants, in the order they were made."""

    values: dict[str, float | int | str]
    constants: dict[str, Any]

    def put(self, name: str, value: float | int | str) -> None:
        self.values[name] = value


# ---------------------------------------------------------------------------------------- xstest
def xstest(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Refusal detection on XSTest completions: refused and partial_refusal count as refused."""
    y = np.array([r["label"] != "answered" for r in rows])
    agree = np.array([bool(r.get("annotators_agree", True)) for r in rows])
    feats = refusal.refusal_features([r["assistant"] for r in rows], kit.embed)

    def fit_on(idx: npt.NDArray[np.intp]) -> tuple[F64, float, float]:
        w, b = fit_logistic(feats[idx], y[idx].astype(np.float64))
        p = 1.0 / (1.0 + np.exp(-(feats[idx] @ w + b)))
        return w, b, best_threshold(p, y[idx])

    if fit:
        w, b, t = fit_on(np.arange(len(rows)))
        out.constants.update(
            REFUSAL_WEIGHTS=tuple(round(float(v), 4) for v in w),
            REFUSAL_BIAS=round(b, 4),
            REFUSAL_THRESHOLD=round(t, 4),
        )
        weights, bias, thr = w, b, t
    else:
        weights = np.asarray(cal.REFUSAL_WEIGHTS)
        bias, thr = cal.REFUSAL_BIAS, cal.REFUSAL_THRESHOLD
    p = 1.0 / (1.0 + np.exp(-(feats @ weights + bias)))
    pred = p >= thr
    if not fit:  # the shipped path, end to end
        p = np.asarray(kit.refusal_scores([r["assistant"] for r in rows]))
        pred = np.asarray(kit.is_refusal([r["assistant"] for r in rows]))
    strong = np.array(
        [any(s in refusal.normalise(r["assistant"]) for s in refusal.STRONG_PHRASES) for r in rows]
    )

    def cv_fold(train: npt.NDArray[np.intp], test: npt.NDArray[np.intp]) -> float:
        w, b, t = fit_on(train)
        p_test = 1.0 / (1.0 + np.exp(-(feats[test] @ w + b)))
        return float(((p_test >= t) == y[test]).mean())

    out.put("xstest.rows", len(rows))
    out.put("xstest.refusal.accuracy", float((pred == y).mean()))
    out.put("xstest.refusal.accuracy_annotators_agree", float((pred == y)[agree].mean()))
    out.put("xstest.refusal.auroc", auroc(p, y))
    out.put("xstest.refusal.accuracy.cv5", cross_validate(len(rows), cv_fold))
    out.put("xstest.baseline.strong_phrases.accuracy", float((strong == y).mean()))
    models = np.array([str(r.get("model")) for r in rows])
    held_out = []
    for model in sorted(set(models)):
        sel = models == model
        out.put(f"xstest.refusal.accuracy.{model}", float((pred == y)[sel].mean()))
        if len(set(models)) > 1:  # refit without this model's rows, score on them
            w, b, t = fit_on(np.flatnonzero(~sel))
            p_held = 1.0 / (1.0 + np.exp(-(feats[sel] @ w + b)))
            held_out.append(float(((p_held >= t) == y[sel]).mean()))
    if held_out:
        out.put("xstest.refusal.accuracy.leave_one_model_out", float(np.mean(held_out)))


# ---------------------------------------------------------------------------------------- clinc
def clinc(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """In-scope scoring on CLINC150 for four allowed-topic lists."""
    texts = [r["text"] for r in rows]
    kit.embed(texts)  # warm the cache once for every list
    labels = {
        name: np.array([r["domain"] in doms for r in rows])
        for name, (_, doms) in TOPIC_LISTS.items()
    }

    def probs(temperature: float) -> dict[str, F64]:
        return {
            name: np.asarray(
                scope.scope_probabilities(
                    texts,
                    list(topics),
                    kit.embed,
                    temperature=temperature,
                    overlap=cal.SCOPE_OVERLAP,
                )
            )
            for name, (topics, _) in TOPIC_LISTS.items()
        }

    temperature, threshold = cal.SCOPE_TEMPERATURE, cal.SCOPE_THRESHOLD
    if fit:
        table = {t: probs(t) for t in SCOPE_TEMPERATURES}
        temperature = max(
            SCOPE_TEMPERATURES,
            key=lambda t: float(np.mean([auroc(table[t][n], labels[n]) for n in TOPIC_LISTS])),
        )
        scores = table[temperature]
        threshold = _shared_threshold(scores, labels, np.arange(len(rows)))
        out.constants.update(SCOPE_TEMPERATURE=temperature, SCOPE_THRESHOLD=round(threshold, 4))
    else:  # the shipped path, end to end: re-centred scores, decision at 0.5
        scores = {
            n: np.asarray(kit.scope_scores(texts, list(t))) for n, (t, _) in TOPIC_LISTS.items()
        }
        threshold = DECISION
    all_names = list(TOPIC_LISTS)

    def cv_fold(train: npt.NDArray[np.intp], test: npt.NDArray[np.intp]) -> float:
        t = _shared_threshold(scores, labels, train)
        return float(
            np.mean([((scores[n][test] >= t) == labels[n][test]).mean() for n in all_names])
        )

    for name, (topics, _) in TOPIC_LISTS.items():
        y = labels[name]
        plain = (kit.embed(texts) @ kit.embed(list(topics)).T).max(axis=1)
        out.put(f"clinc.{name}.auroc", auroc(scores[name], y))
        out.put(f"clinc.{name}.accuracy", float(((scores[name] >= threshold) == y).mean()))
        out.put(f"clinc.{name}.in_scope_rows", int(y.sum()))
        out.put(f"clinc.{name}.baseline.plain_cosine.auroc", auroc(plain, y))
    out.put("clinc.mean.auroc", float(np.mean([auroc(scores[n], labels[n]) for n in all_names])))
    out.put("clinc.mean.accuracy.cv5", cross_validate(len(rows), cv_fold))
    # Leave-one-list-out: the temperature is chosen on three lists, scored on the fourth.
    if fit:
        held = []
        for name in all_names:
            rest = [n for n in all_names if n != name]
            t_best = max(
                SCOPE_TEMPERATURES,
                key=lambda t: float(np.mean([auroc(table[t][n], labels[n]) for n in rest])),
            )
            held.append(auroc(table[t_best][name], labels[name]))
        out.put("clinc.mean.auroc.leave_one_list_out", float(np.mean(held)))


def _shared_threshold(
    scores: dict[str, F64], labels: dict[str, npt.NDArray[np.bool_]], idx: npt.NDArray[np.intp]
) -> float:
    """One threshold for every topic list: best mean accuracy over the lists on rows `idx`."""
    cuts = np.linspace(0.05, 0.95, 91)
    accs = [
        float(np.mean([((scores[n][idx] >= c) == labels[n][idx]).mean() for n in scores]))
        for c in cuts
    ]
    return float(cuts[int(np.argmax(accs))])


# ---------------------------------------------------------------------------------------- dbdc3
def dbdc3_windows(
    dialogues: list[dict[str, Any]], size: int = 3
) -> list[tuple[Window, int, int, int]]:
    """(window, O, X, votes) for every voted system turn that answers a user turn."""
    items = []
    for d in dialogues:
        turns = d["turns"]
        exchanges: list[tuple[str, str]] = []
        for i, turn in enumerate(turns):
            if turn["speaker"] != "S" or i == 0 or turns[i - 1]["speaker"] != "U":
                continue
            user, reply = turns[i - 1]["utterance"], turn["utterance"]
            if "O" in turn:
                history = exchanges[max(0, len(exchanges) - (size - 1)) :]
                o, t, x = int(turn["O"]), int(turn.get("T", 0)), int(turn["X"])
                items.append((Window.of(history, user, reply), o, x, o + t + x))
            exchanges.append((user, reply))
    return items


def dbdc3(kit: OfflineKit, dialogues: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Relevancy on DBDC3: agreement with the annotators' majority and Spearman with (O - X)/30."""
    items = dbdc3_windows(dialogues)
    windows = [item[0] for item in items]
    o = np.array([item[1] for item in items])
    x = np.array([item[2] for item in items])
    total = np.array([item[3] for item in items])
    majority = (o * 2 > total) | (x * 2 > total)
    relevant = o * 2 > total
    sims = relevance_similarity(windows, kit.embed, context_weight=cal.RELEVANCE_CONTEXT_WEIGHT)

    def fit_on(idx: npt.NDArray[np.intp]) -> tuple[float, float]:
        sel = idx[majority[idx]]
        w, b = fit_logistic(sims[sel][:, None], relevant[sel].astype(np.float64), l2=0.0)
        return float(-b / w[0]), float(1.0 / w[0])

    center, scale = cal.RELEVANCE_CENTER, cal.RELEVANCE_SCALE
    if fit:
        center, scale = fit_on(np.arange(len(items)))
        out.constants.update(RELEVANCE_CENTER=round(center, 4), RELEVANCE_SCALE=round(scale, 4))
    score = 1.0 / (1.0 + np.exp(-(sims - center) / scale))
    if not fit:  # the shipped path, end to end
        score = np.asarray(kit.relevance_scores(windows))
    pred = score >= DECISION

    def cv_fold(train: npt.NDArray[np.intp], test: npt.NDArray[np.intp]) -> float:
        c, _ = fit_on(train)
        sel = test[majority[test]]
        return float(((sims[sel] >= c) == relevant[sel]).mean())

    out.put("dbdc3.system_turns", len(items))
    out.put("dbdc3.majority_turns", int(majority.sum()))
    out.put("dbdc3.relevancy.agreement", float((pred == relevant)[majority].mean()))
    out.put("dbdc3.relevancy.agreement.cv5", cross_validate(len(items), cv_fold))
    out.put("dbdc3.relevancy.auroc_majority", auroc(score[majority], relevant[majority]))
    out.put("dbdc3.relevancy.spearman", spearman(score, (o - x) / np.maximum(total, 1)))
    out.put("dbdc3.baseline.always_relevant.agreement", float(relevant[majority].mean()))


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
    parser.add_argument("--judge", help="run through the metric steps with this judge spec")
    parser.add_argument("--base-url", help="OpenAI-compatible server (or OPENAI_BASE_URL)")
    parser.add_argument("--api-key", help="API key (or OPENAI_API_KEY); never printed")
    parser.add_argument("--concurrency", type=int, default=8, help="judge requests at once")
    parser.add_argument("--limit", type=int, help="with --judge: at most N rows per dataset")
    parser.add_argument("--timeout", type=float, help="with --judge: seconds per request")
    parser.add_argument("--max-tokens", type=int, help="with --judge openai/...: answer cap")
    args = parser.parse_args(argv)
    if args.judge:
        from _agreement_llm import run

        options: dict[str, Any] = {"base_url": args.base_url, "api_key": args.api_key}
        options |= {"concurrency": args.concurrency, "timeout": args.timeout}
        options["max_tokens"] = args.max_tokens
        data = (read_jsonl(args.xstest), read_jsonl(args.clinc), read_jsonl(args.dbdc3))
        return run(args.judge, options, data, args.limit, TOPIC_LISTS, spearman)

    kit = OfflineKit()
    out = Figures(values={}, constants={})
    started = time.perf_counter()
    xstest(kit, read_jsonl(args.xstest), args.fit, out)
    clinc_rows = read_jsonl(args.clinc)
    speed([r["text"] for r in clinc_rows], out)
    clinc(kit, clinc_rows, args.fit, out)
    dbdc3(kit, read_jsonl(args.dbdc3), args.fit, out)
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
