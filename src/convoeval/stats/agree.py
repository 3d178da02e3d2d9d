"""`agree`: how far a run's verdicts agree with human labels, per metric and verdict kind.

Labels come from each record's `metadata.labels` or from a labels file keyed by record id
(`stats/labels.py`); the figures (agreement, Cohen's kappa, Spearman, Pearson, MAE, the
confusion matrix, bootstrap intervals) from `stats/figures.py`. Items that are unlabelled,
unscored or failed are counted apart and never enter a figure. docs/agreement.md has the details.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from convoeval.errors import UsageError
from convoeval.rows.files import RunLike, iter_rows, read_meta
from convoeval.rows.row import ResultRow, ResultsFileError
from convoeval.stats.labels import (
    SCORE,
    VERDICTS,
    Labels,
    LabelsError,
    judged_verdicts,
    labels_in_row,
    pair_verdicts,
    read_labels_file,
)

__all__ = ["AgreementReport", "Disagreement", "KindAgreement", "LabelsError", "agree"]

#: Bootstrap resamples per interval and the seed of their generator (results are reproducible),
#: and the two-sided confidence level of every interval.
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
#: A record-level true/false label is compared with "score >= threshold" (this when none is set).
DEFAULT_THRESHOLD = 0.5
#: Numeric score labels get agreement, kappa and a confusion matrix up to this many levels.
MAX_LEVELS = 10
FIGURES = ("agreement", "kappa", "spearman", "pearson", "mae")


@dataclass(frozen=True)
class Disagreement:
    """One item where the judge and the label differ, with what is needed to show it."""

    index: int
    id: str | None
    where: str
    metric: str
    kind: str
    #: The label key (topic, message, exchange or call); None for a record-level score.
    key: str | None
    label: float | bool
    judged: float | bool
    reason: str | None
    sample: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class KindAgreement:
    """The figures of one metric's verdict kind ("score" for the record-level score)."""

    metric: str
    kind: str
    #: "binary" (true/false labels) or "numeric" (number labels against the score).
    scale: str
    labelled: int
    unlabelled: int
    unscored: int
    failed: int
    agreement: float | None
    kappa: float | None
    spearman: float | None
    pearson: float | None
    mae: float | None
    #: The bootstrap interval of each figure above that applies (None when undefined).
    intervals: dict[str, tuple[float, float] | None]
    #: Confusion matrix: rows are the labels, columns the judge, both over `classes`.
    classes: list[float]
    confusion: list[list[int]]
    #: For a binary score: the judge passes at score >= threshold.
    threshold: float | None
    disagreements: list[Disagreement]


@dataclass(frozen=True)
class AgreementReport:
    """Agreement of a results file with human labels: one `KindAgreement` per metric and kind."""

    results: str
    labels: str | None
    kinds: list[KindAgreement]
    resamples: int
    seed: int
    level: float
    #: Labels whose record id is not in the results file (labels file only).
    unmatched_labels: int = 0
    #: Labelled metric names that are not metrics of the run (their labels are not read).
    unknown_metrics: list[str] = field(default_factory=list)

    def get(self, metric: str, kind: str = SCORE) -> KindAgreement:
        """The figures of one metric's verdict kind; KeyError when it has no labels."""
        for item in self.kinds:
            if item.metric == metric and item.kind == kind:
                return item
        raise KeyError(f"no labels for {metric} {kind}: {[(k.metric, k.kind) for k in self.kinds]}")

    def disagreements(self) -> list[Disagreement]:
        """Every disagreement, metric by metric."""
        return [d for item in self.kinds for d in item.disagreements]

    def to_pandas(self) -> Any:
        """A DataFrame, one row per metric and verdict kind: counts, figures, interval bounds."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                'AgreementReport.to_pandas() needs pandas: pip install "convoeval[pandas]"'
            ) from exc
        records = []
        for item in self.kinds:
            record: dict[str, Any] = {"metric": item.metric, "kind": item.kind}
            record["scale"] = item.scale
            for count in ("labelled", "unlabelled", "unscored", "failed"):
                record[count] = getattr(item, count)
            for name in FIGURES:
                bounds = item.intervals.get(name)
                record[name] = getattr(item, name)
                record[f"{name}_low"] = bounds[0] if bounds else None
                record[f"{name}_high"] = bounds[1] if bounds else None
            record["disagreements"] = len(item.disagreements)
            records.append(record)
        return pd.DataFrame.from_records(records)


@dataclass
class _Pairs:
    """What one (metric, kind) collected while reading the rows."""

    labels: list[float | bool] = field(default_factory=list)
    judged: list[float] = field(default_factory=list)
    items: list[tuple[ResultRow, str | None, str | None]] = field(default_factory=list)
    unlabelled: int = 0
    unscored: int = 0
    failed: int = 0
    has_labels: bool = False


def _score_pairs(got: _Pairs, row: ResultRow, metric: str, label: Labels | None) -> None:
    """Count a row's record-level score against its score label."""
    score = row["scores"].get(metric)
    if label is None or isinstance(label, dict):
        got.unlabelled += score is not None
        return
    got.has_labels = True
    if metric in (row.get("errors") or {}):
        got.failed += 1
    elif score is None:
        got.unscored += 1
    else:
        got.labels.append(label)
        got.judged.append(float(score))
        got.items.append((row, None, (row.get("reasons") or {}).get(metric)))


def _verdict_pairs(got: _Pairs, row: ResultRow, metric: str, kind: str, label: Any) -> None:
    """Count a row's verdicts of one kind against its per-verdict labels."""
    shape = VERDICTS[metric]
    labels = label if isinstance(label, dict) else {}
    wanted = sum(1 for item in labels.values() if kind in item)
    got.has_labels = got.has_labels or wanted > 0
    if metric in (row.get("errors") or {}):
        got.failed += wanted
        return
    judged = judged_verdicts(shape, (row.get("details") or {}).get(metric))
    pairs, missing, unlabelled = pair_verdicts(shape, kind, labels, judged)
    got.unscored += missing
    got.unlabelled += unlabelled
    for key, flag, verdict in pairs:
        got.labels.append(flag)
        got.judged.append(float(verdict[kind]))
        reason = verdict.get("reason") or (row.get("reasons") or {}).get(metric)
        got.items.append((row, key, str(reason) if reason else None))


def _kind(
    metric: str, kind: str, got: _Pairs, threshold: float | None, resamples: int, seed: int
) -> KindAgreement:
    """The figures of one metric's verdict kind from what it collected."""
    import numpy as np  # here: `import convoeval` does not load numpy

    from convoeval.stats.figures import classes_of, confusion, figures

    binary = all(isinstance(v, bool) for v in got.labels)
    human = np.array([float(v) for v in got.labels], dtype=np.float64)
    judge = np.array(got.judged, dtype=np.float64)
    cut = None
    if binary and kind == SCORE:
        cut = DEFAULT_THRESHOLD if threshold is None else threshold
        judge = (judge >= cut).astype(np.float64)
    classes = classes_of(human, judge)
    categorical = binary or len(classes) <= MAX_LEVELS
    values, intervals = figures(human, judge, not binary, categorical, (resamples, seed, LEVEL))
    wrong = []
    for (row, key, reason), h, j, raw in zip(got.items, human, judge, got.judged, strict=True):
        if h != j:
            wrong.append(
                Disagreement(
                    index=row["index"],
                    id=row.get("id"),
                    where=row.get("where", ""),
                    metric=metric,
                    kind=kind,
                    key=key,
                    label=bool(h) if binary else float(h),
                    judged=bool(j) if binary and kind != SCORE else raw,
                    reason=reason,
                    sample=row.get("sample") or {},
                )
            )
    if not binary:
        wrong.sort(key=lambda d: -abs(float(d.judged) - float(d.label)))
    return KindAgreement(
        metric=metric,
        kind=kind,
        scale="binary" if binary else "numeric",
        labelled=len(got.labels),
        unlabelled=got.unlabelled,
        unscored=got.unscored,
        failed=got.failed,
        agreement=values.get("agreement"),
        kappa=values.get("kappa"),
        spearman=values.get("spearman"),
        pearson=values.get("pearson"),
        mae=values.get("mae"),
        intervals=intervals,
        classes=classes if categorical else [],
        confusion=confusion(human, judge, classes) if categorical else [],
        threshold=cut,
        disagreements=wrong,
    )


def _rows_and_meta(
    results: RunLike | str | os.PathLike[str],
) -> tuple[str, list[str], dict[str, float | None]]:
    """The results path, the run's metric names and their thresholds (from the sidecar)."""
    path = os.fspath(results if isinstance(results, str | os.PathLike) else results.path)
    if not os.path.isfile(path):
        raise ResultsFileError(f"{path}: no such results file")
    meta = read_meta(path)
    if meta is None:
        raise ResultsFileError(f"{path}: its sidecar {path}.meta.json is missing")
    names = [m["name"] for m in meta.get("metrics", [])]
    return path, names, {m["name"]: m.get("threshold") for m in meta.get("metrics", [])}


def agree(
    results: RunLike | str | os.PathLike[str],
    labels: str | os.PathLike[str] | None = None,
    metrics: Sequence[str] | None = None,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> AgreementReport:
    """Compare a run's verdicts with human labels: from each record's `metadata.labels`, or with
    `labels` from that JSONL file only (keyed by record id); `metrics` limits the metrics."""
    path, names, thresholds = _rows_and_meta(results)
    chosen = list(dict.fromkeys(metrics)) if metrics else names
    unknown = [m for m in chosen if m not in names]
    if unknown:
        raise UsageError(f"not metrics of this run: {unknown} (the run has {names})")
    external = read_labels_file(labels) if labels is not None else None
    kinds = {(m, k): _Pairs() for m in chosen for k in (SCORE, *_verdict_kinds(m))}
    seen: set[str] = set()
    labelled_names: set[str] = set()
    for row in iter_rows(path):
        if external is None:
            found = labels_in_row(row)
        else:
            record = row.get("id")
            found = external.get(str(record), ("", {}))[1] if record is not None else {}
            seen.add(str(record))
        labelled_names.update(found)
        for metric in chosen:
            label = found.get(metric)
            _score_pairs(kinds[metric, SCORE], row, metric, label)
            for kind in _verdict_kinds(metric):
                _verdict_pairs(kinds[metric, kind], row, metric, kind, label)
    report_kinds = [
        _kind(m, k, got, thresholds.get(m), resamples, seed)
        for (m, k), got in kinds.items()
        if got.has_labels
    ]
    return AgreementReport(
        results=path,
        labels=os.fspath(labels) if labels is not None else None,
        kinds=report_kinds,
        resamples=resamples,
        seed=seed,
        level=LEVEL,
        unmatched_labels=len(set(external) - seen) if external is not None else 0,
        unknown_metrics=sorted(labelled_names - set(names)),
    )


def _verdict_kinds(metric: str) -> Iterable[str]:
    """The per-verdict kinds a metric's labels may give (none for a score-only metric)."""
    shape = VERDICTS.get(metric)
    return shape.kinds if shape else ()
