"""`compare(base, new)`: is the new run better or worse than the base run on the same records,
by more than noise? (docs/compare.md)

Records pair by id, else by their user side (`stats/pairing.py`). Per metric, over the pairs
scored in both runs: each run's mean, the mean paired difference (NEW - BASE) with its percentile
bootstrap 95% interval (the pairs resampled: `bootstrap_ci` of the differences), each run's pass
rate with an exact McNemar test of the pairs that pass in one run only, the records improved,
regressed and unchanged, and the records that regressed most. Failed and unscored pairs are
counted apart, never as 0.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from convoeval.rows.files import RunLike
from convoeval.rows.row import ResultRow
from convoeval.stats.compare_result import (
    ChangedRecord,
    Comparison,
    MetricComparison,
)
from convoeval.stats.pairing import (
    FAILED,
    SCORED,
    TASK_FIELDS,
    UNSCORED,
    CompareError,
    Entry,
    RecordRef,
    Run,
    other_tasks,
    pair,
    run_differences,
)
from convoeval.stats.repeats import LEVEL, RESAMPLES, SEED, bootstrap_ci

__all__ = ["ChangedRecord", "CompareError", "Comparison", "MetricComparison", "compare"]

#: The conversations that regressed most, listed per metric.
TOP = 5
#: Scores closer than this count as unchanged.
TOLERANCE = 1e-9
#: Up to this many discordant pairs, McNemar's p is summed exactly over integers (math.comb);
#: above, in floating point from the largest term down.
EXACT_LIMIT = 20_000


def mcnemar_exact(lost: int, gained: int) -> float:
    """The two-sided exact McNemar p-value of `lost` pairs passing in BASE only and `gained`
    passing in NEW only: the binomial test of the discordant pairs against 1/2,
    min(1, 2 P(X <= min)) for X ~ Binomial(lost + gained, 1/2) (statsmodels' `mcnemar(table,
    exact=True)`); 1 when no pair is discordant."""
    if lost < 0 or gained < 0:
        raise ValueError(f"pair counts are not negative, got {lost=}, {gained=}")
    n, low = lost + gained, min(lost, gained)
    if n <= EXACT_LIMIT:
        comb = total = 1
        for k in range(low):
            comb = comb * (n - k) // (k + 1)  # C(n, k + 1), exact
            total += comb
        return min(1.0, 2 * total / (1 << n))
    log_top = math.lgamma(n + 1) - math.lgamma(low + 1) - math.lgamma(n - low + 1)
    ratio = scaled = 1.0
    for k in range(low, 0, -1):  # C(n, k - 1) / C(n, k) = k / (n - k + 1): falling fast
        ratio *= k / (n - k + 1)
        scaled += ratio
        if ratio < 1e-17 * scaled:
            break
    return min(1.0, 2.0 * math.exp(log_top - n * math.log(2)) * scaled)


@dataclass
class _Sides:
    """One metric's pairs scored in both runs, with where they are, and the counts apart."""

    base: list[float] = field(default_factory=list)
    new: list[float] = field(default_factory=list)
    refs: list[tuple[RecordRef, RecordRef]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, b: Entry, n: Entry, position: int) -> None:
        (b_state, b_value), (n_state, n_value) = b.outcomes[position], n.outcomes[position]
        for side, state in (("base", b_state), ("new", n_state)):
            if state != SCORED:
                self.counts[f"{side}_{state}"] = self.counts.get(f"{side}_{state}", 0) + 1
        if b_value is not None and n_value is not None:
            self.base.append(b_value)
            self.new.append(n_value)
            self.refs.append((b.ref, n.ref))


def _passes(values: Sequence[float], threshold: float | None) -> list[bool] | None:
    return None if threshold is None else [v >= threshold for v in values]


def _metric(
    name: str, sides: _Sides, pairs: int, thresholds: tuple[float | None, float | None]
) -> tuple[MetricComparison, list[int]]:
    """The figures of one metric, and the positions (in `sides`) of its regressions, the
    largest drop first."""
    diffs = [n - b for b, n in zip(sides.base, sides.new, strict=True)]
    compared = len(diffs)
    base_pass, new_pass = _passes(sides.base, thresholds[0]), _passes(sides.new, thresholds[1])
    lost = gained = None
    if base_pass is not None and new_pass is not None:
        lost = sum(b and not n for b, n in zip(base_pass, new_pass, strict=True))
        gained = sum(n and not b for b, n in zip(base_pass, new_pass, strict=True))
    regressions = sorted((i for i, d in enumerate(diffs) if d < -TOLERANCE), key=diffs.__getitem__)
    improved = sum(1 for d in diffs if d > TOLERANCE)
    figures = MetricComparison(
        metric=name,
        pairs=pairs,
        compared=compared,
        base_mean=sum(sides.base) / compared if compared else None,
        new_mean=sum(sides.new) / compared if compared else None,
        difference=sum(diffs) / compared if compared else None,
        ci=bootstrap_ci(diffs),
        improved=improved,
        regressed=len(regressions),
        unchanged=compared - improved - len(regressions),
        base_threshold=thresholds[0],
        new_threshold=thresholds[1],
        base_pass_rate=sum(base_pass) / compared if base_pass and compared else None,
        new_pass_rate=sum(new_pass) / compared if new_pass and compared else None,
        lost=lost,
        gained=gained,
        mcnemar_p=mcnemar_exact(lost, gained) if lost is not None and gained is not None else None,
        base_failed=sides.counts.get(f"base_{FAILED}", 0),
        new_failed=sides.counts.get(f"new_{FAILED}", 0),
        base_unscored=sides.counts.get(f"base_{UNSCORED}", 0),
        new_unscored=sides.counts.get(f"new_{UNSCORED}", 0),
    )
    return figures, regressions


def _rows_at(run: Run, wanted: set[int]) -> dict[int, ResultRow]:
    """The rows at the given positions, in one streaming pass."""
    found: dict[int, ResultRow] = {}
    if wanted:
        for row in run.rows():
            if row["index"] in wanted:
                found[row["index"]] = row
    return found


def _check_references(pairs: Sequence[tuple[Entry, Entry]], allow: bool) -> list[str]:
    """Paired records with other references are refused (`CompareError`), or with `allow` a
    warning naming them (returned)."""
    others = other_tasks(pairs)
    if not others:
        return []
    ids = ", ".join(r.label for r in others[:10])
    more = f" and {len(others) - 10} more" if len(others) > 10 else ""
    text = (
        f"{len(others)} paired records have other references than in BASE "
        f"({', '.join(TASK_FIELDS)}): {ids}{more}"
    )
    if not allow:
        raise CompareError(f"{text}; compare anyway with --allow-other-references")
    return [text]


def _regressed(
    base: Run, new: Run, picked: Sequence[tuple[str, _Sides, list[int]]]
) -> list[tuple[ChangedRecord, ...]]:
    """Per metric, its chosen regressions with both rows (read in one more pass of each run)."""
    base_rows = _rows_at(base, {s.refs[i][0].index for _, s, chosen in picked for i in chosen})
    new_rows = _rows_at(new, {s.refs[i][1].index for _, s, chosen in picked for i in chosen})

    def record(name: str, sides: _Sides, i: int) -> ChangedRecord:
        base_row, new_row = base_rows[sides.refs[i][0].index], new_rows[sides.refs[i][1].index]
        return ChangedRecord.of(name, sides.base[i], sides.new[i], base_row, new_row)

    return [tuple(record(name, sides, i) for i in chosen) for name, sides, chosen in picked]


def _chosen(base: Run, new: Run, metrics: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    """The metrics to compare (both runs have them) and those only one run has."""
    in_base, in_new = base.metric_names(), new.metric_names()
    shared = [m for m in in_base if m in in_new]
    alone = {m: "only in BASE" for m in in_base if m not in in_new}
    alone.update({m: "only in NEW" for m in in_new if m not in in_base})
    names = list(dict.fromkeys(metrics)) if metrics else shared
    unknown = [m for m in names if m not in shared]
    if unknown:
        said = ", ".join(f"{m} ({alone.get(m, 'in neither run')})" for m in unknown)
        raise CompareError(f"not a metric of both runs: {said}; both have: {', '.join(shared)}")
    if not names:
        raise CompareError(
            f"the runs share no metric: BASE has {', '.join(in_base) or 'none'}, NEW has "
            f"{', '.join(in_new) or 'none'}"
        )
    return names, alone


def compare(
    base: RunLike | str | os.PathLike[str],
    new: RunLike | str | os.PathLike[str],
    metrics: Sequence[str] | None = None,
    *,
    top: int = TOP,
    allow_other_references: bool = False,
) -> Comparison:
    """Compare two runs (results files with their sidecars, or `EvaluationResult`s) record by
    record: `metrics` (default: every metric both runs have), the `top` most regressed records
    per metric. Refused with `CompareError`: a metric both runs do not have, or scored with
    another class or options; no record pairing; paired records with other references (the
    fields of `TASK_FIELDS`) unless `allow_other_references`."""
    if top < 0:
        raise CompareError(f"top is a count of records, not {top}")
    base_run, new_run = Run(base), Run(new)
    names, alone = _chosen(base_run, new_run, metrics)
    refusals, warnings = run_differences(base_run.meta, new_run.meta, names)
    if refusals:
        raise CompareError(
            f"{'; '.join(refusals)}: their scores are not comparable; leave the metric out "
            "(-m) or score both runs with the same options"
        )
    pairing = pair(base_run.entries(names), new_run.entries(names))
    if not pairing.pairs:
        raise CompareError(
            f"no record of {new_run.label} pairs with one of {base_run.label} (by id, or for "
            "records without an id by the user's messages and references): another data set?"
        )
    warnings += _check_references(pairing.pairs, allow_other_references)
    thresholds = (base_run.thresholds(), new_run.thresholds())
    figures: list[MetricComparison] = []
    picked: list[tuple[str, _Sides, list[int]]] = []
    for position, name in enumerate(names):
        sides = _Sides()
        for b, n in pairing.pairs:
            sides.add(b, n, position)
        item, regressions = _metric(
            name, sides, len(pairing.pairs), (thresholds[0][name], thresholds[1][name])
        )
        figures.append(item)
        picked.append((name, sides, regressions[:top]))
    for k, records in enumerate(_regressed(base_run, new_run, picked)):
        figures[k] = figures[k].with_regressions(records)
    return Comparison(
        base=base_run.label,
        new=new_run.label,
        metrics=tuple(figures),
        paired=len(pairing.pairs),
        by_fingerprint=pairing.by_fingerprint,
        only_base=tuple(pairing.only_base),
        only_new=tuple(pairing.only_new),
        not_compared=alone,
        warnings=tuple(warnings),
        same_conversations=_same_data(base_run.meta, new_run.meta),
        bootstrap=(RESAMPLES, SEED, LEVEL),
    )


def _same_data(base: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Both runs scored the very same conversations (the sidecars' data fingerprints)."""
    return bool(base.get("data_fingerprint")) and (
        base.get("data_fingerprint"),
        base.get("format_option"),
    ) == (new.get("data_fingerprint"), new.get("format_option"))
