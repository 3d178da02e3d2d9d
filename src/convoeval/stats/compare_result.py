"""The typed result of `compare` (frozen dataclasses with `to_dict()` and a readable `str`), the
`--fail-if-worse` gate, and the wording of each figure, which the terminal table and the HTML
diff report share."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from convoeval._text import plural
from convoeval.stats.pairing import CompareError, RecordRef


@dataclass(frozen=True)
class ChangedRecord:
    """A record that scored lower in NEW: both scores, both reasons, and both rows (for the
    report's details and transcripts; not in `to_dict`)."""

    metric: str
    base: RecordRef
    new: RecordRef
    base_value: float
    new_value: float
    base_reason: str | None
    new_reason: str | None
    base_row: Mapping[str, Any] = field(repr=False, compare=False)
    new_row: Mapping[str, Any] = field(repr=False, compare=False)

    @classmethod
    def of(
        cls,
        metric: str,
        base_value: float,
        new_value: float,
        base_row: Mapping[str, Any],
        new_row: Mapping[str, Any],
    ) -> ChangedRecord:
        """A changed record from its two rows."""
        base_reason, new_reason = (
            (row.get("reasons") or {}).get(metric) for row in (base_row, new_row)
        )
        base, new = RecordRef.of(base_row), RecordRef.of(new_row)
        return cls(
            metric, base, new, base_value, new_value, base_reason, new_reason, base_row, new_row
        )

    @property
    def label(self) -> str:
        """The record's id, else its position in NEW (`#3`)."""
        return self.new.label

    @property
    def change(self) -> float:
        """NEW - BASE (negative: it regressed)."""
        return self.new_value - self.base_value

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "id": self.label,
            "base_index": self.base.index,
            "new_index": self.new.index,
            "base": self.base_value,
            "new": self.new_value,
            "change": self.change,
            "base_reason": self.base_reason,
            "new_reason": self.new_reason,
        }


@dataclass(frozen=True)
class MetricComparison:
    """One metric over the paired records. Means, the difference and the pass rates are over
    the `compared` pairs (scored in both runs); failed and unscored records are counted apart."""

    metric: str
    pairs: int
    compared: int
    base_mean: float | None
    new_mean: float | None
    #: Mean of NEW - BASE over the compared pairs, and its percentile bootstrap 95% interval.
    difference: float | None
    ci: tuple[float, float] | None
    improved: int
    regressed: int
    unchanged: int
    base_threshold: float | None
    new_threshold: float | None
    base_pass_rate: float | None
    new_pass_rate: float | None
    #: Pairs passing in BASE only (lost) and in NEW only (gained); McNemar's exact p on them.
    lost: int | None
    gained: int | None
    mcnemar_p: float | None
    base_failed: int
    new_failed: int
    base_unscored: int
    new_unscored: int
    regressed_most: tuple[ChangedRecord, ...] = ()

    @property
    def left_out(self) -> int:
        """Pairs not compared: failed or unscored in either run."""
        return self.pairs - self.compared

    def with_regressions(self, records: tuple[ChangedRecord, ...]) -> MetricComparison:
        """This comparison with its most regressed records."""
        return dataclasses.replace(self, regressed_most=records)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["ci"] = list(self.ci) if self.ci is not None else None
        out["left_out"] = self.left_out
        out["regressed_most"] = [r.to_dict() for r in self.regressed_most]
        return out


def number(value: float | None, digits: int = 3) -> str:
    """A figure, or `-` when there is none."""
    return "-" if value is None else f"{value:.{digits}f}"


def difference_text(item: MetricComparison) -> str:
    """`-0.250 [-0.417, -0.083]`: the mean difference and its 95% interval."""
    if item.difference is None:
        return "-"
    bounds = f" [{item.ci[0]:+.3f}, {item.ci[1]:+.3f}]" if item.ci is not None else ""
    return f"{item.difference:+.3f}{bounds}"


def pass_text(item: MetricComparison) -> str:
    """`75% -> 50%`: each run's pass rate ("no threshold" without one)."""
    if item.base_pass_rate is None or item.new_pass_rate is None:
        return "no threshold" if item.compared else "-"
    return f"{item.base_pass_rate:.0%} -> {item.new_pass_rate:.0%}"


def apart_text(item: MetricComparison) -> str:
    """The pairs left out, by run: `failed 0/1, unscored 0/0` (BASE/NEW)."""
    return (
        f"failed {item.base_failed}/{item.new_failed}, unscored "
        f"{item.base_unscored}/{item.new_unscored}"
    )


def check_limits(limits: Mapping[str, float]) -> None:
    """Every `--fail-if-worse` DELTA is a finite number >= 0, or `CompareError`."""
    for name, delta in limits.items():
        if not isinstance(delta, int | float) or not math.isfinite(delta) or delta < 0:
            raise CompareError(
                f"--fail-if-worse {name}={delta}: DELTA is a finite number >= 0 (how much worse "
                "the mean may get, on the metric's scale)"
            )


@dataclass(frozen=True)
class Comparison:
    """Two runs compared record by record (`compare(base, new)`)."""

    base: str
    new: str
    metrics: tuple[MetricComparison, ...]
    paired: int
    #: Pairs made by the fingerprint of the user's side (records without an id).
    by_fingerprint: int
    only_base: tuple[RecordRef, ...]
    only_new: tuple[RecordRef, ...]
    #: Metrics only one run has (not compared): name -> "only in BASE" / "only in NEW".
    not_compared: dict[str, str]
    warnings: tuple[str, ...]
    #: The two runs scored the very same conversations (their data fingerprints match).
    same_conversations: bool
    #: The intervals' (resamples, seed, level).
    bootstrap: tuple[int, int, float]

    def get(self, metric: str) -> MetricComparison:
        """One metric's comparison; KeyError naming the compared ones."""
        for item in self.metrics:
            if item.metric == metric:
                return item
        raise KeyError(f"{metric!r} was not compared: {[m.metric for m in self.metrics]}")

    def gate(self, limits: Mapping[str, float]) -> list[str]:
        """Why `--fail-if-worse METRIC=DELTA` fails (empty when it passes): a metric fails when
        its mean difference is below -DELTA and its 95% interval lies below 0 (the drop is
        larger than DELTA and more than noise), or when no pair was scored in both runs."""
        check_limits(limits)
        known = [m.metric for m in self.metrics]
        unknown = [name for name in limits if name not in known]
        if unknown:
            raise CompareError(
                f"--fail-if-worse names metrics not compared: {', '.join(unknown)}; compared: "
                f"{', '.join(known)}"
            )
        problems = []
        for name, delta in limits.items():
            item = self.get(name)
            if item.difference is None or item.ci is None:
                problems.append(f"fail-if-worse: {name}: no pair was scored in both runs")
            elif item.difference < -delta and item.ci[1] < 0:
                problems.append(
                    f"fail-if-worse: {name} is worse by {-item.difference:.4f} (mean "
                    f"{item.base_mean:.4f} -> {item.new_mean:.4f}), more than {delta:g}, and "
                    f"the 95% interval of the difference ({item.ci[0]:.4f} to {item.ci[1]:.4f}) "
                    "lies below 0"
                )
        return problems

    def pairing_lines(self, listed: bool = True) -> list[str]:
        """What paired and what did not, in a few lines (each unpaired record named when
        `listed`)."""
        made = f"{self.paired} {plural(self.paired, 'record')} paired"
        if self.by_fingerprint:
            made += f" ({self.by_fingerprint} without an id, by the user's messages)"
        if self.same_conversations:
            made += " (the same conversations in both runs)"
        lines = [made]
        for side, refs in (("BASE", self.only_base), ("NEW", self.only_new)):
            if refs:
                count = f"{len(refs)} {plural(len(refs), 'record')}"
                lines.append(f"only in {side}: {count}, not compared" + (":" if listed else ""))
                if listed:
                    lines += [f"  {r.label} ({r.where})" for r in refs]
        for name, where in self.not_compared.items():
            lines.append(f"metric {name} is {where}: not compared")
        return lines

    def regression_lines(self) -> list[str]:
        """Per metric, the most regressed records: both scores, then both reasons."""
        lines = []
        for item in self.metrics:
            if item.regressed_most:
                shown = len(item.regressed_most)
                lines.append(f"most regressed, {item.metric} ({shown} of {item.regressed}):")
            for record in item.regressed_most:
                lines.append(f"  {record.label}: {record.base_value:.3f} -> {record.new_value:.3f}")
                lines.append(f"    BASE: {record.base_reason or '(no reason)'}")
                lines.append(f"    NEW:  {record.new_reason or '(no reason)'}")
        return lines

    def __str__(self) -> str:
        lines = [f"compare {self.base} (BASE) -> {self.new} (NEW)", *self.pairing_lines()]
        for item in self.metrics:
            p_text = f" (McNemar p {item.mcnemar_p:.3g})" if item.mcnemar_p is not None else ""
            lines.append(
                f"{item.metric}: mean {number(item.base_mean)} -> {number(item.new_mean)}, "
                f"difference {difference_text(item)}; {item.improved} improved, "
                f"{item.regressed} regressed, {item.unchanged} unchanged of {item.compared}; "
                f"pass rate {pass_text(item)}{p_text}; {apart_text(item)}"
            )
        lines += self.regression_lines()
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        resamples, seed, level = self.bootstrap
        return {
            "base": self.base,
            "new": self.new,
            "paired": self.paired,
            "paired_by_fingerprint": self.by_fingerprint,
            "only_base": [dataclasses.asdict(r) for r in self.only_base],
            "only_new": [dataclasses.asdict(r) for r in self.only_new],
            "not_compared": dict(self.not_compared),
            "warnings": list(self.warnings),
            "same_conversations": self.same_conversations,
            "bootstrap": {"resamples": resamples, "seed": seed, "level": level},
            "metrics": {m.metric: m.to_dict() for m in self.metrics},
        }
