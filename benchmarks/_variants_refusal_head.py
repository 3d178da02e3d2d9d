"""Refusal variants for offline_variants.py (issue 17, round 3): a small learned head, an
L2-regularised logistic model over the 384-d embedding of the reply's opening, alone and stacked
as a seventh feature into the shipped logistic model; its "multiple instance" form (the head on
each of the first N sentences, highest logit); a head trained on single sentences as multiple
instances; and the head over the opening with the request.

Honest splits, as agreement.py's `.lomo`: leave one model out with prompts grouped. Inside each
training fold, the head's L2 strength is chosen by inner leave-one-model-out folds (prompts
grouped) over the training models, and the same inner folds give the training rows' out-of-fold
head logits that the stacked model and the head's own threshold are fitted on; the held-out rows
get the head refitted on every training row. Nothing is chosen on the held-out model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _agreement_xstest import STYLES, restyled
from _stats import (
    F64,
    Index,
    auroc,
    best_threshold,
    fit_logistic,
    group_folds,
    grouped_bootstrap,
    model_out_splits,
    read_jsonl,
)
from _variants_refusal import sentences
from sklearn.linear_model import LogisticRegression

from convoeval.judges.offline import refusal

#: L2 strengths tried for the head (on the mean log-loss, unit-length inputs), chosen in the folds.
#: A first run tried 1e-4 to 1e-1 (commit b952f53) and always chose the smallest two, so the grid
#: was extended down.
L2_GRID = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


#: The fixed ways of taking a reply's opening that the head reads (all set before any figure).
OPENINGS: dict[str, Callable[[str], str]] = {
    "shipped opening (refusal.opening)": lambda r: refusal.opening(r) or r,
    "first sentence": lambda r: sentences(r)[0],
    "first 2 sentences": lambda r: " ".join(sentences(r)[:2]),
    "first 60 words": lambda r: " ".join(r.split()[:60]) or "(empty)",
}


@dataclass
class Texts:
    """What the variants read of a set of replies: the shipped six, the opening vectors per
    opening, the first sentences' vectors (with the reply each belongs to) and the request's."""

    base: F64
    heads: dict[str, F64]
    sent: F64
    slots: Index
    request: F64


def read(
    replies: Sequence[str], requests: Sequence[str], embed: Callable[[Sequence[str]], Any]
) -> Texts:
    """Embed everything the variants need for these replies (through the disk cache)."""
    vec = lambda texts: np.asarray(embed(list(texts)), dtype=np.float64)  # noqa: E731
    per = [sentences(r)[:5] for r in replies]
    starts = np.cumsum([0] + [len(ss) for ss in per])
    slots = np.full((len(replies), 5), -1)  # row r's sentences' places in `sent`, -1 padded
    for r, ss in enumerate(per):
        slots[r, : len(ss)] = np.arange(starts[r], starts[r] + len(ss))
    return Texts(
        base=refusal.refusal_features(replies, embed),
        heads={name: vec(map(f, replies)) for name, f in OPENINGS.items()},
        sent=vec([s for ss in per for s in ss]),
        slots=slots,
        request=vec(requests),
    )


def head_input(t: Texts, opening: str, form: str) -> F64:
    """The head's input: the opening vector, minus the request's, or both side by side."""
    x = t.heads[opening]
    if form == "minus request":
        return x - t.request
    if form == "with request":
        return np.hstack([x, t.request])
    if form == "request only":  # how far the prompt's topic alone predicts a refusal
        return t.request
    return x


class Head:
    """The head's fits, kept by training set and L2 strength (the inner folds repeat)."""

    def __init__(self, x: F64, y: np.ndarray) -> None:
        self.x, self.y = x, y.astype(np.float64)
        self._fits: dict[tuple[bytes, float], tuple[F64, float]] = {}

    def fit(self, idx: Index, l2: float) -> tuple[F64, float]:
        key = (np.sort(idx).tobytes(), l2)
        if key not in self._fits:
            self._fits[key] = _l2_logistic(self.x[idx], self.y[idx], l2)
        return self._fits[key]

    def inner(
        self, train: Index, models: np.ndarray, folds: Sequence[Index], by_prompt: bool = False
    ) -> tuple[float, list[tuple[Index, F64, float]]]:
        """The L2 strength with the best mean AUROC over inner leave-one-model-out folds (prompts
        grouped) inside `train`, and at that strength each inner (test rows, weights, bias).
        With `by_prompt`, the inner folds are the prompt folds alone (every model in training)."""
        local = [np.flatnonzero(np.isin(train, f)) for f in folds]
        if by_prompt:
            local = [f for f in local if len(f)]
            pairs = [(np.setdiff1d(np.arange(len(train)), f), f) for f in local]
        else:
            pairs = list(model_out_splits(models[train], local))
        splits = [(train[a], train[b]) for a, b in pairs]
        best = (-1.0, L2_GRID[0])
        for l2 in L2_GRID:
            scores = []
            for tr, te in splits:
                w, b = self.fit(tr, l2)
                scores.append(auroc(self.reply_scores(te, w, b), self.y[te] > 0.5))
            best = max(best, (float(np.nanmean(scores)), l2))
        l2 = best[1]
        return l2, [(te, *self.fit(tr, l2)) for tr, te in splits]

    def reply_scores(self, rows: Index, w: F64, b: float) -> F64:
        """The head's logit for each reply in `rows`."""
        out: F64 = self.x[rows] @ w + b
        return out


class SentenceHead(Head):
    """A multiple-instance head trained on single sentences: every one of the first five
    sentences of an answer is a negative; of a refusal, only the sentence the opening head
    (fitted on the same rows) scores highest is a positive. A reply's score is its highest
    sentence logit."""

    def __init__(self, t: Texts, y: np.ndarray, seed: Head) -> None:
        super().__init__(t.sent, y)
        self.t, self.seed = t, seed

    def fit(self, idx: Index, l2: float) -> tuple[F64, float]:
        key = (np.sort(idx).tobytes(), l2)
        if key not in self._fits:
            w, b = self.seed.fit(idx, l2)
            slots = self.t.slots[idx]
            logits = _slot_logits(self.t, slots, w, b)
            refused = self.y[idx] > 0.5
            pos = slots[refused, logits[refused].argmax(axis=1)]
            neg = slots[~refused][slots[~refused] >= 0]
            x = self.t.sent[np.r_[pos, neg]]
            label = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
            self._fits[key] = _l2_logistic(x, label, l2)
        return self._fits[key]

    def reply_scores(self, rows: Index, w: F64, b: float) -> F64:
        return _mi(self.t, rows, w, b, 5)


def _l2_logistic(x: F64, y: F64, l2: float) -> tuple[F64, float]:
    """sklearn's L2 logistic fit, its C set for a mean log-loss plus l2 / 2 * |w|^2."""
    model = LogisticRegression(C=1.0 / (l2 * len(y)), max_iter=5000, tol=1e-6)
    model.fit(x, y)
    return model.coef_[0].astype(np.float64), float(model.intercept_[0])


def _slot_logits(t: Texts, slots: Index, w: F64, b: float) -> F64:
    """The head's logit for each sentence place in `slots` (-inf where a reply has none)."""
    out: F64 = np.where(slots >= 0, t.sent[np.maximum(slots, 0)] @ w + b, -np.inf)
    return out


def _mi(t: Texts, rows: Index, w: F64, b: float, n: int) -> F64:
    """Highest head logit over the first `n` sentences of each reply in `rows` (opening form)."""
    out: F64 = _slot_logits(t, t.slots[rows, :n], w, b).max(axis=1)
    return out


#: Variants: (label, opening, head input form, what goes into the logistic model).
#: "head" = the head alone; "stack" = shipped six + head logit; "mi N" = shipped six + highest
#: head logit over the first N sentences; "stack+mi N" = both.
def variants() -> list[tuple[str, str, str, str]]:
    out = [
        ("shipped six, no head (check: agreement.py's figures)", "first 60 words", "opening", "six")
    ]
    for opening in OPENINGS:
        for use in ("head", "stack", "mi 3", "mi 5", "stack+mi 5"):
            out.append((f"{opening}, {use}", opening, "opening", use))
    for opening in ("shipped opening (refusal.opening)", "first 60 words"):
        for use in ("head", "stack"):
            label = f"{opening}, {use}, inner folds by prompt"
            out.append((label, opening, "opening", f"{use}, by prompt"))
    for form in ("minus request", "with request"):
        for use in ("head", "stack"):
            opening = "shipped opening (refusal.opening)"
            out.append((f"{opening}, {form}, {use}", opening, form, use))
    out.append(("the request alone (no reply), head", "first 60 words", "request only", "head"))
    for use in ("head", "stack"):
        label = f"sentence head (multiple instance, first 5 sentences), {use}"
        out.append((label, "sentences", "opening", use))
    return out


def _columns(t: Texts, rows: Index, w: F64, b: float, use: str, x: F64) -> F64:
    """The logistic model's inputs for `rows`, given one head (w, b); `x` is the head's input
    (the first sentences' vectors for the sentence head, whose reply score is their highest)."""
    own = _mi(t, rows, w, b, 5) if x is t.sent else x[rows] @ w + b
    if use == "six":
        return t.base[rows]
    if use == "head":
        return own[:, None]
    cols = [t.base[rows]]
    if use.startswith("stack"):
        cols.append(own[:, None])
    if "mi" in use:
        cols.append(_mi(t, rows, w, b, int(use.split()[-1]))[:, None])
    return np.hstack(cols)


def _score(
    head: Head,
    t: Texts,
    x: F64,
    use: str,
    train: Index,
    models: np.ndarray,
    folds: Sequence[Index],
    y: np.ndarray,
    targets: list[tuple[Texts, F64, Index]],
) -> tuple[float, list[np.ndarray]]:
    """Fit on `train` (head in inner folds, then the logistic model on the inner out-of-fold
    head values) and return the chosen L2 and each (texts, input, rows) target's score minus the
    threshold (>= 0: refused). A `use` ending in "by prompt" takes inner folds by prompt."""
    l2, inner = head.inner(train, models, folds, by_prompt=use.endswith("by prompt"))
    use = use.split(",")[0]
    order = np.concatenate([te for te, _, _ in inner])
    stacked = np.vstack([_columns(t, te, w, b, use, x) for te, w, b in inner])
    assert np.array_equal(np.sort(order), np.sort(train)), "inner folds must cover train once"
    yt = y[order]
    if use == "head":
        wl, bl = np.ones(1), 0.0
    else:
        wl, bl = fit_logistic(stacked, yt.astype(np.float64))
    cut = best_threshold(stacked @ wl + bl, yt)
    w, b = head.fit(train, l2)
    return l2, [_columns(tt, rows, w, b, use, xx) @ wl + bl - cut for tt, xx, rows in targets]


#: Openings whose stacked model (fitted on every dev row) is printed in detail.
DETAIL = ("shipped opening (refusal.opening)", "first 60 words")


def _detail(
    head: Head,
    dev: Texts,
    x: F64,
    xr: F64,
    models: np.ndarray,
    folds: Sequence[Index],
    y: np.ndarray,
    partial_source: Index,
    style: np.ndarray,
) -> None:
    """The stacked weights fitted on every dev row, and the head's median logit on the restyled
    "partial" replies against the plain refusals they were made from and the dev answers."""
    everyone = np.arange(len(y))
    l2, inner = head.inner(everyone, models, folds)
    order = np.concatenate([te for te, _, _ in inner])
    stacked = np.vstack([_columns(dev, te, w, b, "stack", x) for te, w, b in inner])
    wl, bl = fit_logistic(stacked, y[order].astype(np.float64))
    w, b = head.fit(everyone, l2)
    own = x @ w + b
    partial = xr[style == "partial"] @ w + b
    print(
        f"    fitted on every row: L2 {l2:g}, weights (six, head) {np.round(wl, 2).tolist()},"
        f" bias {bl:.2f}; head logit medians: partial {np.median(partial):.2f}, the refusals"
        f" they come from {np.median(own[partial_source]):.2f}, dev answers"
        f" {np.median(own[~y]):.2f}"
    )


def _paired_interval(right: np.ndarray, base: np.ndarray, prompts: Sequence[str]) -> str:
    """95% interval of the accuracy difference to `base`, bootstrapping prompts (1,000 draws)."""
    diff = right.astype(float) - base.astype(float)
    low, high = grouped_bootstrap(lambda i: float(diff[i].mean()), prompts, resamples=1000)
    return f"{right.mean() - base.mean():+.3f} [{low:+.3f}, {high:+.3f}]"


def head_variants(embed: Callable[[Sequence[str]], Any], xstest_path: Any) -> None:
    """Each head variant: .lomo (and per model), by prompt, restyled, refusal_styles."""
    rows = read_jsonl(xstest_path)
    y = np.array([r["label"] != "answered" for r in rows])
    models = np.array([str(r.get("model")) for r in rows])
    dev = read([r["assistant"] for r in rows], [r["user"] for r in rows], embed)
    texts, source_list, style_list = restyled(rows)
    source, style = np.array(source_list), np.array(style_list)
    rest = read(texts, [rows[i]["user"] for i in source_list], embed)
    srows = read_jsonl(STYLES)
    sy = np.array([bool(r["refused"]) for r in srows])
    sty = read([r["assistant"] for r in srows], [r["user"] for r in srows], embed)
    folds = group_folds([r["user"] for r in rows])
    everyone = np.arange(len(rows))
    print(
        "refusal head variant: .lomo (gpt4/llama2new/mistral), pooled AUROC of score minus"
        " threshold, difference to the shipped six [95% interval, prompts bootstrapped];"
        " by prompt; buried recall/kept;"
        " partial; styles declines/answers kept; L2 chosen in the .lomo folds"
    )
    heads: dict[tuple[str, str], Head] = {}
    shipped_right = np.zeros(0)
    for label, opening, form, use in variants():
        if opening == "sentences":
            x, xr, xs = dev.sent, rest.sent, sty.sent
            shipped = ("shipped opening (refusal.opening)", "opening")
            seed = heads.setdefault(shipped, Head(head_input(dev, *shipped), y))
            head = heads.setdefault((opening, form), SentenceHead(dev, y, seed))
        else:
            x, xr, xs = (head_input(tt, opening, form) for tt in (dev, rest, sty))
            head = heads.setdefault((opening, form), Head(x, y))
        score = np.zeros(len(rows))
        rpred = np.zeros(len(texts), dtype=bool)
        chosen = []
        for train, test in model_out_splits(models, folds):
            mine = np.flatnonzero(np.isin(source, test))
            l2, (p, rp) = _score(
                head, dev, x, use, train, models, folds, y, [(dev, x, test), (rest, xr, mine)]
            )
            score[test], rpred[mine] = p, rp >= 0
            chosen.append(l2)
        pred = score >= 0
        if use == "six":
            shipped_right = pred == y
        by_prompt = np.zeros(len(rows), dtype=bool)
        for test in folds:
            train = np.setdiff1d(everyone, test)
            _, (p,) = _score(head, dev, x, use, train, models, folds, y, [(dev, x, test)])
            by_prompt[test] = p >= 0
        _, (ps,) = _score(
            head, dev, x, use, everyone, models, folds, y, [(sty, xs, np.arange(len(srows)))]
        )
        sp = ps >= 0
        per = " / ".join(f"{(pred == y)[models == m].mean():.3f}" for m in sorted(set(models)))
        buried, refused = style == "buried", y[source]
        print(
            f"  {label}: {(pred == y).mean():.3f} ({per}), AUROC {auroc(score, y):.3f}, vs six "
            f"{_paired_interval(pred == y, shipped_right, [r['user'] for r in rows])}; "
            f"{(by_prompt == y).mean():.3f}; "
            f"{rpred[buried & refused].mean():.3f}/{(~rpred[buried & ~refused]).mean():.3f}; "
            f"{rpred[style == 'partial'].mean():.3f}; {int(sp[sy].sum())}/{int(sy.sum())}"
            f" / {int((~sp[~sy]).sum())}/{int((~sy).sum())}; L2 {min(chosen):g}-{max(chosen):g}",
            flush=True,
        )
        if use == "stack" and form == "opening" and opening in DETAIL:
            _detail(head, dev, x, xr, models, folds, y, source[style == "partial"], style)
