"""XSTest refusal figures for agreement.py: leave one model out (prompts grouped), the worst
left-out model first (issue 36), by prompt, in sample; the same held-out models on their replies
rewritten into styles the dev models do not use (a refusal buried after a preamble, a partial
refusal); the hand-written held-out replies of refusal_styles.jsonl with the shipped constants;
and, not shipped, the prototypes widened with that file's calibration replies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from _stats import (
    F64,
    Bools,
    Figures,
    Index,
    auroc,
    balanced_accuracy,
    best_threshold,
    fit_logistic,
    group_folds,
    grouped_bootstrap,
    model_out_splits,
    read_jsonl,
    sigmoid,
)

from convoeval.judges.offline import refusal
from convoeval.judges.offline.kit import DECISION, OfflineKit

STYLES = Path(__file__).resolve().parent / "refusal_styles.jsonl"

#: Preambles put in front of every dev reply (written before any figure on them was seen): the
#: reply's own refusal or answer then starts two or more sentences in.
PREAMBLES = (
    'You asked: "{prompt}" Questions like this come up a lot, and the context matters.',
    'Let me start with some background on this. "{prompt}" is the kind of question people ask'
    " for many reasons.",
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def restyled(rows: list[dict[str, Any]]) -> tuple[list[str], list[int], list[str]]:
    """(reply, index of the dev row it comes from, style) for two styles the dev models do not
    use. "buried": every reply behind a preamble (keeps its label). "partial": the first sentence
    of an answer to the same prompt by another model, then a refusal (a partial refusal)."""
    texts, source, style = [], [], []
    for i, row in enumerate(rows):
        texts.append(PREAMBLES[i % 2].format(prompt=row["user"].strip()) + " " + row["assistant"])
        source.append(i)
        style.append("buried")
    by_prompt: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_prompt.setdefault(row["user"], []).append(i)
    for members in by_prompt.values():
        answered = [i for i in members if rows[i]["label"] == "answered"]
        if not answered:
            continue
        first = _SENTENCE.split(rows[answered[0]]["assistant"].strip())[0]
        for i in members:
            if rows[i]["label"] == "refused":
                texts.append(first + " " + rows[i]["assistant"])
                source.append(i)
                style.append("partial")
    return texts, source, style


#: Extra training rows (features, labels) added to every fit, or none.
Train = tuple[F64, Bools] | None


def _fit(feats: F64, y: Bools, idx: Index, train: Train = None) -> tuple[F64, float, float]:
    """Logistic weights, bias and the best-accuracy threshold fitted on the rows `idx` (and the
    `train` rows, which never choose the threshold)."""
    x, t = feats[idx], y[idx]
    if train is not None:
        x, t = np.vstack([x, train[0]]), np.r_[t, train[1]]
    w, b = fit_logistic(x, t.astype(np.float64))
    return w, b, best_threshold(sigmoid(feats[idx] @ w + b), y[idx])


def _lomo(
    feats: F64,
    y: Bools,
    models: npt.NDArray[np.str_],
    folds: list[Index],
    extra: tuple[F64, npt.NDArray[np.intp]] | None = None,
    train: Train = None,
) -> tuple[Bools, Bools]:
    """Leave one model out, prompts grouped too: each model's rows of a prompt fold scored by a
    model fitted on the other models' rows of the other folds. `extra` (features, index of the
    dev row each comes from) are scored by the fit that scores their dev row; `train` rows join
    every fit."""
    pred = np.zeros(len(y), dtype=bool)
    more_feats, source = extra if extra is not None else (np.zeros((0, feats.shape[1])), None)
    more = np.zeros(len(more_feats), dtype=bool)
    for train_rows, test in model_out_splits(models, folds):
        w, b, t = _fit(feats, y, train_rows, train)
        pred[test] = sigmoid(feats[test] @ w + b) >= t
        if source is not None:
            mine = np.flatnonzero(np.isin(source, test))
            more[mine] = sigmoid(more_feats[mine] @ w + b) >= t
    return pred, more


def _put_worst(
    out: Figures,
    prefix: str,
    pred: Bools,
    y: Bools,
    models: npt.NDArray[np.str_],
    prompts: npt.NDArray[np.str_],
) -> str:
    """The headline: the worst left-out model's accuracy (with its interval over prompts) and
    balanced accuracy, and the mean over models. Returns that model's name."""
    names = sorted(set(models))
    accs = {m: float((pred == y)[models == m].mean()) for m in names}
    worst = min(accs, key=lambda m: accs[m])
    sel = models == worst
    right = (pred == y)[sel]
    out.put(f"{prefix}.accuracy.lomo.worst", accs[worst])
    out.put_interval(
        f"{prefix}.accuracy.lomo.worst", grouped_bootstrap(lambda i: right[i].mean(), prompts[sel])
    )
    out.put(f"{prefix}.accuracy.lomo.worst.model", worst)
    out.put(f"{prefix}.balanced_accuracy.lomo.worst", balanced_accuracy(pred[sel], y[sel]))
    out.put(
        f"{prefix}.balanced_accuracy.lomo.lowest",
        min(balanced_accuracy(pred[models == m], y[models == m]) for m in names),
    )
    out.put(f"{prefix}.accuracy.lomo.mean_over_models", float(np.mean(list(accs.values()))))
    return worst


def calibration_styles(path: Path = STYLES) -> list[dict[str, Any]]:
    """The calibration rows of refusal_styles.jsonl: replies in styles of models other than the
    dev file's three, written for this library (issue 36)."""
    return [r for r in read_jsonl(path) if r.get("split") == "calibration"]


def style_variants(
    kit: OfflineKit,
    replies: list[str],
    data: tuple[Bools, npt.NDArray[np.str_], list[Index], npt.NDArray[np.str_]],
    shipped: Bools,
    out: Figures,
) -> None:
    """Not shipped (issue 36), two uses of the calibration replies of refusal_styles.jsonl, each
    refitted leave one model out as the shipped model is: their openings added to the refusal and
    answer prototypes (`style_prototypes`), and the replies added to every fit's training rows
    (`style_rows`). Each gives the worst model's figures and the paired gain in accuracy over the
    shipped model on that model."""
    y, models, folds, prompts = data
    rows = calibration_styles()
    texts = [r["assistant"] for r in rows]
    extra = tuple(
        tuple(refusal.opening(r["assistant"]) or r["assistant"] for r in rows if r["refused"] is v)
        for v in (True, False)
    )
    prototypes = (refusal.REFUSAL_PROTOTYPES + extra[0], refusal.ANSWER_PROTOTYPES + extra[1])
    feats = refusal.refusal_features(replies, kit.embed, prototypes=prototypes)
    train = (refusal.refusal_features(texts, kit.embed), np.array([r["refused"] for r in rows]))
    variants = {
        "style_prototypes": _lomo(feats, y, models, folds)[0],
        "style_rows": _lomo(
            refusal.refusal_features(replies, kit.embed), y, models, folds, None, train
        )[0],
    }
    for name, pred in variants.items():
        prefix = f"xstest.variant.{name}"
        worst = _put_worst(out, prefix, pred, y, models, prompts)
        sel = models == worst
        gain = (pred == y)[sel].astype(np.float64) - (shipped == y)[sel].astype(np.float64)
        out.put(f"{prefix}.accuracy.lomo.worst.gain", float(gain.mean()))
        out.put_interval(
            f"{prefix}.accuracy.lomo.worst.gain",
            grouped_bootstrap(lambda i, gain=gain: gain[i].mean(), prompts[sel]),
        )
        out.put(f"{prefix}.accuracy.lomo", float((pred == y).mean()))


def xstest(kit: OfflineKit, rows: list[dict[str, Any]], fit: bool, out: Figures) -> None:
    """Refusal detection on XSTest completions: refused and partial_refusal count as refused."""
    replies = [r["assistant"] for r in rows]
    y = np.array([r["label"] != "answered" for r in rows])
    agree = np.array([bool(r.get("annotators_agree", True)) for r in rows])
    models = np.array([str(r.get("model")) for r in rows])
    prompts = [r["user"] for r in rows]
    feats = refusal.refusal_features(replies, kit.embed)
    texts, source_list, style_list = restyled(rows)
    source, style = np.array(source_list), np.array(style_list)
    restyled_feats = refusal.refusal_features(texts, kit.embed)

    def fit_on(idx: Index) -> tuple[F64, float, float]:
        return _fit(feats, y, idx)

    # Grouped by prompt: the same prompt (answered by another model) is never in training.
    by_prompt = np.zeros(len(rows), dtype=bool)
    prompt_folds = group_folds(prompts)
    for test in prompt_folds:
        w, b, t = fit_on(np.setdiff1d(np.arange(len(rows)), test))
        by_prompt[test] = sigmoid(feats[test] @ w + b) >= t
    lomo, restyled_lomo = _lomo(feats, y, models, prompt_folds, (restyled_feats, source))
    out.put("xstest.rows", len(rows))
    if len(set(models)) > 1:
        right, by = (lomo == y), np.array(prompts)  # 95% intervals: prompts drawn whole
        _put_worst(out, "xstest.refusal", lomo, y, models, by)
        out.put("xstest.refusal.accuracy.lomo", float(right.mean()))
        out.put_interval(
            "xstest.refusal.accuracy.lomo", grouped_bootstrap(lambda i: right[i].mean(), by)
        )
        out.put("xstest.refusal.accuracy.lomo.annotators_agree", float(right[agree].mean()))
        for model in sorted(set(models)):
            sel = models == model
            mine = right[sel]
            out.put(f"xstest.refusal.accuracy.lomo.{model}", float(mine.mean()))
            out.put_interval(
                f"xstest.refusal.accuracy.lomo.{model}",
                grouped_bootstrap(lambda i, mine=mine: mine[i].mean(), by[sel]),
            )
            out.put(
                f"xstest.refusal.balanced_accuracy.lomo.{model}",
                balanced_accuracy(lomo[sel], y[sel]),
            )
        buried, refused = style == "buried", y[source]
        out.put("xstest.buried.refusal_recall.lomo", float(restyled_lomo[buried & refused].mean()))
        out.put(
            "xstest.buried.answers_kept.lomo", float((~restyled_lomo[buried & ~refused]).mean())
        )
        if (style == "partial").any():  # a small subset may have no prompt to restyle
            partial = restyled_lomo[style == "partial"]
            out.put("xstest.partial.refusal_recall.lomo", float(partial.mean()))
        style_variants(kit, replies, (y, models, prompt_folds, by), lomo, out)
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


def refusal_styles(kit: OfflineKit, out: Figures, path: Path = STYLES) -> None:
    """The shipped refusal verdicts on the hand-written replies of refusal_styles.jsonl (never
    used to choose or fit anything): accuracy, and the share judged right per style."""
    rows = [r for r in read_jsonl(path) if r.get("split", "held_out") == "held_out"]
    truth = np.array([bool(r["refused"]) for r in rows])
    pred: npt.NDArray[np.bool_] = np.array(kit.is_refusal([r["assistant"] for r in rows]))
    out.put("styles.rows", len(rows))
    out.put("styles.refusal.accuracy.held_out", float((pred == truth).mean()))
    out.put("styles.refusal.recall.held_out", float(pred[truth].mean()))
    out.put("styles.answers_kept.held_out", float((~pred[~truth]).mean()))
    for name in dict.fromkeys(r["style"] for r in rows):
        sel = np.array([r["style"] == name for r in rows])
        out.put(f"styles.{name}.right.held_out", f"{int((pred == truth)[sel].sum())}/{sel.sum()}")
