"""`EvaluationResult`: running per-metric aggregates over a results file, and lazy access to rows.

Only aggregates live in memory (Welford mean and variance, counts, min and max); rows are read
back from the results JSONL on demand, so a run of any size has a small result object. A run
without `output=` writes to a temporary folder that lives while the result, its `path` or a
reader of its rows is held.
"""

from __future__ import annotations

import math
import os
import shutil
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PosixPath
from typing import Any, ClassVar

from convoeval._text import plural
from convoeval.errors import UsageError
from convoeval.judges.pricing import check_prices, estimate_cost
from convoeval.judges.protocol.base import Usage
from convoeval.rows.files import iter_rows, read_rows, require_meta
from convoeval.rows.row import ResultRow, RunMeta, usage_of
from convoeval.runner._plan import check_gates
from convoeval.stats.panels import PanelAgreement
from convoeval.stats.repeats import GATE_MODES, RepeatMeans, bootstrap_ci, row_repeats

#: The sample fields `to_pandas` puts next to the scores (Ragas's column names).
SAMPLE_COLUMNS = ("user_input", "reference", "reference_topics", "reference_tool_calls", "rubrics")


@dataclass
class MetricStats:
    """Running statistics of one metric: counts, Welford mean/variance, min/max, passes."""

    threshold: float | None = None
    scored: int = 0
    unscored: int = 0
    failed: int = 0
    passed: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float | None = None
    high: float | None = None

    def add(self, value: float | None, failed: bool) -> None:
        """Count one record's outcome for this metric."""
        if value is None:
            if failed:
                self.failed += 1
            else:
                self.unscored += 1
            return
        self.scored += 1
        delta = value - self.mean
        self.mean += delta / self.scored
        self.m2 += delta * (value - self.mean)
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)
        if self.threshold is not None and value >= self.threshold:
            self.passed += 1

    def summary(self) -> dict[str, Any]:
        """mean, std (sample, n-1), counts, and the pass rate at the threshold over scored and
        failed records (a failed record does not pass)."""
        has = self.scored > 0
        judged = self.scored + self.failed
        return {
            "mean": self.mean if has else None,
            "std": math.sqrt(self.m2 / (self.scored - 1)) if self.scored > 1 else None,
            "min": self.low,
            "max": self.high,
            "scored": self.scored,
            "unscored": self.unscored,
            "failed": self.failed,
            "threshold": self.threshold,
            "passed": self.passed if self.threshold is not None else None,
            "pass_rate": (self.passed / judged if judged and self.threshold is not None else None),
        }

    def gate_value(self) -> float | None:
        """The mean with every failed record counted as 0 (None when nothing was scored)."""
        if self.scored == 0:
            return None
        return self.mean * self.scored / (self.scored + self.failed)


class Aggregates:
    """Aggregates of every metric and the total usage, fed one results row at a time."""

    def __init__(
        self,
        metrics: Sequence[str],
        thresholds: Mapping[str, float | None],
        ranges: Mapping[str, tuple[float, float] | None] | None = None,
    ) -> None:
        self.stats = {name: MetricStats(threshold=thresholds.get(name)) for name in metrics}
        #: Each metric's score range (None: its own scale), for the gate limits.
        self.ranges = {name: (ranges or {}).get(name) for name in metrics}
        self.usage = Usage()
        self.rows = 0
        self.agreement = PanelAgreement()
        self.repeats = RepeatMeans(list(metrics))

    def add_row(self, row: ResultRow) -> None:
        """Count one results row."""
        self.rows += 1
        scores = row["scores"]
        errors = row.get("errors") or {}
        for name, stats in self.stats.items():
            value = scores.get(name)
            stats.add(float(value) if value is not None else None, name in errors)
        self.usage.add(usage_of(row.get("usage")))
        self.agreement.add_row(row.get("details") or {})
        self.repeats.add_row(row)

    def panel_agreement(self) -> dict[str, dict[str, Any]]:
        """Per metric scored by a judge panel: Fleiss' kappa between its members."""
        return self.agreement.summary()


class _TemporaryFolder:
    """A temporary folder, deleted once nothing holds this object any more."""

    def __init__(self, path: str) -> None:
        self.path = path
        weakref.finalize(self, shutil.rmtree, path, True)


class ResultsPath(PosixPath):
    """`EvaluationResult.path`: a `Path` that says whether the results file is temporary (a run
    without `output=`; also in its repr) and then keeps the temporary folder alive while it is
    held (`str()` of it does not)."""

    _folder: _TemporaryFolder | None = None

    @property
    def is_temporary(self) -> bool:
        """True for the path of a temporary results file; a path made from it (`.parent`)
        holds nothing and says False."""
        return self._folder is not None

    def __repr__(self) -> str:
        if self._folder is None:
            return super().__repr__()
        return f"{type(self).__name__}({str(self)!r}, temporary: deleted once nothing holds it)"


class EvaluationResult:
    """The outcome of `evaluate`: per-metric summaries, total usage and cost, rows on demand."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        meta: RunMeta,
        aggregates: Aggregates,
        *,
        prices: Mapping[str, tuple[float, float]] | None = None,
        owned_dir: str | None = None,
    ) -> None:
        self.path = ResultsPath(path)
        if owned_dir is not None:
            # A run without `output=` writes to a temporary folder that lives as long as this
            # result, its path or a reader of its rows.
            self.path._folder = _TemporaryFolder(owned_dir)
        self.meta = meta
        self._aggregates = aggregates
        self._prices = check_prices(prices) or None
        self._intervals: dict[str, dict[str, Any]] | None = None

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], prices: Mapping[str, tuple[float, float]] | None = None
    ) -> EvaluationResult:
        """Aggregate a saved results file (with its sidecar meta) without holding its rows."""
        meta = require_meta(path)
        entries = meta.get("metrics", [])
        thresholds = {m["name"]: m.get("threshold") for m in entries}
        ranges = {m["name"]: _range(m.get("score_range")) for m in entries}
        aggregates = Aggregates([m["name"] for m in entries], thresholds, ranges)
        read_rows(path, aggregates.add_row, repair=False)
        return cls(path, meta, aggregates, prices=prices)

    @property
    def is_temporary(self) -> bool:
        """True when the results file is in a temporary folder (a run without `output=`),
        deleted once neither this result, its `path` nor a reader of its `rows()` is held."""
        return self.path.is_temporary

    @property
    def metric_names(self) -> list[str]:
        """The metrics of this run, in the order they were given."""
        return list(self._aggregates.stats)

    @property
    def usage(self) -> Usage:
        """Total judge usage over every row (requests, tokens, seconds, cache hits)."""
        return self._aggregates.usage

    def __len__(self) -> int:
        return self._aggregates.rows

    def cost(self) -> tuple[float | None, str]:
        """(cost in USD or None when no price is known, a note saying which)."""
        return estimate_cost(self.meta.get("judge"), self.usage, self._prices)

    @property
    def repeat(self) -> int:
        """How many times every record was scored (`repeat=N`; 1 for an ordinary run)."""
        return int((self.meta.get("options") or {}).get("repeat") or 1)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric: mean, std, min, max, scored, unscored, failed, threshold, pass rate; in a
        repeated run also `repeats`, the bootstrap 95% interval of the mean (`ci_low`,
        `ci_high`) and each repeat's own mean with failed records as 0 (`repeat_means`)."""
        out = {name: stats.summary() for name, stats in self._aggregates.stats.items()}
        if self.repeat > 1:
            intervals = self.intervals()
            for name, entry in out.items():
                entry["repeats"] = self.repeat
                entry["ci_low"], entry["ci_high"] = intervals[name]["ci"] or (None, None)
                entry["repeat_means"] = self._aggregates.repeats.means(name)
        return out

    def intervals(self) -> dict[str, dict[str, Any]]:
        """Per metric, percentile bootstrap 95% intervals (seeded, runner/_repeats.py) of the
        mean over records (a record's value is its mean over the repeats): `ci` over the
        scored records, `gate_ci` with failed records counted as 0 (what `--gate
        lower-bound` uses); None when nothing was scored. Read from the rows once."""
        if self._intervals is None:
            scored: dict[str, list[float]] = {name: [] for name in self.metric_names}
            gated: dict[str, list[float]] = {name: [] for name in self.metric_names}
            for row in self.rows():
                for name in self.metric_names:
                    value = row["scores"].get(name)
                    if value is not None:
                        scored[name].append(float(value))
                    if value is not None or row_repeats(row, name):
                        gated[name].append(float(value or 0.0))
            self._intervals = {
                name: {
                    "ci": bootstrap_ci(scored[name]) if scored[name] else None,
                    "gate_ci": bootstrap_ci(gated[name]) if scored[name] else None,
                }
                for name in self.metric_names
            }
        return self._intervals

    def panel_agreement(self) -> dict[str, dict[str, Any]]:
        """Per metric scored by a judge panel, how far its members agree: `kappa` (Fleiss'
        kappa over the voted boolean and categorical verdict fields, None when every verdict
        fell in one category), `verdicts` (items rated by every member), `judges` (members)
        and `incomplete` (items some member did not rate, left out). Empty without a panel."""
        return self._aggregates.panel_agreement()

    def batch_requests(self) -> int:
        """Requests sent through the Batch API (all of a batch judge's, else 0)."""
        judge = self.meta.get("judge") or {}
        return self.usage.requests if judge.get("batch") is True else 0

    def usage_summary(self) -> dict[str, Any]:
        """Total usage plus the requests sent by batch, the cost estimate and its note."""
        cost, note = self.cost()
        return {
            **self.usage.as_dict(),
            "batch_requests": self.batch_requests(),
            "cost_usd": cost,
            "cost_note": note,
        }

    def rows(self) -> Iterator[ResultRow]:
        """Every results row, in input order, read lazily from the results file (the reader
        holds this result, so a temporary results file lives while it is read)."""
        yield from iter_rows(self.path)

    def __getitem__(self, metric: str) -> list[float | None]:
        """Ragas habit: `result["topic_adherence"]` is that metric's scores in record order."""
        if metric not in self._aggregates.stats:
            raise KeyError(f"{metric!r} is not a metric of this run: {self.metric_names}")
        return [row["scores"].get(metric) for row in self.rows()]

    def failed(self) -> int:
        """How many (record, metric) pairs failed (judge errors); retry them with
        `retry_failed=True` (`--retry-failed`)."""
        return sum(stats.failed for stats in self._aggregates.stats.values())

    def gate(
        self, limits: Mapping[str, float], mode: str = "mean", pass_rate: float | None = None
    ) -> list[str]:
        """Why a `--fail-under` gate fails (empty when it passes); nothing scored fails, and a
        failed record counts as 0. A limit is a finite number within its metric's score range,
        as a threshold is (else `UsageError`). Per metric (`--gate MODE`):

        - "mean": its mean must reach the limit;
        - "lower-bound": the lower end of the bootstrap 95% interval of its mean must;
        - "pass-rate": in at least `pass_rate` of the repeats, that repeat's own mean must
          (would the "mean" gate have passed, run once? asked of every repeat).
        """
        limits = check_gates(limits, self._aggregates.ranges)
        if mode not in GATE_MODES:
            raise UsageError(f"the gate is one of {', '.join(GATE_MODES)}, not {mode!r}")
        if (mode == "pass-rate") != (pass_rate is not None):
            raise UsageError("the pass-rate gate, and only it, takes a pass rate (pass-rate=P)")
        if pass_rate is not None and not 0 < pass_rate <= 1:
            raise UsageError(f"the pass rate is above 0 and at most 1, not {pass_rate:g}")
        problems = []
        for name, limit in limits.items():
            stats = self._aggregates.stats[name]
            value = stats.gate_value()
            counted = f" ({stats.failed} failed counted as 0)" if stats.failed else ""
            if value is None:
                problems.append(f"fail-under: {name} mean n/a (nothing scored)")
            elif mode == "lower-bound":
                low, high = self.intervals()[name]["gate_ci"]
                if low < limit:
                    problems.append(
                        f"fail-under: {name} 95% interval lower bound {low:.4f} < {limit:g} "
                        f"(mean {value:.4f}, interval {low:.4f}-{high:.4f}){counted}"
                    )
            elif pass_rate is not None:
                means = self._aggregates.repeats.means(name)
                reached = sum(1 for mean in means if mean >= limit)
                if reached < pass_rate * len(means):
                    listed = ", ".join(f"{mean:.4f}" for mean in means)
                    problems.append(
                        f"fail-under: {name} mean reached {limit:g} in {reached} of "
                        f"{len(means)} repeats ({reached / len(means):.0%}), below the pass "
                        f"rate {pass_rate:.0%} (repeat means {listed}){counted}"
                    )
            elif value < limit:
                problems.append(f"fail-under: {name} mean {value:.4f} < {limit:g}{counted}")
        return problems

    def to_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Copy the results rows to `path` (JSONL, one row per record) and return it."""
        target = Path(path)
        if target.resolve() != self.path.resolve():
            shutil.copyfile(self.path, target)
        return target

    def to_pandas(self) -> Any:
        """A DataFrame, one row per record: index, id, the conversation and its references
        (Ragas's column names), then each metric's score, reason and error."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                'EvaluationResult.to_pandas() needs pandas: pip install "convoeval[pandas]"'
            ) from exc
        names = self.metric_names
        records = []
        for row in self.rows():
            record: dict[str, Any] = {"index": row["index"], "id": row.get("id")}
            sample = row.get("sample") or {}
            for column in SAMPLE_COLUMNS:
                record[column] = sample.get(column)
            for name in names:
                record[name] = row["scores"].get(name)
            for name in names:
                record[f"{name}_reason"] = (row.get("reasons") or {}).get(name)
                error = (row.get("errors") or {}).get(name)
                record[f"{name}_error"] = (
                    f"{error['type']}: {error['message']}" if error is not None else None
                )
            records.append(record)
        columns = ["index", "id", *SAMPLE_COLUMNS, *names]
        columns += [f"{n}_{s}" for n in names for s in ("reason", "error")]
        return pd.DataFrame.from_records(records, columns=columns)

    #: The notebook view, registered by `convoeval.report` (which stands above the runner and
    #: imports it; the runner never imports the report). None: plain text only.
    html_view: ClassVar[Callable[[EvaluationResult], str] | None] = None

    def _repr_html_(self) -> str | None:
        """The notebook view (Jupyter): summary and first rows as HTML tables."""
        view = EvaluationResult.html_view
        return None if view is None else view(self)

    def __repr__(self) -> str:
        parts = []
        for name, s in self.summary().items():
            mean = "n/a" if s["mean"] is None else f"{s['mean']:.4f}"
            parts.append(
                f"{name}: mean={mean} scored={s['scored']} unscored={s['unscored']} "
                f"failed={s['failed']}"
            )
        body = "; ".join(parts) or "no metrics"
        records = f"{len(self)} {plural(len(self), 'record')}"
        temporary = " (temporary)" if self.is_temporary else ""
        return f"EvaluationResult({records}; {body}; results={str(self.path)!r}{temporary})"


def _range(value: Any) -> tuple[float, float] | None:
    """A score range as the sidecar records it ([low, high]), None when absent or malformed."""
    if isinstance(value, list) and len(value) == 2:
        return float(value[0]), float(value[1])
    return None
