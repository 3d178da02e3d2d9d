"""The agreement between the members of a judge panel: Fleiss' kappa per metric, in numpy
(statsmodels, which has it, stays a test dependency that checks this one).

A metric scored by a judge panel keeps, per step asked, what every member said on every voted
(boolean or categorical) field of every verdict (`details[metric]["judge_panel"][i]
["ratings"]`, judges/panel.py). Each (step, verdict, field) that every member answered is one
item rated by all members; the items of one metric are pooled into one Fleiss' kappa, the
categories being (field, value) pairs, so different fields never count as agreeing. Items that
some member did not rate (it failed, or gave no verdict for the key) are left out and counted
apart: Fleiss' kappa needs the same raters on every item.

Kappa is 1 for perfect agreement and 0 for agreement at the level chance would give with these
category frequencies; it is undefined (None) when every rating falls in one category.

The statistics are streamed (items, the sum of per-item agreement, the category totals), so the
memory used does not grow with the number of records.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads when a kappa is computed, not with the runner (issue 35)
    import numpy as np
    import numpy.typing as npt


def fleiss_kappa(table: npt.ArrayLike) -> float | None:
    """Fleiss' kappa of a count table (items x categories: how many raters put each item in
    each category; every row the same total, at least two raters). None when undefined (every
    rating in one category)."""
    import numpy as np

    counts = np.asarray(table, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        raise ValueError("Fleiss' kappa needs a non-empty items x categories count table")
    raters = counts.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (at least 2) of raters per item")
    agreement = _item_agreement(counts, float(raters[0]))
    return _kappa(int(counts.shape[0]), float(raters[0]), float(agreement.sum()), counts.sum(0))


def _item_agreement(counts: npt.NDArray[np.float64], raters: float) -> npt.NDArray[np.float64]:
    """Per item, the share of rater pairs that agree: (sum_j n_ij^2 - n) / (n (n - 1))."""
    result: npt.NDArray[np.float64] = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    return result


def _kappa(
    items: int, raters: float, agreement_sum: float, totals: npt.NDArray[np.float64]
) -> float | None:
    """Kappa from the streamed statistics: (P - Pe) / (1 - Pe), P the mean item agreement and
    Pe the sum of squared category shares."""
    observed = agreement_sum / items
    shares = totals / (items * raters)
    expected = float((shares**2).sum())
    if abs(expected - 1.0) <= 1e-08 + 1e-05:  # numpy.isclose(expected, 1.0), without numpy
        return None
    return float((observed - expected) / (1.0 - expected))


@dataclass
class _Tally:
    """The streamed statistics of one metric."""

    raters: int = 0
    items: int = 0
    agreement: float = 0.0
    totals: dict[str, int] = field(default_factory=dict)
    incomplete: int = 0

    def add(self, values: Sequence[Any], name: str) -> None:
        """One item: every member's value of field `name` (None: the member did not rate it)."""
        if any(v is None for v in values) or len(values) < 2:
            self.incomplete += 1
            return
        if self.raters and len(values) != self.raters:
            self.incomplete += 1  # another panel size: not comparable
            return
        self.raters = len(values)
        labels = [f"{name}={json.dumps(v, sort_keys=True)}" for v in values]
        counts = {label: labels.count(label) for label in dict.fromkeys(labels)}
        import numpy as np

        row = np.array(list(counts.values()), dtype=float)
        self.agreement += float(_item_agreement(row[None, :], float(self.raters))[0])
        self.items += 1
        for label, count in counts.items():
            self.totals[label] = self.totals.get(label, 0) + count

    def summary(self) -> dict[str, Any]:
        kappa = None
        if self.items:
            import numpy as np

            totals = np.array(list(self.totals.values()), dtype=float)
            kappa = _kappa(self.items, float(self.raters), self.agreement, totals)
        return {
            "kappa": kappa,
            "verdicts": self.items,
            "judges": self.raters,
            "incomplete": self.incomplete,
        }


class PanelAgreement:
    """Fleiss' kappa per metric over the judge-panel ratings of results rows, fed row by row."""

    def __init__(self) -> None:
        self._tallies: dict[str, _Tally] = {}

    def add_row(self, details: Mapping[str, Any]) -> None:
        """Count the panel ratings in one row's details (metric name -> details)."""
        for metric, entry in details.items():
            records = entry.get("judge_panel") if isinstance(entry, Mapping) else None
            if not isinstance(records, list):
                continue
            tally = self._tallies.setdefault(metric, _Tally())
            for record in _mappings(records):
                for by_field in _mappings(record.get("ratings", {}).values()):
                    for name, values in by_field.items():
                        if isinstance(values, list):
                            tally.add(values, name)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric scored by a panel: kappa (None when undefined), verdicts (items rated by
        every member), judges (members) and incomplete (items some member did not rate)."""
        return {metric: tally.summary() for metric, tally in self._tallies.items()}


def _mappings(values: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    return (v for v in values if isinstance(v, Mapping))


def agreement_lines(agreement: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per metric, e.g. "panel agreement (Fleiss' kappa) on topic_adherence: 0.62
    over 40 verdicts"."""
    lines = []
    for metric, stats in agreement.items():
        kappa = stats.get("kappa")
        count = stats.get("verdicts", 0)
        noun = "verdict" if count == 1 else "verdicts"
        shown = "n/a (every verdict in one category)" if kappa is None else f"{kappa:.2f}"
        if not count:
            shown = "n/a (no verdict rated by every judge)"
        line = f"panel agreement (Fleiss' kappa) on {metric}: {shown} over {count} {noun}"
        if stats.get("incomplete"):
            line += f" ({stats['incomplete']} not rated by every judge, left out)"
        lines.append(line)
    return lines
